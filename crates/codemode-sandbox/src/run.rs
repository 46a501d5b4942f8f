//! One run: a fresh QuickJS VM, its bridge state and the loop that drives it.
//!
//! Layout of trust: `bootstrap.js` (loaded as bytecode, see bytecode.rs) runs before any guest
//! code and returns a frozen control object (`install`, `compile`, `begin`, `settle`) kept as
//! runtime userdata, which guest code can never reach. `install` builds the whole guest setup in
//! one call from a JSON plan (see `InstallPlan`). Guest-visible functions are closures made by
//! the bootstrap around the natives defined here (`hostCall`, `hostLocal`, `hostEmit`,
//! `hostYield`, `hostFinish`, `hostIsProxy`); those natives are passed as arguments and never
//! installed as globals, so there is no internal name to forge. Only `Send` state is captured by natives and the interrupt handler.

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::future::Future as _;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::Instant;

use rquickjs::{Context, Ctx, Function, Object, Runtime, Value as JsValue};
use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::task::{JoinError, JoinSet};

use crate::bytecode::load_bootstrap;
use crate::{
    BridgeHost, BridgeRequest, Callable, GuestPath, GuestSetup, JsonText, Limits, LocalFn,
    MAX_JSON_DEPTH, PendingCall, RequestId, RunError, check_module_access,
};

/// Longest failure message kept from guest code; longer ones are cut at a char boundary.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 4096;
const HOST_CALL_FAILED: &str = "code mode host call failed";
const TOO_MANY_PENDING: &str = "too many pending code mode tool calls";
const OUTPUT_LIMIT: &str = "code mode output limit exceeded";
/// How many microtasks run between two checks of the deadline from Rust (the interrupt handler
/// checks it inside guest code as well).
const JOBS_PER_DEADLINE_CHECK: u32 = 256;

/// One item of guest output, in guest call order.
///
/// Serialized as SPEC §6 `{"type":"text","text":..}` / `{"type":"json","value":..}`.
///
/// ```
/// use codemode_sandbox::Output;
/// let item = Output::Text("hi".into());
/// assert_eq!(serde_json::to_string(&item).unwrap(), r#"{"type":"text","text":"hi"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(into = "OutputRepr", from = "OutputRepr")]
pub enum Output {
    /// From `text(value)`: strings verbatim, other values as compact JSON.
    Text(String),
    /// From `json(value)`: a JSON-compatible copy of the value.
    Json(Value),
}

#[derive(Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "snake_case")]
enum OutputRepr {
    Text { text: String },
    Json { value: Value },
}

impl From<Output> for OutputRepr {
    fn from(output: Output) -> Self {
        match output {
            Output::Text(text) => Self::Text { text },
            Output::Json(value) => Self::Json { value },
        }
    }
}

impl From<OutputRepr> for Output {
    fn from(repr: OutputRepr) -> Self {
        match repr {
            OutputRepr::Text { text } => Self::Text(text),
            OutputRepr::Json { value } => Self::Json(value),
        }
    }
}

/// Why a leg ended with the run still alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
#[non_exhaustive]
pub enum SuspendReason {
    /// The deadline came while the guest was idle awaiting host work.
    PendingTools,
    /// The guest called `yield_control()`.
    Yield,
}

/// How one leg of a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum Step {
    /// The program returned; `value` is its JSON adaptation (`undefined` becomes `null`).
    Completed {
        /// The returned value.
        value: Value,
        /// Output produced during this leg.
        output: Vec<Output>,
    },
    /// The run is alive and can be parked and driven again later.
    Suspended {
        /// Why the leg ended.
        reason: SuspendReason,
        /// Bridge calls not settled into the VM yet, by id.
        pending: Vec<PendingCall>,
        /// Output produced during this leg.
        output: Vec<Output>,
    },
    /// The run failed; it is dead (its VM and host work are already released).
    Failed {
        /// What went wrong.
        error: RunError,
        /// Output produced during this leg before the failure.
        output: Vec<Output>,
    },
}

/// Set by the interrupt handler and the natives; read by the drive loop. Lock-free, so the
/// interrupt handler never blocks.
struct Flags {
    origin: Instant,
    /// Deadline of the current leg, in nanoseconds since `origin`.
    deadline_nanos: AtomicU64,
    timed_out: AtomicBool,
    output_exceeded: AtomicBool,
}

