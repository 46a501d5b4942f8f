//! The running servers and the requests made to them.

use std::collections::BTreeMap;
use std::fmt;
use std::sync::{Arc, PoisonError, RwLock};

use codemode_catalog::{McpCapability, ToolDescriptor, ToolOrigin};
use rmcp::model::{
    CallToolRequestParams, GetPromptRequestParams, JsonObject, ReadResourceRequestParams,
};
use serde::Serialize;
use serde_json::Value;

use crate::config::{HubOptions, McpServerConfig};
use crate::error::McpError;
use crate::listing::ServerInfo;

mod server;

use server::{Backoff, Client, Connection, Slot, list_pages, start_server};

/// The running MCP servers of a host: starts them, lists what they offer,
/// and executes tool calls, resource reads and prompt gets on them.
///
/// Cloning is cheap (the servers are shared) and every request method takes
/// `&self`, so many tasks can use one hub concurrently. A server that fails
/// to start is left out; one that crashes later makes only its own requests
/// fail ([`McpError::ServerExited`]) and is restarted on its next use, with a
/// backoff between repeated restarts ([`HubOptions::restart_backoff`]). A
/// server's `notifications/tools/list_changed` makes the hub list its tools
/// again; [`McpHub::changes`] reports every such change (and every restart).
///
/// Shutting down: [`McpHub::shutdown`] closes every server's stdin and waits
/// (up to [`HubOptions::shutdown_timeout`]) for it to exit, then rmcp sends
/// `SIGTERM` and kills. Dropping the last clone does the same in the
/// background, on the Tokio runtime; and every child is spawned with
/// `kill_on_drop`, so a child still alive when its handle finally drops (even
/// after the runtime is gone) is killed and reaped by Tokio.
///
/// ```no_run
/// use std::collections::BTreeMap;
/// use codemode_mcp::{HubOptions, McpHub, McpServerConfig};
///
/// # async fn demo() -> Result<(), codemode_mcp::McpError> {
/// let servers = BTreeMap::from([(
///     "everything".to_owned(),
///     McpServerConfig::new("npx").with_args(["-y", "@modelcontextprotocol/server-everything"]),
/// )]);
/// let (hub, failures) = McpHub::start(servers, HubOptions::default()).await;
/// for failure in &failures {
///     eprintln!("{failure}");
/// }
/// let result = hub
///     .call_tool("everything", "echo", serde_json::json!({ "message": "hi" }))
///     .await?;
/// println!("{result}");
/// hub.shutdown().await;
/// # Ok(())
/// # }
/// ```
#[derive(Clone, Default)]
pub struct McpHub {
    servers: Arc<BTreeMap<String, Arc<Slot>>>,
    options: HubOptions,
    changes: Arc<Changes>,
}

/// The hub-wide count of tool-list changes, for [`McpHub::changes`].
#[derive(Debug)]
struct Changes(tokio::sync::watch::Sender<u64>);

impl Default for Changes {
    fn default() -> Self {
        Changes(tokio::sync::watch::Sender::new(0))
    }
}

impl Changes {
    fn bump(&self) {
        self.0.send_modify(|count| *count += 1);
    }
}

/// An optional server capability.
#[derive(Debug, Clone, Copy)]
enum Feature {
    Resources,
    Prompts,
}

impl fmt::Debug for McpHub {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("McpHub")
            .field("servers", &self.servers.keys().collect::<Vec<_>>())
            .field("options", &self.options)
            .finish()
    }
}

