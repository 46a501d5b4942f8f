//! Code mode for one process ([`CodeMode`]) and the per-agent-run session: `exec`, `wait`,
//! cancellation and restart recovery.

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use codemode_catalog::{Catalog, CatalogError, HostSource};
use codemode_journal::JournalStore;
use codemode_mcp_decls::{DeclCache, McpDecls};
use codemode_namespaces::{HiddenNamespace, NamespaceRegistry};
use codemode_sandbox::{
    LegEnd, ManualClock, Placement, Run, RunError, RunId, RunScope, SnapshotStore, StoreError,
    VmPool, WorkerPool, WorkerPoolConfig,
};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use crate::bridge::RunHost;
use crate::budget::MemoryBudget;
use crate::limits::sandbox_limits;
use crate::result::{CodeModeResult, ErrorCode, Telemetry};
use crate::resume::journaled_step;
use crate::state::{Counters, SessionState};
use crate::surface::{self, ModelTool, PayloadError};
use crate::trace::JOURNAL_HOOKS;
use crate::{CodeModeConfig, ExecInput, InputError, IsolationMode, Language, WaitInput, outcome};
use codemode_durable::{Durable, Forget, RunJournal, journal_scope, now_ms};
use codemode_host::{EventSink, NoEvents, ToolExecutor};

/// Capacity of the per-process cache of generated MCP declarations.
const DECL_CACHE_CAPACITY: u64 = 64;

/// The failure of a TypeScript program in a build without the `typescript` feature.
pub const TYPESCRIPT_NOT_COMPILED_IN: &str = "code mode typescript input needs the `typescript` \
    feature of codemode-core, which this build leaves out; send JavaScript instead.";

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
/// let code_mode = CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), Arc::new(Echo)).build();
/// let echo = ToolDescriptor { origin: ToolOrigin::Core, name: "echo".into(), label: None,
///     description: "Echo".into(), parameters: None, direct_only: false, read_only: true };
/// let Activation::Active(session) = code_mode.activate(ActivationRequest::new(vec![echo])).unwrap() else { panic!() };
/// let result = session.exec("call-1", &serde_json::json!({ "code": "return (await tools.echo({ hi: 1 })).hi" })).await;
/// assert_eq!(result.to_json()["value"], 1);
/// # });
/// ```
#[derive(Clone)]
pub struct CodeMode {
    pub(crate) shared: Arc<CodeModeState>,
}

pub(crate) struct CodeModeState {
    pub(crate) config: CodeModeConfig,
    /// Where every run executes, chosen once by the builder: a VM thread, VMs built ahead of
    /// time ([`CodeModeBuilder::prebuilt_vms`]), or a worker process (`isolation: "process"`).
    pub(crate) placement: Placement,
    /// The first id segment of the host's own tools.
    pub(crate) host_source: HostSource,
    pub(crate) executor: Arc<dyn ToolExecutor>,
    pub(crate) events: Arc<dyn EventSink>,
    pub(crate) namespaces: Arc<NamespaceRegistry>,
    pub(crate) store: SnapshotStore<Parked>,
    pub(crate) decl_cache: DeclCache,
    /// Where runs are journaled, when they are (codemode-durable).
    pub(crate) durable: Option<Arc<Durable>>,
    /// The host memory budget every running call reserves its VM's limit against.
    pub(crate) budget: Arc<MemoryBudget>,
}

impl std::fmt::Debug for CodeMode {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeMode")
            .field("config", &self.shared.config)
            .field("host_source", &self.shared.host_source.as_str())
            .field("namespaces", &self.shared.namespaces.len())
            .field("suspended_runs", &self.shared.store.len())
            .finish_non_exhaustive()
    }
}

/// Builds a [`CodeMode`].
pub struct CodeModeBuilder {
    config: CodeModeConfig,
    host_source: HostSource,
    worker_pool: WorkerPoolConfig,
    executor: Arc<dyn ToolExecutor>,
    events: Arc<dyn EventSink>,
    namespaces: Arc<NamespaceRegistry>,
    prebuilt_vms: usize,
    journal: Option<Arc<dyn JournalStore>>,
    max_memory: Option<u64>,
    snapshot_clock: Option<ManualClock>,
}

