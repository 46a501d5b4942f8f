//! Code mode for Rust agent runtimes: the one config contract and the composition of the
//! workspace's crates behind `exec` and `wait`.
//!
//! The model sees two tools, `exec` and `wait` (plus the few direct-only tools); every other
//! effective tool hides in a run-scoped catalog that guest JavaScript or TypeScript searches,
//! describes and calls inside a QuickJS sandbox. This crate owns:
//! - [`CodeModeConfig`]: `tools.codeMode` parsed, validated and clamped, or built in Rust
//!   (from `codemode-config`, which knows no sandbox; re-exported here at the same paths);
//! - activation: [`CodeMode::activate`] turns a run's effective tools into the model-visible
//!   surface (`exec`, `wait`, direct-only tools) and the hidden catalog;
//! - [`CodeModeSession::exec`] / [`CodeModeSession::wait`], each answering `completed`,
//!   `waiting` (call `wait`) or `failed` ([`CodeModeResult`]), and restart recovery;
//! - nested execution through ONE host seam, [`ToolExecutor`], observed by an [`EventSink`];
//!   both live in `codemode-host` (re-exported here and as [`host`]), which a crate that only
//!   provides tools can depend on alone.
//!
//! A host starts from [`prelude`] (one import for everything it touches) and
//! `docs/embedding.md`, which walks through a complete host; `tests/outside/host` is that host as
//! code.
//!
//! It does not know QuickJS (that is `codemode-sandbox`), swc (`codemode-ts`) or rmcp: MCP
//! servers reach it through `codemode-mcp`'s `McpHub`, whose API carries no rmcp type.
//! Tracing spans and events use the `codemode` target; inputs and results are never logged.
//!
//! Feature flags:
//! - `mcp` (default): the glue to `codemode-mcp` (`ActivationRequest::with_mcp`,
//!   `WithMcp`, and the hub's types in the prelude). It brings rmcp's client side into the
//!   build; a host without MCP servers turns it off with `default-features = false`.
//! - `typescript` (off): TypeScript programs, stripped by `codemode-ts` (swc). Without it a
//!   TypeScript program fails with `invalid_input` and [`TYPESCRIPT_NOT_COMPILED_IN`].
//!
//! - `otel` (off): OpenTelemetry through `codemode-telemetry`: a run's spans share one trace
//!   across its legs and its journal, and [`trace::continue_trace`] continues a caller's trace.
//!   Without it the spans are the same `tracing` spans and [`trace`] does nothing.
//!
//! No database is compiled in here: durable runs take any `JournalStore` of `codemode-journal`,
//! whose `sqlite` and `postgres` features compile its stores; `codemode-durable` records and
//! replays a run's journal.
#![forbid(unsafe_code)]

mod activation;
mod bridge;
mod budget;
mod guest;
mod guest_dts;
mod input;
mod limits;
#[cfg(feature = "mcp")]
mod mcp;
pub mod observe;
mod outcome;
mod recovery;
mod result;
mod resume;
mod run_life;
mod saved_results;
mod session;
mod state;
mod surface;
mod terminate;
pub mod trace;

pub use budget::{
    FALLBACK_MAX_MEMORY_BYTES, MAX_CALLS_WAITING_FOR_MEMORY, default_max_memory_bytes,
};
pub use codemode_config::{
    CodeModeConfig, CodeModeConfigBuilder, ConfigError, DEFAULT_MAX_OUTPUT_BYTES,
    DEFAULT_MAX_PENDING_TOOL_CALLS, DEFAULT_MAX_QUEUED_TOOL_CALLS, DEFAULT_MAX_RUN_SECONDS,
    DEFAULT_MAX_SAVED_RESULT_BYTES, DEFAULT_MAX_SAVED_RESULTS, DEFAULT_MAX_SEARCH_LIMIT,
    DEFAULT_MAX_SNAPSHOT_BYTES, DEFAULT_MAX_WAIT_MS, DEFAULT_MEMORY_LIMIT_BYTES,
    DEFAULT_SEARCH_DEFAULT_LIMIT, DEFAULT_SNAPSHOT_TTL_SECONDS, DEFAULT_TIMEOUT_MS,
    DEFAULT_TOOL_CALL_TIMEOUT_MS, IsolationMode,
};
/// How many suspended runs one [`CodeMode`] parks at once, for all its sessions together.
pub use codemode_sandbox::MAX_SUSPENDED_RUNS;
/// A clock a test moves by hand, for [`CodeModeBuilder::snapshot_clock`]: the snapshot TTL then
/// passes when the test advances it, without sleeping.
pub use codemode_sandbox::ManualClock;
// The host seams and their types, from `codemode-host` (also re-exported whole as `host`).
/// `codemode-host`, the seam a host implements: [`ToolExecutor`], [`EventSink`],
/// [`ToolDescriptor`](codemode_host::ToolDescriptor) and their small types. A crate that only
/// provides tools can depend on `codemode-host` alone; its items are the ones re-exported here.
pub use codemode_host as host;
pub use codemode_host::{
    AgentRunContext, EventSink, MAX_UPDATE_BYTES, NestedCallEvent, NestedCallOutcome, NoEvents,
    ToolCallContext, ToolError, ToolExecutor, UpdateError, UpdateSink,
};
pub use input::{ExecInput, InputError, Language, MAX_PROGRAM_BYTES, WaitInput};
#[cfg(feature = "mcp")]
pub use mcp::WithMcp;
pub use observe::CallObserver;
pub use recovery::{MemoryRecoveryStore, RecoveryRecord, RecoveryStore};
pub use result::{
    CodeModeResult, ErrorCode, OutputItem, PendingToolCall, SourceTelemetry, Telemetry, Truncation,
    WaitFailure, WaitReason,
};
pub use saved_results::MAX_RESULT_KEY_CHARS;
/// `guest/globals.d.ts`: the guest runtime's own API as TypeScript declarations (also served by
/// `API.read` inside a cell).
pub mod guest_declarations {
    pub use crate::guest_dts::{DESCRIPTION, PATH, TEXT, text};
}
pub use activation::{Activation, ActivationError, ActivationRequest, McpServerCapabilities};
pub use session::{CodeMode, CodeModeBuilder, CodeModeSession, TYPESCRIPT_NOT_COMPILED_IN};
pub use surface::{
    CODE_MODE_EXEC_KIND, EXEC_TOOL, HookMetadata, ModelTool, PayloadError, WAIT_TOOL, check_payload,
};