impl McpHub {
    /// Starts every server concurrently, each within
    /// [`HubOptions::start_timeout`]: spawn, MCP handshake, and the full tool
    /// listing (every page, bounded). Returns the hub with the servers that
    /// started, and one error per server that did not (the others work).
    ///
    /// Must run inside a Tokio runtime with the process and time drivers
    /// (`Runtime::enable_all`).
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// use std::collections::BTreeMap;
    /// use codemode_mcp::{HubOptions, McpHub, McpServerConfig};
    ///
    /// let servers = BTreeMap::from([(
    ///     "ghost".to_owned(),
    ///     McpServerConfig::new("/nonexistent/mcp-server"),
    /// )]);
    /// let (hub, failures) = McpHub::start(servers, HubOptions::default()).await;
    /// assert!(hub.servers().is_empty());
    /// assert_eq!(failures.len(), 1);
    /// assert!(failures[0].to_string().starts_with("MCP server `ghost` could not be started"));
    /// # });
    /// ```
    pub async fn start(
        servers: BTreeMap<String, McpServerConfig>,
        options: HubOptions,
    ) -> (McpHub, Vec<McpError>) {
        let changes = Arc::new(Changes::default());
        let slots: Vec<Arc<Slot>> = servers
            .into_iter()
            .map(|(name, config)| {
                Arc::new(Slot {
                    info: RwLock::new(ServerInfo {
                        name: name.clone(),
                        tools: Vec::new(),
                        has_resources: false,
                        has_prompts: false,
                        instructions: None,
                        warnings: Vec::new(),
                        process_id: None,
                    }),
                    name,
                    config,
                    connection: RwLock::new(None),
                    restarts: tokio::sync::Mutex::new(Backoff::default()),
                    changes: Arc::clone(&changes),
                    options: options.clone(),
                })
            })
            .collect();
        let starts = slots.iter().map(|slot| async move {
            let started = start_server(slot).await?;
            slot.install(started);
            Ok::<_, McpError>(())
        });
        let outcomes = futures::future::join_all(starts).await;
        let mut running = BTreeMap::new();
        let mut failures = Vec::new();
        for (slot, outcome) in slots.into_iter().zip(outcomes) {
            match outcome {
                Ok(()) => {
                    running.insert(slot.name.clone(), slot);
                }
                Err(error) => {
                    tracing::warn!(server = error.server(), "{error}");
                    failures.push(error);
                }
            }
        }
        let hub = McpHub {
            servers: Arc::new(running),
            options,
            changes,
        };
        (hub, failures)
    }

    /// Counts tool-list changes of every server (`tools/list_changed`, restarts): the value
    /// changes after the hub has the new listing, so a host that activates code mode after
    /// seeing it gets the new tools from [`McpHub::descriptors`].
    pub fn changes(&self) -> tokio::sync::watch::Receiver<u64> {
        self.changes.0.subscribe()
    }

    /// The catalog descriptors of every admitted tool, servers in name
    /// order, tools in each server's order: origin `Mcp(<server>)`,
    /// `parameters` = the tool's `inputSchema`, `label` = its title,
    /// `read_only` from `readOnlyHint`.
    pub fn descriptors(&self) -> Vec<ToolDescriptor> {
        self.servers
            .values()
            .flat_map(|slot| {
                let info = slot.info();
                info.tools.into_iter().map(move |tool| ToolDescriptor {
                    origin: ToolOrigin::Mcp(info.name.clone()),
                    name: tool.name,
                    label: tool.title,
                    description: tool.description,
                    parameters: Some(tool.input_schema),
                    direct_only: false,
                    read_only: tool.read_only,
                })
            })
            .collect()
    }

    /// What every running server offers, in name order.
    pub fn servers(&self) -> Vec<ServerInfo> {
        self.servers.values().map(|slot| slot.info()).collect()
    }

    /// What one running server offers.
    pub fn server(&self, name: &str) -> Option<ServerInfo> {
        self.servers.get(name).map(|slot| slot.info())
    }

    /// Calls `tool` on `server` with `arguments` (a JSON object, or `null`
    /// for none) and returns the MCP `CallToolResult` as JSON:
    /// `{ content, structuredContent?, isError? }`. A tool that reports
    /// failure (`isError: true`) is a normal result, not an error.
    pub async fn call_tool(
        &self,
        server: &str,
        tool: &str,
        arguments: Value,
    ) -> Result<Value, McpError> {
        let operation = format!("tools/call `{tool}`");
        let connection = self.connection(server).await?;
        let arguments = arguments_object(server, &operation, arguments)?;
        let mut params = CallToolRequestParams::new(tool.to_owned());
        params.arguments = arguments;
        let result = connection
            .request(
                &operation,
                self.options.call_timeout,
                connection.peer.call_tool(params),
            )
            .await?;
        to_json(server, &operation, &result)
    }

