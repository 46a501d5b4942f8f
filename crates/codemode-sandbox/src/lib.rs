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
//! data given by the caller (`codemode-core`). It does not know rquickjs either: the VM and its
//! natives are `codemode-engine`'s (whose types this crate re-exports), and a worker process's
//! side of the pipe is `codemode-worker`'s. What this crate holds is where and when steps run:
//! the async run driver, the VM threads, the prebuilt VMs, the worker processes' host side, and
//! the parked-run store. Nothing is written to disk.
//!
//! Feature flags: none. It needs a tokio runtime with timers to [`Run::drive`] a run; host calls
//! are spawned on it. Guest code never runs on that runtime's threads: every VM runs its steps
//! on a bounded pool of VM threads of this crate ([`thread_count`]).

mod clock;
mod placement;
mod run;
mod stats;
mod store;
mod vm_pool;
mod vm_threads;
mod worker;

// The engine's internal modules, named here as they were when they lived in this crate.
use codemode_engine::{codec, engine, install};

#[doc(hidden)]
pub mod fuzzing;

pub use clock::ManualClock;
// The VM's types and limits, from the crate that holds the VM (codemode-engine).
pub use codemode_engine::{
    BridgeHost, BridgeRequest, Callable, DEFAULT_MAX_CALL_ARGS_BYTES, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_MAX_PENDING_CALLS, DEFAULT_MAX_QUEUED_CALLS, DEFAULT_MAX_SNAPSHOT_BYTES,
    DEFAULT_MAX_SOURCE_BYTES, DEFAULT_MEMORY_BYTES, DEFAULT_STACK_BYTES, ErrorCode, GuestPath,
    GuestSetup, JsonText, Limits, MAX_ERROR_MESSAGE_BYTES, MAX_JSON_DEPTH, MAX_NESTING,
    MAX_PROGRAM_NAMES, MAX_READINGS, OutputItem, PendingCall, PreparedSetup, ReadingKind,
    RequestId, RunError, Tape, Truncation, async_trait, check_body, check_module_access,
    check_program, json_nests_deeper_than,
};
pub use placement::Placement;
pub use run::{DEADLINE_GRACE, LegEnd, Run, SETTLE_MARGIN, WaitReason};
pub use stats::{SandboxStats, stats};
pub use store::{MAX_SUSPENDED_RUNS, Resumption, RunId, RunScope, SnapshotStore, StoreError};
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
        send::<super::LegEnd>();
        send_sync::<super::SnapshotStore<()>>();
        send_sync::<super::Limits>();
        send_sync::<super::GuestSetup>();
        send_sync::<super::PreparedSetup>();
        send_sync::<super::VmPool>();
        send_sync::<super::Placement>();
        send_sync::<super::RunError>();
    }
}
