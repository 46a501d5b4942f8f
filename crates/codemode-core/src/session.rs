//! Activation (SPEC §4) and the per-agent-run code-mode session: `exec`, `wait`, cancellation
//! and restart recovery (SPEC §6, §8).

use std::collections::BTreeMap;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use codemode_catalog::{Catalog, McpCapability, SearchLimits, Source, ToolDescriptor, ToolOrigin};
use codemode_mcp_decls::{DeclCache, McpDecls, McpServer, McpTool};
use codemode_namespaces::{
    CancellationState, CatalogTool, NamespaceRegistry, NamespaceRuntime, ScopeContext, ToolOwner,
};
use codemode_sandbox::{
    Isolation, JsonText, Limits, Run, RunScope, SnapshotStore, Step, StoreError, SuspendReason,
    WorkerPool, WorkerPoolConfig,
};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use crate::executor::{EventSink, NoEvents, RunContext, ToolExecutor};
use crate::host::{Counters, RunHost};
use crate::result::{CodeModeResult, ErrorCode, SourceTelemetry, Telemetry};
use crate::surface::{self, DescriptionParts, ModelTool, PayloadError};
use crate::{
    CodeModeConfig, ExecInput, InputError, IsolationMode, Language, WaitInput, guest, outcome,
};

/// Capacity of the per-process cache of generated MCP declarations.
const DECL_CACHE_CAPACITY: u64 = 64;

/// Code mode for one host process: config, executor, event sink, namespace registry and the
/// store of suspended runs. Cheap to clone.
///
/// ```
/// # use std::sync::Arc;
/// # use codemode_core::*;
/// # use codemode_catalog::{ToolDescriptor, ToolOrigin};
/// struct Echo;
/// #[async_trait::async_trait]
/// impl ToolExecutor for Echo {
///     async fn execute(&self, _id: &str, input: serde_json::Value, _cx: ToolCallContext)
///         -> Result<serde_json::Value, ToolError> { Ok(input) }
/// }
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let code_mode = CodeMode::builder(CodeModeConfig::enabled(), Arc::new(Echo)).build();
/// let echo = ToolDescriptor { origin: ToolOrigin::Core, name: "echo".into(), label: None,
///     description: "Echo".into(), parameters: None, direct_only: false, read_only: true };
/// let Activation::Active(session) = code_mode.activate(ActivationRequest::new(vec![echo])).unwrap() else { panic!() };
/// let result = session.exec("call-1", &serde_json::json!({ "code": "return (await tools.echo({ hi: 1 })).hi" })).await;
/// assert_eq!(result.to_json()["value"], 1);
/// # });
/// ```
#[derive(Clone)]
pub struct CodeMode {
    shared: Arc<Shared>,
}

struct Shared {
    config: CodeModeConfig,
    /// Where runs' VMs live; with `isolation: "process"`, the worker pool of this `CodeMode`.
    isolation: Isolation,
    executor: Arc<dyn ToolExecutor>,
    events: Arc<dyn EventSink>,
    namespaces: Arc<NamespaceRegistry>,
    store: SnapshotStore<Parked>,
    decl_cache: DeclCache,
}

/// Builds a [`CodeMode`].
pub struct CodeModeBuilder {
    config: CodeModeConfig,
    worker_pool: WorkerPoolConfig,
    executor: Arc<dyn ToolExecutor>,
    events: Arc<dyn EventSink>,
    namespaces: Arc<NamespaceRegistry>,
}

impl CodeModeBuilder {
    /// Receives nested call events (default: none).
    pub fn events(mut self, events: Arc<dyn EventSink>) -> Self {
        self.events = events;
        self
    }

    /// The namespace registry to read visible namespaces from (default: an empty one).
    pub fn namespaces(mut self, namespaces: Arc<NamespaceRegistry>) -> Self {
        self.namespaces = namespaces;
        self
    }