impl Flags {
    fn set_deadline(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.origin).as_nanos();
        self.deadline_nanos
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// The interrupt handler: `true` stops guest code with an uncatchable exception.
    fn interrupt(&self) -> bool {
        if self.output_exceeded.load(Ordering::Relaxed) || self.timed_out.load(Ordering::Relaxed) {
            return true;
        }
        let elapsed = u64::try_from(self.origin.elapsed().as_nanos()).unwrap_or(u64::MAX);
        if elapsed >= self.deadline_nanos.load(Ordering::Relaxed) {
            self.timed_out.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }

    /// The failure the flags force, whatever the guest made of it.
    fn tripped(&self) -> Option<RunError> {
        if self.timed_out.load(Ordering::SeqCst) {
            Some(RunError::Timeout)
        } else if self.output_exceeded.load(Ordering::SeqCst) {
            Some(RunError::OutputLimitExceeded)
        } else {
            None
        }
    }
}

/// How the guest's main promise settled, reported by `hostFinish`.
enum Finish {
    Value(String),
    Error {
        message: String,
        out_of_memory: bool,
    },
}

/// Bridge state shared between the natives (inside the VM lock) and the drive loop.
struct Shared {
    methods: Vec<(String, Vec<Value>)>,
    next_id: u64,
    in_flight: BTreeMap<u64, BridgeRequest>,
    to_spawn: Vec<BridgeRequest>,
    yields: Vec<u64>,
    yield_requested: bool,
    output: Vec<Output>,
    output_bytes: usize,
    finish: Option<Finish>,
}

fn lock(shared: &Mutex<Shared>) -> MutexGuard<'_, Shared> {
    // A poisoned lock only means a panic elsewhere; the data is still consistent plain data.
    shared.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The VM. Field order matters: the context is dropped before the runtime.
struct Vm {
    context: Context,
    runtime: Runtime,
}

/// A running program. `Send`: it can be parked and driven again on another task or thread.
///
/// One fresh VM per run; dropping the run releases the VM and aborts its host work.
///
/// ```
/// use std::{sync::Arc, time::Instant};
/// use codemode_sandbox::{BridgeHost, BridgeRequest, Callable, GuestSetup, Limits, Run, Step};
///
/// struct Echo;
/// #[async_trait::async_trait]
/// impl BridgeHost for Echo {
///     async fn call(&self, request: BridgeRequest) -> Result<serde_json::Value, String> {
///         Ok(request.args[0].clone())
///     }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let mut setup = GuestSetup::default();
/// setup.callables.push((vec!["echo".into()], Callable::Bridge { method: "echo".into(), bound_args: vec![] }));
/// let program = "text('hi'); return (await echo(20)) + 1;";
/// let mut run = Run::start(program, setup, Limits::default(), Arc::new(Echo)).unwrap();
/// let deadline = Instant::now() + Limits::default().timeout;
/// match run.drive(deadline).await {
///     Step::Completed { value, output } => {
///         assert_eq!(value, 21);
///         assert_eq!(output, vec![codemode_sandbox::Output::Text("hi".into())]);
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// # });
/// ```
pub struct Run {
    vm: Option<Vm>,
    shared: Arc<Mutex<Shared>>,
    flags: Arc<Flags>,
    host: Arc<dyn BridgeHost>,
    tasks: JoinSet<Result<Value, String>>,
    task_requests: HashMap<tokio::task::Id, u64>,
    /// Host answers that were ready on the first poll, not yet settled into the VM.
    ready: VecDeque<(u64, Result<Value, String>)>,
    limits: Limits,
    started: bool,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("alive", &self.vm.is_some())
            .field("in_flight", &self.task_requests.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

/// A thrown value caught by Rust, reduced to what classification needs.
struct Caught {
    message: String,
    out_of_memory: bool,
}

impl Run {
    /// Checks module access, builds the VM with the limits, installs the guest setup and the
    /// built-ins (`text`, `json`, `yield_control`) and compiles `program` (JavaScript, types
    /// already stripped) as the body of an async function. Nothing of the program runs until
    /// [`Run::drive`] (except code smuggled into the compile step, which runs under the limits).
    ///
    /// # Errors
    /// [`RunError::ModuleAccess`] and [`RunError::Syntax`] (code `invalid_input`),
    /// [`RunError::RuntimeUnavailable`] when the VM cannot be created or the setup does not fit
    /// in it, [`RunError::Timeout`] / [`RunError::Guest`] if smuggled code misbehaves.
    pub fn start(
        program: &str,
        setup: GuestSetup,
        limits: Limits,
        host: Arc<dyn BridgeHost>,
    ) -> Result<Self, RunError> {
        check_module_access(program)?;
        let flags = Arc::new(Flags {
            origin: Instant::now(),
            deadline_nanos: AtomicU64::new(0),
            timed_out: AtomicBool::new(false),
            output_exceeded: AtomicBool::new(false),
        });
        flags.set_deadline(Instant::now() + limits.timeout);

        let mut plan = InstallPlan::new(setup)?;
        let shared = Arc::new(Mutex::new(Shared {
            methods: std::mem::take(&mut plan.methods),
            next_id: 1,
            in_flight: BTreeMap::new(),
            to_spawn: Vec::new(),
            yields: Vec::new(),
            yield_requested: false,
            output: Vec::new(),
            output_bytes: 0,
            finish: None,
        }));

        let unavailable = |error: rquickjs::Error| RunError::RuntimeUnavailable(error.to_string());
        let runtime = Runtime::new().map_err(unavailable)?;
        runtime.set_memory_limit(limits.memory_bytes);
        runtime.set_max_stack_size(limits.stack_bytes);
        let interrupt_flags = Arc::clone(&flags);
        runtime.set_interrupt_handler(Some(Box::new(move || interrupt_flags.interrupt())));
        let context = Context::full(&runtime).map_err(unavailable)?;
        let vm = Vm { context, runtime };

        let natives = Natives {
            shared: Arc::clone(&shared),
            flags: Arc::clone(&flags),
            locals: Arc::clone(&plan.locals),
            limits: limits.clone(),
        };
        let compiled = vm.context.with(|ctx| -> Result<Option<String>, RunError> {
            let installed = bootstrap(&ctx, natives).and_then(|control| plan.install(&control));
            if let Err(error) = installed {
                let caught = caught(&ctx, &error);
                return Err(flags
                    .tripped()
                    .unwrap_or(RunError::RuntimeUnavailable(format!(
                        "the guest setup could not be installed: {}",
                        caught.message
                    ))));
            }
            let control = control(&ctx).map_err(|e| RunError::Internal(e.to_string()))?;
            let compile: Function<'_> = control
                .get("compile")
                .map_err(|e| RunError::Internal(e.to_string()))?;
            match compile.call::<_, Option<String>>((program,)) {
                Ok(outcome) => Ok(outcome),
                Err(error) => {
                    let caught = caught(&ctx, &error);
                    Err(flags.tripped().unwrap_or(RunError::Guest(caught.message)))
                }
            }
        })?;
        if let Some(failure) = compiled {
            let message = truncate(failure.get(1..).unwrap_or_default().to_owned());
            if let Some(tripped) = flags.tripped() {
                return Err(tripped);
            }
            return Err(
                match failure
                    .strip_prefix('S')
                    .and_then(|rest| rest.split_once('\u{0}'))
                {
                    Some((stack, text)) => RunError::Syntax(truncate(syntax_message(
                        text,
                        stack,
                        program.lines().count(),
                    ))),
                    None => RunError::Guest(message),
                },
            );
        }
        Ok(Self {
            vm: Some(vm),
            shared,
            flags,
            host,
            tasks: JoinSet::new(),
            task_requests: HashMap::new(),
            ready: VecDeque::new(),
            limits,
            started: false,
        })
    }

    /// Drives the program until it completes, fails, yields, or `deadline` passes while it is
    /// idle awaiting host work. Bridge requests are processed as they come within this one call:
    /// host calls are spawned on the current tokio runtime and finished ones are settled into the
    /// VM. Output produced during this leg is returned in the step.
    ///
    /// If guest code is still running when `deadline` passes, the run fails with
    /// [`RunError::Timeout`]. Must be called inside a tokio runtime with timers enabled (else
    /// [`RunError::RuntimeUnavailable`]). After `Completed` or `Failed` the run is dead and a
    /// further call fails with [`RunError::Finished`]. Cancel-safe: dropping the future between
    /// polls leaves the run consistent (it is only ever parked at idle points).
    pub async fn drive(&mut self, deadline: Instant) -> Step {
        if self.vm.is_none() {
            return Step::Failed {
                error: RunError::Finished,
                output: Vec::new(),
            };
        }
        if tokio::runtime::Handle::try_current().is_err() {
            return self.fail(RunError::RuntimeUnavailable(
                "Run::drive needs a tokio runtime".into(),
            ));
        }
        // `sleep_until` panics on a runtime built without timers; report that instead.
        let Ok(sleep) = catch_unwind(|| tokio::time::sleep_until(deadline.into())) else {
            return self.fail(RunError::RuntimeUnavailable(
                "the tokio runtime has no timers enabled".into(),
            ));
        };
        tokio::pin!(sleep);
        self.flags.set_deadline(deadline);

        let yields = {
            let mut shared = lock(&self.shared);
            shared.yield_requested = false;
            std::mem::take(&mut shared.yields)
        };
        for id in yields {
            if let Err(error) = self.settle(id, true, "null") {
                return self.fail(error);
            }
        }
        if !self.started {
            self.started = true;
            if let Err(error) = self.call_control("begin", ()) {
                return self.fail(error);
            }
        }

        loop {
            if let Err(error) = self.run_jobs(deadline) {
                return self.fail(error);
            }
            if let Some(error) = self.flags.tripped() {
                return self.fail(error);
            }
            let finish = lock(&self.shared).finish.take();
            if let Some(finish) = finish {
                return self.finish(finish);
            }
            // Output is checked before suspending and before draining more bridge calls.
            if lock(&self.shared).output_bytes > self.limits.max_output_bytes {
                return self.fail(RunError::OutputLimitExceeded);
            }
            self.spawn_requests();
            if lock(&self.shared).yield_requested {
                return self.suspend(SuspendReason::Yield);
            }
            if self.tasks.is_empty() && self.ready.is_empty() {
                return self.fail(RunError::PendingWithoutHostWork);
            }
            if Instant::now() >= deadline {
                return self.suspend(SuspendReason::PendingTools);
            }
            if let Some((id, outcome)) = self.ready.pop_front() {
                if let Err(error) = self.settle_outcome(id, outcome) {
                    return self.fail(error);
                }
                continue;
            }
            let joined = match self.tasks.try_join_next_with_id() {
                Some(joined) => joined,
                None => {
                    tokio::select! {
                        biased;
                        joined = self.tasks.join_next_with_id() => match joined {
                            Some(joined) => joined,
                            None => return self.fail(RunError::PendingWithoutHostWork),
                        },
                        () = &mut sleep => return self.suspend(SuspendReason::PendingTools),
                    }
                }
            };
            if let Err(error) = self.settle_joined(joined) {
                return self.fail(error);
            }
        }
    }

    /// Bytes the parked run holds: the VM's measured heap (`malloc_size`) plus what the host side
    /// buffers for it (output of the current leg, arguments of unsettled bridge calls, answers
    /// not settled into the VM yet). `0` once the run is dead.
    pub fn memory_bytes(&self) -> usize {
        let Some(vm) = &self.vm else { return 0 };
        let heap = usize::try_from(vm.runtime.memory_usage().malloc_size).unwrap_or(0);
        let shared = lock(&self.shared);
        let output: usize = shared.output.iter().map(output_bytes).sum();
        let pending: usize = shared
            .in_flight
            .values()
            .map(|call| json_bytes(&Value::Array(call.args.clone())))
            .sum();
        let ready: usize = self
            .ready
            .iter()
            .map(|(_, outcome)| outcome.as_ref().map_or_else(String::len, json_bytes))
            .sum();
        heap + output + pending + ready
    }

    /// Bridge calls not settled into the VM yet (for the `waiting` result), ordered by id.
    pub fn pending_calls(&self) -> Vec<PendingCall> {
        lock(&self.shared).in_flight.values().cloned().collect()
    }

    /// Output bytes counted so far over the whole run (against `max_output_bytes`).
    pub fn output_bytes(&self) -> usize {
        lock(&self.shared).output_bytes
    }

    /// The limits the run was started with.
    pub fn limits(&self) -> &Limits {
        &self.limits
    }

    /// Whether the run can still be driven (it has not completed or failed).
    pub fn is_alive(&self) -> bool {
        self.vm.is_some()
    }

    fn take_output(&self) -> Vec<Output> {
        std::mem::take(&mut lock(&self.shared).output)
    }

    /// Ends the run: releases the VM and aborts host work.
    fn release(&mut self) {
        self.vm = None;
        self.tasks.abort_all();
        self.task_requests.clear();
        self.ready.clear();
        lock(&self.shared).in_flight.clear();
    }

    fn fail(&mut self, error: RunError) -> Step {
        tracing::debug!(target: "codemode_sandbox", %error, "code mode run failed");
        self.release();
        Step::Failed {
            error,
            output: self.take_output(),
        }
    }

    fn suspend(&mut self, reason: SuspendReason) -> Step {
        Step::Suspended {
            reason,
            pending: self.pending_calls(),
            output: self.take_output(),
        }
    }

    fn finish(&mut self, finish: Finish) -> Step {
        match finish {
            Finish::Value(text) => {
                let total = lock(&self.shared).output_bytes.saturating_add(text.len());
                if total > self.limits.max_output_bytes {
                    return self.fail(RunError::OutputLimitExceeded);
                }
                match parse_bridge_json::<Value>(&text) {
                    Ok(value) => {
                        self.release();
                        Step::Completed {
                            value,
                            output: self.take_output(),
                        }
                    }
                    Err(message) => {
                        self.fail(RunError::Guest(format!("the return value {message}")))
                    }
                }
            }
            Finish::Error {
                message,
                out_of_memory,
            } => {
                let error = self.classify(Caught {
                    message,
                    out_of_memory,
                });
                self.fail(error)
            }
        }
    }

    /// Classifies a fatal guest failure: flags first, then memory, else the guest's message.
    fn classify(&self, caught: Caught) -> RunError {
        if let Some(error) = self.flags.tripped() {
            return error;
        }
        if caught.out_of_memory || self.memory_exhausted() {
            return RunError::MemoryLimitExceeded;
        }
        RunError::Guest(truncate(caught.message))
    }

    /// Whether the VM's measured heap is (nearly) at its budget.
    ///
    /// QuickJS reports exhausted memory inside async code as a thrown `null` (it cannot allocate
    /// an error object), and by the time the failure reaches the host the guest frames holding
    /// the memory are usually freed, so measured usage alone misses most bombs. Hence a `null`
    /// failure or the engine's `InternalError: out of memory` counts as exhaustion (a program that
    /// throws `null` itself is reported the same way), and so does any failure while the heap is
    /// within 1/16 of the budget.
    fn memory_exhausted(&self) -> bool {
        let Some(vm) = &self.vm else { return false };
        let used = usize::try_from(vm.runtime.memory_usage().malloc_size).unwrap_or(0);
        tracing::debug!(target: "codemode_sandbox", used, limit = self.limits.memory_bytes, "memory at failure");
        used >= self.limits.memory_bytes - self.limits.memory_bytes / 16
    }

    /// Calls a function of the control object; returns whether it answered `true`.
    fn call_control<A>(&self, name: &str, args: A) -> Result<bool, RunError>
    where
        A: for<'js> rquickjs::function::IntoArgs<'js>,
    {
        let Some(vm) = &self.vm else {
            return Err(RunError::Finished);
        };
        let result = vm.context.with(|ctx| {
            let function: Function<'_> =
                control(&ctx)
                    .and_then(|c| c.get(name))
                    .map_err(|e| Caught {
                        message: e.to_string(),
                        out_of_memory: false,
                    })?;
            function
                .call::<_, JsValue<'_>>(args)
                .map(|value| value.as_bool() == Some(true))
                .map_err(|error| caught(&ctx, &error))
        });
        result.map_err(|caught| self.classify(caught))
    }

    /// Settles one bridge call or yield in the VM; `Ok(false)` when the VM knows no such id.
    fn settle(&self, id: u64, ok: bool, payload: &str) -> Result<bool, RunError> {
        // Request ids stay far below 2^53, so they are exact as JS numbers.
        #[allow(
            clippy::cast_precision_loss,
            reason = "ids are sequential and far below 2^53"
        )]
        let id = id as f64;
        self.call_control("settle", (id, ok, payload))
    }

