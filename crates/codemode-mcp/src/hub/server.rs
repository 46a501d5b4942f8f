//! One configured server: its slot and restart backoff, its connection and the requests made
//! on it, and starting it and listing its tools.

use std::future::Future;
use std::process::Stdio;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, PoisonError, RwLock, Weak};
use std::time::{Duration, Instant};

use rmcp::model::{ClientCapabilities, ClientConfig, Implementation, PaginatedRequestParams, Tool};
use rmcp::service::{NotificationContext, RunningService, ServiceError};
use rmcp::transport::TokioChildProcess;
use rmcp::{ClientHandler, Peer, RoleClient, ServiceExt as _};
use serde_json::Value;

use super::Changes;
use crate::config::{HubOptions, McpServerConfig};
use crate::error::McpError;
use crate::listing::{
    ListedTool, ServerInfo, admit_instructions, admit_tools, check_server_name, shorten,
};
use crate::stderr::StderrTail;

/// Longest server error message kept in [`McpError::Rejected`], in bytes.
const MAX_ERROR_MESSAGE_BYTES: usize = 4 * 1024;

pub(super) type Client = RunningService<RoleClient, HubClient>;

/// One configured server: how to start it, what it offers now, its live connection.
pub(super) struct Slot {
    pub(super) name: String,
    pub(super) config: McpServerConfig,
    /// What the server offers: replaced on restart, its tools on `tools/list_changed`.
    pub(super) info: RwLock<ServerInfo>,
    /// The live connection (replaced on restart; `None` only before the first start).
    pub(super) connection: RwLock<Option<Arc<Connection>>>,
    /// Serialises restarts and holds their backoff.
    pub(super) restarts: tokio::sync::Mutex<Backoff>,
    pub(super) changes: Arc<Changes>,
    pub(super) options: HubOptions,
}

/// When the next restart of a server may happen.
#[derive(Debug, Default)]
pub(super) struct Backoff {
    /// Restarts in a row, each within `max_restart_backoff` of the previous one.
    restarts: u32,
    last: Option<Instant>,
}

impl Backoff {
    /// How long to wait before the next restart, given the options.
    fn wait(&self, options: &HubOptions, now: Instant) -> Duration {
        let Some(last) = self.last else {
            return Duration::ZERO;
        };
        let since = now.saturating_duration_since(last);
        if since >= options.max_restart_backoff || self.restarts == 0 {
            return Duration::ZERO;
        }
        let delay = options
            .restart_backoff
            .saturating_mul(1u32 << (self.restarts - 1).min(16))
            .min(options.max_restart_backoff);
        delay.saturating_sub(since)
    }

    fn record(&mut self, options: &HubOptions, now: Instant) {
        let quiet = self
            .last
            .is_none_or(|last| now.saturating_duration_since(last) >= options.max_restart_backoff);
        self.restarts = if quiet {
            1
        } else {
            self.restarts.saturating_add(1)
        };
        self.last = Some(now);
    }
}

/// One running server process.
pub(super) struct Connection {
    name: String,
    pub(super) peer: Peer<RoleClient>,
    /// `None` once the hub was shut down.
    pub(super) client: Mutex<Option<Client>>,
    stderr: StderrTail,
    /// Set when a request found the server gone.
    exited: AtomicBool,
}

/// The client side of one connection: our identity, and a fresh tool listing when the server
/// says its tools changed.
pub(super) struct HubClient {
    slot: Weak<Slot>,
}

impl ClientHandler for HubClient {
    fn get_info(&self) -> ClientConfig {
        client_config()
    }

    async fn on_tool_list_changed(&self, context: NotificationContext<RoleClient>) {
        let Some(slot) = self.slot.upgrade() else {
            return;
        };
        let listing = tokio::time::timeout(
            slot.options.call_timeout,
            list_tools(&context.peer, &slot.name, &slot.options),
        )
        .await;
        match listing {
            Ok(Ok((tools, warnings))) => {
                let mut info = slot.info.write().unwrap_or_else(PoisonError::into_inner);
                info.tools = tools;
                info.warnings = warnings;
                drop(info);
                tracing::debug!(target: "codemode", server = slot.name, "MCP server tools changed");
                slot.changes.bump();
            }
            Ok(Err(error)) => {
                tracing::warn!(target: "codemode", server = slot.name, "listing changed tools failed: {error}");
            }
            Err(_) => {
                tracing::warn!(target: "codemode", server = slot.name, "listing changed tools timed out");
            }
        }
    }
}