    /// The worker pool used when the config says `isolation: "process"` (default:
    /// [`WorkerPoolConfig::default`], which finds the worker binary through `CODEMODE_WORKER`
    /// or next to the current executable). Ignored with `isolation: "thread"`.
    pub fn worker_pool(mut self, config: WorkerPoolConfig) -> Self {
        self.worker_pool = config;
        self
    }

    /// Finishes the builder. With `isolation: "process"` this starts the pool's warm workers
    /// in the background.
    pub fn build(self) -> CodeMode {
        let isolation = match self.config.isolation {
            IsolationMode::Thread => Isolation::Thread,
            IsolationMode::Process => Isolation::Process(WorkerPool::new(self.worker_pool)),
        };
        CodeMode {
            shared: Arc::new(Shared {
                isolation,
                config: self.config,
                executor: self.executor,
                events: self.events,
                namespaces: self.namespaces,
                store: SnapshotStore::new(),
                decl_cache: DeclCache::new(DECL_CACHE_CAPACITY),
            }),
        }
    }
}

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
    pub run: RunContext,
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
    pub fn with_run(mut self, run: RunContext) -> Self {
        self.run = run;
        self
    }
}

/// The outcome of activation.
pub enum Activation {
    /// Code mode is disabled, or the run has no tools: expose these tools as usual.
    Unchanged(Vec<ToolDescriptor>),
    /// Code mode is active: expose [`CodeModeSession::model_tools`].
    Active(CodeModeSession),
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
    /// Starts building code mode around the host's tool executor.
    pub fn builder(config: CodeModeConfig, executor: Arc<dyn ToolExecutor>) -> CodeModeBuilder {
        CodeModeBuilder {
            config,
            worker_pool: WorkerPoolConfig::default(),
            executor,
            events: Arc::new(NoEvents),
            namespaces: Arc::new(NamespaceRegistry::new()),
        }
    }

    /// The effective config.
    pub fn config(&self) -> &CodeModeConfig {
        &self.shared.config
    }

