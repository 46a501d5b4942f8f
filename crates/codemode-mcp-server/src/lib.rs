//! Serves code mode as an MCP server: any [`CodeMode`] becomes an MCP server whose tools are
//! exactly the model-visible surface of code mode (`exec`, `wait` and the kept direct-only
//! tools), over stdio or streamable HTTP (endpoint [`MCP_PATH`]).
//!
//! Each MCP client session gets its own [`CodeModeSession`](codemode_core::CodeModeSession),
//! activated from the host's [`ToolSource`] when the session first needs it; a `runId` of one
//! session cannot be resumed from another. When a session ends (the stdio client exits, the
//! HTTP session is deleted or idles out), its suspended runs are dropped and their host work is
//! cancelled. `exec` and `wait` results go back as tool results: the result JSON (`CodeModeResult::to_json`) as
//! `structuredContent` and as text, `isError: true` for a failed run. A request that carries a
//! `progressToken` gets progress notifications while it runs (nested calls, `cx.update` values,
//! output items; rate-limited and bounded, see [`PROGRESS_INTERVAL`]), and
//! [`CodeModeServer::serve_metrics`] serves the server's metrics as Prometheus text.
//! Each `tools/call` runs in a `mcp_call_tool` span that continues the client's W3C trace
//! context (`_meta.traceparent`), exported when the host built codemode-core with `otel` and
//! installed an exporter; this crate knows no OpenTelemetry itself.
//!
//! This crate is the only one that knows rmcp's SERVER side (the client side stays in
//! `codemode-mcp`), and the only one that knows axum; no rmcp or axum type appears in its API.
//! It knows nothing about where the tools come from (demo catalog, MCP servers), QuickJS,
//! TypeScript or the CLI: the host hands it a [`CodeMode`] and a [`ToolSource`].
//! HTTP security (loopback hosts, `Origin` validation, bearer token, body and session bounds,
//! connection timeouts and the cap on unauthenticated connections)
//! is configured by [`HttpOptions`]. Runs on Tokio. No feature flags.
#![forbid(unsafe_code)]

mod authority;
mod connections;
mod handler;
mod http;
mod message;
mod metrics;
mod metrics_http;
mod progress;
mod stdio;

use std::net::SocketAddr;
use std::sync::Arc;

use codemode_core::{ActivationRequest, AgentRunContext, CodeMode};
use serde_json::Value;
use tokio::sync::Semaphore;
use tokio_util::sync::CancellationToken;

pub use http::{
    DEFAULT_CONNECTION_IDLE, DEFAULT_HEADER_TIMEOUT, DEFAULT_MAX_BODY_BYTES,
    DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS, DEFAULT_SESSION_IDLE, DEFAULT_SESSION_RETENTION,
    HttpOptions, MCP_PATH,
};
pub use metrics_http::{
    DEFAULT_MAX_METRICS_CONNECTIONS, DEFAULT_METRICS_TIMEOUT, MAX_HEAD_BYTES, METRICS_PATH,
    MetricsOptions,
};
pub use progress::{MAX_PART_BYTES, MAX_QUEUED_EVENTS, PROGRESS_INTERVAL, SEND_TIMEOUT};

/// Default bound on concurrent client sessions ([`CodeModeServer::max_sessions`]).
pub const DEFAULT_MAX_SESSIONS: usize = 64;

/// Default bound on the suspended runs one session keeps
/// ([`CodeModeServer::max_parked_runs_per_session`]). The snapshot store of a `CodeMode` holds
/// at most 64 suspended runs for all sessions together; this keeps one session from taking
/// them all, and the fair share keeps several from taking them all: when the store is full, a
/// session holding fewer than its share (64 divided among the sessions that hold suspended
/// runs, itself included) gets room at its next `exec` or `wait`, by the cancellation of the
/// oldest run of the session holding the most, if that holds more than its share.
pub const DEFAULT_MAX_PARKED_RUNS_PER_SESSION: usize = 16;

/// Where a session's tools come from: asked once per client session, when it activates, so a
/// host whose tools change (an upstream's `tools/list_changed`) serves the new list to the
/// sessions that activate afterwards.
pub trait ToolSource: Send + Sync + 'static {
    /// The effective tools of a session that activates now, with its run context (the server
    /// fills in a fresh session id and agent-run id per client session).
    fn activation_request(&self, run: AgentRunContext) -> ActivationRequest;

    /// Calls a direct-only tool (a model-visible tool other than `exec` and `wait`) by its
    /// name. The default refuses: override it when the host has direct-only tools.
    fn call_direct<'a>(&'a self, name: &'a str, input: Value) -> DirectCall<'a> {
        let _ = input;
        Box::pin(async move { Err(format!("direct-only tool `{name}` is not served here")) })
    }
}

impl<F> ToolSource for F
where
    F: Fn(AgentRunContext) -> ActivationRequest + Send + Sync + 'static,
{
    fn activation_request(&self, run: AgentRunContext) -> ActivationRequest {
        self(run)
    }
}

