//! The CLI's host: reads the config file, owns the demo tools (and, with `mcpServers`, the MCP
//! hub) and routes nested calls to them as the [`ToolExecutor`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use async_trait::async_trait;
use codemode_core::{
    ActivationRequest, AgentRunContext, CodeMode, CodeModeConfig, McpServerCapabilities,
    ToolCallContext, ToolError, ToolExecutor,
};
use codemode_mcp::{HubOptions, McpHub};
use codemode_mcp_server::ToolSource;
use codemode_namespaces::NamespaceRegistry;
use serde_json::Value;

use crate::demo::{self, DemoTools};

/// Keys the config file may hold.
const CONFIG_KEYS: [&str; 2] = ["tools", "mcpServers"];

/// The CLI's tool host.
pub(crate) struct ToolHost {
    code_mode: CodeMode,
    executor: Arc<Executor>,
}

/// The tools of a session: the demo catalog (when asked for) and every MCP server's tools.
/// Asked once per activation, so a served session gets the tools of the moment it activates.
pub(crate) struct HostTools {
    executor: Arc<Executor>,
}

impl ToolSource for HostTools {
    fn activation_request(&self, run: AgentRunContext) -> ActivationRequest {
        self.executor.activation_request(run)
    }
}

/// Routes exact catalog ids to the demo tools and the MCP servers.
struct Executor {
    /// `None` without the demo catalog.
    demo: Option<DemoTools>,
    mcp: McpHub,
}

impl Executor {
    fn tools(&self) -> Vec<codemode_catalog::ToolDescriptor> {
        let mut tools = if self.demo.is_some() {
            demo::tools()
        } else {
            Vec::new()
        };
        tools.extend(self.mcp.descriptors());
        tools
    }

    fn activation_request(&self, run: AgentRunContext) -> ActivationRequest {
        let mut request = ActivationRequest::new(self.tools()).with_agent_run(run);
        for server in self.mcp.servers() {
            let capabilities = McpServerCapabilities {
                resources: server.has_resources,
                prompts: server.has_prompts,
            };
            request
                .mcp_capabilities
                .insert(server.name.clone(), capabilities);
        }
        request
    }
}

#[async_trait]
impl ToolExecutor for Executor {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        if catalog_id.starts_with("mcp:") || catalog_id.starts_with("mcp-capability:") {
            return match self.mcp.execute(catalog_id, input).await {
                // The hub's error is already the guest's message (no stderr, paths or rmcp
                // details); the full error went to the host log.
                Some(result) => result.map_err(ToolError::new),
                None => Err(ToolError::new(format!("Unknown tool id: {catalog_id}"))),
            };
        }
        let demo = match &self.demo {
            Some(demo) => demo.execute(catalog_id, input, &context).await,
            None => None,
        };
        demo.unwrap_or_else(|| Err(ToolError::new(format!("Unknown tool id: {catalog_id}"))))
    }
}

impl ToolHost {
    /// Reads the config (none: code mode on) and starts the host, with the demo catalog when
    /// `demo` is set.
    pub(crate) async fn start(
        config_file: Option<&Path>,
        demo: bool,
        journal: Option<Arc<dyn codemode_journal::JournalStore>>,
    ) -> anyhow::Result<ToolHost> {
        let mut mcp_servers = BTreeMap::new();
        let config = match config_file {
            None => CodeModeConfig::enabled(),
            Some(file) => {
                let text = std::fs::read_to_string(file)
                    .with_context(|| format!("reading {}", file.display()))?;
                let value: Value = serde_json::from_str(&text)
                    .with_context(|| format!("{} is not valid JSON", file.display()))?;
                let object = value
                    .as_object()
                    .with_context(|| format!("{} must hold a JSON object", file.display()))?;
                if let Some(key) = object
                    .keys()
                    .find(|key| !CONFIG_KEYS.contains(&key.as_str()))
                {
                    bail!("config has an unknown key `{key}` (expected tools, mcpServers)");
                }
                if let Some(key) = value
                    .get("tools")
                    .and_then(Value::as_object)
                    .and_then(|t| t.keys().find(|k| *k != "codeMode"))
                {
                    bail!("config has an unknown key `tools.{key}` (expected tools.codeMode)");
                }
                if let Some(servers) = object.get("mcpServers") {
                    mcp_servers =
                        serde_json::from_value(servers.clone()).context("invalid mcpServers")?;
                }
                let code_mode = value
                    .get("tools")
                    .and_then(|tools| tools.get("codeMode"))
                    .unwrap_or(&Value::Null);
                CodeModeConfig::from_json(code_mode).context("invalid tools.codeMode")?
            }
        };
        let (mcp, errors) = McpHub::start(mcp_servers, HubOptions::default()).await;
        for error in errors {
            eprintln!("codemode: MCP server unavailable: {error}");
        }
        let registry = Arc::new(NamespaceRegistry::new());
        demo::register_namespaces(&registry)?;
        let executor = Arc::new(Executor {
            demo: demo.then(DemoTools::new),
            mcp,
        });
        let mut builder = CodeMode::builder(config, executor.clone()).namespaces(registry);
        if let Some(journal) = journal {
            builder = builder.journal(journal);
        }
        let code_mode = builder.build();
        Ok(ToolHost {
            code_mode,
            executor,
        })
    }

    pub(crate) fn code_mode(&self) -> CodeMode {
        self.code_mode.clone()
    }

    /// The effective tools: the demo catalog (if on) plus every MCP server's tools.
    pub(crate) fn activation_request(&self, run: AgentRunContext) -> ActivationRequest {
        self.executor.activation_request(run)
    }

    /// How many tools the host offers.
    pub(crate) fn tool_count(&self) -> usize {
        self.executor.tools().len()
    }

    /// The tools of served sessions. Drop it before [`ToolHost::shutdown`].
    pub(crate) fn tool_source(&self) -> Arc<HostTools> {
        Arc::new(HostTools {
            executor: Arc::clone(&self.executor),
        })
    }

    /// Drops suspended runs and stops the MCP servers.
    pub(crate) async fn shutdown(self) {
        self.code_mode.shutdown();
        drop(self.code_mode);
        if let Ok(executor) = Arc::try_unwrap(self.executor) {
            executor.mcp.shutdown().await;
        }
    }
}
