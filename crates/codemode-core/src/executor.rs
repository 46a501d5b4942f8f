//! The host seams: [`ToolExecutor`] runs nested calls, [`EventSink`] observes them: each nested
//! call's start, progress updates and end, under its parent `exec` call, for the host's
//! transcript and trajectory.

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

/// Receives the streaming updates of one nested call ([`ToolCallContext::update`]), each
/// already checked against [`MAX_UPDATE_BYTES`].
pub type UpdateSink = Arc<dyn Fn(Value) + Send + Sync>;

/// Largest update payload, as compact JSON bytes, that [`ToolCallContext::update`] forwards to
/// the event sink (64 KiB). An update is progress for a transcript ("awaiting approval", "3 of
/// 10 pages"), not a result: a larger one is refused whole, never cut, so the host never shows
/// half a value.
pub const MAX_UPDATE_BYTES: usize = 64 * 1024;

/// An update that [`ToolCallContext::update`] did not forward.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum UpdateError {
    /// The update is larger than [`MAX_UPDATE_BYTES`] as compact JSON.
    #[error("a nested call update is larger than {limit} bytes of JSON; it was not sent.")]
    TooLarge {
        /// The limit, [`MAX_UPDATE_BYTES`].
        limit: usize,
    },
}

/// Everything a nested call carries besides its tool id and input.
#[derive(Clone)]
pub struct ToolCallContext {
    /// The run's identity (agent, session, sender, channel).
    pub agent_run: AgentRunContext,
    /// The model's tool-call id of the `exec` that started this code-mode run.
    pub parent_call_id: String,
    /// This nested call's id, unique among the events of the session: `<parent>/<n>`, and
    /// `<parent>/recovered-<token>/<n>` in a run re-started by restart recovery.
    pub nested_call_id: String,
    /// Cancelled when the run is cancelled, dropped, terminated (`wait` with `terminate: true`)
    /// or expires (its TTL or `maxRunSeconds`), and when this call passes `toolCallTimeoutMs`: a
    /// long call should stop then (`tokio::select!` on `cancellation.cancelled()`). The call's
    /// future is dropped at the same moment, so work the host hands elsewhere (a spawned task,
    /// another process) is what should watch the token.
    pub cancellation: CancellationToken,
    /// Where [`ToolCallContext::update`] sends updates.
    updates: UpdateSink,
}

impl ToolCallContext {
    /// A context outside any code-mode run, whose updates go nowhere: for a host's own tests of
    /// its executor, or for calling an executor directly. Code mode makes the real ones.
    pub fn new(
        agent_run: AgentRunContext,
        parent_call_id: impl Into<String>,
        nested_call_id: impl Into<String>,
        cancellation: CancellationToken,
    ) -> Self {
        ToolCallContext {
            agent_run,
            parent_call_id: parent_call_id.into(),
            nested_call_id: nested_call_id.into(),
            cancellation,
            updates: Arc::new(|_| {}),
        }
    }

    /// Sends updates to `sink` instead.
    #[must_use]
    pub fn with_updates(mut self, sink: UpdateSink) -> Self {
        self.updates = sink;
        self
    }

    /// Reports progress of this call: the value reaches the host's [`EventSink`] as
    /// [`NestedCallEvent::Update`] with its payload. An update larger than
    /// [`MAX_UPDATE_BYTES`] as compact JSON is refused whole (measuring stops at the limit, so
    /// a huge value costs no more than the limit).
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use codemode_core::{AgentRunContext, ToolCallContext, UpdateError, MAX_UPDATE_BYTES};
    /// use tokio_util::sync::CancellationToken;
    /// let seen = Arc::new(Mutex::new(Vec::new()));
    /// let sink = { let seen = seen.clone(); Arc::new(move |v| seen.lock().unwrap().push(v)) };
    /// let cx = ToolCallContext::new(AgentRunContext::default(), "c1", "c1/1", CancellationToken::new())
    ///     .with_updates(sink);
    /// cx.update(serde_json::json!({ "status": "awaiting approval" })).unwrap();
    /// let big = serde_json::Value::String("x".repeat(MAX_UPDATE_BYTES));
    /// assert_eq!(cx.update(big), Err(UpdateError::TooLarge { limit: MAX_UPDATE_BYTES }));
    /// assert_eq!(seen.lock().unwrap().len(), 1);
    /// ```
    pub fn update(&self, value: Value) -> Result<(), UpdateError> {
        if !fits_json_bytes(&value, MAX_UPDATE_BYTES) {
            return Err(UpdateError::TooLarge {
                limit: MAX_UPDATE_BYTES,
            });
        }
        (self.updates)(value);
        Ok(())
    }
}

/// Whether `value` as compact JSON takes at most `limit` bytes; serializing stops at the limit.
fn fits_json_bytes(value: &Value, limit: usize) -> bool {
    struct Bounded {
        left: usize,
    }
    impl std::io::Write for Bounded {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.left = self
                .left
                .checked_sub(bytes.len())
                .ok_or_else(|| std::io::Error::other("over the limit"))?;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    serde_json::to_writer(&mut Bounded { left: limit }, value).is_ok()
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

/// A shared executor is an executor, so one can be kept by the host and also wrapped (in
/// `WithMcp`, for example).
#[async_trait]
impl<T: ToolExecutor + ?Sized> ToolExecutor for Arc<T> {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        (**self).execute(catalog_id, input, context).await
    }
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
#[derive(Debug, Clone, PartialEq, Serialize)]
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
    /// The executor reported progress with [`ToolCallContext::update`].
    Update {
        /// The parent `exec` tool-call id.
        parent_call_id: String,
        /// The nested call id.
        nested_call_id: String,
        /// The exact catalog id.
        catalog_id: String,
        /// The update, at most [`MAX_UPDATE_BYTES`] as compact JSON.
        update: Value,
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
