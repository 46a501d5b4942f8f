//! What the host observes of nested calls: [`EventSink`] receives each call's start, progress
//! updates and end, under its parent `exec` call, for the host's transcript and trajectory.

use serde::Serialize;
use serde_json::Value;

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
    /// The executor reported progress with
    /// [`ToolCallContext::update`](crate::ToolCallContext::update).
    Update {
        /// The parent `exec` tool-call id.
        parent_call_id: String,
        /// The nested call id.
        nested_call_id: String,
        /// The exact catalog id.
        catalog_id: String,
        /// The update, at most [`MAX_UPDATE_BYTES`](crate::MAX_UPDATE_BYTES) as compact JSON.
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