    /// Lists the resources of `server` (all pages, bounded by
    /// [`HubOptions::max_list_pages`]) as `{ "resources": [...] }`.
    pub async fn list_resources(&self, server: &str) -> Result<Value, McpError> {
        let operation = "resources/list".to_owned();
        let connection = self.offering(server, Feature::Resources).await?;
        let (resources, _truncated) = connection
            .request(
                &operation,
                self.options.call_timeout,
                list_pages(self.options.max_list_pages, |params| async {
                    let page = connection.peer.list_resources(Some(params)).await?;
                    Ok((page.resources, page.next_cursor))
                }),
            )
            .await?;
        to_json(
            server,
            &operation,
            &serde_json::json!({ "resources": resources }),
        )
    }

    /// Reads the resource `uri` of `server`; returns the MCP
    /// `ReadResourceResult` as JSON: `{ contents: [...] }`.
    pub async fn read_resource(&self, server: &str, uri: &str) -> Result<Value, McpError> {
        let operation = format!("resources/read `{uri}`");
        let connection = self.offering(server, Feature::Resources).await?;
        let result = connection
            .request(
                &operation,
                self.options.call_timeout,
                connection
                    .peer
                    .read_resource(ReadResourceRequestParams::new(uri)),
            )
            .await?;
        to_json(server, &operation, &result)
    }

    /// Lists the prompts of `server` (all pages, bounded) as `{ "prompts": [...] }`.
    pub async fn list_prompts(&self, server: &str) -> Result<Value, McpError> {
        let operation = "prompts/list".to_owned();
        let connection = self.offering(server, Feature::Prompts).await?;
        let (prompts, _truncated) = connection
            .request(
                &operation,
                self.options.call_timeout,
                list_pages(self.options.max_list_pages, |params| async {
                    let page = connection.peer.list_prompts(Some(params)).await?;
                    Ok((page.prompts, page.next_cursor))
                }),
            )
            .await?;
        to_json(
            server,
            &operation,
            &serde_json::json!({ "prompts": prompts }),
        )
    }

    /// Gets the prompt `name` of `server` with `arguments` (a JSON object of
    /// strings, or `None`); returns the MCP `GetPromptResult` as JSON:
    /// `{ description?, messages: [...] }`.
    pub async fn get_prompt(
        &self,
        server: &str,
        name: &str,
        arguments: Option<Value>,
    ) -> Result<Value, McpError> {
        let operation = format!("prompts/get `{name}`");
        let connection = self.offering(server, Feature::Prompts).await?;
        let arguments = arguments_object(server, &operation, arguments.unwrap_or(Value::Null))?;
        let mut params = GetPromptRequestParams::new(name);
        params.arguments = arguments;
        let result = connection
            .request(
                &operation,
                self.options.call_timeout,
                connection.peer.get_prompt(params),
            )
            .await?;
        to_json(server, &operation, &result)
    }