/// The future of [`ToolSource::call_direct`]: the tool's result, or the message the client sees.
pub type DirectCall<'a> =
    std::pin::Pin<Box<dyn std::future::Future<Output = Result<Value, String>> + Send + 'a>>;

/// The error of a server that could not start or stopped on an I/O failure.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ServeError {
    /// The MCP handshake with the client failed.
    #[error("MCP handshake failed: {0}")]
    Handshake(String),
    /// Binding or serving the HTTP listener failed.
    #[error("HTTP server on {addr}: {source}")]
    Http {
        /// The address.
        addr: String,
        /// The I/O error.
        #[source]
        source: std::io::Error,
    },
    /// The HTTP options are not usable (e.g. a non-loopback address without allowed hosts).
    #[error("{0}")]
    Options(String),
}

/// Code mode served over MCP. Cheap to clone; every clone serves the same sessions bound.
///
/// ```no_run
/// # use std::sync::Arc;
/// # use codemode_core::{ActivationRequest, CodeMode, CodeModeConfig, AgentRunContext, ToolCallContext, ToolError, ToolExecutor};
/// # struct Tools;
/// # #[async_trait::async_trait]
/// # impl ToolExecutor for Tools {
/// #     async fn execute(&self, _: &str, input: serde_json::Value, _: ToolCallContext)
/// #         -> Result<serde_json::Value, ToolError> { Ok(input) }
/// # }
/// # async fn demo(tools: Vec<codemode_catalog::ToolDescriptor>) -> Result<(), codemode_mcp_server::ServeError> {
/// let code_mode = CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), Arc::new(Tools)).build();
/// let server = codemode_mcp_server::CodeModeServer::new(
///     code_mode,
///     Arc::new(move |run: AgentRunContext| ActivationRequest::new(tools.clone()).with_agent_run(run)),
/// );
/// server.serve_stdio().await
/// # }
/// ```
#[derive(Clone)]
pub struct CodeModeServer {
    shared: Arc<ServerState>,
}

pub(crate) struct ServerState {
    pub(crate) code_mode: CodeMode,
    pub(crate) tools: Arc<dyn ToolSource>,
    pub(crate) sessions: Arc<Semaphore>,
    pub(crate) max_sessions: usize,
    pub(crate) max_parked_per_session: usize,
    pub(crate) name: String,
    pub(crate) version: String,
    /// HTTP transport session id (`Mcp-Session-Id`) -> code-mode session id, so that a DELETE
    /// ends the session's runs before it is answered.
    pub(crate) http_sessions: std::sync::Mutex<std::collections::HashMap<String, String>>,
    /// A stable session identity for every client session ([`CodeModeServer::session_key`]).
    pub(crate) session_key: Option<String>,
    /// Set while serving HTTP with restorable sessions ([`HttpOptions::restorable_sessions`]):
    /// a session's scope is then its `Mcp-Session-Id`, and closing it keeps its journals.
    pub(crate) restorable: std::sync::atomic::AtomicBool,
    /// Every open session's suspended runs, by a serial of its own: the fair share of the
    /// parked-run cap (`handler.rs`, `make_parking_room`).
    pub(crate) parked: std::sync::Mutex<std::collections::HashMap<u64, Arc<handler::ParkedRuns>>>,
    pub(crate) next_serial: std::sync::atomic::AtomicU64,
    /// What the metrics endpoint shows of the server's own calls (metrics.rs).
    pub(crate) metrics: metrics::ServerMetrics,
}

impl CodeModeServer {
    /// Serves `code_mode` with the tools of `tools`, at most [`DEFAULT_MAX_SESSIONS`] sessions.
    pub fn new(code_mode: CodeMode, tools: Arc<dyn ToolSource>) -> Self {
        Self::build(
            code_mode,
            tools,
            (DEFAULT_MAX_SESSIONS, DEFAULT_MAX_PARKED_RUNS_PER_SESSION),
            ("codemode".into(), env!("CARGO_PKG_VERSION").into()),
            None,
        )
    }

    fn build(
        code_mode: CodeMode,
        tools: Arc<dyn ToolSource>,
        (max_sessions, max_parked_per_session): (usize, usize),
        (name, version): (String, String),
        session_key: Option<String>,
    ) -> Self {
        CodeModeServer {
            shared: Arc::new(ServerState {
                code_mode,
                tools,
                sessions: Arc::new(Semaphore::new(max_sessions)),
                max_sessions,
                max_parked_per_session,
                name,
                version,
                http_sessions: Default::default(),
                session_key,
                restorable: std::sync::atomic::AtomicBool::new(false),
                parked: Default::default(),
                next_serial: std::sync::atomic::AtomicU64::new(0),
                metrics: Default::default(),
            }),
        }
    }

