//! Progress to MCP clients: an `exec` or `wait` request that carries a `progressToken` in its
//! `_meta` gets `notifications/progress` while it is open, one per event of the run it drives
//! (a nested call's start, `cx.update` and end, each output item), and a last one naming the
//! result's status.
//!
//! Each notification's `message` is one compact JSON object (see `docs/reference.md`), cut to
//! about [`MAX_PART_BYTES`] per part, so no notification is large. While the call runs, at most
//! one notification goes out per [`PROGRESS_INTERVAL`] (20 a second), and at most
//! [`MAX_QUEUED_EVENTS`] wait their turn: past that, an update or output item is dropped, and a
//! start or end takes the place of the oldest queued update or output item. When the call ends,
//! what is still queued goes out at once, then the last notification (`result`, with the
//! status and the count of events dropped), and only then the result: a client sees the run's
//! last state, and every notification after a drop says how many events it missed
//! (`dropped`), so it is never left believing a nested call still runs.
//!
//! A notification is written by a task of its own: the run never waits for the client. A
//! client that does not read them holds one notification at most; after [`SEND_TIMEOUT`]
//! without progress the request's progress stops, and the result is still sent (as far as the
//! transport takes it). Notifications never change the result.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use codemode_core::{CallObserver, CodeModeResult, NestedCallEvent, NestedCallOutcome, OutputItem};
use rmcp::model::{ProgressNotificationParam, ProgressToken};
use rmcp::{Peer, RoleServer};
use serde_json::{Map, Value, json};
use tokio::sync::Notify;

/// Least time between two progress notifications of one request.
pub const PROGRESS_INTERVAL: Duration = Duration::from_millis(50);

/// Most events of one request waiting to be sent.
pub const MAX_QUEUED_EVENTS: usize = 64;

/// Most bytes of one part of a notification's message: an output item's text, an update's
/// JSON (a larger one is replaced by its size), an error message.
pub const MAX_PART_BYTES: usize = 2048;

/// How long one notification may take to reach the client before the request's progress
/// stops.
pub const SEND_TIMEOUT: Duration = Duration::from_secs(2);

/// Whether an event may give way to another when the queue is full.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Kind {
    /// A start or an end: kept over updates and output.
    Lasting,
    /// An update or an output item.
    Passing,
}

#[derive(Default)]
struct Queue {
    events: VecDeque<(Kind, Map<String, Value>)>,
    dropped: u64,
    closed: bool,
    /// The client stopped taking notifications ([`SEND_TIMEOUT`]) or the transport closed.
    gave_up: bool,
}

/// The progress of one request: the run's observer, and the queue its sender drains.
pub(crate) struct Progress {
    queue: Mutex<Queue>,
    wake: Notify,
}

impl Progress {
    fn lock(&self) -> std::sync::MutexGuard<'_, Queue> {
        self.queue.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn push(&self, kind: Kind, message: Map<String, Value>) {
        {
            let mut queue = self.lock();
            if queue.closed || queue.gave_up {
                return;
            }
            if queue.events.len() >= MAX_QUEUED_EVENTS {
                let passing = queue.events.iter().position(|(k, _)| *k == Kind::Passing);
                match (kind, passing) {
                    (Kind::Lasting, Some(index)) => {
                        queue.events.remove(index);
                        queue.dropped += 1;
                    }
                    _ => {
                        queue.dropped += 1;
                        return;
                    }
                }
            }
            queue.events.push_back((kind, message));
        }
        self.wake.notify_one();
    }
}

impl CallObserver for Progress {
    fn on_event(&self, event: &NestedCallEvent) {
        let (kind, message) = event_message(event);
        self.push(kind, message);
    }

    fn on_output(&self, items: &[OutputItem]) {
        for item in items {
            self.push(Kind::Passing, output_message(item));
        }
    }
}

/// The sender of one request's notifications; [`ProgressSender::finish`] sends the last one.
pub(crate) struct ProgressSender {
    progress: Arc<Progress>,
    peer: Peer<RoleServer>,
    token: ProgressToken,
    /// The sending task; aborted when the request is dropped before its end (cancelled).
    task: Option<tokio::task::JoinHandle<u64>>,
}

impl Drop for ProgressSender {
    fn drop(&mut self) {
        if let Some(task) = self.task.take() {
            task.abort();
        }
    }
}