impl std::fmt::Debug for CodeModeBuilder {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeModeBuilder")
            .field("config", &self.config)
            .field("host_source", &self.host_source.as_str())
            .finish_non_exhaustive()
    }
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

    /// Keeps up to `count` VMs built ahead of time (at most
    /// [`MAX_POOLED_VMS`](codemode_sandbox::MAX_POOLED_VMS)), so an `exec` skips building its VM
    /// (about 0.3–0.6 ms of a trivial cell) on the request path. Each ready VM holds the memory of
    /// a fresh VM (a few hundred KiB); a run uses one VM once and never shares it, and the pool
    /// refills on the sandbox's VM threads in the background. The first builds start when
    /// [`build`](Self::build) runs inside a tokio runtime, else at the first `exec`. Default 0:
    /// library hosts opt in; `codemode serve` turns it on.
    pub fn prebuilt_vms(mut self, count: usize) -> Self {
        self.prebuilt_vms = count;
        self
    }

    /// The source name of the host's own tools (core and plugins): the first segment of their
    /// catalog ids (`myagent:core:search`) and the `source` of their `ALL_TOOLS` entries, also
    /// named in the `exec` description and `guest/globals.d.ts`. Default `openclaw`. A name is 1
    /// to 32 ASCII letters, digits, `_` or `-`, starting with a letter, and not `mcp`,
    /// `client` or `mcp-capability`; anything else is refused with a message saying why.
    ///
    /// ```
    /// # use std::sync::Arc;
    /// # use codemode_core::prelude::*;
    /// # struct Nothing;
    /// # #[async_trait] impl ToolExecutor for Nothing {
    /// #     async fn execute(&self, id: &str, _: serde_json::Value, _: ToolCallContext)
    /// #         -> Result<serde_json::Value, ToolError> { Err(ToolError::new(id)) }
    /// # }
    /// let code_mode = CodeMode::builder(CodeModeConfig::enabled().build()?, Arc::new(Nothing))
    ///     .source_name("myagent")?
    ///     .build();
    /// let search = ToolDescriptor::new(ToolOrigin::Core, "search", "Search the web");
    /// let session = code_mode.activate(ActivationRequest::new(vec![search]))?.into_active().unwrap();
    /// assert_eq!(session.catalog().entries()[0].id, "myagent:core:search");
    /// assert!(CodeMode::builder(CodeModeConfig::enabled().build()?, Arc::new(Nothing))
    ///     .source_name("my:agent").is_err());
    /// # Ok::<(), Box<dyn std::error::Error>>(())
    /// ```
    pub fn source_name(mut self, name: &str) -> Result<Self, CatalogError> {
        self.host_source = HostSource::new(name)?;
        Ok(self)
    }

    /// The worker pool used when the config says `isolation: "process"` (default:
    /// [`WorkerPoolConfig::default`], which finds the worker binary through `CODEMODE_WORKER`
    /// or next to the current executable). Ignored with `isolation: "thread"`.
    pub fn worker_pool(mut self, config: WorkerPoolConfig) -> Self {
        self.worker_pool = config;
        self
    }

    /// Journals every run in `store`, so that a `wait` finds a run whose VM was lost (a restart,
    /// another host sharing the store) and replays it without repeating a side effect (default:
    /// no journal, a suspended run lives only in this process's memory). The store holds tool
    /// results: protect it like the tools' data.
    pub fn journal(mut self, store: Arc<dyn JournalStore>) -> Self {
        self.journal = Some(store);
        self
    }

    /// The host memory budget, in bytes (default [`default_max_memory_bytes`](crate::default_max_memory_bytes):
    /// half the machine's memory). Each `exec` and `wait` reserves its VM's
    /// `memoryLimitBytes` against it while it runs; a call that finds no room waits for one, in
    /// turn with the other sessions' calls, at most its `timeoutMs`, then fails with
    /// `runtime_unavailable`. A call whose VM limit is larger than the budget runs alone (a
    /// budget of 0 is taken as 1 byte: one call at a time). What
    /// it does not cover: suspended runs (bounded by `maxSnapshotBytes` each, 64 at most) and
    /// the host's own tools.
    pub fn max_memory(mut self, bytes: u64) -> Self {
        self.max_memory = Some(bytes);
        self
    }

    /// Measures the TTL of suspended runs (`snapshotTtlSeconds`) on `clock` instead of the
    /// system's clock: for tests, which then expire a run by advancing the clock instead of
    /// sleeping past its TTL. A run's whole life (`maxRunSeconds`), its legs' deadlines and the
    /// expiry of its journal (with [`journal`](Self::journal)) stay on the system's clock.
    pub fn snapshot_clock(mut self, clock: ManualClock) -> Self {
        self.snapshot_clock = Some(clock);
        self
    }

    /// Finishes the builder. With `isolation: "process"` this starts the pool's warm workers
    /// in the background; with VMs built ahead of time (threads only), their first builds.
    pub fn build(self) -> CodeMode {
        let placement = match self.config.isolation() {
            IsolationMode::Process => Placement::Process(WorkerPool::new(self.worker_pool)),
            // VMs built ahead of time live in this process: a worker process builds its own.
            IsolationMode::Thread if self.prebuilt_vms > 0 => {
                let pool = VmPool::new(self.prebuilt_vms);
                pool.fill(&sandbox_limits(&self.config));
                Placement::PrebuiltThreads(pool)
            }
            IsolationMode::Thread => Placement::Thread,
        };
        CodeMode {
            shared: Arc::new(CodeModeState {
                placement,
                config: self.config,
                host_source: self.host_source,
                executor: self.executor,
                events: self.events,
                namespaces: self.namespaces,
                store: match self.snapshot_clock {
                    Some(clock) => SnapshotStore::new().with_manual_clock(clock),
                    None => SnapshotStore::new(),
                },
                decl_cache: DeclCache::new(DECL_CACHE_CAPACITY),
                durable: self
                    .journal
                    .map(|store| Arc::new(Durable::new(store, JOURNAL_HOOKS))),
                budget: MemoryBudget::new(
                    self.max_memory
                        .unwrap_or_else(crate::default_max_memory_bytes),
                ),
            }),
        }
    }
}

