//! Activation: deciding one agent run's model-visible surface and building its session
//! (`exec`, `wait` and the direct-only tools): the catalog, namespaces, MCP declarations, the `exec` description and telemetry.

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;

use codemode_catalog::{
    Catalog, CatalogBuilder, McpCapability, SearchLimits, Source, ToolDescriptor, ToolOrigin,
};
use codemode_mcp_decls::{McpServer, McpTool};
use codemode_namespaces::{CancellationState, CatalogTool, HiddenReason, ScopeContext, ToolOwner};
use codemode_sandbox::{JsonText, PreparedSetup};
use serde_json::Value;

use crate::result::{SourceTelemetry, Telemetry};
use crate::session::{CodeMode, CodeModeSession};
use crate::state::SessionState;
use crate::surface::{self, DescriptionParts, ModelTool};
use codemode_host::AgentRunContext;

/// What an MCP server offers besides tools.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct McpServerCapabilities {
    /// `resources/list` and `resources/read` are available.
    pub resources: bool,
    /// `prompts/list` and `prompts/get` are available.
    pub prompts: bool,
}

/// The input of [`CodeMode::activate`]: one agent run's effective tools.
#[derive(Debug, Clone, Default)]
pub struct ActivationRequest {
    /// The effective tool list, after the host's allow/deny policy.
    pub tools: Vec<ToolDescriptor>,
    /// Who runs (agent, agent run, session, sender, channel).
    pub agent_run: AgentRunContext,
    /// The run intentionally has no tools (disable-tools flag, raw model call).
    pub tools_disabled: bool,
    /// Resource / prompt capabilities per MCP server name.
    pub mcp_capabilities: BTreeMap<String, McpServerCapabilities>,
}

impl ActivationRequest {
    /// A request for these tools, with an empty run context.
    pub fn new(tools: Vec<ToolDescriptor>) -> Self {
        ActivationRequest {
            tools,
            ..ActivationRequest::default()
        }
    }

    /// Sets the run context.
    pub fn with_agent_run(mut self, agent_run: AgentRunContext) -> Self {
        self.agent_run = agent_run;
        self
    }
}

/// The outcome of activation.
#[derive(Debug)]
pub enum Activation {
    /// Code mode is disabled, or the run has no tools: expose these tools as usual.
    Unchanged(Vec<ToolDescriptor>),
    /// Code mode is active: expose [`CodeModeSession::model_tools`].
    Active(CodeModeSession),
}

impl Activation {
    /// The session when code mode is active, `None` when the tools stay as they were.
    pub fn into_active(self) -> Option<CodeModeSession> {
        match self {
            Activation::Active(session) => Some(session),
            Activation::Unchanged(_) => None,
        }
    }

    /// Whether code mode is active for the run.
    pub fn is_active(&self) -> bool {
        matches!(self, Activation::Active(_))
    }
}

/// A failed activation: the run must fail (never fall back to exposing tools directly).
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ActivationError {
    /// A visible namespace could not create or serialize its scope.
    #[error("code mode namespaces failed: {0}")]
    Namespaces(String),
    /// A direct-only tool (which stays model-visible) has the name of a code-mode control tool
    /// (`exec` or `wait`): the model would see two tools of that name.
    #[error(
        "a direct-only tool named `{name}` ({id}) would collide with the code mode control tool `{name}`."
    )]
    ControlNameCollision {
        /// The colliding name, `exec` or `wait`.
        name: String,
        /// The tool's id, `<source>:<owner>:<name>`.
        id: String,
    },
}

