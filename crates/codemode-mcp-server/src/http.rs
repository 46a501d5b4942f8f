//! Streamable HTTP: rmcp's session-keeping service at [`MCP_PATH`] behind a guard that checks
//! the bearer token and the session bound before anything runs.

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::Duration;

use axum::extract::{Request, State};
use axum::http::{HeaderValue, Method, StatusCode, header};
use axum::middleware::{self, Next};
use axum::response::{IntoResponse, Response};
use codemode_journal::JournalStore;
use rmcp::transport::streamable_http_server::session::local::LocalSessionManager;
use rmcp::transport::streamable_http_server::session::{
    SessionState, SessionStore, SessionStoreError,
};
use rmcp::transport::streamable_http_server::{StreamableHttpServerConfig, StreamableHttpService};
use tokio_util::sync::CancellationToken;

use crate::authority::{self, AllowedOrigin, Authority};
use crate::connections::{self, ConnectionLimits, ConnectionTicket};
use crate::handler::{SessionHandler, session_digest, too_many_sessions};
use crate::message;
use crate::{ServeError, ServerState};

/// The endpoint path of the MCP server over HTTP.
pub const MCP_PATH: &str = "/mcp";

/// Default for [`HttpOptions::max_body_bytes`]: 2 MiB, room for the largest `exec` program
/// (1 MiB) in JSON with escapes.
pub const DEFAULT_MAX_BODY_BYTES: usize = 2 * 1024 * 1024;

/// Default for [`HttpOptions::session_idle`]: an HTTP session that sees no request for 30
/// minutes is closed, and its suspended runs dropped.
pub const DEFAULT_SESSION_IDLE: Duration = Duration::from_secs(30 * 60);

/// Default for [`HttpOptions::header_timeout`]: 30 s (hyper's own default, which `axum::serve`
/// never enabled).
pub const DEFAULT_HEADER_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for [`HttpOptions::connection_idle`]: 5 minutes, past the longest `exec` deadline
/// (60 s) and rmcp's SSE keep-alive (15 s).
pub const DEFAULT_CONNECTION_IDLE: Duration = Duration::from_secs(5 * 60);

/// Default for [`HttpOptions::max_unauthenticated_connections`].
pub const DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS: usize = 32;

/// The security options of the HTTP transport.
///
/// The defaults suit a server on a loopback address: `Host` must name a loopback host (DNS
/// rebinding defence), an `Origin` header, when a client sends one, must be a loopback origin
/// (`http` or `https`), no token is asked for. A request carries exactly one `Host` and at most
/// one `Origin`; the authority of an absolute-form target (`POST http://host/mcp`) must be
/// allowed too; origins are parsed strictly (scheme, host, optional port, nothing else). What they do not cover: TLS (put a proxy in front), rate limiting of
/// requests within a session (each `exec` is bounded by the code-mode limits instead).
#[derive(Debug, Clone)]
#[non_exhaustive]
pub struct HttpOptions {
    /// Accepted `Host` header values (names, or `name:port`). Default: `localhost`,
    /// `127.0.0.1`, `::1`. A server on a non-loopback address must list the names clients use.
    pub allowed_hosts: Vec<String>,
    /// Accepted `Origin` header values (with scheme; `:*` for any port; without a port, the
    /// scheme's default port). A request without `Origin` (not from a browser) passes; one
    /// with any other origin, or more than one `Origin`, gets 403.
    /// Default: `http` and `https` on `localhost`, `127.0.0.1` and `[::1]`, any port.
    pub allowed_origins: Vec<String>,
    /// When set, every request must carry `Authorization: Bearer <token>`, or it gets 401 and
    /// nothing runs.
    pub auth_token: Option<String>,
    /// Largest request body, in bytes (default [`DEFAULT_MAX_BODY_BYTES`]); larger gets 413,
    /// at once when the request declares its length.
    pub max_body_bytes: usize,
    /// How long an HTTP session may go without a request before it is closed (default
    /// [`DEFAULT_SESSION_IDLE`]).
    pub session_idle: Duration,
    /// Where sessions are kept so that a client returning with its `Mcp-Session-Id` to a
    /// restarted server (or another server sharing the store) goes on
    /// ([`HttpOptions::restorable_sessions`]); `None` (default): sessions live in this process.
    pub session_store: Option<Arc<dyn JournalStore>>,
    /// How long a session stays restorable after it was opened (default
    /// [`DEFAULT_SESSION_RETENTION`]).
    pub session_retention: Duration,
    /// How long a connection may take to send a request head, counted from its accept or from
    /// the end of its last response (so it also bounds a keep-alive connection's wait for its
    /// next request); past it the connection is closed (default [`DEFAULT_HEADER_TIMEOUT`]).
    /// A request's body must arrive within the same time after its head, or it gets 408.
    pub header_timeout: Duration,
    /// How long a connection may move no byte either way (a body that stalls, a client that
    /// stops reading) before it is closed (default [`DEFAULT_CONNECTION_IDLE`]).
    pub connection_idle: Duration,
    /// How many connections may be open that have not yet carried a request past the guard
    /// (the token check, or without a token the header checks); past it, the oldest of them
    /// that is over a second old is closed for the newcomer, and the oldest whatever its age
    /// when the process runs out of descriptors (default
    /// [`DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS`]; 0 is taken as 1).
    pub max_unauthenticated_connections: usize,
}