    fn settle_joined(
        &mut self,
        joined: Result<(tokio::task::Id, Result<Value, String>), JoinError>,
    ) -> Result<(), RunError> {
        let (task, outcome) = match joined {
            Ok((task, outcome)) => (task, outcome),
            Err(error) => (error.id(), Err(HOST_CALL_FAILED.to_owned())),
        };
        let Some(id) = self.task_requests.remove(&task) else {
            // Not a request of this run (cannot happen: the set is private); ignore it.
            return Ok(());
        };
        self.settle_outcome(id, outcome)
    }

    fn settle_outcome(&mut self, id: u64, outcome: Result<Value, String>) -> Result<(), RunError> {
        if lock(&self.shared).in_flight.remove(&id).is_none() {
            return Ok(());
        }
        let settled = match outcome {
            Ok(value) => match encode_host_value(value) {
                Ok(text) => self.settle(id, true, &text),
                Err(message) => self.settle(id, false, &message),
            },
            Err(message) => self.settle(id, false, &message),
        };
        settled.map(drop)
    }

    /// Starts host work for new requests. Each host future is polled once in place: an answer
    /// that is ready at once skips the spawn (the common case of fast hosts); the rest are spawned
    /// so they keep running while the run is parked.
    fn spawn_requests(&mut self) {
        let requests = std::mem::take(&mut lock(&self.shared).to_spawn);
        for request in requests {
            let id = request.id.0;
            let host = Arc::clone(&self.host);
            let mut future = Box::pin(async move { host.call(request).await });
            let mut context = std::task::Context::from_waker(std::task::Waker::noop());
            match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut context))) {
                Ok(Poll::Ready(outcome)) => self.ready.push_back((id, outcome)),
                Ok(Poll::Pending) => {
                    let handle = self.tasks.spawn(future);
                    self.task_requests.insert(handle.id(), id);
                }
                Err(_) => self.ready.push_back((id, Err(HOST_CALL_FAILED.to_owned()))),
            }
        }
    }

    fn run_jobs(&self, deadline: Instant) -> Result<(), RunError> {
        let Some(vm) = &self.vm else {
            return Err(RunError::Finished);
        };
        let mut executed: u32 = 0;
        loop {
            match vm.runtime.execute_pending_job() {
                Ok(true) => {}
                Ok(false) => return Ok(()),
                Err(exception) => {
                    let caught = exception
                        .0
                        .with(|ctx| caught(&ctx, &rquickjs::Error::Exception));
                    return Err(self.classify(caught));
                }
            }
            if let Some(error) = self.flags.tripped() {
                return Err(error);
            }
            executed = executed.wrapping_add(1);
            if executed.is_multiple_of(JOBS_PER_DEADLINE_CHECK) && Instant::now() >= deadline {
                self.flags.timed_out.store(true, Ordering::SeqCst);
                return Err(RunError::Timeout);
            }
        }
    }
}

