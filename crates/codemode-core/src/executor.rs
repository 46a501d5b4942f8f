//! The host seams: [`ToolExecutor`] runs nested calls, [`EventSink`] observes them (SPEC §11).

use std::sync::Arc;

use async_trait::async_trait;
use serde::Serialize;
use serde_json::Value;
use tokio_util::sync::CancellationToken;

/// Who is running code mode: copied into every nested call's context.
#[derive(Debug, Clone, Default, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct AgentRunContext {
    /// The active agent.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_id: Option<String>,
    /// The agent run; a parked code-mode run can only be resumed by the same agent run.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub agent_run_id: Option<String>,
    /// The session id; a parked run can only be resumed from the same session.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_id: Option<String>,
    /// The session key.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub session_key: Option<String>,
    /// The sender of the turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub sender: Option<String>,
    /// The channel of the turn.
    #[serde(skip_serializing_if = "Option::is_none")]
    pub channel: Option<String>,
}

/// Receives streaming updates of one nested call.
pub type UpdateSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Everything a nested call carries besides its tool id and input.
#[derive(Clone)]
pub struct ToolCallContext {
    /// The run's identity (agent, session, sender, channel).
    pub agent_run: AgentRunContext,
    /// The model's tool-call id of the `exec` that started this code-mode run.
    pub parent_call_id: String,
    /// This nested call's id, unique within the code-mode run (`<parent>/<n>`).
    pub nested_call_id: String,
    /// Cancelled when the run is cancelled, dropped or expires.
    pub cancellation: CancellationToken,
    /// Streaming updates; each becomes an [`NestedCallEvent::Update`].
    pub updates: UpdateSink,
}

impl std::fmt::Debug for ToolCallContext {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("ToolCallContext")
            .field("agent_run", &self.agent_run)
            .field("parent_call_id", &self.parent_call_id)
            .field("nested_call_id", &self.nested_call_id)
            .finish_non_exhaustive()
    }
}

/// A failed nested call. Its message reaches the guest as a plain catchable `Error`.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[error("{message}")]
pub struct ToolError {
    /// Plain text for the guest: no host stack, no paths.
    pub message: String,
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }
}

/// The host's normal tool path. Policy, approvals and `before_tool_call` hooks live behind it;
/// an approval that takes hours is simply a call that has not finished yet (the run parks).
///
/// `catalog_id` is an exact catalog id (`openclaw:core:echo`, `mcp:github:create_issue`), or, for
/// the one kind of nested call that is not a catalog entry, MCP resources and prompts, a
/// capability id `mcp-capability:<server>:resources/list`, `…:resources/read` (`{ uri }`),
/// `…:prompts/list` or `…:prompts/get` (`{ name, arguments? }`); see
/// [`codemode_catalog::McpCapability`]. The two shapes never overlap: an MCP tool named
/// `resources/list` arrives as `mcp:<server>:resources/list` and is a tool call. Capability
/// calls are offered only for the servers the host flagged in
/// [`ActivationRequest::mcp_capabilities`](crate::ActivationRequest::mcp_capabilities) that also
/// have a visible tool, count as read-only for `restartSafe`, and go through this executor like
/// every other call, so host policy sees them.
///
/// The returned value is what the guest sees: the `details` of a host tool, the full MCP result
/// (`{content, structuredContent?, isError?}`) of an MCP tool.
#[async_trait]
pub trait ToolExecutor: Send + Sync + 'static {
    /// Runs one nested call.
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError>;
}

/// How a nested call ended.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum NestedCallOutcome {
    /// The executor returned a value.
    Ok,
    /// The executor returned an error (its message).
    Error(String),
    /// The run was dropped before the call finished.
    Cancelled,
}

/// A nested call as the host's transcript / trajectory should show it: under its parent `exec`.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(
    tag = "event",
    rename_all = "snake_case",
    rename_all_fields = "camelCase"
)]
pub enum NestedCallEvent {
    /// The call was sent to the executor.
    Start {
        /// The parent `exec` tool-call id.
        parent_call_id: String,
        /// The nested call id.
        nested_call_id: String,
        /// The exact catalog id.
        catalog_id: String,
    },
    /// The executor streamed an update (the update itself is not copied into the event).
    Update {
        /// The parent `exec` tool-call id.
        parent_call_id: String,
        /// The nested call id.
        nested_call_id: String,
        /// The exact catalog id.
        catalog_id: String,
    },
    /// The call ended.
    End {
        /// The parent `exec` tool-call id.
        parent_call_id: String,
        /// The nested call id.
        nested_call_id: String,
        /// The exact catalog id.
        catalog_id: String,
        /// How it ended.
        outcome: NestedCallOutcome,
    },
}

/// Receives nested call events, for transcript and trajectory projection.
pub trait EventSink: Send + Sync + 'static {
    /// Called for every start, update and end.
    fn on_event(&self, event: NestedCallEvent);
}

/// An [`EventSink`] that drops every event.
#[derive(Debug, Clone, Copy, Default)]
pub struct NoEvents;

impl EventSink for NoEvents {
    fn on_event(&self, _event: NestedCallEvent) {}
}