/// Default for [`HttpOptions::session_retention`]: a day.
pub const DEFAULT_SESSION_RETENTION: Duration = Duration::from_secs(24 * 60 * 60);

impl Default for HttpOptions {
    fn default() -> Self {
        HttpOptions {
            allowed_hosts: vec!["localhost".into(), "127.0.0.1".into(), "::1".into()],
            allowed_origins: vec![
                "http://localhost:*".into(),
                "http://127.0.0.1:*".into(),
                "http://[::1]:*".into(),
                "https://localhost:*".into(),
                "https://127.0.0.1:*".into(),
                "https://[::1]:*".into(),
            ],
            auth_token: None,
            max_body_bytes: DEFAULT_MAX_BODY_BYTES,
            session_idle: DEFAULT_SESSION_IDLE,
            session_store: None,
            session_retention: DEFAULT_SESSION_RETENTION,
            header_timeout: DEFAULT_HEADER_TIMEOUT,
            connection_idle: DEFAULT_CONNECTION_IDLE,
            max_unauthenticated_connections: DEFAULT_MAX_UNAUTHENTICATED_CONNECTIONS,
        }
    }
}

impl HttpOptions {
    /// Requires `Authorization: Bearer <token>` on every request.
    #[must_use]
    pub fn auth_token(mut self, token: impl Into<String>) -> Self {
        self.auth_token = Some(token.into());
        self
    }

    /// Replaces the accepted `Host` values.
    #[must_use]
    pub fn allowed_hosts(mut self, hosts: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_hosts = hosts.into_iter().map(Into::into).collect();
        self
    }

    /// Adds accepted `Origin` values.
    #[must_use]
    pub fn allow_origins(mut self, origins: impl IntoIterator<Item = impl Into<String>>) -> Self {
        self.allowed_origins
            .extend(origins.into_iter().map(Into::into));
        self
    }

    /// Sets the largest request body.
    #[must_use]
    pub fn max_body_bytes(mut self, bytes: usize) -> Self {
        self.max_body_bytes = bytes;
        self
    }

    /// Sets the idle time after which an HTTP session is closed.
    #[must_use]
    pub fn session_idle(mut self, idle: Duration) -> Self {
        self.session_idle = idle;
        self
    }

    /// Sets the header-read timeout, the idle timeout and the cap on connections not yet
    /// authenticated (see the fields).
    #[must_use]
    pub fn connection_limits(
        mut self,
        header_timeout: Duration,
        connection_idle: Duration,
        max_unauthenticated: usize,
    ) -> Self {
        self.header_timeout = header_timeout;
        self.connection_idle = connection_idle;
        self.max_unauthenticated_connections = max_unauthenticated;
        self
    }

    /// Keeps every session's `initialize` handshake in `store` (the journal store of the served
    /// `CodeMode`, so a session lives beside its runs' journals) for `retention`: a client that
    /// comes back with its `Mcp-Session-Id` to a restarted server, or to another server sharing
    /// the store, goes on in the same session, and `wait` finds its runs. A session's scope is
    /// then its `Mcp-Session-Id`, and a session that closes without a DELETE (idle, shutdown)
    /// keeps its runs' journals until their TTL; a DELETE ends it and its runs for good.
    #[must_use]
    pub fn restorable_sessions(
        mut self,
        store: Arc<dyn JournalStore>,
        retention: Duration,
    ) -> Self {
        self.session_store = Some(store);
        self.session_retention = retention;
        self
    }
}

/// rmcp's external session store over a journal store: the handshake of each session as JSON,
/// keyed by the SHA-256 of its id ([`session_digest`]), never the id itself.
struct JournalSessions {
    store: Arc<dyn JournalStore>,
    retention: Duration,
}