/// The frozen control object made by the bootstrap, kept as runtime userdata.
fn control<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let guard = ctx
        .userdata::<Object<'js>>()
        .ok_or(rquickjs::Error::Unknown)?;
    Ok(guard.clone())
}

/// Takes the pending exception (if `error` is one) and describes it for classification.
fn caught(ctx: &Ctx<'_>, error: &rquickjs::Error) -> Caught {
    if !matches!(error, rquickjs::Error::Exception) {
        let out_of_memory = matches!(error, rquickjs::Error::Allocation);
        return Caught {
            message: error.to_string(),
            out_of_memory,
        };
    }
    let value = ctx.catch();
    if value.is_null() || value.is_undefined() {
        return Caught {
            message: "uncaught exception".into(),
            out_of_memory: true,
        };
    }
    let message = value
        .as_exception()
        .and_then(|exception| exception.message())
        .or_else(|| value.as_string().and_then(|s| s.to_string().ok()))
        .unwrap_or_else(|| "uncaught exception".into());
    let out_of_memory = message == "out of memory";
    Caught {
        message,
        out_of_memory,
    }
}

/// The five natives handed to the bootstrap; they only touch `Send` state.
struct Natives {
    shared: Arc<Mutex<Shared>>,
    flags: Arc<Flags>,
    locals: Arc<[LocalFn]>,
    limits: Limits,
}

