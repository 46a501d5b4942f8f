//! Activation (SPEC §4) and the per-agent-run code-mode session: `exec`, `wait`, cancellation
//! and restart recovery (SPEC §6, §8).

use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::time::{Duration, Instant};

use codemode_catalog::Catalog;
use codemode_journal::JournalStore;
use codemode_mcp_decls::{DeclCache, McpDecls};
use codemode_namespaces::NamespaceRegistry;
use codemode_sandbox::{Limits, Run, RunId, RunScope, SnapshotStore, Step, StoreError};
use serde_json::Value;
use tokio_util::sync::{CancellationToken, DropGuard};
use tracing::Instrument;

use crate::bridge::RunHost;
use crate::durable::{Durable, Forget, RunJournal};
use crate::executor::{EventSink, NoEvents, ToolExecutor};
use crate::result::{CodeModeResult, ErrorCode, Telemetry};
use crate::resume::journaled_step;
use crate::state::{Counters, SessionState};
use crate::surface::{self, ModelTool, PayloadError};
use crate::{CodeModeConfig, ExecInput, InputError, Language, WaitInput, guest, outcome};

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
    pub(crate) shared: Arc<CodeModeState>,
}

pub(crate) struct CodeModeState {
    pub(crate) config: CodeModeConfig,
    pub(crate) executor: Arc<dyn ToolExecutor>,
    pub(crate) events: Arc<dyn EventSink>,
    pub(crate) namespaces: Arc<NamespaceRegistry>,
    pub(crate) store: SnapshotStore<Parked>,
    pub(crate) decl_cache: DeclCache,
    /// Where runs are journaled, when they are (durable.rs).
    pub(crate) durable: Option<Arc<Durable>>,
}

/// Builds a [`CodeMode`].
pub struct CodeModeBuilder {
    config: CodeModeConfig,
    executor: Arc<dyn ToolExecutor>,
    events: Arc<dyn EventSink>,
    namespaces: Arc<NamespaceRegistry>,
    journal: Option<Arc<dyn JournalStore>>,
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

    /// Journals every run in `store`, so that a `wait` finds a run whose VM was lost (a restart,
    /// another host sharing the store) and replays it without repeating a side effect (default:
    /// no journal, a suspended run lives only in this process's memory). The store holds tool
    /// results: protect it like the tools' data.
    pub fn journal(mut self, store: Arc<dyn JournalStore>) -> Self {
        self.journal = Some(store);
        self
    }

    /// Finishes the builder.
    pub fn build(self) -> CodeMode {
        CodeMode {
            shared: Arc::new(CodeModeState {
                config: self.config,
                executor: self.executor,
                events: self.events,
                namespaces: self.namespaces,
                store: SnapshotStore::new(),
                decl_cache: DeclCache::new(DECL_CACHE_CAPACITY),
                durable: self.journal.map(|store| Arc::new(Durable::new(store))),
            }),
        }
    }
}

impl CodeMode {
    /// Starts building code mode around the host's tool executor.
    pub fn builder(config: CodeModeConfig, executor: Arc<dyn ToolExecutor>) -> CodeModeBuilder {
        CodeModeBuilder {
            config,
            executor,
            events: Arc::new(NoEvents),
            namespaces: Arc::new(NamespaceRegistry::new()),
            journal: None,
        }
    }

    /// The effective config.
    pub fn config(&self) -> &CodeModeConfig {
        &self.shared.config
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
}

/// Code mode active for one agent run: the model-visible tools and `exec` / `wait`.
#[derive(Clone)]
pub struct CodeModeSession {
    pub(crate) inner: Arc<SessionState>,
    pub(crate) store: SnapshotStore<Parked>,
    pub(crate) durable: Option<Arc<Durable>>,
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
        let journal = self.durable.as_ref().map(|durable| {
            let ttl_ms = config.snapshot_ttl_seconds.saturating_mul(1000);
            RunJournal::recording(
                Arc::clone(durable),
                codemode_journal::RunRecord {
                    run_id: RunId::new().to_string(),
                    scope: crate::durable::journal_scope(&self.scope()),
                    program: program.to_string(),
                    parent_call_id: call_id.to_owned(),
                    restart_safe: input.restart_safe,
                    ttl_ms,
                    expires_at_ms: crate::durable::now_ms()
                        .saturating_add(i64::try_from(ttl_ms).unwrap_or(i64::MAX)),
                },
            )
        });
        let host = Arc::new(RunHost {
            session: Arc::clone(&self.inner),
            parent_call_id: call_id.to_owned(),
            restart_safe: input.restart_safe,
            counters: Arc::clone(&counters),
            cancellation: cancellation.clone(),
            in_flight: Default::default(),
            journal: journal.clone(),
        });
        let mut setup = guest::setup(&self.inner, &counters);
        setup.tape = journal.map(|journal| journal as Arc<dyn codemode_sandbox::Tape>);
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
        // Idle while the guest only waits on host work (`legs`), at most `maxWaitMs` (or the
        // smaller `timeoutMs` the caller asked for).
        let config = &self.inner.config;
        let idle_budget = match raw_input.get("timeoutMs").and_then(Value::as_u64) {
            Some(asked) => config.max_wait().min(Duration::from_millis(asked.max(1))),
            None => config.max_wait(),
        };
        let resumption = self.store.resume(&input.run_id, &self.scope());
        if let Some(durable) = &self.durable {
            return self
                .wait_durable(durable, &input.run_id, resumption, idle_budget, span)
                .await;
        }
        let mut resumption = match resumption {
            Ok(resumption) => resumption,
            Err(error) => return self.store_failure(error),
        };
        let step = self
            .legs(resumption.run_mut(), None, idle_budget, &span)
            .await;
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
        let dropped = self.store.cancel(run_id, &self.scope());
        if dropped && let Some(durable) = &self.durable {
            durable.forget(Forget::Run(run_id.to_owned()));
        }
        dropped
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
        if let Some(journal) = parked.host.journal.clone() {
            let step = journaled_step(&journal, step);
            return self.conclude(run, parked, &journal, step).await;
        }
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

    pub(crate) fn limits(&self) -> Limits {
        let config = &self.inner.config;
        Limits {
            memory_bytes: config.memory_limit_bytes as usize,
            timeout: config.timeout(),
            max_output_bytes: config.max_output_bytes as usize,
            max_pending_calls: config.max_pending_tool_calls as usize,
            max_queued_calls: config.max_queued_tool_calls as usize,
            max_snapshot_bytes: config.max_snapshot_bytes as usize,
            ..Limits::default()
        }
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

    pub(crate) fn store_failure(&self, error: StoreError) -> CodeModeResult {
        outcome::store_failed(error, Vec::new(), self.inner.telemetry.clone())
    }
}