fn now_ms() -> i64 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

#[async_trait::async_trait]
impl SessionStore for JournalSessions {
    async fn load(&self, session_id: &str) -> Result<Option<SessionState>, SessionStoreError> {
        let key = session_digest(session_id);
        let Some(text) = self.store.load_transport_session(&key, now_ms()).await? else {
            return Ok(None);
        };
        // A row that does not parse is refused, never trusted.
        serde_json::from_str(&text)
            .map(Some)
            .map_err(|error| format!("stored MCP session {key} is corrupt: {error}").into())
    }

    async fn store(&self, session_id: &str, state: &SessionState) -> Result<(), SessionStoreError> {
        let text = serde_json::to_string(state)?;
        let now = now_ms();
        let retention = i64::try_from(self.retention.as_millis()).unwrap_or(i64::MAX);
        self.store
            .save_transport_session(
                &session_digest(session_id),
                &text,
                now,
                now.saturating_add(retention),
            )
            .await?;
        Ok(())
    }

    async fn delete(&self, session_id: &str) -> Result<(), SessionStoreError> {
        self.store
            .delete_transport_session(&session_digest(session_id))
            .await?;
        Ok(())
    }
}

#[derive(Clone)]
struct Guard {
    shared: Arc<ServerState>,
    /// `Bearer <token>`, when a token is required.
    expected_authorization: Option<Arc<[u8]>>,
    /// The allowed hosts, parsed (an empty list allows every host).
    hosts: Arc<[Authority]>,
    /// The allowed origins, parsed.
    origins: Arc<[AllowedOrigin]>,
    max_body_bytes: usize,
    /// How long a request's body may take to arrive (the header timeout).
    body_timeout: Duration,
}

impl Guard {
    /// The strict checks of `Host`, the target's authority and `Origin` (see `authority.rs`).
    #[allow(
        clippy::result_large_err,
        reason = "the error is the response, built once"
    )]
    fn check_authorities(&self, request: &Request) -> Result<(), Response> {
        let bad = |status, message: &str| Err(json_error(status, -32600, message));
        let mut hosts = request.headers().get_all(header::HOST).iter();
        let (Some(host), None) = (hosts.next(), hosts.next()) else {
            return bad(
                StatusCode::BAD_REQUEST,
                "bad request: a request carries exactly one Host header",
            );
        };
        let Some(host) = host.to_str().ok().and_then(authority::parse_authority) else {
            return bad(
                StatusCode::BAD_REQUEST,
                "bad request: malformed Host header",
            );
        };
        if !authority::host_allowed(&host, &self.hosts) {
            return bad(
                StatusCode::FORBIDDEN,
                "forbidden: Host header is not allowed",
            );
        }
        if let Some(target) = request.uri().authority() {
            let allowed = authority::parse_authority(target.as_str())
                .is_some_and(|target| authority::host_allowed(&target, &self.hosts));
            if !allowed {
                return bad(
                    StatusCode::FORBIDDEN,
                    "forbidden: the request target's host is not allowed",
                );
            }
        }
        let mut origins = request.headers().get_all(header::ORIGIN).iter();
        match (origins.next(), origins.next()) {
            (None, _) => Ok(()),
            (Some(_), Some(_)) => bad(
                StatusCode::FORBIDDEN,
                "forbidden: a request carries at most one Origin header",
            ),
            (Some(origin), None) => {
                let allowed = origin
                    .to_str()
                    .ok()
                    .and_then(authority::parse_origin)
                    .is_some_and(|origin| authority::origin_allowed(&origin, &self.origins));
                if allowed {
                    Ok(())
                } else {
                    bad(
                        StatusCode::FORBIDDEN,
                        "forbidden: Origin header is not allowed",
                    )
                }
            }
        }
    }

    /// Reads a POST's body (within the bound) and answers a malformed JSON-RPC message with its
    /// error (`message.rs`); a well-formed one goes on to rmcp with the same bytes.
    #[allow(
        clippy::result_large_err,
        reason = "the error is the response, built once"
    )]
    async fn screen_body(&self, request: Request) -> Result<Request, Response> {
        let (parts, mut body) = request.into_parts();
        let mut bytes = Vec::new();
        // The whole body within the header timeout: a body that trickles a byte at a time
        // (never idle long enough for the idle timeout) does not hold its connection.
        let deadline = tokio::time::Instant::now() + self.body_timeout;
        loop {
            let frame = tokio::time::timeout_at(
                deadline,
                std::future::poll_fn(|cx| {
                    axum::body::HttpBody::poll_frame(std::pin::Pin::new(&mut body), cx)
                }),
            )
            .await;
            let Ok(frame) = frame else {
                let mut response = json_error(
                    StatusCode::REQUEST_TIMEOUT,
                    message::INVALID_REQUEST,
                    &format!(
                        "request timeout: the body did not arrive within {} ms",
                        self.body_timeout.as_millis()
                    ),
                );
                response
                    .headers_mut()
                    .insert(header::CONNECTION, HeaderValue::from_static("close"));
                return Err(response);
            };
            let Some(frame) = frame else { break };
            let Ok(frame) = frame else {
                return Err(json_error(
                    StatusCode::BAD_REQUEST,
                    message::INVALID_REQUEST,
                    "bad request: the body could not be read",
                ));
            };
            let Ok(data) = frame.into_data() else {
                continue;
            };
            if data.len() > self.max_body_bytes.saturating_sub(bytes.len()) {
                return Err(too_large(self.max_body_bytes));
            }
            bytes.extend_from_slice(&data);
        }
        if let Err(refusal) = message::screen(&bytes) {
            let mut response =
                (StatusCode::BAD_REQUEST, refusal.response.to_string()).into_response();
            response.headers_mut().insert(
                header::CONTENT_TYPE,
                HeaderValue::from_static("application/json"),
            );
            return Err(response);
        }
        Ok(Request::from_parts(parts, axum::body::Body::from(bytes)))
    }

    /// 413 at once for a declared length past the bound: the body is never waited for.
    #[allow(
        clippy::result_large_err,
        reason = "the error is the response, built once"
    )]
    fn check_declared_length(&self, request: &Request) -> Result<(), Response> {
        let declared = request
            .headers()
            .get(header::CONTENT_LENGTH)
            .and_then(|value| value.to_str().ok())
            .and_then(|value| value.trim().parse::<u128>().ok());
        match declared {
            Some(length) if length > self.max_body_bytes as u128 => {
                Err(too_large(self.max_body_bytes))
            }
            _ => Ok(()),
        }
    }
}