fn bootstrap<'js>(ctx: &Ctx<'js>, natives: Natives) -> rquickjs::Result<Object<'js>> {
    let Natives {
        shared,
        flags,
        locals,
        limits,
    } = natives;

    let call_shared = Arc::clone(&shared);
    let max_args = limits.max_call_args_bytes;
    let max_pending = limits.max_pending_calls;
    let host_call = Function::new(
        ctx.clone(),
        move |ctx: Ctx<'js>, index: u32, payload: String| match register_call(
            &call_shared,
            index,
            &payload,
            max_args,
            max_pending,
        ) {
            #[allow(
                clippy::cast_precision_loss,
                reason = "ids are sequential and far below 2^53"
            )]
            Ok(id) => Ok(JsValue::new_number(ctx, id as f64)),
            Err(message) => {
                rquickjs::String::from_str(ctx, &message).map(rquickjs::String::into_value)
            }
        },
    )?;

    let host_local = Function::new(ctx.clone(), move |index: u32, payload: String| -> String {
        let answer = if payload.len() > max_args {
            Err(format!("code mode call arguments exceed {max_args} bytes"))
        } else {
            parse_bridge_json::<Vec<Value>>(&payload).and_then(|args| {
                match locals.get(index as usize) {
                    Some(local) => catch_unwind(AssertUnwindSafe(|| local(args)))
                        .unwrap_or_else(|_| Err(HOST_CALL_FAILED.into())),
                    None => Err("unknown code mode function".into()),
                }
            })
        };
        match answer.and_then(encode_host_value) {
            // `[value]` on success, the message as a JSON string on failure.
            Ok(text) => format!("[{text}]"),
            Err(message) => Value::String(message).to_string(),
        }
    })?;

    let emit_shared = Arc::clone(&shared);
    let emit_flags = Arc::clone(&flags);
    let max_output = limits.max_output_bytes;
    let host_emit = Function::new(
        ctx.clone(),
        move |is_json: bool, payload: String| -> Option<String> {
            let bytes = if is_json {
                payload.len()
            } else {
                json_string_bytes(&payload)
            };
            // Checked before parsing, so an oversized item never costs host memory.
            let total = lock(&emit_shared).output_bytes.saturating_add(bytes);
            if total > max_output {
                // Sticky: the interrupt handler now stops the guest even if it catches this error.
                emit_flags.output_exceeded.store(true, Ordering::SeqCst);
                return Some(OUTPUT_LIMIT.into());
            }
            let item = if is_json {
                match parse_bridge_json::<Value>(&payload) {
                    Ok(value) => Output::Json(value),
                    Err(message) => return Some(format!("json() value {message}")),
                }
            } else {
                Output::Text(payload)
            };
            let mut shared = lock(&emit_shared);
            shared.output_bytes = shared.output_bytes.saturating_add(bytes);
            shared.output.push(item);
            None
        },
    )?;

    let yield_shared = Arc::clone(&shared);
    let host_yield = Function::new(ctx.clone(), move |reason: String| -> f64 {
        let mut shared = lock(&yield_shared);
        let id = shared.next_id;
        shared.next_id += 1;
        shared.yields.push(id);
        shared.yield_requested = true;
        tracing::debug!(target: "codemode_sandbox", reason = %reason, "guest yielded");
        #[allow(
            clippy::cast_precision_loss,
            reason = "ids are sequential and far below 2^53"
        )]
        let id = id as f64;
        id
    })?;

    let finish_shared = Arc::clone(&shared);
    let host_finish = Function::new(
        ctx.clone(),
        move |ok: bool, payload: String, out_of_memory: bool| {
            let mut shared = lock(&finish_shared);
            if shared.finish.is_none() {
                shared.finish = Some(if ok {
                    Finish::Value(payload)
                } else {
                    Finish::Error {
                        message: payload,
                        out_of_memory,
                    }
                });
            }
        },
    )?;

    let poll_flags = Arc::clone(&flags);
    // A poll point for built-ins whose native loops never reach the interrupt handler: `true`
    // once the run must stop (deadline passed or output exceeded). The flags stay tripped, so
    // the run ends even if the guest catches the error the bootstrap throws.
    let host_poll = Function::new(ctx.clone(), move || poll_flags.interrupt())?;

    let make_control: Function<'js> = load_bootstrap(ctx)?;
    let host_is_proxy = Function::new(ctx.clone(), |value: JsValue<'js>| value.is_proxy())?;
    // A dense array needs at least 8 bytes per element, so any longer array-like must be sparse.
    #[allow(
        clippy::cast_precision_loss,
        reason = "an approximate bound is all that is needed"
    )]
    let max_scan = (limits.memory_bytes / 8).max(1 << 20) as f64;
    // More natives than a Rust tuple carries: handed over as one plain object the bootstrap
    // destructures before any guest code runs.
    let natives = Object::new(ctx.clone())?;
    natives.set("hostCall", host_call)?;
    natives.set("hostLocal", host_local)?;
    natives.set("hostEmit", host_emit)?;
    natives.set("hostYield", host_yield)?;
    natives.set("hostFinish", host_finish)?;
    natives.set("hostIsProxy", host_is_proxy)?;
    natives.set("hostPoll", host_poll)?;
    let control: Object<'js> = make_control.call((natives, max_scan))?;
    ctx.store_userdata(control.clone())
        .map_err(|_| rquickjs::Error::Unknown)?;
    Ok(control)
}

