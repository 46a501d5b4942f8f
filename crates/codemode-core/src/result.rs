//! The `exec` / `wait` result shapes: completed, waiting or failed.

use serde::Serialize;
use serde_json::Value;

/// The stable error code of a failed result (`invalid_input`, `timeout`, ...); shared with the
/// sandbox, which decides
/// most of them.
pub use codemode_sandbox::{ErrorCode, OutputItem, Truncation, WaitReason};

/// Why a `wait` could not resume its run: the machine-readable `reason` of the failed result,
/// beside the stable message and the `invalid_input` code.
///
/// ```
/// use codemode_core::WaitFailure;
/// assert_eq!(serde_json::to_value(WaitFailure::OtherAgentRun).unwrap(), "other_agent_run");
/// assert_eq!(WaitFailure::Expired.message(), "code mode run is unavailable or expired.");
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum WaitFailure {
    /// No run of this id is parked: never made here, malformed, cancelled, ended with its
    /// session or agent run, already finished, or lost with a host restart.
    Unknown,
    /// This session parked the run and its `snapshotTtlSeconds` passed before the `wait`.
    Expired,
    /// The run belongs to another session.
    OtherSession,
    /// The run belongs to another agent run.
    OtherAgentRun,
    /// Another `wait` is resuming the run right now.
    AlreadyResuming,
}

impl WaitFailure {
    /// The stable message of the failed result (the one `docs/reference.md` lists).
    pub fn message(self) -> &'static str {
        match self {
            WaitFailure::Unknown | WaitFailure::Expired => {
                "code mode run is unavailable or expired."
            }
            WaitFailure::OtherSession => "code mode run belongs to a different session.",
            WaitFailure::OtherAgentRun => "code mode run belongs to a different agent run.",
            WaitFailure::AlreadyResuming => "code mode run is already being resumed.",
        }
    }
}

/// A nested call still in flight when a run was parked.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct PendingToolCall {
    /// The nested call id (as in the host events).
    pub id: String,
    /// The bridge method (`tools.call`, `mcp.call`, `namespace.call`, ...).
    pub method: String,
    /// The exact catalog id, when the call targets a catalog tool, or the
    /// `mcp-capability:<server>:<method>` id of an MCP resource or prompt call.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_id: Option<String>,
    /// How long the call has been pending, in milliseconds (absent for a call still queued
    /// behind `maxPendingToolCalls`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub pending_ms: Option<u64>,
}

/// Per-source catalog counts.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SourceTelemetry {
    /// Core and plugin tools.
    pub openclaw: usize,
    /// MCP tools.
    pub mcp: usize,
    /// Client tools.
    pub client: usize,
    /// MCP resource and prompt operations the guest may call (`MCP.<server>.resources.*` /
    /// `prompts.*`). Not catalog entries, so not counted in `catalogSize`.
    #[serde(rename = "mcpCapabilities")]
    pub mcp_capabilities: usize,
}

/// What every result reports. Never holds secrets, environment values or tool inputs.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct Telemetry {
    /// Entries in the hidden catalog.
    pub catalog_size: usize,
    /// Entries per source.
    pub sources: SourceTelemetry,
    /// `tools.search` calls in this code-mode run so far.
    pub search_count: u64,
    /// `tools.describe` calls in this code-mode run so far.
    pub describe_count: u64,
    /// Nested tool calls in this code-mode run so far.
    pub call_count: u64,
    /// Tool names the model sees (exec, wait and the kept direct-only tools).
    pub visible_tools: Vec<String>,
}