/// Compares in time independent of where the first difference is.
fn same_bytes(a: &[u8], b: &[u8]) -> bool {
    a.len() == b.len() && a.iter().zip(b).fold(0u8, |acc, (x, y)| acc | (x ^ y)) == 0
}

fn json_error(status: StatusCode, code: i64, message: &str) -> Response {
    let body = serde_json::json!({
        "jsonrpc": "2.0",
        "id": null,
        "error": { "code": code, "message": message },
    });
    let mut response = (status, body.to_string()).into_response();
    response.headers_mut().insert(
        header::CONTENT_TYPE,
        HeaderValue::from_static("application/json"),
    );
    response
}

/// 413, and the connection closes (the rest of the body is never read).
fn too_large(max_body_bytes: usize) -> Response {
    let mut response = json_error(
        StatusCode::PAYLOAD_TOO_LARGE,
        -32600,
        &format!("request body too large: this server accepts at most {max_body_bytes} bytes"),
    );
    response
        .headers_mut()
        .insert(header::CONNECTION, HeaderValue::from_static("close"));
    response
}

async fn guard(State(guard): State<Guard>, request: Request, next: Next) -> Response {
    if let Err(response) = guard.check_authorities(&request) {
        return response;
    }
    if let Some(expected) = &guard.expected_authorization {
        let given = request
            .headers()
            .get(header::AUTHORIZATION)
            .map(HeaderValue::as_bytes)
            .unwrap_or_default();
        if !same_bytes(given, expected) {
            let mut response = json_error(
                StatusCode::UNAUTHORIZED,
                -32001,
                "unauthorized: this server needs `Authorization: Bearer <token>`",
            );
            response
                .headers_mut()
                .insert(header::WWW_AUTHENTICATE, HeaderValue::from_static("Bearer"));
            return response;
        }
    }
    // The request passed the guard: its connection no longer counts as unauthenticated.
    if let Some(ticket) = request.extensions().get::<ConnectionTicket>() {
        ticket.authenticated();
    }
    if let Err(response) = guard.check_declared_length(&request) {
        return response;
    }
    let request = if request.method() == Method::POST {
        match guard.screen_body(request).await {
            Ok(request) => request,
            Err(response) => return response,
        }
    } else {
        request
    };
    // A POST without a session id would open a session: refuse it up front past the bound, so
    // the client reads why (the session factory refuses too, for requests that race here).
    let opens_session =
        request.method() == Method::POST && !request.headers().contains_key("mcp-session-id");
    if opens_session && guard.shared.sessions.available_permits() == 0 {
        return json_error(
            StatusCode::SERVICE_UNAVAILABLE,
            -32000,
            &too_many_sessions(guard.shared.max_sessions),
        );
    }
    // DELETE ends a session: its runs are dropped before the client hears so.
    let deleted = (request.method() == Method::DELETE)
        .then(|| request.headers().get("mcp-session-id").cloned())
        .flatten();
    let mut response = next.run(request).await;
    if let Some(id) = deleted.as_ref().and_then(|id| id.to_str().ok())
        && response.status().is_success()
    {
        // rmcp answers 202; clients (the Python SDK) accept only 200 or 204 for a DELETE.
        if response.status() == StatusCode::ACCEPTED {
            *response.status_mut() = StatusCode::OK;
        }
        let session = guard
            .shared
            .http_sessions
            .lock()
            .ok()
            .and_then(|mut sessions| sessions.remove(id));
        if let Some(session) = session {
            guard.shared.code_mode.end_session(&session);
        }
    }
    response
}