/// Validates and records one bridge call; returns its id or the guest-visible refusal.
fn register_call(
    shared: &Mutex<Shared>,
    index: u32,
    payload: &str,
    max_args: usize,
    max_pending: usize,
) -> Result<u64, String> {
    if lock(shared).in_flight.len() >= max_pending {
        return Err(TOO_MANY_PENDING.into());
    }
    if payload.len() > max_args {
        return Err(format!("code mode call arguments exceed {max_args} bytes"));
    }
    let args = parse_bridge_json::<Vec<Value>>(payload)?;
    let mut shared = lock(shared);
    if shared.in_flight.len() >= max_pending {
        return Err(TOO_MANY_PENDING.into());
    }
    let Some((method, bound)) = shared.methods.get(index as usize) else {
        return Err("unknown code mode function".into());
    };
    let method = method.clone();
    let mut all = bound.clone();
    all.extend(args);
    let id = shared.next_id;
    shared.next_id += 1;
    let request = BridgeRequest {
        id: RequestId(id),
        method,
        args: all,
    };
    shared.in_flight.insert(id, request.clone());
    shared.to_spawn.push(request);
    Ok(id)
}

/// Lines the async-function wrapper adds before the program (`(async function anonymous(` and
/// `) {`), subtracted from QuickJS's line numbers.
const WRAPPER_LINES: u32 = 2;

/// `SyntaxError: <text> (line L, column C)` with the position in the program's own lines, taken
/// from the first `<input>:L:C` of the error's stack; "(at the end of the program)" when the
/// parser only stumbled on the wrapper's closing line.
fn syntax_message(text: &str, stack: &str, program_lines: usize) -> String {
    let position = stack
        .lines()
        .next()
        .and_then(|line| line.split("<input>:").nth(1))
        .and_then(|at| {
            let mut parts = at.trim_end_matches(')').split(':');
            let line: u32 = parts.next()?.parse().ok()?;
            let column: u32 = parts.next()?.parse().ok()?;
            Some((line.saturating_sub(WRAPPER_LINES).max(1), column))
        });
    match position {
        Some((line, _)) if usize::try_from(line).unwrap_or(usize::MAX) > program_lines.max(1) => {
            format!("{text} (at the end of the program)")
        }
        Some((line, column)) => format!("{text} (line {line}, column {column})"),
        None => text.to_owned(),
    }
}

/// Parses JSON made by the guest's `JSON.stringify` (serde_json's nesting limit applies).
fn parse_bridge_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    serde_json::from_str(text)
        .map_err(|error| format!("cannot cross the code mode bridge: {error}"))
}

/// JSON text of a host value, refusing values nested deeper than [`MAX_JSON_DEPTH`] (checked
/// without recursion; a too-deep value is also dropped without recursion).
fn encode_host_value(value: Value) -> Result<String, String> {
    if exceeds_depth(&value, MAX_JSON_DEPTH) {
        dismantle(value);
        return Err(format!(
            "the host value nests deeper than {MAX_JSON_DEPTH} levels"
        ));
    }
    serde_json::to_string(&value).map_err(|error| error.to_string())
}

fn exceeds_depth(value: &Value, max: usize) -> bool {
    let mut stack = vec![(value, 0usize)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(map) => Box::new(map.values()),
            _ => continue,
        };
        if depth >= max {
            return true;
        }
        stack.extend(children.map(|child| (child, depth + 1)));
    }
    false
}

fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, child)| child)),
            _ => {}
        }
    }
}

/// UTF-8 bytes of `text` encoded as a JSON string (quotes and escapes included), as serde_json
/// writes it.
pub(crate) fn json_string_bytes(text: &str) -> usize {
    2 + text
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum::<usize>()
}

fn json_bytes(value: &Value) -> usize {
    serde_json::to_string(value).map_or(0, |text| text.len())
}

fn output_bytes(output: &Output) -> usize {
    match output {
        Output::Text(text) => json_string_bytes(text),
        Output::Json(value) => json_bytes(value),
    }
}