    /// Gives every client session the same stable identity `key` (its session id, session key
    /// and agent-run id), instead of a fresh one: with a journaled [`CodeMode`]
    /// (`CodeModeBuilder::journal`), a client of a restarted server, or of another server
    /// sharing the journal store, resumes the runs of an earlier session with `wait`. A keyed
    /// session that closes keeps its runs' journals (until their TTL); it only drops their live
    /// VMs. Meant for stdio, where one client owns the server.
    #[must_use]
    pub fn session_key(self, key: impl Into<String>) -> Self {
        let shared = &self.shared;
        Self::build(
            shared.code_mode.clone(),
            Arc::clone(&shared.tools),
            (shared.max_sessions, shared.max_parked_per_session),
            (shared.name.clone(), shared.version.clone()),
            Some(key.into()),
        )
    }

    /// Bounds concurrent client sessions (default [`DEFAULT_MAX_SESSIONS`]); a client past the
    /// bound gets a clear error and no session. A bound of 0 is taken as 1.
    #[must_use]
    pub fn max_sessions(self, max: usize) -> Self {
        let shared = &self.shared;
        Self::build(
            shared.code_mode.clone(),
            Arc::clone(&shared.tools),
            (max.max(1), shared.max_parked_per_session),
            (shared.name.clone(), shared.version.clone()),
            shared.session_key.clone(),
        )
    }

    /// Bounds the suspended runs one session keeps (default
    /// [`DEFAULT_MAX_PARKED_RUNS_PER_SESSION`]): when a run of the session parks past the
    /// bound, its oldest suspended run is cancelled (a later `wait` on it finds it unavailable).
    /// A bound of 0 is taken as 1.
    #[must_use]
    pub fn max_parked_runs_per_session(self, max: usize) -> Self {
        let shared = &self.shared;
        Self::build(
            shared.code_mode.clone(),
            Arc::clone(&shared.tools),
            (shared.max_sessions, max.max(1)),
            (shared.name.clone(), shared.version.clone()),
            shared.session_key.clone(),
        )
    }

    /// The server name and version sent in `initialize` (default: `codemode` and this crate's).
    #[must_use]
    pub fn server_info(self, name: impl Into<String>, version: impl Into<String>) -> Self {
        let shared = &self.shared;
        Self::build(
            shared.code_mode.clone(),
            Arc::clone(&shared.tools),
            (shared.max_sessions, shared.max_parked_per_session),
            (name.into(), version.into()),
            shared.session_key.clone(),
        )
    }

    /// The code mode being served.
    pub fn code_mode(&self) -> &CodeMode {
        &self.shared.code_mode
    }

    /// Client sessions currently open.
    pub fn open_sessions(&self) -> usize {
        self.shared.max_sessions - self.shared.sessions.available_permits()
    }

    /// Serves one client over this process's stdin and stdout, until the client closes it.
    /// Its suspended runs are dropped when it returns.
    pub async fn serve_stdio(&self) -> Result<(), ServeError> {
        let (stdin, stdout) = rmcp::transport::stdio();
        self.serve_io(stdin, stdout).await
    }

    /// Serves one client over any byte stream pair (newline-delimited JSON-RPC, as stdio), until
    /// the client closes it. Its suspended runs are dropped when it returns.
    pub async fn serve_io<R, W>(&self, read: R, write: W) -> Result<(), ServeError>
    where
        R: tokio::io::AsyncRead + Send + Unpin + 'static,
        W: tokio::io::AsyncWrite + Send + Unpin + 'static,
    {
        handler::serve_io(&self.shared, read, write).await
    }

    /// Binds `addr` and serves this server's metrics, Prometheus text at [`METRICS_PATH`],
    /// until `shutdown` is cancelled: its `exec` and `wait` calls, code mode's counters
    /// (nested calls, VM builds, worker processes, journal commits) and gauges (parked runs,
    /// memory budget). A non-loopback `addr` is refused unless
    /// [`MetricsOptions::allow_non_loopback`]; there is no token (`docs/security.md` says why).
    /// `on_bound` receives the bound address (useful with port 0).
    pub async fn serve_metrics(
        &self,
        addr: SocketAddr,
        options: MetricsOptions,
        shutdown: CancellationToken,
        on_bound: impl FnOnce(SocketAddr) + Send,
    ) -> Result<(), ServeError> {
        metrics_http::serve(&self.shared, addr, options, shutdown, on_bound).await
    }

    /// Binds `addr` and serves MCP over streamable HTTP at [`MCP_PATH`] until `shutdown` is
    /// cancelled. `on_bound` receives the bound address (useful with port 0).
    pub async fn serve_http(
        &self,
        addr: SocketAddr,
        options: HttpOptions,
        shutdown: CancellationToken,
        on_bound: impl FnOnce(SocketAddr) + Send,
    ) -> Result<(), ServeError> {
        http::serve(&self.shared, addr, options, shutdown, on_bound).await
    }
}