impl CodeMode {
    /// Starts building code mode around the host's tool executor.
    pub fn builder(config: CodeModeConfig, executor: Arc<dyn ToolExecutor>) -> CodeModeBuilder {
        CodeModeBuilder {
            config,
            host_source: HostSource::default(),
            worker_pool: WorkerPoolConfig::default(),
            executor,
            events: Arc::new(NoEvents),
            namespaces: Arc::new(NamespaceRegistry::new()),
            prebuilt_vms: 0,
            journal: None,
            max_memory: None,
            snapshot_clock: None,
        }
    }

    /// The effective config.
    pub fn config(&self) -> &CodeModeConfig {
        &self.shared.config
    }

    /// How many `exec` and `wait` calls wait for room in the host memory budget now (for a
    /// host's metrics; a steady non-zero value means the budget is too small for the load).
    pub fn calls_waiting_for_memory(&self) -> usize {
        self.shared.budget.waiting()
    }

    /// The host memory budget's bytes reserved now by running `exec` and `wait` calls, and its
    /// size ([`CodeModeBuilder::max_memory`]), for a host's metrics.
    pub fn memory_budget(&self) -> (u64, u64) {
        self.shared.budget.in_use()
    }

    /// Drops every suspended run of a session (session end), cancelling their host work, and
    /// deletes their journals.
    pub fn end_session(&self, session_id: &str) {
        self.shared.store.drop_session(session_id);
        if let Some(durable) = &self.shared.durable {
            durable.forget(Forget::Session(session_id.to_owned()));
        }
    }

    /// Drops the live VMs of a session's suspended runs and cancels their host work, but keeps
    /// their journals: a session with a stable identity (a session key) that comes back, here
    /// or on another host sharing the journal store, resumes them by replaying. Without a
    /// journal store this is [`end_session`](Self::end_session).
    pub fn release_session(&self, session_id: &str) {
        self.shared.store.drop_session(session_id);
    }

    /// Drops every suspended run of an agent run (the agent run ended), cancelling their host
    /// work and deleting their journals; returns how many live runs were dropped.
    pub fn end_agent_run(&self, agent_run_id: &str) -> usize {
        if let Some(durable) = &self.shared.durable {
            durable.forget(Forget::AgentRun(agent_run_id.to_owned()));
        }
        self.shared.store.drop_agent_run(agent_run_id)
    }

    /// Whether runs are journaled ([`CodeModeBuilder::journal`]).
    pub fn is_durable(&self) -> bool {
        self.shared.durable.is_some()
    }