fn truncate(mut message: String) -> String {
    if message.len() > MAX_ERROR_MESSAGE_BYTES {
        let mut cut = MAX_ERROR_MESSAGE_BYTES;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

/// A bridge callable by index: its method and bound arguments.
type BridgeMethod = (String, Vec<Value>);

/// The guest setup prepared for installation: the plan the bootstrap's `install` runs in one pass
/// (JSON, see `install` in bootstrap.js), the JSON texts of the values it refers to by index, the
/// bridge methods and the local functions by index. Intermediate objects along paths are created
/// and properties are defined (never assigned), so nothing on a prototype is consulted.
struct InstallPlan {
    plan: String,
    texts: Vec<Text>,
    methods: Vec<BridgeMethod>,
    locals: Arc<[LocalFn]>,
}

/// The JSON text of one installed value: serialized for this run, or shared between runs.
enum Text {
    Owned(String),
    Shared(JsonText),
}

impl Text {
    fn as_str(&self) -> &str {
        match self {
            Self::Owned(text) => text,
            Self::Shared(text) => text.as_str(),
        }
    }
}

/// Writes the member count of the callable group whose count slot is at `count_at` (each member
/// is a name and a code after the slot).
fn close_group(flat: &mut [Value], count_at: usize) {
    let members = flat.len().saturating_sub(count_at + 1) / 2;
    if let Some(slot) = flat.get_mut(count_at) {
        *slot = members.into();
    }
}

impl InstallPlan {
    fn new(setup: GuestSetup) -> Result<Self, RunError> {
        let valid =
            |path: &[String]| !path.is_empty() && path.iter().all(|segment| !segment.is_empty());
        let mut methods = Vec::new();
        let mut locals: Vec<LocalFn> = Vec::new();
        let values = setup
            .values
            .into_iter()
            .map(|(path, value)| (path, Text::Owned(value.to_string())));
        let shared = setup
            .json_values
            .into_iter()
            .map(|(path, text)| (path, Text::Shared(text)));
        let values: Vec<(GuestPath, Text)> = values
            .chain(shared)
            .filter(|(path, _)| valid(path))
            .collect();
        let callables: Vec<(GuestPath, Callable)> = setup
            .callables
            .into_iter()
            .filter(|(path, _)| valid(path))
            .collect();
        let aliases: Vec<(GuestPath, GuestPath)> = setup
            .aliases
            .into_iter()
            .filter(|(path, existing)| valid(path) && valid(existing))
            .collect();
        let mut freeze: Vec<String> = setup
            .freeze
            .into_iter()
            .filter(|root| !root.is_empty())
            .collect();

        // A frozen root set by exactly one object or array value, and by nothing else, is built
        // on first read (see `pinLazy` in bootstrap.js): a run that never reads it never pays
        // for parsing and freezing it.
        let mut uses: HashMap<&str, usize> = HashMap::new();
        let paths = values.iter().map(|(path, _)| path);
        let paths = paths.chain(callables.iter().map(|(path, _)| path));
        let paths = paths.chain(aliases.iter().flat_map(|(path, existing)| [path, existing]));
        for path in paths {
            if let Some(root) = path.first() {
                *uses.entry(root.as_str()).or_default() += 1;
            }
        }
        let mut eager: Vec<(&GuestPath, usize)> = Vec::new();
        let mut lazy: Vec<(&str, usize)> = Vec::new();
        for (index, (path, text)) in values.iter().enumerate() {
            let composite = text.as_str().starts_with(['{', '[']);
            match path.as_slice() {
                [root]
                    if composite
                        && uses.get(root.as_str()) == Some(&1)
                        && freeze.contains(root) =>
                {
                    lazy.push((root, index));
                }
                _ => eager.push((path, index)),
            }
        }
        freeze.retain(|root| !lazy.iter().any(|(lazy_root, _)| lazy_root == root));

        // Callables as one flat list of groups sharing a parent path: `depth, ...parent, count`,
        // then `count` pairs `name, index * 2 + isBridge`.
        let mut flat: Vec<Value> = Vec::with_capacity(callables.len() * 2 + 8);
        let mut group: Option<(GuestPath, usize)> = None;
        for (mut path, callable) in callables {
            let Some(name) = path.pop() else { continue };
            let (is_bridge, index) = match callable {
                Callable::Bridge { method, bound_args } => {
                    methods.push((method, bound_args));
                    (1, methods.len() - 1)
                }
                Callable::Local(local) => {
                    locals.push(local);
                    (0, locals.len() - 1)
                }
            };
            let same_parent = group.as_ref().is_some_and(|(parent, _)| *parent == path);
            if !same_parent {
                if let Some((_, count_at)) = group.take() {
                    close_group(&mut flat, count_at);
                }
                flat.push(path.len().into());
                flat.extend(path.iter().cloned().map(Value::String));
                flat.push(0.into());
                group = Some((path, flat.len() - 1));
            }
            flat.push(Value::String(name));
            flat.push((index * 2 + is_bridge).into());
        }
        if let Some((_, count_at)) = group {
            close_group(&mut flat, count_at);
        }
        let plan =
            serde_json::to_string(&(eager, flat, &aliases, &freeze, lazy)).map_err(|error| {
                RunError::RuntimeUnavailable(format!("the guest setup is not JSON: {error}"))
            })?;
        Ok(Self {
            plan,
            texts: values.into_iter().map(|(_, text)| text).collect(),
            methods,
            locals: locals.into(),
        })
    }

    fn install<'js>(&self, control: &Object<'js>) -> rquickjs::Result<()> {
        let install: Function<'js> = control.get("install")?;
        let texts: Vec<&str> = self.texts.iter().map(Text::as_str).collect();
        install.call((self.plan.as_str(), texts))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    struct NoHost;

    #[async_trait::async_trait]
    impl BridgeHost for NoHost {
        async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
            Ok(Value::Array(request.args))
        }
    }

    #[test]
    fn settlement_for_an_unknown_request_id_is_ignored() {
        // The public API cannot produce one (settlements come only from the run's own JoinSet);
        // this drives the internal path directly.
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let mut setup = GuestSetup::default();
            setup.callables.push((
                vec!["echo".into()],
                Callable::Bridge {
                    method: "echo".into(),
                    bound_args: vec![],
                },
            ));
            let program = "const first = await yield_control(); return [first, await echo(1)]";
            let mut run = Run::start(program, setup, Limits::default(), Arc::new(NoHost)).unwrap();
            let deadline = || Instant::now() + std::time::Duration::from_secs(5);
            assert!(matches!(
                run.drive(deadline()).await,
                Step::Suspended { .. }
            ));
            assert_eq!(run.settle(4242, true, r#"{"forged":true}"#), Ok(false));
            assert_eq!(run.settle(4242, false, "forged"), Ok(false));
            assert_eq!(run.settle(0, true, "not json at all"), Ok(false));
            match run.drive(deadline()).await {
                Step::Completed { value, .. } => assert_eq!(value, serde_json::json!([null, [1]])),
                other => panic!("unexpected {other:?}"),
            }
        });
    }

    /// The plan `install` receives, and the texts of the roots built on first read.
    fn plan_of(setup: GuestSetup) -> (Value, Vec<String>) {
        let plan = InstallPlan::new(setup).unwrap();
        let texts = plan.texts.iter().map(|text| text.as_str().to_owned());
        (serde_json::from_str(&plan.plan).unwrap(), texts.collect())
    }

    fn path(parts: &[&str]) -> GuestPath {
        parts.iter().map(|part| (*part).to_owned()).collect()
    }

    #[test]
    fn callables_are_grouped_by_parent_and_lone_frozen_values_are_lazy() {
        let bridge = || Callable::Bridge {
            method: "m".into(),
            bound_args: vec![],
        };
        let local = || Callable::Local(Arc::new(|_| Ok(Value::Null)));
        let mut setup = GuestSetup::default();
        let values = [
            (&["ALL"][..], serde_json::json!([{"id": 1}])),
            (&["spread"], serde_json::json!({})),
            (&["spread", "v"], serde_json::json!(1)),
            (&["loose"], serde_json::json!({"a": 1})),
            (&["n"], serde_json::json!(3)),
            (&["aliased"], serde_json::json!({})),
            (&["bad", ""], serde_json::json!({})),
        ];
        for (at, value) in values {
            setup.values.push((path(at), value));
        }
        let shared = JsonText::new(&serde_json::json!({"shared": true}));
        setup.json_values.push((path(&["SHARED"]), shared));
        setup.callables.push((path(&["tools", "a"]), bridge()));
        setup.callables.push((path(&["tools", "b"]), local()));
        setup.callables.push((path(&["top"]), bridge()));
        setup.callables.push((path(&["tools", "c"]), bridge()));
        setup.callables.push((path(&["bad", ""]), bridge()));
        setup.aliases.push((path(&["x"]), path(&["aliased"])));
        setup.freeze = ["ALL", "spread", "n", "aliased", "tools", "", "SHARED"]
            .map(String::from)
            .to_vec();
        let (plan, texts) = plan_of(setup);
        assert_eq!(
            plan,
            serde_json::json!([
                [
                    [["spread"], 1],
                    [["spread", "v"], 2],
                    [["loose"], 3],
                    [["n"], 4],
                    [["aliased"], 5]
                ],
                [
                    1, "tools", 2, "a", 1, "b", 0, 0, 1, "top", 3, 1, "tools", 1, "c", 5
                ],
                [[["x"], ["aliased"]]],
                ["spread", "n", "aliased", "tools"],
                [["ALL", 0], ["SHARED", 6]]
            ])
        );
        let expect = [
            r#"[{"id":1}]"#,
            "{}",
            "1",
            r#"{"a":1}"#,
            "3",
            "{}",
            r#"{"shared":true}"#,
        ];
        assert_eq!(texts, expect);
    }

    #[test]
    fn json_string_bytes_matches_serde() {
        for text in [
            "",
            "plain",
            "quote\" back\\slash",
            "ctl\u{1}\u{1f}\n\t\r\u{8}\u{c}",
            "ünïcødé ✓ 🎉",
        ] {
            assert_eq!(
                json_string_bytes(text),
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn depth_check_is_exact_and_iterative() {
        let mut value = Value::Null;
        for _ in 0..MAX_JSON_DEPTH {
            value = Value::Array(vec![value]);
        }
        assert!(!exceeds_depth(&value, MAX_JSON_DEPTH));
        let deeper = Value::Array(vec![value]);
        assert!(exceeds_depth(&deeper, MAX_JSON_DEPTH));
        // A million levels: neither the check nor the drop may recurse.
        let mut huge = Value::Null;
        for _ in 0..1_000_000 {
            huge = Value::Array(vec![huge]);
        }
        assert!(encode_host_value(huge).is_err());
    }

    #[test]
    fn syntax_positions_are_given_in_program_lines() {
        let text = "SyntaxError: expecting ';'";
        let at = |stack: &str, lines: usize| syntax_message(text, stack, lines);
        let expect = |suffix: &str| format!("{text} {suffix}");
        assert_eq!(
            at("    at <input>:4:10\n    at f (native)", 2),
            expect("(line 2, column 10)")
        );
        assert_eq!(at("    at <input>:1:3\n", 1), expect("(line 1, column 3)"));
        assert_eq!(
            at("    at <input>:4:1\n", 1),
            expect("(at the end of the program)")
        );
        for odd in ["", "    at <input>:x:1", "    at <input>:9", "garbage"] {
            assert_eq!(at(odd, 3), text);
        }
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        let long = "é".repeat(MAX_ERROR_MESSAGE_BYTES);
        let cut = truncate(long);
        assert!(cut.len() <= MAX_ERROR_MESSAGE_BYTES + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }
}