/// The result of `exec` or `wait`.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(
    tag = "status",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum CodeModeResult {
    /// The program returned.
    Completed {
        /// The return value after JSON adaptation (`undefined` -> `null`).
        value: Value,
        /// Output produced during this call.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        output: Vec<OutputItem>,
        /// Set when `value` was cut to fit `maxOutputBytes` (`{ originalBytes, keptBytes }`):
        /// the value is still valid JSON, with markers saying what was dropped. Keep a large
        /// value out of the model's context with `results.save` instead.
        #[serde(skip_serializing_if = "Option::is_none")]
        truncated: Option<Truncation>,
        /// Set for restartSafe runs.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        replay_safe: bool,
        /// Counters.
        telemetry: Telemetry,
    },
    /// The run is parked; call `wait` with `run_id`.
    Waiting {
        /// `cm_<uuid>`.
        run_id: String,
        /// Why it is waiting.
        reason: WaitReason,
        /// Nested calls still in flight.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        pending_tool_calls: Vec<PendingToolCall>,
        /// Output produced during this call.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        output: Vec<OutputItem>,
        /// Set for restartSafe runs.
        #[serde(skip_serializing_if = "std::ops::Not::not")]
        replay_safe: bool,
        /// Counters.
        telemetry: Telemetry,
    },
    /// The run failed; output produced before the failure is kept.
    Failed {
        /// The stable message.
        error: String,
        /// The stable code; absent for an uncaught guest error.
        #[serde(skip_serializing_if = "Option::is_none")]
        code: Option<ErrorCode>,
        /// Why a `wait` found no run to resume; absent for every other failure.
        #[serde(skip_serializing_if = "Option::is_none")]
        reason: Option<WaitFailure>,
        /// Output produced during this call before the failure.
        #[serde(skip_serializing_if = "Vec::is_empty")]
        output: Vec<OutputItem>,
        /// Counters.
        telemetry: Telemetry,
    },
}

impl CodeModeResult {
    /// `"completed"`, `"waiting"` or `"failed"`.
    pub fn status(&self) -> &'static str {
        match self {
            CodeModeResult::Completed { .. } => "completed",
            CodeModeResult::Waiting { .. } => "waiting",
            CodeModeResult::Failed { .. } => "failed",
        }
    }

    /// The result as JSON: exactly what the model should see as the `exec` or `wait` tool
    /// result, and all it needs (`status`, then `value` and `truncated`, or `runId`, `reason`
    /// and `pendingToolCalls`, or `error`, `code` and `reason`; `output`, `replaySafe` and
    /// `telemetry`). Send it as the tool result's content unchanged; `docs/reference.md` lists
    /// the shapes.
    pub fn to_json(&self) -> Value {
        serde_json::to_value(self).unwrap_or(Value::Null)
    }

    /// The returned value of a completed result (after JSON adaptation and any truncation).
    pub fn value(&self) -> Option<&Value> {
        match self {
            CodeModeResult::Completed { value, .. } => Some(value),
            _ => None,
        }
    }

    /// Why a failed `wait` found no run to resume.
    pub fn wait_failure(&self) -> Option<WaitFailure> {
        match self {
            CodeModeResult::Failed { reason, .. } => *reason,
            _ => None,
        }
    }

    /// Whether a completed or waiting result came from a restart-safe run (`replaySafe`).
    pub fn replay_safe(&self) -> bool {
        match self {
            CodeModeResult::Completed { replay_safe, .. }
            | CodeModeResult::Waiting { replay_safe, .. } => *replay_safe,
            CodeModeResult::Failed { .. } => false,
        }
    }

    /// The runId of a waiting result.
    pub fn run_id(&self) -> Option<&str> {
        match self {
            CodeModeResult::Waiting { run_id, .. } => Some(run_id),
            _ => None,
        }
    }

    /// The output items of this call.
    pub fn output(&self) -> &[OutputItem] {
        match self {
            CodeModeResult::Completed { output, .. }
            | CodeModeResult::Waiting { output, .. }
            | CodeModeResult::Failed { output, .. } => output,
        }
    }

    /// The result of `exec` when code mode is disabled.
    pub fn disabled() -> Self {
        CodeModeResult::failed(
            Some(ErrorCode::InvalidInput),
            crate::messages::DISABLED,
            Telemetry::default(),
        )
    }

    pub(crate) fn failed(
        code: Option<ErrorCode>,
        error: impl Into<String>,
        telemetry: Telemetry,
    ) -> Self {
        CodeModeResult::Failed {
            error: error.into(),
            code,
            reason: None,
            output: Vec::new(),
            telemetry,
        }
    }
}