    /// Drops every suspended run's live VM (host shutdown), cancelling their host work; their
    /// journals stay for the next process.
    pub fn shutdown(&self) {
        self.shared.store.clear();
    }

    /// VMs built ahead of time and ready for the next `exec` (0 without
    /// [`CodeModeBuilder::prebuilt_vms`]).
    pub fn ready_vms(&self) -> usize {
        match &self.shared.placement {
            Placement::PrebuiltThreads(pool) => pool.ready(),
            _ => 0,
        }
    }

    /// Fills the pool of [`CodeModeBuilder::prebuilt_vms`] and returns once every VM is ready
    /// (building on the sandbox's VM threads, never on this task's worker): for a host that
    /// wants its first `exec`s warm before it serves. Returns at once without a pool.
    pub async fn fill_vm_pool(&self) {
        if let Placement::PrebuiltThreads(pool) = &self.shared.placement {
            pool.fill_now(&sandbox_limits(&self.shared.config)).await;
        }
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

/// State parked next to a suspended VM.
pub(crate) struct Parked {
    /// The run's bridge host: its counters, restart-safety and calls in flight.
    pub(crate) host: Arc<RunHost>,
    /// Cancels the run's host work when the parked run is dropped (expiry, cancel, session end).
    pub(crate) _cancel_on_drop: DropGuard,
    /// The `traceparent` of the run's first leg, which its later legs continue (trace.rs).
    pub(crate) trace: Option<String>,
}

/// Code mode active for one agent run: the model-visible tools and `exec` / `wait`.
#[derive(Clone)]
pub struct CodeModeSession {
    pub(crate) inner: Arc<SessionState>,
    pub(crate) store: SnapshotStore<Parked>,
    pub(crate) durable: Option<Arc<Durable>>,
    /// The observer of this handle's `exec` and `wait` calls ([`CodeModeSession::observed`]).
    pub(crate) observer: Option<Arc<dyn crate::CallObserver>>,
}

impl std::fmt::Debug for CodeModeSession {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CodeModeSession")
            .field("agent_run", &self.inner.agent_run)
            .field("catalog_size", &self.inner.catalog.len())
            .field("visible_tools", &self.inner.telemetry.visible_tools)
            .finish_non_exhaustive()
    }
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

    /// The registered namespaces that are not visible in this run, each with why (a required
    /// tool missing, or offered by someone other than the registering plugin). Activation also
    /// logs the second kind as a warning under the `codemode` target.
    pub fn hidden_namespaces(&self) -> &[HiddenNamespace] {
        self.inner.namespaces.hidden()
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

    /// This session, for `exec` and `wait` calls that `observer` watches while they are open:
    /// the nested-call events and output items of the run each call drives
    /// ([`CallObserver`](crate::CallObserver)). The same session (same runs, same scope);
    /// only the calls made through the returned handle are observed.
    ///
    /// ```
    /// # use std::sync::{Arc, Mutex};
    /// # use codemode_core::*;
    /// # use codemode_catalog::{ToolDescriptor, ToolOrigin};
    /// # struct Echo;
    /// # #[async_trait::async_trait]
    /// # impl ToolExecutor for Echo {
    /// #     async fn execute(&self, _id: &str, input: serde_json::Value, _cx: ToolCallContext)
    /// #         -> Result<serde_json::Value, ToolError> { Ok(input) }
    /// # }
    /// struct Seen(Mutex<Vec<String>>);
    /// impl CallObserver for Seen {
    ///     fn on_event(&self, event: &NestedCallEvent) {
    ///         let kind = serde_json::to_value(event).unwrap()["event"].to_string();
    ///         self.0.lock().unwrap().push(kind);
    ///     }
    /// }
    /// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
    /// # let code_mode = CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), Arc::new(Echo)).build();
    /// # let echo = ToolDescriptor::new(ToolOrigin::Core, "echo", "Echo");
    /// # let session = code_mode.activate(ActivationRequest::new(vec![echo])).unwrap().into_active().unwrap();
    /// let seen = Arc::new(Seen(Mutex::new(Vec::new())));
    /// let result = session
    ///     .observed(seen.clone())
    ///     .exec("call-1", &serde_json::json!({ "code": "return await tools.echo({})" }))
    ///     .await;
    /// assert_eq!(result.to_json()["status"], "completed");
    /// assert_eq!(*seen.0.lock().unwrap(), ["\"start\"", "\"end\""]);
    /// # });
    /// ```
    #[must_use]
    pub fn observed(&self, observer: Arc<dyn crate::CallObserver>) -> CodeModeSession {
        CodeModeSession {
            observer: Some(observer),
            ..self.clone()
        }
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
        self.start(call_id, input, call_id.to_owned()).await
    }

    /// Starts a run whose nested calls are numbered under `nested_prefix` (`<prefix>/<n>`).
    async fn start(
        &self,
        call_id: &str,
        input: &ExecInput,
        nested_prefix: String,
    ) -> CodeModeResult {
        let span = tracing::debug_span!(target: "codemode", "exec", call_id, language = input.language.as_str());
        // A journaled run keeps its trace context in its journal from the start; any other run
        // reads it only when it parks (`drive_new`): most runs end in one leg and never need it.
        let trace = self
            .durable
            .as_ref()
            .and_then(|_| crate::trace::traceparent(&span));
        // One deadline for the whole call: the TypeScript transform, building and compiling the
        // VM, and running the program.
        let deadline = Instant::now() + self.inner.config.timeout();
        // The run's whole life (`maxRunSeconds`) counts from here, its first `exec`.
        let life = crate::run_life::RunLife::starting_now(self.inner.config.max_run());
        let config = &self.inner.config;
        let telemetry = || self.inner.telemetry.clone();
        let _room = match self.reserve_memory(deadline).await {
            Ok(room) => room,
            Err(failed) => return *failed,
        };
        if !config.allows(input.language) {
            let message = format!("code mode {} input is disabled.", input.language.as_str());
            return CodeModeResult::failed(Some(ErrorCode::InvalidInput), message, telemetry());
        }
        // JavaScript is checked for module access as is; TypeScript after the transform erased
        // `import type` (a value import makes the transform fail, and is reported as module access).
        let program = match input.language {
            Language::Javascript => std::borrow::Cow::Borrowed(input.code.as_str()),
            #[cfg(not(feature = "typescript"))]
            Language::Typescript => {
                return CodeModeResult::failed(
                    Some(ErrorCode::InvalidInput),
                    TYPESCRIPT_NOT_COMPILED_IN.to_owned(),
                    telemetry(),
                );
            }
            // On the transform threads, never on this task's worker.
            #[cfg(feature = "typescript")]
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
        let journal = self.durable.as_ref().map(|durable| {
            let ttl_ms = config.snapshot_ttl_seconds().saturating_mul(1000);
            RunJournal::recording(
                Arc::clone(durable),
                codemode_journal::RunRecord {
                    run_id: RunId::new().to_string(),
                    scope: journal_scope(&self.scope()),
                    program: program.to_string(),
                    parent_call_id: call_id.to_owned(),
                    restart_safe: input.restart_safe,
                    ttl_ms,
                    expires_at_ms: now_ms()
                        .saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX)),
                    trace_context: trace.clone(),
                    started_at_ms: Some(now_ms()),
                },
            )
        });
        let host = Arc::new(RunHost {
            session: Arc::clone(&self.inner),
            parent_call_id: call_id.to_owned(),
            nested_prefix,
            restart_safe: input.restart_safe,
            counters: Arc::clone(&counters),
            cancellation: cancellation.clone(),
            in_flight: Default::default(),
            journal: journal.clone(),
            life,
            observer: Default::default(),
        });
        let _observing = host.observer.install(self.observer.clone());
        let run = match self.start_run(&program, host.clone()) {
            Ok(run) => run,
            Err(error) => return outcome::failed_run(error, Vec::new(), telemetry()),
        };
        drop(_entered);
        let parked = Parked {
            host,
            _cancel_on_drop: cancellation.drop_guard(),
            trace,
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
        match WaitInput::from_json(input) {
            Ok(input) => self.wait_input(&input).await,
            Err(error) => self.invalid(error),
        }
    }

    /// Runs a validated `wait` input (the counterpart of [`CodeModeSession::exec_input`]).
    pub async fn wait_input(&self, input: &WaitInput) -> CodeModeResult {
        if input.terminate {
            return self.terminate(&input.run_id).await;
        }
        let span = tracing::debug_span!(target: "codemode", "wait", run_id = %input.run_id);
        // Idle while the guest only waits on host work (`legs`), at most `maxWaitMs` (or the
        // smaller `timeoutMs` the caller asked for).
        let config = &self.inner.config;
        let idle_budget = match input.timeout {
            Some(asked) => config.max_wait().min(asked.max(Duration::from_millis(1))),
            None => config.max_wait(),
        };
        // A run this process does not have is refused at once, whatever the memory budget
        // (with a journal store, it may still be replayed: that needs room).
        let resumption = match self.store.resume(&input.run_id, &self.scope()) {
            Err(error) if self.durable.is_none() => {
                return self.wait_failure(&input.run_id, error);
            }
            resumption => resumption,
        };
        let _room = match self.reserve_memory(Instant::now() + config.timeout()).await {
            Ok(room) => room,
            Err(failed) => {
                if let Ok(resumption) = resumption {
                    // No room this time: the run stays parked for a later `wait`.
                    let life = resumption.extra().host.life.remaining();
                    let _ = resumption.repark_within(life);
                }
                return *failed;
            }
        };
        if let Some(durable) = &self.durable {
            return self
                .wait_durable(durable, &input.run_id, resumption, idle_budget, span)
                .await;
        }
        let mut resumption = match resumption {
            Ok(resumption) => resumption,
            Err(error) => return self.wait_failure(&input.run_id, error),
        };
        crate::trace::continue_run(&span, resumption.extra().trace.as_deref());
        let host = Arc::clone(&resumption.extra().host);
        let observing = host.observer.install(self.observer.clone());
        let step = self
            .legs(resumption.run_mut(), None, &host.life, idle_budget, &span)
            .await;
        drop(observing);
        let restart_safe = host.restart_safe;
        let telemetry = self.telemetry(&host.counters);
        match step {
            LegEnd::Suspended {
                reason,
                pending,
                output,
            } => {
                let run_id = input.run_id.clone();
                // Taken before reparking, so it is never later than the store's own deadline;
                // the run expires parked at the end of its life at the latest.
                let ttl = config.snapshot_ttl().min(host.life.remaining());
                let deadline = self.store.now() + ttl;
                match resumption.repark_within(ttl) {
                    Ok(()) => {
                        self.inner.park_deadlines.record(&run_id, deadline);
                        self.inner.lives.record(&run_id, &host.life);
                        outcome::waiting(
                            run_id,
                            reason,
                            host.pending(pending),
                            output,
                            restart_safe,
                            telemetry,
                        )
                    }
                    Err(error) => {
                        self.inner.park_deadlines.forget(&run_id);
                        self.inner.lives.forget(&run_id);
                        outcome::store_failed(error, output, telemetry)
                    }
                }
            }
            other => {
                resumption.finish();
                self.inner.park_deadlines.forget(&input.run_id);
                self.inner.lives.forget(&input.run_id);
                outcome::finished(other, restart_safe, telemetry)
            }
        }
    }

    /// Cancels a suspended run of this session: its VM is released and its host work cancelled.
    /// Returns whether a run was dropped.
    pub fn cancel(&self, run_id: &str) -> bool {
        let cancelled = self.store.cancel(run_id, &self.scope());
        if cancelled {
            self.inner.park_deadlines.forget(run_id);
            self.inner.lives.forget(run_id);
            if let Some(durable) = &self.durable {
                durable.forget(Forget::Run(run_id.to_owned()));
            }
        }
        cancelled
    }

    /// Restart recovery: re-runs, from the start, the original input of a restart-safe `exec`
    /// whose suspended state was lost (the host restarted, or the run expired). Only
    /// restart-safe inputs are accepted: such a run only made read-only calls, so running it
    /// again repeats no side effect. The new run's nested calls get fresh ids,
    /// `<call_id>/recovered-<token>/<n>` with a random token, so that a host's events never show
    /// one nested call id twice. [`CodeModeSession::wait_or_recover`] does this for a `wait`
    /// whose run is gone.
    pub async fn recover(&self, call_id: &str, input: &Value) -> CodeModeResult {
        match ExecInput::from_json(input) {
            Ok(input) if input.restart_safe => {
                let token = codemode_sandbox::RunId::new().to_string();
                // `cm_<uuid>`: eight hex digits of the uuid are plenty to tell attempts apart.
                let token = token.get(3..11).unwrap_or(token.as_str());
                let prefix = format!("{call_id}/recovered-{token}");
                self.start(call_id, &input, prefix).await
            }
            Ok(_) => CodeModeResult::failed(
                Some(ErrorCode::InvalidInput),
                "only restart-safe code mode runs can be recovered.",
                self.inner.telemetry.clone(),
            ),
            Err(error) => self.invalid(error),
        }
    }

    async fn drive_new(
        &self,
        mut run: Run,
        mut parked: Parked,
        deadline: Instant,
    ) -> CodeModeResult {
        let life = Arc::clone(&parked.host.life);
        let step = life.drive_leg(&mut run, deadline).await;
        if let Some(journal) = parked.host.journal.clone() {
            let step = journaled_step(&journal, step);
            return self.conclude(run, parked, &journal, step).await;
        }
        let telemetry = self.telemetry(&parked.host.counters);
        let restart_safe = parked.host.restart_safe;
        match step {
            LegEnd::Suspended {
                reason,
                pending,
                output,
            } => {
                let pending = parked.host.pending(pending);
                // Its later legs continue the trace of this one, the `exec` span this runs in.
                parked.trace = crate::trace::traceparent(&tracing::Span::current());
                let config = &self.inner.config;
                // The run expires parked at the end of its life at the latest.
                let ttl = config.snapshot_ttl().min(life.remaining());
                // Taken before parking (on the store's clock), so it is never later than the
                // store's own deadline.
                let deadline = self.store.now() + ttl;
                match self.store.park(
                    run,
                    self.scope(),
                    parked,
                    ttl,
                    config.max_snapshot_bytes() as usize,
                ) {
                    Ok(run_id) => {
                        let run_id = run_id.to_string();
                        self.inner.park_deadlines.record(&run_id, deadline);
                        self.inner.lives.record(&run_id, &life);
                        outcome::waiting(run_id, reason, pending, output, restart_safe, telemetry)
                    }
                    Err(error) => outcome::store_failed(error, output, telemetry),
                }
            }
            other => outcome::finished(other, restart_safe, telemetry),
        }
    }

    /// Starts a run of the session's guest setup under its limits, where the code mode places
    /// its runs: the one start of `exec` and of a replayed `wait`.
    pub(crate) fn start_run(&self, program: &str, host: Arc<RunHost>) -> Result<Run, RunError> {
        let (limits, placement) = (sandbox_limits(&self.inner.config), &self.inner.placement);
        Run::start(program, self.inner.guest.clone(), &limits, placement, host)
    }

    pub(crate) fn scope(&self) -> RunScope {
        RunScope {
            agent_run_id: self.inner.agent_run.agent_run_id.clone(),
            session_id: self.inner.agent_run.session_id.clone(),
            session_key: self.inner.agent_run.session_key.clone(),
        }
    }

    pub(crate) fn telemetry(&self, counters: &Counters) -> Telemetry {
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

    /// Reserves this call's VM memory limit against the host memory budget, waiting in this
    /// session's turn until `deadline`.
    async fn reserve_memory(
        &self,
        deadline: Instant,
    ) -> Result<crate::budget::Reservation, Box<CodeModeResult>> {
        let budget = &self.inner.budget;
        budget
            .reserve(
                self.inner.budget_session,
                self.inner.config.memory_limit_bytes(),
                deadline,
            )
            .await
            .map_err(|why| {
                Box::new(CodeModeResult::failed(
                    Some(ErrorCode::RuntimeUnavailable),
                    budget.refusal(why),
                    self.inner.telemetry.clone(),
                ))
            })
    }

    /// A `wait` on `run_id` the store refused, with its machine-readable reason, the same with
    /// a journal store as in memory.
    pub(crate) fn wait_failure(&self, run_id: &str, error: StoreError) -> CodeModeResult {
        // A run dropped parked when its life ran out says so (`run_lifetime_exceeded`).
        if matches!(error, StoreError::Unavailable)
            && let Some(outlived) = self.inner.lives.outlived(run_id)
        {
            return outcome::failed_run(outlived, Vec::new(), self.inner.telemetry.clone());
        }
        let expired = self.inner.park_deadlines.expired(run_id, self.store.now());
        outcome::wait_failed(error, expired, self.inner.telemetry.clone())
    }
}
