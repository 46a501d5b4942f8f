//! Code mode for Rust agent runtimes: the one config contract and the composition of the
//! workspace's crates behind `exec` and `wait`.
//!
//! The model sees two tools, `exec` and `wait` (plus the few direct-only tools); every other
//! effective tool hides in a run-scoped catalog that guest JavaScript or TypeScript searches,
//! describes and calls inside a QuickJS sandbox. This crate owns:
//! - [`CodeModeConfig`]: `tools.codeMode` parsed, validated and clamped (SPEC §3);
//! - activation: [`CodeMode::activate`] turns a run's effective tools into the model-visible
//!   surface and the catalog (SPEC §4);
//! - [`CodeModeSession::exec`] / [`CodeModeSession::wait`] with the result shapes of SPEC §6;
//! - nested execution through ONE host seam, [`ToolExecutor`], observed by an [`EventSink`].
//!
//! It does not know QuickJS (that is `codemode-sandbox`), swc (`codemode-ts`) or rmcp (the MCP
//! client adapter, `codemode-mcp`): the host wires MCP servers in through its executor.
//! Tracing spans and events use the `codemode` target; inputs and results are never logged.
//! No feature flags.
#![forbid(unsafe_code)]

mod activation;
mod bridge;
mod config;
mod durable;
mod executor;
mod guest;
mod guest_dts;
mod input;
mod outcome;
mod result;
mod results;
mod resume;
mod session;
mod state;
mod surface;

pub use config::{
    CodeModeConfig, ConfigError, DEFAULT_MAX_OUTPUT_BYTES, DEFAULT_MAX_PENDING_TOOL_CALLS,
    DEFAULT_MAX_QUEUED_TOOL_CALLS, DEFAULT_MAX_SAVED_RESULT_BYTES, DEFAULT_MAX_SAVED_RESULTS,
    DEFAULT_MAX_SEARCH_LIMIT, DEFAULT_MAX_SNAPSHOT_BYTES, DEFAULT_MAX_WAIT_MS,
    DEFAULT_MEMORY_LIMIT_BYTES, DEFAULT_SEARCH_DEFAULT_LIMIT, DEFAULT_SNAPSHOT_TTL_SECONDS,
    DEFAULT_TIMEOUT_MS,
};
pub use executor::{
    AgentRunContext, EventSink, NestedCallEvent, NestedCallOutcome, NoEvents, ToolCallContext,
    ToolError, ToolExecutor, UpdateSink,
};
pub use input::{ExecInput, InputError, Language, MAX_PROGRAM_BYTES, WaitInput};
pub use result::{
    CodeModeResult, ErrorCode, OutputItem, PendingToolCall, SourceTelemetry, Telemetry, Truncation,
    WaitReason,
};
pub use results::MAX_RESULT_KEY_CHARS;
/// `guest/globals.d.ts`: the guest runtime's own API as TypeScript declarations (also served by
/// `API.read` inside a cell).
pub mod guest_declarations {
    pub use crate::guest_dts::{DESCRIPTION, PATH, TEXT};
}
pub use activation::{Activation, ActivationError, ActivationRequest, McpServerCapabilities};
pub use session::{CodeMode, CodeModeBuilder, CodeModeSession};
pub use surface::{
    CODE_MODE_EXEC_KIND, EXEC_TOOL, HookMetadata, ModelTool, PayloadError, WAIT_TOOL, check_payload,
};

/// Messages of SPEC §6 and §8 that tests and hosts match on.
pub mod messages {
    pub use crate::bridge::RESTART_SAFE_TOOLS;
    pub use crate::durable::{DIVERGED, OUTCOME_UNKNOWN};
    /// `exec` while code mode is disabled.
    pub const DISABLED: &str = "code mode is disabled.";
}
