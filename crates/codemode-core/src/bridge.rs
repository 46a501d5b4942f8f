//! The host side of the bridge: every guest call that leaves the VM lands here and reaches the
//! host through ONE path, [`ToolExecutor::execute`] with an exact catalog id.

use std::collections::HashMap;
use std::panic::AssertUnwindSafe;
use std::sync::atomic::Ordering;
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use codemode_catalog::McpCapability;
use codemode_sandbox::{BridgeHost, BridgeRequest, PendingCall};
use futures::FutureExt;
use serde_json::Value;
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::result::PendingToolCall;
use crate::state::{Counters, MCP_CALL, MCP_CAPABILITY, NAMESPACE_CALL, SessionState, TOOLS_CALL};
use codemode_durable::Before;
use codemode_host::{NestedCallEvent, NestedCallOutcome, ToolCallContext};

/// Refusal of a side-effecting tool in a restart-safe run: such a run may only make read-only
/// calls, so that recovery can run it again without repeating a side effect.
pub const RESTART_SAFE_TOOLS: &str = "restart-safe code mode cannot call side-effecting tools.";

/// The guest's error for a nested call that did not settle within `toolCallTimeoutMs`: it names
/// the tool and the limit.
///
/// ```
/// assert_eq!(
///     codemode_core::messages::tool_call_timed_out("openclaw:core:slow", 1000),
///     "tool openclaw:core:slow did not answer within toolCallTimeoutMs (1000 ms); the call was cancelled.",
/// );
/// ```
pub fn tool_call_timed_out(catalog_id: &str, limit_ms: u64) -> String {
    format!(
        "tool {catalog_id} did not answer within toolCallTimeoutMs ({limit_ms} ms); the call was cancelled."
    )
}

/// The bridge host of one code-mode run.
pub(crate) struct RunHost {
    pub(crate) session: Arc<SessionState>,
    pub(crate) parent_call_id: String,
    /// Nested call ids are `<nested_prefix>/<n>`: the parent call id, or for a recovered run
    /// the parent call id and a fresh recovery token.
    pub(crate) nested_prefix: String,
    pub(crate) restart_safe: bool,
    pub(crate) counters: Arc<Counters>,
    pub(crate) cancellation: CancellationToken,
    /// Calls in flight: bridge request id -> (nested call id, exact catalog id).
    pub(crate) in_flight: Mutex<HashMap<u64, (String, String, std::time::Instant)>>,
    /// The run's journal, when the host keeps durable runs (codemode-durable).
    pub(crate) journal: Option<Arc<codemode_durable::RunJournal>>,
    /// How the run ends early: terminated, or past `maxRunSeconds` (run_life.rs).
    pub(crate) life: Arc<crate::run_life::RunLife>,
    /// The observer of the `exec` or `wait` driving the run now, if it has one (observe.rs).
    pub(crate) observer: Arc<crate::observe::LegObserver>,
}

#[async_trait]
impl BridgeHost for RunHost {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        let request_id = request.id.0;
        let method = request.method.clone();
        let (catalog_id, input) = self.resolve(request)?;
        let span = crate::trace::call_span(&catalog_id, &method, &input);
        let journaled = match &self.journal {
            Some(journal) => {
                let side_effecting = !self.read_only(&catalog_id);
                let before = journal
                    .before_call(request_id, &method, &catalog_id, &input, side_effecting)
                    .instrument(span.clone())
                    .await?;
                match before {
                    Before::Answer(answer) => return crate::trace::call_ended(&span, true, answer),
                    Before::Live(call) => Some((Arc::clone(journal), call)),
                }
            }
            None => None,
        };
        let sequence = self.counters.call.fetch_add(1, Ordering::Relaxed) + 1;
        let nested_call_id = format!("{}/{sequence}", self.nested_prefix);
        span.record("nested_call_id", nested_call_id.as_str());
        self.track(
            request_id,
            Some((nested_call_id.clone(), catalog_id.clone())),
        );
        let (result, timed_out) = self
            .execute(nested_call_id, catalog_id, input)
            .instrument(span.clone())
            .await;
        self.track(request_id, None);
        if let Some((journal, call)) = journaled {
            let _entered = span.enter();
            if timed_out {
                // As after a crash: nobody knows whether it took effect.
                journal.after_timeout(call, &result);
            } else {
                journal.after_call(call, &result);
            }
        }
        crate::trace::call_ended(&span, false, result)
    }

    fn call_sync(&self, request: BridgeRequest) -> Result<Value, String> {
        crate::guest::answer_sync(&self.session, &self.counters, request)
    }

    /// A journaled run records (or replays) its clock, random source and answer order.
    fn tape(&self) -> Option<Arc<dyn codemode_sandbox::Tape>> {
        self.journal
            .clone()
            .map(|journal| journal as Arc<dyn codemode_sandbox::Tape>)
    }

    /// Output as the VM produces it, to the call's observer; none while the run is replayed
    /// (what was delivered before is not shown again).
    fn on_output(&self, items: &[codemode_sandbox::OutputItem]) {
        if self
            .journal
            .as_ref()
            .is_some_and(|journal| journal.is_replay())
        {
            return;
        }
        self.observer.output(items);
    }
}