    /// Runs one nested call addressed by the id code mode gave it, routed on the id's kind,
    /// never on a tool's name: a catalog id `mcp:<server>:<tool>` always calls the tool `<tool>`
    /// with `input` (even one named `resources/list`), and an MCP capability id
    /// ([`McpCapability::id`]) `mcp-capability:<server>:resources/list`, `…:resources/read`
    /// (`{ uri }`), `…:prompts/list` or `…:prompts/get` (`{ name, arguments? }`) reaches the
    /// server's resources and prompts. Returns `None` for any other id, so a host executor can
    /// route it elsewhere.
    ///
    /// This is the guest's way in, so its error is the guest's message
    /// ([`McpError::guest_message`]): the server's name and a short reason, never the server's
    /// stderr, a host path or the MCP client library's internals. The full [`McpError`] goes to
    /// the host's log (`tracing` target `codemode`: `warn` when the server crashed, hung or
    /// answered nonsense, `debug` otherwise). Hosts that want the typed error call
    /// [`McpHub::call_tool`] and its siblings directly.
    ///
    /// ```
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// let hub = codemode_mcp::McpHub::default();
    /// assert!(hub.execute("openclaw:core:echo", serde_json::json!({})).await.is_none());
    /// let error = hub.execute("mcp:github:search", serde_json::json!({})).await;
    /// assert_eq!(error, Some(Err("unknown MCP server `github`".to_owned())));
    /// let error = hub.execute("mcp-capability:github:prompts/list", serde_json::json!({})).await;
    /// assert_eq!(error, Some(Err("unknown MCP server `github`".to_owned())));
    /// # });
    /// ```
    pub async fn execute(&self, catalog_id: &str, input: Value) -> Option<Result<Value, String>> {
        let result = self.execute_typed(catalog_id, input).await?;
        Some(result.map_err(|error| {
            let server = error.server();
            if matches!(
                error,
                McpError::ServerExited { .. }
                    | McpError::Timeout { .. }
                    | McpError::Malformed { .. }
            ) {
                tracing::warn!(target: "codemode", server, catalog_id, "MCP call failed: {error}");
            } else {
                tracing::debug!(target: "codemode", server, catalog_id, "MCP call failed: {error}");
            }
            error.guest_message()
        }))
    }

    /// Whether `catalog_id` is the hub's kind of id, one [`McpHub::execute`] answers: an MCP
    /// tool id `mcp:<server>:<tool>` or an MCP capability id
    /// `mcp-capability:<server>:<method>`. Decided by the id's kind alone (never by a tool
    /// name), so an executor can route before it gives the input away.
    ///
    /// ```
    /// let hub = codemode_mcp::McpHub::default();
    /// assert!(hub.owns("mcp:github:search"));
    /// assert!(hub.owns("mcp-capability:github:resources/list"));
    /// assert!(!hub.owns("openclaw:core:mcp"));
    /// assert!(!hub.owns("mcp:no-tool"));
    /// ```
    pub fn owns(&self, catalog_id: &str) -> bool {
        McpCapability::parse_id(catalog_id).is_some()
            || catalog_id
                .strip_prefix("mcp:")
                .is_some_and(|rest| rest.contains(':'))
    }

    async fn execute_typed(
        &self,
        catalog_id: &str,
        input: Value,
    ) -> Option<Result<Value, McpError>> {
        let text = |key: &str| {
            input
                .get(key)
                .and_then(Value::as_str)
                .unwrap_or_default()
                .to_owned()
        };
        if let Some((server, capability)) = McpCapability::parse_id(catalog_id) {
            return Some(match capability {
                McpCapability::ResourcesList => self.list_resources(server).await,
                McpCapability::ResourcesRead => self.read_resource(server, &text("uri")).await,
                McpCapability::PromptsList => self.list_prompts(server).await,
                McpCapability::PromptsGet => {
                    let arguments = input.get("arguments").cloned();
                    self.get_prompt(server, &text("name"), arguments).await
                }
            });
        }
        let (server, tool) = catalog_id.strip_prefix("mcp:")?.split_once(':')?;
        Some(self.call_tool(server, tool, input).await)
    }

    /// Shuts every server down and waits for them to exit (each bounded by
    /// [`HubOptions::shutdown_timeout`]). Other clones of this hub see
    /// [`McpError::ShutDown`] afterwards.
    pub async fn shutdown(self) {
        let clients: Vec<(String, Client)> = self
            .servers
            .values()
            .filter_map(|slot| {
                let connection = slot.current()?;
                let client = connection
                    .client
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .take();
                client.map(|client| (slot.name.clone(), client))
            })
            .collect();
        let timeout = self.options.shutdown_timeout;
        futures::future::join_all(clients.into_iter().map(|(name, mut client)| async move {
            match client.close_with_timeout(timeout).await {
                Ok(Some(_)) => tracing::debug!(server = name, "MCP server shut down"),
                Ok(None) => {
                    tracing::warn!(server = name, "MCP server did not exit within {timeout:?}")
                }
                Err(error) => tracing::warn!(server = name, "MCP server shutdown failed: {error}"),
            }
        }))
        .await;
    }