    /// Decides the model-visible surface of one agent run (SPEC §4).
    pub fn activate(&self, request: ActivationRequest) -> Result<Activation, ActivationError> {
        let config = &self.shared.config;
        if !config.enabled || request.tools_disabled || request.tools.is_empty() {
            return Ok(Activation::Unchanged(request.tools));
        }
        let _span =
            tracing::debug_span!(target: "codemode", "activate", tools = request.tools.len())
                .entered();
        let catalog = Catalog::build(request.tools);
        check_control_names(&catalog)?;
        let cancelled = Arc::new(AtomicBool::new(false));
        let scope_context = ScopeContext {
            agent_id: request.run.agent_id.clone(),
            session_key: request.run.session_key.clone(),
            session_id: request.run.session_id.clone(),
            run_id: request.run.agent_run_id.clone(),
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
            mcp_servers: &server_names,
            namespace_prompt: namespace_prompt.as_deref(),
        });
        let mut model_tools = vec![surface::exec_tool(description), surface::wait_tool()];
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
            config.search_default_limit as usize,
            config.max_search_limit as usize,
        );
        let session = SessionShared {
            config: config.clone(),
            isolation: self.shared.isolation.clone(),
            executor: Arc::clone(&self.shared.executor),
            events: Arc::clone(&self.shared.events),
            run: request.run,
            all_tools: JsonText::new(&catalog.all_tools_json()),
            catalog: Arc::new(catalog),
            mcp,
            mcp_capability_ids,
            namespaces: Arc::new(namespaces),
            model_tools,
            direct_only,
            telemetry,
            search_limits,
            results: Arc::new(crate::results::SavedResults::new(
                config.max_saved_results as usize,
                config.max_saved_result_bytes as usize,
            )),
            cancelled,
        };
        Ok(Activation::Active(CodeModeSession {
            inner: Arc::new(session),
            store: self.shared.store.clone(),
        }))
    }

    /// Drops every suspended run of a session (session end), cancelling their host work.
    pub fn end_session(&self, session_id: &str) {
        self.shared.store.drop_session(session_id);
    }

    /// Drops every suspended run (host shutdown), cancelling their host work.
    pub fn shutdown(&self) {
        self.shared.store.clear();
    }

    /// Suspended runs currently held in memory.
    pub fn suspended_runs(&self) -> usize {
        self.shared.store.len()
    }

    /// Measured VM memory of all suspended runs, in bytes.
    pub fn suspended_memory_bytes(&self) -> usize {
        self.shared.store.memory_bytes()
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
                tool.origin.source(),
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

/// What a session shares with the bridge hosts of its runs. It holds no handle to the snapshot
/// store, so that a parked run (whose host holds this) never keeps the store alive: dropping the
/// last [`CodeMode`] and [`CodeModeSession`] releases every parked VM.
pub(crate) struct SessionShared {
    pub(crate) config: CodeModeConfig,
    pub(crate) isolation: Isolation,
    pub(crate) executor: Arc<dyn ToolExecutor>,
    pub(crate) events: Arc<dyn EventSink>,
    pub(crate) run: RunContext,
    pub(crate) catalog: Arc<Catalog>,
    /// `ALL_TOOLS` as JSON text, made once: the catalog never changes within a session.
    pub(crate) all_tools: JsonText,
    pub(crate) mcp: Option<Arc<McpDecls>>,
    /// The `mcp-capability:<server>:<method>` ids the guest may call ([`McpCapability::id`]).
    pub(crate) mcp_capability_ids: Vec<String>,
    pub(crate) namespaces: Arc<NamespaceRuntime>,
    pub(crate) model_tools: Vec<ModelTool>,
    pub(crate) direct_only: Vec<String>,
    pub(crate) telemetry: Telemetry,
    pub(crate) search_limits: SearchLimits,
    /// The `results` store of this session: cleared when the session is dropped.
    pub(crate) results: Arc<crate::results::SavedResults>,
    cancelled: Arc<AtomicBool>,
}

impl Drop for SessionShared {
    fn drop(&mut self) {
        self.cancelled.store(true, Ordering::Relaxed);
    }
}

/// State parked next to a suspended VM.
pub(crate) struct Parked {
    /// The run's bridge host: its counters, restart-safety and calls in flight.
    host: Arc<RunHost>,
    /// Cancels the run's host work when the parked run is dropped (expiry, cancel, session end).
    _cancel_on_drop: DropGuard,
}

/// Code mode active for one agent run: the model-visible tools and `exec` / `wait`.
#[derive(Clone)]
pub struct CodeModeSession {
    inner: Arc<SessionShared>,
    store: SnapshotStore<Parked>,
}

impl CodeModeSession {
    /// The tools the model sees: `exec`, `wait` and the kept direct-only tools.
    pub fn model_tools(&self) -> &[ModelTool] {
        &self.inner.model_tools
    }

    /// The hidden catalog of this run.
    pub fn catalog(&self) -> &Catalog {
        &self.inner.catalog
    }

    /// The generated MCP declarations, when MCP servers are visible.
    pub fn mcp_declarations(&self) -> Option<&McpDecls> {
        self.inner.mcp.as_deref()
    }

    /// Checks a final provider payload: exactly one `exec`, one `wait`, and only approved
    /// direct-only tools. Fails closed.
    pub fn check_payload<'a>(
        &self,
        tool_names: impl IntoIterator<Item = &'a str>,
    ) -> Result<(), PayloadError> {
        surface::check_payload(tool_names, &self.inner.direct_only)
    }

    /// Runs an `exec` call. `call_id` is the model's tool-call id (parent of nested calls).
    pub async fn exec(&self, call_id: &str, input: &Value) -> CodeModeResult {
        match ExecInput::from_json(input) {
            Ok(input) => self.exec_input(call_id, &input).await,
            Err(error) => self.invalid(error),
        }
    }

    /// Runs a validated `exec` input.
    pub async fn exec_input(&self, call_id: &str, input: &ExecInput) -> CodeModeResult {
        let span = tracing::debug_span!(target: "codemode", "exec", call_id, language = input.language.as_str());
        // One deadline for the whole call: the TypeScript transform, building and compiling the
        // VM, and running the program.
        let deadline = Instant::now() + self.inner.config.timeout();
        let config = &self.inner.config;
        let telemetry = || self.inner.telemetry.clone();
        if !config.allows(input.language) {
            let message = format!("code mode {} input is disabled.", input.language.as_str());
            return CodeModeResult::failed(Some(ErrorCode::InvalidInput), message, telemetry());
        }
        // JavaScript is checked for module access as is; TypeScript after the transform erased
        // `import type` (a value import makes the transform fail, and is reported as module access).
        let program = match input.language {
            Language::Javascript => std::borrow::Cow::Borrowed(input.code.as_str()),
            // On the transform threads, never on this task's worker.
            Language::Typescript => match codemode_ts::transform_async(
                input.code.clone(),
                codemode_ts::TransformOptions::default(),
            )
            .instrument(span.clone())
            .await
            {
                Ok(js) => std::borrow::Cow::Owned(js),
                Err(error) => {
                    let failure = match codemode_sandbox::check_module_access(&input.code) {
                        Err(module_access) => module_access.to_string(),
                        Ok(()) => error.to_string(),
                    };
                    return CodeModeResult::failed(
                        Some(ErrorCode::InvalidInput),
                        failure,
                        telemetry(),
                    );
                }
            },
        };
        let _entered = span.clone().entered();
        let counters = Arc::new(Counters::default());
        let cancellation = CancellationToken::new();
        let host = Arc::new(RunHost {
            session: Arc::clone(&self.inner),
            parent_call_id: call_id.to_owned(),
            restart_safe: input.restart_safe,
            counters: Arc::clone(&counters),
            cancellation: cancellation.clone(),
            in_flight: Default::default(),
        });
        let setup = guest::setup(&self.inner, &counters);
        let run = match Run::start(&program, setup, self.limits(), host.clone()) {
            Ok(run) => run,
            Err(error) => return outcome::failed_run(error, Vec::new(), telemetry()),
        };
        drop(_entered);
        let parked = Parked {
            host,
            _cancel_on_drop: cancellation.drop_guard(),
        };
        self.drive_new(run, parked, deadline).instrument(span).await
    }

    /// Runs a `wait` call: resumes a suspended run with a fresh time budget.
    ///
    /// `wait` idles while the guest is blocked on pending host work: it returns when the run
    /// completes or fails, yields, or produces output, or once `maxWaitMs` (or a smaller
    /// `timeoutMs` in the input) has passed. Guest code runs at most `timeoutMs` of the config
    /// per leg; output is noticed at the end of a leg.
    pub async fn wait(&self, input: &Value) -> CodeModeResult {
        let raw_input = input;
        let input = match WaitInput::from_json(input) {
            Ok(input) => input,
            Err(error) => return self.invalid(error),
        };
        let span = tracing::debug_span!(target: "codemode", "wait", run_id = %input.run_id);
        let mut resumption = match self.store.resume(&input.run_id, &self.scope()) {
            Ok(resumption) => resumption,
            Err(error) => return self.store_failure(error),
        };
        // Idle while the guest only waits on host work: drive again, each leg with the full
        // `timeoutMs` for guest code, until the run ends, yields or prints, or the next leg
        // would pass `maxWaitMs` (or the smaller `timeoutMs` the caller asked for).
        let config = &self.inner.config;
        let idle_budget = match raw_input.get("timeoutMs").and_then(Value::as_u64) {
            Some(asked) => config.max_wait().min(Duration::from_millis(asked.max(1))),
            None => config.max_wait(),
        };
        let leg = config.timeout().min(idle_budget);
        let started = Instant::now();
        let step = loop {
            let deadline = Instant::now() + leg;
            let step = resumption
                .run_mut()
                .drive(deadline)
                .instrument(span.clone())
                .await;
            match &step {
                Step::Suspended {
                    reason: SuspendReason::PendingTools,
                    output,
                    ..
                } if output.is_empty() && started.elapsed() + leg <= idle_budget => continue,
                _ => break step,
            }
        };
        let host = Arc::clone(&resumption.extra().host);
        let restart_safe = host.restart_safe;
        let telemetry = self.telemetry(&host.counters);
        match step {
            Step::Suspended {
                reason,
                pending,
                output,
            } => {
                let run_id = input.run_id.clone();
                match resumption.repark() {
                    Ok(()) => outcome::waiting(
                        run_id,
                        reason,
                        host.pending(pending),
                        output,
                        restart_safe,
                        telemetry,
                    ),
                    Err(error) => outcome::store_failed(error, output, telemetry),
                }
            }
            other => {
                resumption.finish();
                outcome::finished(other, restart_safe, telemetry)
            }
        }
    }

    /// Cancels a suspended run of this session: its VM is released and its host work cancelled.
    /// Returns whether a run was dropped.
    pub fn cancel(&self, run_id: &str) -> bool {
        self.store.cancel(run_id, &self.scope())
    }

    /// Restart recovery (SPEC §8): re-runs the original input of a restart-safe `exec` whose
    /// suspended state was lost with a host restart. Only restart-safe inputs are accepted.
    pub async fn recover(&self, call_id: &str, input: &Value) -> CodeModeResult {
        match ExecInput::from_json(input) {
            Ok(input) if input.restart_safe => self.exec_input(call_id, &input).await,
            Ok(_) => CodeModeResult::failed(
                Some(ErrorCode::InvalidInput),
                "only restart-safe code mode runs can be recovered.",
                self.inner.telemetry.clone(),
            ),
            Err(error) => self.invalid(error),
        }
    }

    async fn drive_new(&self, mut run: Run, parked: Parked, deadline: Instant) -> CodeModeResult {
        let step = run.drive(deadline).await;
        let telemetry = self.telemetry(&parked.host.counters);
        let restart_safe = parked.host.restart_safe;
        match step {
            Step::Suspended {
                reason,
                pending,
                output,
            } => {
                let pending = parked.host.pending(pending);
                let config = &self.inner.config;
                let ttl = Duration::from_secs(config.snapshot_ttl_seconds);
                match self.store.park(
                    run,
                    self.scope(),
                    parked,
                    ttl,
                    config.max_snapshot_bytes as usize,
                ) {
                    Ok(run_id) => outcome::waiting(
                        run_id.to_string(),
                        reason,
                        pending,
                        output,
                        restart_safe,
                        telemetry,
                    ),
                    Err(error) => outcome::store_failed(error, output, telemetry),
                }
            }
            other => outcome::finished(other, restart_safe, telemetry),
        }
    }

    fn limits(&self) -> Limits {
        let config = &self.inner.config;
        Limits {
            memory_bytes: config.memory_limit_bytes as usize,
            timeout: config.timeout(),
            max_output_bytes: config.max_output_bytes as usize,
            max_pending_calls: config.max_pending_tool_calls as usize,
            max_queued_calls: config.max_queued_tool_calls as usize,
            max_snapshot_bytes: config.max_snapshot_bytes as usize,
            isolation: self.inner.isolation.clone(),
            ..Limits::default()
        }
    }

    fn scope(&self) -> RunScope {
        RunScope {
            agent_run_id: self.inner.run.agent_run_id.clone(),
            session_id: self.inner.run.session_id.clone(),
            session_key: self.inner.run.session_key.clone(),
        }
    }

    fn telemetry(&self, counters: &Counters) -> Telemetry {
        Telemetry {
            search_count: counters.search.load(Ordering::Relaxed),
            describe_count: counters.describe.load(Ordering::Relaxed),
            call_count: counters.call.load(Ordering::Relaxed),
            ..self.inner.telemetry.clone()
        }
    }

    fn invalid(&self, error: InputError) -> CodeModeResult {
        CodeModeResult::failed(
            Some(ErrorCode::InvalidInput),
            error.to_string(),
            self.inner.telemetry.clone(),
        )
    }

    fn store_failure(&self, error: StoreError) -> CodeModeResult {
        outcome::store_failed(error, Vec::new(), self.inner.telemetry.clone())
    }
}