impl CodeMode {
    /// Decides the model-visible surface of one agent run: unchanged tools when code mode is
    /// off or the run has no tools, else a session whose model sees `exec`, `wait` and the
    /// direct-only tools, with every other tool in its hidden catalog.
    pub fn activate(&self, request: ActivationRequest) -> Result<Activation, ActivationError> {
        let config = &self.shared.config;
        if !config.is_enabled() || request.tools_disabled || request.tools.is_empty() {
            return Ok(Activation::Unchanged(request.tools));
        }
        let _span =
            tracing::debug_span!(target: "codemode", "activate", tools = request.tools.len())
                .entered();
        let catalog = CatalogBuilder::new()
            .host_source(self.shared.host_source.clone())
            .build(request.tools);
        check_control_names(&catalog)?;
        let cancelled = Arc::new(AtomicBool::new(false));
        let scope_context = ScopeContext {
            agent_id: request.agent_run.agent_id.clone(),
            session_key: request.agent_run.session_key.clone(),
            session_id: request.agent_run.session_id.clone(),
            run_id: request.agent_run.agent_run_id.clone(),
            config: serde_json::to_value(config).unwrap_or(Value::Null),
            cancellation: CancellationState::from_flag(Arc::clone(&cancelled)),
        };
        let namespaces = self
            .shared
            .namespaces
            .prepare_run(
                catalog.entries().iter().map(|entry| CatalogTool {
                    id: &entry.id,
                    name: &entry.name,
                    owner: tool_owner(&entry.origin),
                }),
                &scope_context,
            )
            .map_err(|e| ActivationError::Namespaces(e.to_string()))?;
        for hidden in namespaces.hidden() {
            // A namespace over tools its plugin does not own is a registration mistake worth a
            // warning; a missing tool is the ordinary effect of the host's tool policy.
            match hidden.reason {
                HiddenReason::NotOwned { .. } => {
                    tracing::warn!(target: "codemode", namespace = %hidden.id, "{hidden}");
                }
                _ => tracing::debug!(target: "codemode", namespace = %hidden.id, "{hidden}"),
            }
        }
        let servers = mcp_servers(&catalog, &request.mcp_capabilities);
        let mcp = (!servers.is_empty()).then(|| self.shared.decl_cache.get(&servers));
        let mcp_capability_ids = servers
            .iter()
            .flat_map(|server| {
                let caps = request
                    .mcp_capabilities
                    .get(&server.name)
                    .cloned()
                    .unwrap_or_default();
                McpCapability::ALL
                    .into_iter()
                    .filter(move |capability| {
                        if capability.is_resources() {
                            caps.resources
                        } else {
                            caps.prompts
                        }
                    })
                    .map(|capability| capability.id(&server.name))
            })
            .collect::<Vec<String>>();
        let server_names: Vec<String> = servers.iter().map(|s| s.name.clone()).collect();
        let namespace_prompt = namespaces.prompt_text();
        let description = surface::exec_description(&DescriptionParts {
            config,
            host_source: catalog.host_source().as_str(),
            mcp_servers: &server_names,
            namespace_prompt: namespace_prompt.as_deref(),
        });
        let mut model_tools = vec![surface::exec_tool(description), surface::wait_tool(config)];
        let direct_only: Vec<String> = catalog
            .direct_only()
            .iter()
            .map(|tool| tool.name.clone())
            .collect();
        model_tools.extend(catalog.direct_only().iter().map(|tool| {
            ModelTool {
                name: tool.name.clone(),
                description: tool.description.clone(),
                parameters: tool
                    .parameters
                    .clone()
                    .unwrap_or_else(|| serde_json::json!({ "type": "object" })),
            }
        }));
        let counts = catalog.source_counts();
        let telemetry = Telemetry {
            catalog_size: catalog.len(),
            sources: SourceTelemetry {
                openclaw: counts.openclaw,
                mcp: counts.mcp,
                client: counts.client,
                mcp_capabilities: mcp_capability_ids.len(),
            },
            visible_tools: model_tools.iter().map(|tool| tool.name.clone()).collect(),
            ..Telemetry::default()
        };
        let search_limits = SearchLimits::new(
            config.search_default_limit() as usize,
            config.max_search_limit() as usize,
        );
        let session = SessionState {
            config: config.clone(),
            budget: Arc::clone(&self.shared.budget),
            budget_session: crate::budget::next_session(),
            executor: Arc::clone(&self.shared.executor),
            events: Arc::clone(&self.shared.events),
            agent_run: request.agent_run,
            guest: PreparedSetup::new(crate::guest::setup(
                &catalog,
                JsonText::new(&catalog.all_tools_json()),
                mcp.as_deref(),
                &namespaces,
            )),
            placement: self.shared.placement.clone(),
            guest_dts: crate::guest_dts::text(catalog.host_source().as_str()).into(),
            catalog: Arc::new(catalog),
            mcp,
            mcp_capability_ids,
            namespaces: Arc::new(namespaces),
            model_tools,
            direct_only,
            telemetry,
            search_limits,
            results: Arc::new(crate::saved_results::SavedResults::new(
                config.max_saved_results() as usize,
                config.max_saved_result_bytes() as usize,
            )),
            cancelled,
            park_deadlines: Default::default(),
            lives: Default::default(),
            replaying: Default::default(),
        };
        Ok(Activation::Active(CodeModeSession {
            inner: Arc::new(session),
            store: self.shared.store.clone(),
            durable: self.shared.durable.clone(),
            observer: None,
        }))
    }
}

