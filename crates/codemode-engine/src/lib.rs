//! The VM of code mode and its natives: one QuickJS VM per run, built with the guest globals of
//! a plain [`GuestSetup`], and the synchronous step that advances it (settlements of host calls
//! in, progress and output out), within the memory, stack, output and pending-call [`Limits`] of
//! its run. It also holds what the VM's edge is made of: the JSON both ways across the bridge
//! ([`codec`]), the [`RunError`] every limit breach becomes, and the pre-checks run on a program
//! before the VM sees it ([`check_program`]).
//!
//! It must not know where a step runs or when: no thread pool, no worker process, no async
//! driver, no deadline of its own (the caller sets it in the step's [`engine::Flags`]), no
//! parked-run store. It uses no tokio task, timer or channel: a step only enters the caller's
//! runtime (`tokio::runtime::Handle`) while it polls a host future in place. It knows nothing
//! about catalogs, tools, MCP or plugins. It is the only crate that knows rquickjs; no rquickjs
//! type appears in its API.
//!
//! **This crate is an internal boundary**, used by `codemode-sandbox` (the run driver and where
//! steps run) and `codemode-worker` (the same steps in a worker process). Its modules [`engine`],
//! [`install`] and [`codec`] change with them, without notice; everyone else reaches the types
//! re-exported at this crate's root through `codemode-sandbox`, which re-exports them.
//!
//! Feature flags: none.

mod bridge;
mod bytecode;
mod checks;
pub mod codec;
mod deferred;
pub mod engine;
mod error;
mod heap;
pub mod install;
mod limits;
mod module_access;
mod setup;
mod stats;
mod tape;

/// Re-exported so implementors of [`BridgeHost`] need no direct dependency on `async-trait`.
pub use async_trait::async_trait;
pub use bridge::{BridgeHost, BridgeRequest, PendingCall, RequestId};
pub use bytecode::finish_warming_up;
pub use checks::{MAX_NESTING, MAX_PROGRAM_NAMES, MAX_READINGS, check_body, check_program};
pub use codec::{MAX_ERROR_MESSAGE_BYTES, OutputItem, Truncation, json_nests_deeper_than};
pub use error::{ErrorCode, RunError};
pub use install::PreparedSetup;
pub use limits::{
    DEFAULT_MAX_CALL_ARGS_BYTES, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PENDING_CALLS,
    DEFAULT_MAX_QUEUED_CALLS, DEFAULT_MAX_SNAPSHOT_BYTES, DEFAULT_MAX_SOURCE_BYTES,
    DEFAULT_MEMORY_BYTES, DEFAULT_STACK_BYTES, Limits, MAX_GUEST_STACK_BYTES, MAX_JSON_DEPTH,
    VM_THREAD_STACK_BYTES,
};
pub use module_access::check_module_access;
pub use setup::{Callable, GuestPath, GuestSetup, JsonText};
pub use stats::{bootstrap_compiles, vm_builds};
pub use tape::{ReadingKind, Tape};