/// Process isolation (`isolation: "process"`): how worker processes are found and started, and
/// the worker's own entry point. Re-exported from `codemode-sandbox` on purpose, so that a host
/// (or the `codemode` command, which is its own worker) configures and serves workers without
/// depending on the sandbox crate.
pub mod worker {
    pub use codemode_sandbox::{
        DEFAULT_MAX_RUNS_PER_WORKER, DEFAULT_MAX_WORKER_RSS_BYTES, DEFAULT_MAX_WORKERS,
        DEFAULT_WARM_WORKERS, DEFAULT_WORKER_ADDRESS_SPACE_BYTES, WORKER_BINARY, WORKER_ENV,
        WorkerCommand, WorkerPoolConfig, serve_worker,
    };
}

/// Everything a host touches, in one import: `use codemode_core::prelude::*;`.
///
/// Code mode and its config ([`CodeMode`], [`CodeModeConfig`], [`ActivationRequest`],
/// [`AgentRunContext`], the session and its inputs and results); the two host seams
/// ([`ToolExecutor`], [`EventSink`]) and their types; the tool descriptions of
/// `codemode-host` ([`ToolDescriptor`](codemode_host::ToolDescriptor),
/// [`ToolOrigin`](codemode_host::ToolOrigin)); the namespace registration types of
/// `codemode-namespaces`; and two third-party items re-exported on purpose, so that a host
/// needs no direct dependency to implement the seams: the `async_trait` attribute (the seams
/// are `async_trait` traits) and tokio-util's `CancellationToken` (the type of
/// [`ToolCallContext::cancellation`]). With the `mcp` feature it also holds the MCP hub glue.
pub mod prelude {
    pub use crate::{
        Activation, ActivationError, ActivationRequest, AgentRunContext, CodeMode, CodeModeBuilder,
        CodeModeConfig, CodeModeConfigBuilder, CodeModeResult, CodeModeSession, ConfigError,
        EventSink, ExecInput, Language, McpServerCapabilities, NestedCallEvent, NestedCallOutcome,
        NoEvents, OutputItem, RecoveryRecord, RecoveryStore, ToolCallContext, ToolError,
        ToolExecutor, WaitFailure, WaitInput, WaitReason,
    };
    pub use async_trait::async_trait;
    pub use codemode_catalog::HostSource;
    pub use codemode_host::{ToolDescriptor, ToolOrigin};
    pub use codemode_namespaces::{
        HiddenNamespace, HiddenReason, NamespaceError, NamespaceRegistry, NamespaceTool,
        Registration, ScopeContext, ScopeValue,
    };
    pub use tokio_util::sync::CancellationToken;

    #[cfg(feature = "mcp")]
    pub use crate::WithMcp;
    #[cfg(feature = "mcp")]
    pub use codemode_mcp::{HubOptions, McpHub, McpServerConfig};
}

/// Stable messages that tests and hosts match on: the one code mode gives when it is off, and
/// the guest error of a side-effecting call in a restart-safe run.
pub mod messages {
    pub use crate::bridge::{RESTART_SAFE_TOOLS, tool_call_timed_out};
    pub use codemode_durable::{DIVERGED, OUTCOME_UNKNOWN};
    /// `exec` while code mode is disabled.
    pub const DISABLED: &str = "code mode is disabled.";
}