impl RunHost {
    /// Turns a bridge request into (exact catalog id, input), checking everything the guest sent.
    /// The request is consumed: its input moves to the executor, never copied.
    fn resolve(&self, request: BridgeRequest) -> Result<(String, Value), String> {
        let mut args = request.args;
        let text_arg = |args: &[Value], index: usize| -> Option<String> {
            args.get(index).and_then(Value::as_str).map(str::to_owned)
        };
        let take_object_arg = |args: &mut Vec<Value>, index: usize| -> Value {
            match args.get_mut(index).map(Value::take) {
                None | Some(Value::Null) => Value::Object(Default::default()),
                Some(input) => input,
            }
        };
        match request.method.as_str() {
            TOOLS_CALL => {
                let id = text_arg(&args, 0).ok_or("tools.call needs a tool id string.")?;
                let entry = self
                    .session
                    .catalog
                    .lookup(&id)
                    .map_err(|e| e.to_string())?;
                self.check_restart_safe(entry.read_only)?;
                Ok((entry.id.clone(), take_object_arg(&mut args, 1)))
            }
            MCP_CALL => {
                let id = text_arg(&args, 0).ok_or("malformed MCP call.")?;
                let id = id.as_str();
                let decls = self
                    .session
                    .mcp
                    .as_ref()
                    .ok_or("no MCP servers are visible.")?;
                let entry = self
                    .session
                    .catalog
                    .get(id)
                    .ok_or_else(|| format!("Unknown tool id: {id}"))?;
                self.check_restart_safe(entry.read_only)?;
                let input = decls
                    .prepare_call(id, args.get(1..).unwrap_or_default())
                    .map_err(|e| e.to_string())?;
                Ok((entry.id.clone(), input))
            }
            MCP_CAPABILITY => {
                // A kind of its own, not a catalog entry: only the ids activation derived from
                // the host's capability flags of a visible server, through the same restart-safe
                // check as tools (they only read, so they pass it).
                let id = text_arg(&args, 0).ok_or("malformed MCP call.")?;
                let capability = McpCapability::parse_id(&id)
                    .filter(|_| self.session.mcp_capability_ids.contains(&id))
                    .map(|(_, capability)| capability)
                    .ok_or_else(|| format!("Unknown tool id: {id}"))?;
                self.check_restart_safe(capability.read_only())?;
                let input = take_object_arg(&mut args, 1);
                if !input.is_object() {
                    return Err("MCP resources and prompts take one object argument.".into());
                }
                Ok((id, input))
            }
            NAMESPACE_CALL => {
                let namespace = text_arg(&args, 0).ok_or("malformed namespace call.")?;
                let path = text_arg(&args, 1).ok_or("malformed namespace call.")?;
                let target = self
                    .session
                    .namespaces
                    .dispatch(
                        &namespace,
                        &path,
                        args.get(2..).unwrap_or_default(),
                        self.restart_safe,
                    )
                    .map_err(|e| e.to_string())?;
                Ok((target.catalog_id, target.input))
            }
            other => Err(format!("unknown code mode bridge method `{other}`.")),
        }
    }

    /// Whether a resolved call only reads: a catalog tool's flag, or an MCP capability (they
    /// only list and read). Anything else counts as side-effecting.
    fn read_only(&self, id: &str) -> bool {
        match self.session.catalog.get(id) {
            Some(entry) => entry.read_only,
            None => {
                McpCapability::parse_id(id).is_some_and(|(_, capability)| capability.read_only())
            }
        }
    }

    /// The one restart-safe rule, for every kind of nested call: a restart-safe run
    /// may only make calls that only read.
    fn check_restart_safe(&self, read_only: bool) -> Result<(), String> {
        if self.restart_safe && !read_only {
            return Err(RESTART_SAFE_TOOLS.into());
        }
        Ok(())
    }

    fn track(&self, request_id: u64, call: Option<(String, String)>) {
        if let Ok(mut in_flight) = self.in_flight.lock() {
            match call {
                Some((nested_call_id, catalog_id)) => in_flight.insert(
                    request_id,
                    (nested_call_id, catalog_id, std::time::Instant::now()),
                ),
                None => in_flight.remove(&request_id),
            };
        }
    }