fn router(
    shared: &Arc<ServerState>,
    options: &HttpOptions,
    shutdown: &CancellationToken,
) -> axum::Router {
    let mut manager = LocalSessionManager::default();
    manager.session_config.keep_alive = Some(options.session_idle);
    let mut config = StreamableHttpServerConfig::default()
        .with_allowed_hosts(options.allowed_hosts.clone())
        .with_allowed_origins(options.allowed_origins.clone())
        .enforce_origin_validation()
        .with_max_request_body_bytes(options.max_body_bytes)
        .with_cancellation_token(shutdown.child_token());
    if let Some(store) = &options.session_store {
        config.session_store = Some(Arc::new(JournalSessions {
            store: Arc::clone(store),
            retention: options.session_retention,
        }));
        shared
            .restorable
            .store(true, std::sync::atomic::Ordering::Relaxed);
    }
    let factory_shared = Arc::clone(shared);
    let service = StreamableHttpService::new(
        move || SessionHandler::open(&factory_shared).map_err(std::io::Error::other),
        Arc::new(manager),
        config,
    );
    let guard_state = Guard {
        shared: Arc::clone(shared),
        expected_authorization: options
            .auth_token
            .as_ref()
            .map(|token| Arc::from(format!("Bearer {token}").into_bytes())),
        hosts: options
            .allowed_hosts
            .iter()
            .filter_map(|entry| authority::parse_allowed_host(entry))
            .collect(),
        origins: options
            .allowed_origins
            .iter()
            .filter_map(|entry| authority::parse_allowed_origin(entry))
            .collect(),
        max_body_bytes: options.max_body_bytes,
        body_timeout: options.header_timeout,
    };
    axum::Router::new()
        .route_service(MCP_PATH, service)
        .layer(middleware::from_fn_with_state(guard_state, guard))
}

pub(crate) async fn serve(
    shared: &Arc<ServerState>,
    addr: SocketAddr,
    options: HttpOptions,
    shutdown: CancellationToken,
    on_bound: impl FnOnce(SocketAddr) + Send,
) -> Result<(), ServeError> {
    if options.auth_token.as_deref().is_some_and(str::is_empty) {
        return Err(ServeError::Options("the auth token is empty".into()));
    }
    if let Some(entry) = options
        .allowed_hosts
        .iter()
        .find(|entry| authority::parse_allowed_host(entry).is_none())
    {
        return Err(ServeError::Options(format!(
            "allowed host `{entry}` is not a host name, an IP address or one with `:port`"
        )));
    }
    if let Some(entry) = options
        .allowed_origins
        .iter()
        .find(|entry| authority::parse_allowed_origin(entry).is_none())
    {
        return Err(ServeError::Options(format!(
            "allowed origin `{entry}` is not `http(s)://host`, with `:port` or `:*`"
        )));
    }
    let http_error = |source| ServeError::Http {
        addr: addr.to_string(),
        source,
    };
    let listener = tokio::net::TcpListener::bind(addr)
        .await
        .map_err(http_error)?;
    let bound = listener.local_addr().map_err(http_error)?;
    let app = router(shared, &options, &shutdown);
    on_bound(bound);
    tracing::info!(target: "codemode", %bound, "serving MCP over HTTP at {MCP_PATH}");
    let limits = ConnectionLimits {
        header_timeout: options.header_timeout,
        idle_timeout: options.connection_idle,
        max_unauthenticated: options.max_unauthenticated_connections,
    };
    connections::serve(listener, app, limits, shutdown).await;
    Ok(())
}