impl Slot {
    pub(super) fn info(&self) -> ServerInfo {
        self.info
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn current(&self) -> Option<Arc<Connection>> {
        self.connection
            .read()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(super) fn install(&self, (connection, info): (Connection, ServerInfo)) {
        *self.info.write().unwrap_or_else(PoisonError::into_inner) = info;
        *self
            .connection
            .write()
            .unwrap_or_else(PoisonError::into_inner) = Some(Arc::new(connection));
    }

    /// The connection, restarted first when the server exited (at most one restart at a time;
    /// repeated restarts wait for the backoff).
    pub(super) async fn live_connection(self: &Arc<Self>) -> Result<Arc<Connection>, McpError> {
        let current = self.current();
        if let Some(connection) = &current
            && (connection.is_shut_down() || !connection.has_exited())
        {
            return Ok(Arc::clone(connection));
        }
        let mut backoff = self.restarts.lock().await;
        // Another call may have restarted it while this one waited for the lock.
        if let Some(connection) = self.current()
            && (connection.is_shut_down() || !connection.has_exited())
        {
            return Ok(connection);
        }
        let now = Instant::now();
        let wait = backoff.wait(&self.options, now);
        if !wait.is_zero() {
            return Err(McpError::Restarting {
                server: self.name.clone(),
                retry_in: Duration::from_secs(wait.as_secs() + u64::from(wait.subsec_nanos() > 0)),
            });
        }
        backoff.record(&self.options, now);
        tracing::info!(target: "codemode", server = self.name, "restarting the MCP server");
        let started = start_server(self).await?;
        self.install(started);
        self.changes.bump();
        self.current().ok_or_else(|| McpError::ShutDown {
            server: self.name.clone(),
        })
    }
}

impl Connection {
    /// Runs one request within `timeout` and turns rmcp's errors into ours.
    pub(super) async fn request<T>(
        &self,
        operation: &str,
        timeout: Duration,
        request: impl Future<Output = Result<T, ServiceError>>,
    ) -> Result<T, McpError> {
        if self.is_shut_down() {
            return Err(McpError::ShutDown {
                server: self.name.clone(),
            });
        }
        match tokio::time::timeout(timeout, request).await {
            Ok(Ok(value)) => Ok(value),
            Ok(Err(error)) => Err(self.request_error(operation, error).await),
            // Dropping the request future sends `notifications/cancelled`.
            Err(_elapsed) => Err(McpError::Timeout {
                server: self.name.clone(),
                operation: operation.to_owned(),
                timeout,
            }),
        }
    }

    /// The server is gone: a request found its connection closed, or rmcp did.
    fn has_exited(&self) -> bool {
        self.exited.load(Ordering::Relaxed) || self.peer.is_transport_closed()
    }

    fn is_shut_down(&self) -> bool {
        self.client
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .is_none()
    }

    async fn request_error(&self, operation: &str, error: ServiceError) -> McpError {
        let server = self.name.clone();
        if matches!(
            error,
            ServiceError::TransportClosed | ServiceError::TransportSend(_)
        ) || (matches!(error, ServiceError::Cancelled { .. }) && !self.is_shut_down())
        {
            self.exited.store(true, Ordering::Relaxed);
        }
        let operation = operation.to_owned();
        match error {
            ServiceError::McpError(data) => McpError::Rejected {
                server,
                operation,
                code: data.code.0,
                message: shorten(data.message.into_owned(), MAX_ERROR_MESSAGE_BYTES),
            },
            ServiceError::TransportClosed | ServiceError::TransportSend(_) => {
                McpError::ServerExited {
                    server,
                    operation,
                    stderr: self.stderr.settled_lines().await,
                }
            }
            ServiceError::Cancelled { .. } if self.is_shut_down() => McpError::ShutDown { server },
            ServiceError::Cancelled { .. } => McpError::ServerExited {
                server,
                operation,
                stderr: self.stderr.settled_lines().await,
            },
            ServiceError::Timeout { timeout } => McpError::Timeout {
                server,
                operation,
                timeout,
            },
            ServiceError::UnexpectedResponse => McpError::Malformed {
                server,
                operation,
                detail: "the response is not the result MCP requires for this request".to_owned(),
            },
            other => McpError::Malformed {
                server,
                operation,
                detail: other.to_string(),
            },
        }
    }
}

/// The client identity and capabilities we announce: none beyond the basics
/// (no sampling, roots or elicitation).
fn client_config() -> ClientConfig {
    ClientConfig::new(
        ClientCapabilities::default(),
        Implementation::new("codemode", env!("CARGO_PKG_VERSION")),
    )
}

/// Lists and admits the tools of a server (every page, bounded).
async fn list_tools(
    peer: &Peer<RoleClient>,
    name: &str,
    options: &HubOptions,
) -> Result<(Vec<crate::listing::ToolInfo>, Vec<String>), String> {
    let (tools, truncated) = list_pages(options.max_list_pages, |params| async {
        let page = peer.list_tools(Some(params)).await?;
        Ok((page.tools, page.next_cursor))
    })
    .await
    .map_err(|error| format!("listing its tools failed: {error}"))?;
    let (tools, mut warnings) = admit_tools(
        tools.into_iter().map(listed_tool).collect(),
        options.max_tools_per_server,
    );
    if let Some(pages) = truncated {
        warnings.insert(
            0,
            format!(
                "the tool list was cut: the server still sent a nextCursor after {pages} pages"
            ),
        );
    }
    for warning in &warnings {
        tracing::warn!(server = name, "{warning}");
    }
    Ok((tools, warnings))
}

pub(super) async fn start_server(slot: &Arc<Slot>) -> Result<(Connection, ServerInfo), McpError> {
    let name = slot.name.clone();
    let config = &slot.config;
    let options = &slot.options;
    check_server_name(&name).map_err(|reason| McpError::InvalidServerName {
        server: name.clone(),
        reason,
    })?;
    let mut command = tokio::process::Command::new(&config.command);
    command
        .args(&config.args)
        .envs(&config.env)
        .kill_on_drop(true);
    let (transport, stderr) = TokioChildProcess::builder(command)
        .stderr(Stdio::piped())
        .spawn()
        .map_err(|source| McpError::Spawn {
            server: name.clone(),
            command: config.command.clone(),
            source,
        })?;
    let process_id = transport.id();
    let stderr = match stderr {
        Some(stderr) => StderrTail::spawn(name.clone(), stderr),
        None => StderrTail::empty(),
    };
    let handshake = async {
        let handler = HubClient {
            slot: Arc::downgrade(slot),
        };
        let client = handler
            .serve(transport)
            .await
            .map_err(|error| format!("MCP handshake failed: {error}"))?;
        let peer = client.peer().clone();
        let info = peer.peer_info();
        let capabilities = info.as_ref().map(|info| info.capabilities.clone());
        let offers_tools = capabilities.as_ref().is_some_and(|c| c.tools.is_some());
        let (tools, warnings) = if offers_tools {
            list_tools(&peer, &name, options).await?
        } else {
            (Vec::new(), Vec::new())
        };
        let info = ServerInfo {
            name: name.clone(),
            tools,
            has_resources: capabilities.as_ref().is_some_and(|c| c.resources.is_some()),
            has_prompts: capabilities.as_ref().is_some_and(|c| c.prompts.is_some()),
            instructions: admit_instructions(info.and_then(|info| info.instructions.clone())),
            warnings,
            process_id,
        };
        Ok::<_, String>((
            Connection {
                name: name.clone(),
                peer,
                client: Mutex::new(Some(client)),
                stderr: stderr.clone(),
                exited: AtomicBool::new(false),
            },
            info,
        ))
    };
    // On timeout or failure the transport is dropped, which kills the child.
    match tokio::time::timeout(options.start_timeout, handshake).await {
        Ok(Ok(started)) => Ok(started),
        Ok(Err(detail)) => Err(McpError::Handshake {
            server: name,
            detail,
            stderr: stderr.settled_lines().await,
        }),
        Err(_elapsed) => Err(McpError::StartTimeout {
            server: name,
            timeout: options.start_timeout,
            stderr: stderr.lines(),
        }),
    }
}

fn listed_tool(tool: Tool) -> ListedTool {
    let annotations = tool.annotations.as_ref();
    ListedTool {
        title: tool
            .title
            .or_else(|| annotations.and_then(|annotations| annotations.title.clone())),
        read_only_hint: annotations.and_then(|annotations| annotations.read_only_hint),
        name: tool.name.into_owned(),
        description: tool.description.map(|description| description.into_owned()),
        input_schema: Value::Object(Arc::unwrap_or_clone(tool.input_schema)),
        output_schema: tool
            .output_schema
            .map(|schema| Value::Object(Arc::unwrap_or_clone(schema))),
    }
}

/// Follows `nextCursor` for at most `max_pages` pages (and stops on a
/// repeated cursor). Returns the items and, when the list was cut, the
/// number of pages read.
pub(super) async fn list_pages<T, F, Fut>(
    max_pages: usize,
    mut fetch: F,
) -> Result<(Vec<T>, Option<usize>), ServiceError>
where
    F: FnMut(PaginatedRequestParams) -> Fut,
    Fut: Future<Output = Result<(Vec<T>, Option<String>), ServiceError>>,
{
    let mut items = Vec::new();
    let mut cursor: Option<String> = None;
    for page_number in 1..=max_pages {
        let (page, next) =
            fetch(PaginatedRequestParams::default().with_cursor(cursor.clone())).await?;
        items.extend(page);
        match next {
            Some(next) if cursor.as_ref() != Some(&next) => cursor = Some(next),
            Some(_) => return Ok((items, Some(page_number))),
            None => return Ok((items, None)),
        }
    }
    Ok((items, Some(max_pages)))
}