impl ProgressSender {
    /// Starts sending the progress of a request that carried `token`.
    pub(crate) fn start(peer: Peer<RoleServer>, token: ProgressToken) -> ProgressSender {
        let progress = Arc::new(Progress {
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
        });
        let task = tokio::spawn(send_loop(
            Arc::clone(&progress),
            peer.clone(),
            token.clone(),
        ));
        ProgressSender {
            progress,
            peer,
            token,
            task: Some(task),
        }
    }

    /// The run's observer.
    pub(crate) fn observer(&self) -> Arc<dyn CallObserver> {
        Arc::clone(&self.progress) as Arc<dyn CallObserver>
    }

    /// The call ended with `result`: stops the queue and sends the last notification (its
    /// status and the events never sent), before the result goes out.
    pub(crate) async fn finish(mut self, result: &CodeModeResult) {
        {
            self.progress.lock().closed = true;
        }
        self.progress.wake.notify_one();
        let mut sent = match self.task.take() {
            Some(task) => task.await.unwrap_or(0),
            None => 0,
        };
        // What is still queued (at most `MAX_QUEUED_EVENTS`) goes out now, without waiting
        // for the interval: the client sees the run's last state before the result.
        let (rest, dropped, gave_up) = {
            let mut queue = self.progress.lock();
            (
                std::mem::take(&mut queue.events),
                queue.dropped,
                queue.gave_up,
            )
        };
        if gave_up {
            return;
        }
        for (_, mut message) in rest {
            if dropped > 0 {
                message.insert("dropped".into(), dropped.into());
            }
            sent += 1;
            if !send(&self.peer, &self.token, sent, message).await {
                return;
            }
        }
        let json = result.to_json();
        let mut message = Map::new();
        message.insert("event".into(), "result".into());
        message.insert(
            "status".into(),
            json.get("status").cloned().unwrap_or(Value::Null),
        );
        message.insert("dropped".into(), dropped.into());
        let _ = send(&self.peer, &self.token, sent + 1, message).await;
    }
}

/// Sends queued events, one per [`PROGRESS_INTERVAL`], until the queue closes; returns how many
/// it sent.
async fn send_loop(progress: Arc<Progress>, peer: Peer<RoleServer>, token: ProgressToken) -> u64 {
    let mut sent = 0u64;
    loop {
        let next = {
            let mut queue = progress.lock();
            if queue.closed {
                return sent;
            }
            let dropped = queue.dropped;
            queue.events.pop_front().map(|(_, mut message)| {
                if dropped > 0 {
                    message.insert("dropped".into(), dropped.into());
                }
                message
            })
        };
        let Some(message) = next else {
            progress.wake.notified().await;
            continue;
        };
        sent += 1;
        if !send(&peer, &token, sent, message).await {
            let mut queue = progress.lock();
            queue.gave_up = true;
            queue.events.clear();
            return sent;
        }
        // The rate limit: the next one after the interval, unless the call ends first.
        tokio::select! {
            () = tokio::time::sleep(PROGRESS_INTERVAL) => {}
            () = closed(&progress) => {}
        }
    }
}

/// Returns once the queue is closed.
async fn closed(progress: &Progress) {
    loop {
        let notified = progress.wake.notified();
        if progress.lock().closed {
            return;
        }
        notified.await;
    }
}

/// Sends one notification within [`SEND_TIMEOUT`]; false when it did not go out.
async fn send(
    peer: &Peer<RoleServer>,
    token: &ProgressToken,
    progress: u64,
    message: Map<String, Value>,
) -> bool {
    let text = serde_json::to_string(&message).unwrap_or_default();
    let mut param = ProgressNotificationParam::new(token.clone(), progress as f64);
    param.message = Some(text);
    matches!(
        tokio::time::timeout(SEND_TIMEOUT, peer.notify_progress(param)).await,
        Ok(Ok(()))
    )
}

