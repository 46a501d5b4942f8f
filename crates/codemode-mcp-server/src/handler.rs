//! One MCP client session: rmcp's `ServerHandler` over a lazily activated `CodeModeSession`.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, OnceLock, PoisonError};

use codemode_core::{Activation, AgentRunContext, CodeModeResult, CodeModeSession};
use rmcp::model::{
    CallToolRequestParams, CallToolResponse, CallToolResult, ContentBlock, Implementation,
    ListToolsResult, NumberOrString, PaginatedRequestParams, ServerCapabilities, ServerConfig,
    Tool,
};
use rmcp::service::RequestContext;
use rmcp::{ErrorData, RoleServer, ServerHandler, ServiceExt as _};
use serde_json::Value;
use tokio::sync::OwnedSemaphorePermit;
use tracing::Instrument as _;

use crate::metrics::Call;
use crate::progress::ProgressSender;
use crate::{ServeError, ServerState};

/// What the client sees when it is past the session bound.
pub(crate) fn too_many_sessions(max: usize) -> String {
    format!("too many MCP sessions: this server allows {max} at a time; close one and retry")
}

/// What the state store keeps for an HTTP session id (`Mcp-Session-Id`): its SHA-256, in hex.
/// The id is the session's only credential (with the bearer token, when one is asked for), so
/// a reader of the store must not find it there: the session's row is keyed by this digest and
/// its runs' scope is `mcp_<digest>`.
pub(crate) fn session_digest(session_id: &str) -> String {
    use sha2::Digest as _;
    let digest = sha2::Sha256::digest(session_id.as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// The state of one client session. Dropping it ends the session: its suspended runs are
/// dropped and their host work cancelled.
pub(crate) struct SessionHandler {
    shared: Arc<ServerState>,
    /// `mcp_<uuid>`: the session id and agent-run id of every run of this session.
    id: String,
    activation: OnceLock<Result<CodeModeSession, String>>,
    /// The HTTP transport's session id, once a request carried it.
    http_session: OnceLock<String>,
    /// The scope of this session's runs (session id, session key and agent-run id), fixed at
    /// its first tool request: `mcp_<SHA-256 of its Mcp-Session-Id>` when sessions are restorable (a restored
    /// session finds its runs again), else [`SessionHandler::id`].
    scope: OnceLock<String>,
    /// This session's suspended runs, also in the server's registry (its fair share).
    parked: Arc<ParkedRuns>,
    /// This session's key in [`ServerState::parked`].
    serial: u64,
    _permit: OwnedSemaphorePermit,
}

/// The suspended runs of one session, as the server's fair share of the parked-run cap sees
/// them.
#[derive(Default)]
pub(crate) struct ParkedRuns {
    /// runIds, oldest first.
    runs: Mutex<VecDeque<String>>,
    /// The session, once activated: what cancels one of its runs for another session.
    session: OnceLock<CodeModeSession>,
}

impl ParkedRuns {
    fn len(&self) -> usize {
        self.runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Cancels this session's oldest suspended run.
    fn cancel_oldest(&self) -> bool {
        let oldest = self
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        match (oldest, self.session.get()) {
            (Some(run_id), Some(session)) => {
                tracing::debug!(target: "codemode", %run_id, "a suspended run was cancelled for another session's share");
                session.cancel(&run_id);
                true
            }
            _ => false,
        }
    }
}

/// The share of the parked-run cap each session is sure of when the store is full: the cap
/// divided among the sessions that hold suspended runs, `asking` included (at least one).
pub(crate) fn fair_share(cap: usize, holders: usize) -> usize {
    (cap / holders.max(1)).max(1)
}

impl SessionHandler {
    /// A new session, if the session bound allows one.
    pub(crate) fn open(shared: &Arc<ServerState>) -> Result<SessionHandler, String> {
        let permit = Arc::clone(&shared.sessions)
            .try_acquire_owned()
            .map_err(|_| too_many_sessions(shared.max_sessions))?;
        let id = shared
            .session_key
            .clone()
            .unwrap_or_else(|| format!("mcp_{}", uuid::Uuid::new_v4().simple()));
        tracing::debug!(target: "codemode", session = %id, "MCP session opened");
        let parked = Arc::new(ParkedRuns::default());
        let serial = shared
            .next_serial
            .fetch_add(1, std::sync::atomic::Ordering::Relaxed);
        shared
            .parked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .insert(serial, Arc::clone(&parked));
        Ok(SessionHandler {
            shared: Arc::clone(shared),
            id,
            activation: OnceLock::new(),
            http_session: OnceLock::new(),
            scope: OnceLock::new(),
            parked,
            serial,
            _permit: permit,
        })
    }

    /// Remembers the HTTP session id a request came with (none over stdio).
    fn note_transport(&self, context: &RequestContext<RoleServer>) {
        if self.http_session.get().is_some() {
            return;
        }
        let Some(parts) = context.extensions.get::<axum::http::request::Parts>() else {
            return;
        };
        let Some(id) = parts
            .headers
            .get("mcp-session-id")
            .and_then(|value| value.to_str().ok())
        else {
            return;
        };
        if self.http_session.set(id.to_owned()).is_ok()
            && let Ok(mut sessions) = self.shared.http_sessions.lock()
        {
            sessions.insert(id.to_owned(), self.scope().to_owned());
        }
    }

    /// The scope of this session's runs (see [`SessionHandler::scope`]'s field).
    fn scope(&self) -> &str {
        self.scope.get_or_init(|| {
            let restorable = self.shared.session_key.is_none()
                && self
                    .shared
                    .restorable
                    .load(std::sync::atomic::Ordering::Relaxed);
            match self.http_session.get() {
                Some(http) if restorable => format!("mcp_{}", session_digest(http)),
                _ => self.id.clone(),
            }
        })
    }

    fn session(&self) -> Result<&CodeModeSession, ErrorData> {
        self.activation
            .get_or_init(|| {
                let scope = self.scope().to_owned();
                let run = AgentRunContext {
                    agent_id: Some(self.shared.name.clone()),
                    agent_run_id: Some(scope.clone()),
                    session_id: Some(scope.clone()),
                    session_key: Some(scope),
                    ..AgentRunContext::default()
                };
                let request = self.shared.tools.activation_request(run);
                match self.shared.code_mode.activate(request) {
                    Ok(Activation::Active(session)) => {
                        let _ = self.parked.session.set(session.clone());
                        Ok(session)
                    }
                    Ok(Activation::Unchanged(tools)) if tools.is_empty() => {
                        Err("this code-mode server has no tools to offer".to_owned())
                    }
                    Ok(Activation::Unchanged(_)) => {
                        Err(codemode_core::messages::DISABLED.to_owned())
                    }
                    Err(error) => Err(error.to_string()),
                }
            })
            .as_ref()
            .map_err(|message| ErrorData::internal_error(message.clone(), None))
    }
}

impl SessionHandler {
    /// Keeps the count of this session's suspended runs within its bound: `waited_on` is the runId
    /// an `exec` or `wait` was about (`None` for a fresh exec), `result` what it answered.
    fn track_parked(
        &self,
        session: &CodeModeSession,
        waited_on: Option<&str>,
        result: &CodeModeResult,
    ) {
        let mut parked = self
            .parked
            .runs
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        if let Some(run_id) = waited_on
            && !matches!(result, CodeModeResult::Waiting { .. })
        {
            parked.retain(|id| id != run_id);
        }
        if let Some(run_id) = result.run_id()
            && !parked.iter().any(|id| id == run_id)
        {
            parked.push_back(run_id.to_owned());
        }
        while parked.len() > self.shared.max_parked_per_session {
            if let Some(oldest) = parked.pop_front() {
                session.cancel(&oldest);
            }
        }
    }
}

impl SessionHandler {
    /// Makes room for this session's next suspended run when the parked-run cap is reached and
    /// this session holds less than its fair share: the oldest run of the session holding the
    /// most, if that is more than its share, is cancelled. So no session keeps another from
    /// parking, whatever it parks first.
    fn make_parking_room(&self) {
        let cap = codemode_core::MAX_SUSPENDED_RUNS;
        if self.shared.code_mode.suspended_runs() < cap {
            return;
        }
        let mine = self.parked.len();
        let victim = {
            let registry = self
                .shared
                .parked
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            let holders = registry
                .iter()
                .filter(|(serial, runs)| **serial == self.serial || runs.len() > 0)
                .count();
            let share = fair_share(cap, holders);
            if mine >= share {
                return;
            }
            registry
                .values()
                .map(|runs| (runs.len(), runs))
                .filter(|(len, _)| *len > share)
                .max_by_key(|(len, _)| *len)
                .map(|(_, runs)| Arc::clone(runs))
        };
        if let Some(victim) = victim {
            victim.cancel_oldest();
        }
    }
}

impl Drop for SessionHandler {
    fn drop(&mut self) {
        self.shared
            .parked
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(&self.serial);
        tracing::debug!(target: "codemode", session = %self.id, "MCP session closed");
        let scope = self.scope().to_owned();
        if self.shared.session_key.is_some() || scope != self.id {
            // A stable identity (a session key, a restorable HTTP session) comes back: keep its
            // journals, drop only the live VMs. A DELETE has already ended a restorable one.
            self.shared.code_mode.release_session(&scope);
        } else {
            self.shared.code_mode.end_session(&scope);
        }
        if let Some(id) = self.http_session.get()
            && let Ok(mut sessions) = self.shared.http_sessions.lock()
        {
            sessions.remove(id);
        }
    }
}

/// A code-mode result as an MCP tool result: the JSON as `structuredContent` and as text.
fn tool_result(result: &CodeModeResult) -> CallToolResult {
    let json = result.to_json();
    let text = serde_json::to_string(&json).unwrap_or_else(|_| "null".into());
    let mut tool_result = match result {
        CodeModeResult::Failed { .. } => CallToolResult::error(vec![ContentBlock::text(text)]),
        _ => CallToolResult::success(vec![ContentBlock::text(text)]),
    };
    tool_result.structured_content = Some(json);
    tool_result
}

fn call_id(id: &NumberOrString) -> String {
    match id {
        NumberOrString::Number(n) => format!("mcp_call_{n}"),
        NumberOrString::String(s) => format!("mcp_call_{s}"),
    }
}

impl ServerHandler for SessionHandler {
    fn get_info(&self) -> ServerConfig {
        ServerConfig::new(ServerCapabilities::builder().enable_tools().build())
            .with_server_info(Implementation::new(
                self.shared.name.clone(),
                self.shared.version.clone(),
            ))
            .with_instructions(
                "Code mode: write JavaScript or TypeScript for `exec`; it searches and calls \
                 the hidden tools. Answer a `waiting` result with `wait` and its runId.",
            )
    }

    async fn list_tools(
        &self,
        _request: Option<PaginatedRequestParams>,
        context: RequestContext<RoleServer>,
    ) -> Result<ListToolsResult, ErrorData> {
        self.note_transport(&context);
        let session = self.session()?;
        let tools = session
            .model_tools()
            .iter()
            .map(|tool| {
                let schema = match &tool.parameters {
                    Value::Object(schema) => schema.clone(),
                    _ => serde_json::Map::from_iter([("type".to_owned(), "object".into())]),
                };
                Tool::new(tool.name.clone(), tool.description.clone(), schema)
            })
            .collect();
        Ok(ListToolsResult::with_all_items(tools))
    }

    async fn call_tool(
        &self,
        request: CallToolRequestParams,
        context: RequestContext<RoleServer>,
    ) -> Result<CallToolResponse, ErrorData> {
        self.note_transport(&context);
        let session = self.session()?;
        let span = request_span(&request, &context);
        let input = Value::Object(request.arguments.unwrap_or_default());
        let call_id = call_id(&context.id);
        let name = request.name.as_ref();
        // A `progressToken` in `_meta` asks for progress (progress.rs); anything but a string or
        // a number there is no token.
        let progress = matches!(name, "exec" | "wait")
            .then(|| context.meta.get_progress_token())
            .flatten()
            .map(|token| ProgressSender::start(context.peer.clone(), token));
        let observed;
        let session = match &progress {
            Some(progress) => {
                observed = session.observed(progress.observer());
                &observed
            }
            None => session,
        };
        let work = async {
            match name {
                "exec" => {
                    self.make_parking_room();
                    let timer = self.shared.metrics.start(Call::Exec);
                    let result = session.exec(&call_id, &input).await;
                    timer.finished(&result);
                    self.track_parked(session, None, &result);
                    if let Some(progress) = progress {
                        progress.finish(&result).await;
                    }
                    Ok(tool_result(&result))
                }
                "wait" => {
                    self.make_parking_room();
                    let timer = self.shared.metrics.start(Call::Wait);
                    let result = session.wait(&input).await;
                    timer.finished(&result);
                    let run_id = ["runId", "run_id"]
                        .iter()
                        .find_map(|key| input.get(*key).and_then(Value::as_str));
                    self.track_parked(session, run_id, &result);
                    if let Some(progress) = progress {
                        progress.finish(&result).await;
                    }
                    Ok(tool_result(&result))
                }
                _ if session.model_tools().iter().any(|tool| tool.name == name) => {
                    Ok(match self.shared.tools.call_direct(name, input).await {
                        Ok(value) => {
                            let text = serde_json::to_string(&value).unwrap_or_default();
                            let mut result =
                                CallToolResult::success(vec![ContentBlock::text(text)]);
                            result.structured_content = Some(value);
                            result
                        }
                        Err(message) => CallToolResult::error(vec![ContentBlock::text(message)]),
                    })
                }
                _ => Err(ErrorData::invalid_params(
                    format!("unknown tool `{name}`: this server offers exec and wait"),
                    None,
                )),
            }
        };
        // A cancelled request (the client's `notifications/cancelled`, or the session closing)
        // drops the call: a running VM stops, and a run not yet parked is never parked.
        tokio::select! {
            biased;
            () = context.ct.cancelled() => Err(ErrorData::internal_error("request cancelled", None)),
            result = work.instrument(span) => result.map(CallToolResponse::from),
        }
    }
}

/// Serves one session over a byte stream pair until the client closes it.
pub(crate) async fn serve_io<R, W>(
    shared: &Arc<ServerState>,
    read: R,
    write: W,
) -> Result<(), ServeError>
where
    R: tokio::io::AsyncRead + Send + Unpin + 'static,
    W: tokio::io::AsyncWrite + Send + Unpin + 'static,
{
    let handler = SessionHandler::open(shared).map_err(ServeError::Handshake)?;
    let id = handler.id.clone();
    let running = handler
        .serve(crate::stdio::ScreenedIo::new(
            read,
            write,
            crate::stdio::MAX_LINE_BYTES,
        ))
        .await
        .map_err(|error| ServeError::Handshake(error.to_string()))?;
    let _ = running.waiting().await;
    // The session has ended: drop its runs now. A call still finishing on another task cannot
    // park after this (its request was cancelled), and the handler's `Drop` repeats this.
    shared.code_mode.end_session(&id);
    Ok(())
}

/// The span of one `tools/call`. A client's W3C trace context, `_meta.traceparent` (in the
/// request's params or as rmcp hands it over in the context), is continued by it and so by the
/// run's spans under it; a malformed one is ignored (codemode-core's `trace`, which exports
/// only with its `otel` feature).
fn request_span(
    request: &CallToolRequestParams,
    context: &RequestContext<RoleServer>,
) -> tracing::Span {
    let span = tracing::debug_span!(target: "codemode", "mcp_call_tool", tool = %request.name);
    let traceparent = context
        .meta
        .get("traceparent")
        .or_else(|| request.meta.as_ref()?.get("traceparent"))
        .and_then(Value::as_str);
    if let Some(traceparent) = traceparent {
        codemode_core::trace::continue_trace(&span, traceparent);
    }
    span
}