    /// The live connection of `server`, restarted first when the server exited.
    async fn connection(&self, server: &str) -> Result<Arc<Connection>, McpError> {
        let slot = self
            .servers
            .get(server)
            .ok_or_else(|| McpError::UnknownServer {
                server: server.to_owned(),
            })?;
        slot.live_connection().await
    }

    async fn offering(&self, server: &str, feature: Feature) -> Result<Arc<Connection>, McpError> {
        let connection = self.connection(server).await?;
        let info = self.servers.get(server).map(|slot| slot.info());
        let (offered, name) = match feature {
            Feature::Resources => (info.is_some_and(|i| i.has_resources), "resources"),
            Feature::Prompts => (info.is_some_and(|i| i.has_prompts), "prompts"),
        };
        if offered {
            Ok(connection)
        } else {
            Err(McpError::NotOffered {
                server: server.to_owned(),
                feature: name,
            })
        }
    }
}

fn arguments_object(
    server: &str,
    operation: &str,
    arguments: Value,
) -> Result<Option<JsonObject>, McpError> {
    match arguments {
        Value::Null => Ok(None),
        Value::Object(object) => Ok(Some(object)),
        other => Err(McpError::InvalidArguments {
            server: server.to_owned(),
            operation: operation.to_owned(),
            detail: format!("arguments must be a JSON object, not {}", json_kind(&other)),
        }),
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "a boolean",
        Value::Number(_) => "a number",
        Value::String(_) => "a string",
        Value::Array(_) => "an array",
        Value::Object(_) => "an object",
    }
}

fn to_json(server: &str, operation: &str, result: &impl Serialize) -> Result<Value, McpError> {
    serde_json::to_value(result).map_err(|error| McpError::Malformed {
        server: server.to_owned(),
        operation: operation.to_owned(),
        detail: error.to_string(),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_hub_can_be_shared_across_tasks() {
        fn assert_send_sync_static<T: Send + Sync + 'static>() {}
        assert_send_sync_static::<McpHub>();
    }

    #[test]
    fn arguments_must_be_an_object_or_null() {
        let check = |arguments: Value, expect: Result<Option<usize>, &str>| {
            let outcome = arguments_object("s", "tools/call `t`", arguments)
                .map(|object| object.map(|object| object.len()))
                .map_err(|error| error.to_string());
            assert_eq!(outcome, expect.map_err(str::to_owned));
        };
        check(Value::Null, Ok(None));
        check(serde_json::json!({ "a": 1 }), Ok(Some(1)));
        check(
            serde_json::json!(7),
            Err(
                "invalid arguments for tools/call `t` on MCP server `s`: arguments must be a JSON object, not a number",
            ),
        );
        check(
            serde_json::json!("x"),
            Err(
                "invalid arguments for tools/call `t` on MCP server `s`: arguments must be a JSON object, not a string",
            ),
        );
    }

    #[tokio::test]
    async fn pagination_stops_at_the_page_limit_and_on_a_repeated_cursor() {
        let endless = list_pages(4, |params| async move {
            let next = params
                .cursor
                .map_or(1, |cursor| cursor.parse::<u32>().unwrap_or(0) + 1);
            Ok((vec![next], Some(next.to_string())))
        })
        .await;
        assert_eq!(endless.ok(), Some((vec![1, 2, 3, 4], Some(4))));
        let stuck = list_pages(10, |_params| async {
            Ok((vec![0], Some("same".to_owned())))
        })
        .await;
        assert_eq!(stuck.ok(), Some((vec![0, 0], Some(2))));
        let finite = list_pages(10, |params| async move {
            Ok(match params.cursor {
                None => (vec!["a"], Some("2".to_owned())),
                Some(_) => (vec!["b"], None),
            })
        })
        .await;
        assert_eq!(finite.ok(), Some((vec!["a", "b"], None)));
    }
}
