//! The QuickJS sandbox of code mode: it runs one untrusted JavaScript program per
//! [`Run`] in a fresh VM with memory, stack, time, output and pending-call limits, exposes the
//! guest globals described by a plain [`GuestSetup`], turns guest calls into [`BridgeRequest`]s
//! answered by a [`BridgeHost`], and lets a run be suspended, parked in a [`SnapshotStore`] and
//! resumed later on any task or thread.
//!
//! It is the security boundary: every program is treated as hostile. Only JSON crosses the
//! bridge, built-ins the bridge relies on are captured before guest code runs, guest-visible
//! helper objects are frozen, and no limit breach may panic, hang or exhaust the host.
//!
//! It knows nothing about catalogs, tools, MCP or plugins: method names and values are opaque
//! data given by the caller (`codemode-core`). It is the only crate that knows rquickjs; no
//! rquickjs type appears in its API. Nothing is written to disk.
//!
//! Feature flags: none. It needs a tokio runtime with timers to [`Run::drive`] a run; host calls
//! are spawned on it. Guest code never runs on that runtime's threads: every VM runs its steps
//! on a bounded pool of VM threads of this crate ([`thread_count`]).

mod bridge;
mod bytecode;
mod checks;
mod clock;
mod codec;
mod deferred;
mod engine;
mod error;
mod heap;
mod install;
mod limits;
mod module_access;
mod placement;
mod run;
mod setup;
mod stats;
mod store;
mod tape;
mod vm_pool;
mod vm_threads;
mod worker;

#[doc(hidden)]
pub mod fuzzing;

/// Re-exported so implementors of [`BridgeHost`] need no direct dependency on `async-trait`.
pub use async_trait::async_trait;
pub use bridge::{BridgeHost, BridgeRequest, PendingCall, RequestId};
pub use checks::{MAX_NESTING, MAX_PROGRAM_NAMES, MAX_READINGS, check_body, check_program};
pub use clock::ManualClock;
pub use codec::OutputItem;
pub use codec::{MAX_ERROR_MESSAGE_BYTES, json_nests_deeper_than};
pub use error::{ErrorCode, RunError, StoreError};
pub use install::PreparedSetup;
pub use limits::{
    DEFAULT_MAX_CALL_ARGS_BYTES, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PENDING_CALLS,
    DEFAULT_MAX_QUEUED_CALLS, DEFAULT_MAX_SNAPSHOT_BYTES, DEFAULT_MAX_SOURCE_BYTES,
    DEFAULT_MEMORY_BYTES, DEFAULT_STACK_BYTES, Limits, MAX_JSON_DEPTH,
};
pub use module_access::check_module_access;
pub use placement::Placement;
pub use run::{DEADLINE_GRACE, Run, SETTLE_MARGIN, Step, Truncation, WaitReason};
pub use setup::{Callable, GuestPath, GuestSetup, JsonText};
pub use stats::{SandboxStats, stats};
pub use store::{MAX_SUSPENDED_RUNS, Resumption, RunId, RunScope, SnapshotStore};
pub use tape::{ReadingKind, Tape};
pub use vm_pool::{MAX_POOLED_VMS, VmPool};
pub use vm_threads::{MAX_QUEUED_STEPS, thread_count, threads_started};
pub use worker::{
    DEFAULT_MAX_RUNS_PER_WORKER, DEFAULT_MAX_WORKER_RSS_BYTES, DEFAULT_MAX_WORKERS,
    DEFAULT_WARM_WORKERS, DEFAULT_WORKER_ADDRESS_SPACE_BYTES, WORKER_BINARY, WORKER_ENV,
    WorkerCommand, WorkerPool, WorkerPoolConfig, serve_worker,
};
#[doc(hidden)]
pub use worker::{Misbehaviour, serve_misbehaving_worker};

#[cfg(test)]
mod tests {
    /// Runs move between tasks and threads; the store is shared between them.
    #[test]
    fn public_types_cross_threads() {
        fn send<T: Send>() {}
        fn send_sync<T: Send + Sync>() {}
        send::<super::Run>();
        send::<super::Resumption<()>>();
        send::<super::Step>();
        send_sync::<super::SnapshotStore<()>>();
        send_sync::<super::Limits>();
        send_sync::<super::GuestSetup>();
        send_sync::<super::PreparedSetup>();
        send_sync::<super::VmPool>();
        send_sync::<super::Placement>();
        send_sync::<super::RunError>();
    }
}
