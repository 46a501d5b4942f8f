//! What a nested call carries besides its tool id and input: the run's identity, the ids that
//! place it under its parent `exec`, its cancellation, and where its progress updates go.

use std::fmt;
use std::sync::Arc;

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
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum UpdateError {
    /// The update is larger than [`MAX_UPDATE_BYTES`] as compact JSON.
    TooLarge {
        /// The limit, [`MAX_UPDATE_BYTES`].
        limit: usize,
    },
}

impl fmt::Display for UpdateError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::TooLarge { limit } => write!(
                f,
                "a nested call update is larger than {limit} bytes of JSON; it was not sent."
            ),
        }
    }
}

impl std::error::Error for UpdateError {}

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

    /// Reports progress of this call: the value reaches the host's
    /// [`EventSink`](crate::EventSink) as [`NestedCallEvent::Update`](crate::NestedCallEvent)
    /// with its payload. An update larger than [`MAX_UPDATE_BYTES`] as compact JSON is refused
    /// whole (measuring stops at the limit, so a huge value costs no more than the limit).
    ///
    /// ```
    /// use std::sync::{Arc, Mutex};
    /// use codemode_host::{
    ///     AgentRunContext, CancellationToken, MAX_UPDATE_BYTES, ToolCallContext, UpdateError,
    /// };
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

impl fmt::Debug for ToolCallContext {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ToolCallContext")
            .field("agent_run", &self.agent_run)
            .field("parent_call_id", &self.parent_call_id)
            .field("nested_call_id", &self.nested_call_id)
            .finish_non_exhaustive()
    }
}