    /// The still-unsettled calls as the `waiting` result names them: nested call id and catalog id.
    pub(crate) fn pending(&self, pending: Vec<PendingCall>) -> Vec<PendingToolCall> {
        let in_flight = self
            .in_flight
            .lock()
            .map(|map| map.clone())
            .unwrap_or_default();
        pending
            .into_iter()
            .map(|call| match in_flight.get(&call.id.0) {
                Some((nested_call_id, catalog_id, since)) => PendingToolCall {
                    id: nested_call_id.clone(),
                    method: call.method,
                    tool_id: Some(catalog_id.clone()),
                    pending_ms: Some(
                        u64::try_from(since.elapsed().as_millis()).unwrap_or(u64::MAX),
                    ),
                },
                None => PendingToolCall {
                    id: format!("{}/request-{}", self.nested_prefix, call.id),
                    method: call.method,
                    tool_id: None,
                    pending_ms: None,
                },
            })
            .collect()
    }

    /// Runs one nested call through the executor, reporting start/update/end events. A call not
    /// settled within `toolCallTimeoutMs` is cancelled (its token fires and its future is
    /// dropped) and rejects with [`tool_call_timed_out`]; the flag says it timed out.
    async fn execute(
        &self,
        nested_call_id: String,
        catalog_id: String,
        input: Value,
    ) -> (Result<Value, String>, bool) {
        let events = Arc::clone(&self.session.events);
        let event_ids = (
            self.parent_call_id.clone(),
            nested_call_id.clone(),
            catalog_id.clone(),
        );
        let updates = {
            let events = Arc::clone(&events);
            let observer = Arc::clone(&self.observer);
            let (parent_call_id, nested_call_id, catalog_id) = event_ids.clone();
            Arc::new(move |update: Value| {
                let event = NestedCallEvent::Update {
                    parent_call_id: parent_call_id.clone(),
                    nested_call_id: nested_call_id.clone(),
                    catalog_id: catalog_id.clone(),
                    update,
                };
                observer.event(&event);
                events.on_event(event);
            })
        };
        let call_token = self.cancellation.child_token();
        let context = ToolCallContext::new(
            self.session.agent_run.clone(),
            self.parent_call_id.clone(),
            nested_call_id.clone(),
            call_token.clone(),
        )
        .with_updates(updates);
        tracing::debug!(target: "codemode", %nested_call_id, %catalog_id, "nested call start");
        let start = NestedCallEvent::Start {
            parent_call_id: event_ids.0.clone(),
            nested_call_id: event_ids.1.clone(),
            catalog_id: event_ids.2.clone(),
        };
        self.observer.event(&start);
        events.on_event(start);
        // Ends the call as `Cancelled` if this future is dropped (the run was dropped mid-call).
        let mut end = EndEvent {
            events: Arc::clone(&events),
            observer: Arc::clone(&self.observer),
            ids: Some(event_ids),
            outcome: NestedCallOutcome::Cancelled,
            started: std::time::Instant::now(),
        };
        let executor = Arc::clone(&self.session.executor);
        let call = executor.execute(&catalog_id, input, context);
        let limit = self.session.config.tool_call_timeout();
        let settled = tokio::time::timeout(limit, AssertUnwindSafe(call).catch_unwind()).await;
        let timed_out = settled.is_err();
        let result = match settled {
            // The sandbox refuses a result nested deeper than its one JSON depth bound, without
            // recursing, when it settles the answer into the VM.
            Ok(Ok(Ok(value))) => Ok(value),
            Ok(Ok(Err(error))) => Err(error.message),
            Ok(Err(_panic)) => Err(format!(
                "tool {catalog_id} failed: the host tool executor panicked."
            )),
            Err(_elapsed) => {
                // The call's future is already dropped; the token tells a host that handed
                // the work elsewhere.
                call_token.cancel();
                Err(tool_call_timed_out(
                    &catalog_id,
                    self.session.config.tool_call_timeout_ms(),
                ))
            }
        };
        end.outcome = match &result {
            Ok(_) => NestedCallOutcome::Ok,
            Err(message) => NestedCallOutcome::Error(message.clone()),
        };
        tracing::debug!(target: "codemode", %nested_call_id, ok = result.is_ok(), timed_out, "nested call end");
        (result, timed_out)
    }
}

struct EndEvent {
    events: Arc<dyn crate::EventSink>,
    observer: Arc<crate::observe::LegObserver>,
    ids: Option<(String, String, String)>,
    outcome: NestedCallOutcome,
    started: std::time::Instant,
}

impl Drop for EndEvent {
    fn drop(&mut self) {
        if let Some((parent_call_id, nested_call_id, catalog_id)) = self.ids.take() {
            let outcome = std::mem::replace(&mut self.outcome, NestedCallOutcome::Cancelled);
            crate::observe::nested_call_ended(&catalog_id, &outcome, self.started.elapsed());
            let end = NestedCallEvent::End {
                parent_call_id,
                nested_call_id,
                catalog_id,
                outcome,
            };
            self.observer.event(&end);
            self.events.on_event(end);
        }
    }
}
