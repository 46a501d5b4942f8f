//! The CLI's host: reads the config file, owns the demo tools (and, with `mcpServers`, the MCP
//! hub) and routes nested calls to them as the [`ToolExecutor`].

use std::collections::BTreeMap;
use std::path::Path;
use std::sync::Arc;

use anyhow::{Context, bail};
use async_trait::async_trait;
use codemode_core::worker::{WORKER_ENV, WorkerCommand, WorkerPoolConfig};
use codemode_core::{
    ActivationRequest, AgentRunContext, CodeMode, CodeModeConfig, IsolationMode, ToolCallContext,
    ToolError, ToolExecutor, WithMcp,
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

/// Routes exact catalog ids: MCP ids to the hub ([`WithMcp`], which also stops an MCP call
/// when its run is cancelled), every other id to the demo tools.
struct Executor {
    tools: WithMcp<Demo>,
}

/// The demo tools, when asked for.
struct Demo(Option<DemoTools>);

impl Executor {
    fn mcp(&self) -> &McpHub {
        self.tools.hub()
    }

    fn tools(&self) -> Vec<codemode_catalog::ToolDescriptor> {
        let mut tools = if self.tools.host().0.is_some() {
            demo::tools()
        } else {
            Vec::new()
        };
        tools.extend(self.mcp().descriptors());
        tools
    }

    fn activation_request(&self, run: AgentRunContext) -> ActivationRequest {
        let tools = if self.tools.host().0.is_some() {
            demo::tools()
        } else {
            Vec::new()
        };
        ActivationRequest::new(tools)
            .with_agent_run(run)
            .with_mcp(self.mcp())
    }
}

#[async_trait]
impl ToolExecutor for Demo {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        let demo = match &self.0 {
            Some(demo) => demo.execute(catalog_id, input, &context).await,
            None => None,
        };
        demo.unwrap_or_else(|| Err(ToolError::new(format!("Unknown tool id: {catalog_id}"))))
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
        self.tools.execute(catalog_id, input, context).await
    }
}

/// The worker this command starts for `isolation: "process"`: `$CODEMODE_WORKER` when set,
/// else itself as `codemode worker`.
fn worker_command() -> Option<WorkerCommand> {
    if std::env::var_os(WORKER_ENV).is_some_and(|path| !path.is_empty()) {
        return None;
    }
    let exe = std::env::current_exe().ok()?;
    Some(WorkerCommand::new(exe).arg(crate::WORKER_SUBCOMMAND))
}

impl ToolHost {
    /// Reads the config (none: code mode on) and starts the host, with the demo catalog when
    /// `demo` is set; `isolation` overrides the config's, and `prebuilt_vms` sandbox VMs are
    /// kept built ahead of time (thread isolation only); `journal` keeps durable runs;
    /// `max_memory` is the host memory budget (default: half the machine's memory).
    pub(crate) async fn start(
        config_file: Option<&Path>,
        demo: bool,
        isolation: Option<IsolationMode>,
        prebuilt_vms: usize,
        journal: Option<Arc<dyn codemode_journal::JournalStore>>,
        max_memory: Option<u64>,
    ) -> anyhow::Result<ToolHost> {
        let mut mcp_servers = BTreeMap::new();
        let config = match config_file {
            None => CodeModeConfig::enabled().build()?,
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
        let config = match isolation {
            Some(isolation) => config.with_isolation(isolation),
            None => config,
        };
        let (mcp, errors) = McpHub::start(mcp_servers, HubOptions::default()).await;
        for error in errors {
            eprintln!("codemode: MCP server unavailable: {error}");
        }
        let registry = Arc::new(NamespaceRegistry::new());
        demo::register_namespaces(&registry)?;
        let executor = Arc::new(Executor {
            tools: WithMcp::new(mcp, Demo(demo.then(DemoTools::new))),
        });
        let mut builder = CodeMode::builder(config, executor.clone())
            .namespaces(registry)
            .prebuilt_vms(prebuilt_vms)
            .worker_pool(WorkerPoolConfig {
                command: worker_command(),
                ..WorkerPoolConfig::default()
            });
        if let Some(journal) = journal {
            builder = builder.journal(journal);
        }
        if let Some(bytes) = max_memory {
            builder = builder.max_memory(bytes);
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
            executor.mcp().clone().shutdown().await;
        }
    }
}