/// A nested-call event as a message: its kind and ids, an update's value (or its size, when
/// larger than [`MAX_PART_BYTES`]), an end's outcome.
fn event_message(event: &NestedCallEvent) -> (Kind, Map<String, Value>) {
    let mut message = Map::new();
    let (kind, nested_call_id, catalog_id) = match event {
        NestedCallEvent::Start {
            nested_call_id,
            catalog_id,
            ..
        } => {
            message.insert("event".into(), "start".into());
            (Kind::Lasting, nested_call_id, catalog_id)
        }
        NestedCallEvent::Update {
            nested_call_id,
            catalog_id,
            update,
            ..
        } => {
            message.insert("event".into(), "update".into());
            let bytes = serde_json::to_string(update).map_or(0, |text| text.len());
            if bytes <= MAX_PART_BYTES {
                message.insert("update".into(), update.clone());
            } else {
                message.insert("updateBytes".into(), bytes.into());
            }
            (Kind::Passing, nested_call_id, catalog_id)
        }
        NestedCallEvent::End {
            nested_call_id,
            catalog_id,
            outcome,
            ..
        } => {
            message.insert("event".into(), "end".into());
            let (status, error) = match outcome {
                NestedCallOutcome::Ok => ("ok", None),
                NestedCallOutcome::Error(error) => ("error", Some(error)),
                NestedCallOutcome::Cancelled => ("cancelled", None),
            };
            message.insert("outcome".into(), status.into());
            if let Some(error) = error {
                message.insert("error".into(), cut(error).into());
            }
            (Kind::Lasting, nested_call_id, catalog_id)
        }
    };
    message.insert("nestedCallId".into(), cut(nested_call_id).into());
    message.insert("catalogId".into(), cut(catalog_id).into());
    (kind, message)
}

/// An output item as a message: its text cut to [`MAX_PART_BYTES`], or its JSON value (or its
/// size, when larger).
fn output_message(item: &OutputItem) -> Map<String, Value> {
    let mut message = Map::new();
    message.insert("event".into(), "output".into());
    let item = match item {
        OutputItem::Text { text } if text.len() <= MAX_PART_BYTES => {
            json!({ "type": "text", "text": text })
        }
        OutputItem::Text { text } => {
            json!({ "type": "text", "text": cut(text), "textBytes": text.len() })
        }
        OutputItem::Json { value } => {
            let bytes = serde_json::to_string(value).map_or(0, |text| text.len());
            if bytes <= MAX_PART_BYTES {
                json!({ "type": "json", "value": value })
            } else {
                json!({ "type": "json", "valueBytes": bytes })
            }
        }
    };
    message.insert("item".into(), item);
    message
}

/// `text` cut to at most [`MAX_PART_BYTES`] at a character boundary.
fn cut(text: &str) -> &str {
    if text.len() <= MAX_PART_BYTES {
        return text;
    }
    let mut end = MAX_PART_BYTES;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    text.get(..end).unwrap_or_default()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn update(n: usize) -> NestedCallEvent {
        NestedCallEvent::Update {
            parent_call_id: "c".into(),
            nested_call_id: "c/1".into(),
            catalog_id: "openclaw:core:t".into(),
            update: json!(n),
        }
    }

    fn end() -> NestedCallEvent {
        NestedCallEvent::End {
            parent_call_id: "c".into(),
            nested_call_id: "c/1".into(),
            catalog_id: "openclaw:core:t".into(),
            outcome: NestedCallOutcome::Error("é".repeat(MAX_PART_BYTES)),
        }
    }

    #[test]
    fn a_full_queue_keeps_ends_over_updates_and_counts_what_it_dropped() {
        let progress = Progress {
            queue: Mutex::new(Queue::default()),
            wake: Notify::new(),
        };
        for n in 0..MAX_QUEUED_EVENTS + 10 {
            progress.on_event(&update(n));
        }
        progress.on_event(&end());
        let queue = progress.lock();
        assert_eq!(queue.events.len(), MAX_QUEUED_EVENTS);
        assert_eq!(
            queue.dropped, 11,
            "ten updates past the bound and one for the end"
        );
        let (kind, last) = queue.events.back().expect("the end is queued");
        assert!(*kind == Kind::Lasting);
        assert_eq!(last["event"], "end");
        assert!(
            last["error"]
                .as_str()
                .is_some_and(|e| e.len() <= MAX_PART_BYTES)
        );
    }

    #[test]
    fn large_parts_are_cut_or_replaced_by_their_size() {
        let big = OutputItem::Text {
            text: "x".repeat(10 * MAX_PART_BYTES),
        };
        let message = output_message(&big);
        assert_eq!(message["item"]["textBytes"], 10 * MAX_PART_BYTES);
        let value = OutputItem::Json {
            value: json!(["y".repeat(MAX_PART_BYTES)]),
        };
        assert!(output_message(&value)["item"]["valueBytes"].as_u64() > Some(0));
        let (_, message) = event_message(&NestedCallEvent::Update {
            parent_call_id: "c".into(),
            nested_call_id: "c/1".into(),
            catalog_id: "t".into(),
            update: json!("z".repeat(MAX_PART_BYTES)),
        });
        assert!(message.get("update").is_none());
        assert!(serde_json::to_string(&message).unwrap().len() < 2 * MAX_PART_BYTES);
    }
}