/// Fails activation when a direct-only tool, which stays model-visible, has the name of a
/// control tool: the model must see exactly one `exec` and one `wait` (a core `wait` is the
/// host's copy of code mode's own and never reaches [`Catalog::direct_only`]).
fn check_control_names(catalog: &Catalog) -> Result<(), ActivationError> {
    let control = [surface::EXEC_TOOL, surface::WAIT_TOOL];
    match catalog
        .direct_only()
        .iter()
        .find(|tool| control.contains(&tool.name.as_str()))
    {
        Some(tool) => Err(ActivationError::ControlNameCollision {
            name: tool.name.clone(),
            id: format!(
                "{}:{}:{}",
                catalog.host_source().label(tool.origin.source()),
                tool.origin.owner(),
                tool.name
            ),
        }),
        None => Ok(()),
    }
}

/// A catalog origin as namespace ownership sees it: only bundled and installed plugins own
/// namespace tools.
fn tool_owner(origin: &ToolOrigin) -> ToolOwner<'_> {
    match origin {
        ToolOrigin::BundledPlugin(plugin) | ToolOrigin::ExternalPlugin(plugin) => {
            ToolOwner::Plugin(plugin)
        }
        ToolOrigin::Mcp(server) => ToolOwner::McpServer(server),
        ToolOrigin::Client(owner) => ToolOwner::Client(owner),
        ToolOrigin::Core => ToolOwner::Core,
    }
}

fn mcp_servers(
    catalog: &Catalog,
    capabilities: &BTreeMap<String, McpServerCapabilities>,
) -> Vec<McpServer> {
    let mut servers: Vec<McpServer> = Vec::new();
    for entry in catalog
        .entries()
        .iter()
        .filter(|entry| entry.source == Source::Mcp)
    {
        let ToolOrigin::Mcp(server) = &entry.origin else {
            continue;
        };
        let tool = McpTool {
            name: entry.name.clone(),
            catalog_id: entry.id.clone(),
            description: entry.description.clone(),
            input_schema: entry
                .parameters
                .clone()
                .unwrap_or_else(|| serde_json::json!({ "type": "object" }))
                .into(),
            output_schema: None,
        };
        match servers.iter_mut().find(|s| &s.name == server) {
            Some(existing) => existing.tools.push(tool),
            None => {
                let caps = capabilities.get(server).cloned().unwrap_or_default();
                servers.push(McpServer {
                    name: server.clone(),
                    tools: vec![tool],
                    has_resources: caps.resources,
                    has_prompts: caps.prompts,
                });
            }
        }
    }
    servers
}
