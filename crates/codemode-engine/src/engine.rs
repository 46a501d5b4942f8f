//! One VM and the synchronous step that advances it: settlements in, progress out.
//!
//! Layout of trust: `bootstrap.js` (loaded as bytecode, see bytecode.rs) runs before any guest
//! code and returns a frozen control object (`install`, `compile`, `begin`, `settle`) kept as
//! runtime userdata, which guest code can never reach. `install` builds the whole guest setup in
//! one call from a JSON plan (see `InstallPlan`). Guest-visible functions are closures made by
//! the bootstrap around the natives of `engine/natives.rs` (`hostCall`, `hostLocal`, `hostText`,
//! `hostEmit`, `hostYield`, `hostFinish`, `hostPoll`, ...); those natives are
//! handed over in one object and never installed as globals, so there is no internal name to
//! forge. Only `Send` state is captured by natives and the interrupt handler, which reads the
//! run's stop flags (`engine/flags.rs`). No built-in is wrapped: the engine meters the work of
//! its natives itself (codemode-quickjs-sys patch 10), so the guest sees standard JavaScript. The
//! runtime globals (`console`, ...) are not built with the VM: the bootstrap defers them
//! (deferred.rs), and the first access to one loads its part of the bootstrap (`hostPart`,
//! bytecode.rs `Part`).
//!
//! Everything here runs on a VM thread (vm_threads.rs), never on the caller's async workers:
//! building the VM, compiling the program, running jobs and settling host answers. A step also
//! polls each new host call once in place, so a host that answers at once costs no thread hop.

use std::collections::{BTreeMap, VecDeque};
use std::future::Future;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::pin::Pin;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::task::Poll;
use std::time::{Duration, Instant};

use rquickjs::{Context, Ctx, Function, Object, Runtime, Value as JsValue};
use serde_json::Value;

mod flags;
mod natives;
mod probe;

pub use flags::{Flags, count_stop_signal, on_guest_progress};
use natives::{Natives, bootstrap};

use crate::codec::{encode_host_value, output_bytes, parse_bridge_json, syntax_message, truncate};
use crate::heap::{HeapAllocator, HeapGauge};
use crate::install::InstallPlan;
use crate::{
    BridgeHost, BridgeRequest, Limits, OutputItem, PendingCall, RequestId, RunError, Tape,
    Truncation,
};

/// The guest-visible message of a host call that failed or panicked, in place of its detail.
pub const HOST_CALL_FAILED: &str = "code mode host call failed";
const TOO_MANY_PENDING: &str = "too many pending code mode tool calls";
const OUTPUT_LIMIT: &str = "code mode output limit exceeded";
const TIMEOUT: &str = "code mode timeout exceeded";
/// How many microtasks run between two checks of the deadline from Rust (the interrupt handler
/// checks it inside guest code as well).
const JOBS_PER_DEADLINE_CHECK: u32 = 256;

/// Heap size at which a VM's first garbage collection runs (QuickJS then sets the next threshold
/// from what survived).
const GC_THRESHOLD_BYTES: usize = 2 * 1024 * 1024;

/// A host call's future, polled once in place and otherwise spawned by the caller's runtime.
pub type HostFuture = Pin<Box<dyn Future<Output = Result<Value, String>> + Send>>;

/// How the guest's main promise settled, reported by `hostFinish`.
enum Finish {
    /// The value's JSON, and its size before it was cut to fit the output budget.
    Value(String, Option<usize>),
    /// A value certainly larger than the output budget (not copied out of the VM).
    TooLarge,
    Error {
        message: String,
        /// The value is what QuickJS throws for exhausted memory (see [`Caught`]).
        looks_like_oom: bool,
    },
}

/// A started bridge call: what the `waiting` result names, and the argument bytes it holds.
struct InFlight {
    method: String,
    args_bytes: usize,
}

/// A pending timer: when it is due, and its period when it repeats.
struct Timer {
    due: Instant,
    /// Registration order: timers due at the same instant fire in it.
    seq: u64,
    period: Option<Duration>,
}

/// Bridge state shared between the natives (inside the VM lock) and the step.
struct BridgeState {
    /// The prepared setup: its bridge methods by index (shared by every run of the setup). Empty
    /// in a prepared VM until a run claims it.
    plan: Arc<InstallPlan>,
    /// The run's host, for synchronous calls; `None` until a run claims the VM.
    host: Option<Arc<dyn BridgeHost>>,
    /// The run's tape (see tape.rs), for the guest's nondeterministic readings.
    tape: Option<Arc<dyn Tape>>,
    next_id: u64,
    /// Started calls, by request id.
    in_flight: BTreeMap<u64, InFlight>,
    /// Calls made while `max_pending_calls` were in flight, started in FIFO order.
    queued: VecDeque<(BridgeRequest, usize)>,
    /// JSON bytes of the arguments of every started or queued call.
    args_bytes: usize,
    yields: Vec<u64>,
    yield_requested: bool,
    /// Pending timers by id.
    timers: BTreeMap<u64, Timer>,
    output: Vec<OutputItem>,
    output_bytes: usize,
    finish: Option<Finish>,
}

fn lock(state: &Mutex<BridgeState>) -> MutexGuard<'_, BridgeState> {
    // A poisoned lock only means a panic elsewhere; the data is still consistent plain data.
    state.lock().unwrap_or_else(PoisonError::into_inner)
}

/// The VM. Field order matters: the context is dropped before the runtime.
struct Vm {
    context: Context,
    runtime: Runtime,
}

/// What the driver hands a step.
pub struct StepInput {
    /// Host answers that arrived since the last step, by request id.
    pub settlements: Vec<(u64, Result<Value, String>)>,
    /// Settle every pending `yield_control()` first (a new leg after a yield).
    pub resume_yields: bool,
    /// The caller's runtime, entered while host futures are polled in place (`None` in a worker
    /// process, whose host futures are round trips over its pipe).
    pub handle: Option<tokio::runtime::Handle>,
}

/// Where a step left the run.
pub enum Progress {
    /// The program returned and nothing it started is pending; the value may have been cut to
    /// fit the output budget.
    Completed(Value, Option<Truncation>),
    /// The run is dead.
    Failed(RunError),
    /// The guest called `yield_control()`.
    Yielded,
    /// The guest awaits host work.
    Idle,
}

/// What a step gives back.
pub struct StepOutput {
    /// Where the step left the run.
    pub progress: Progress,
    /// Host calls still pending after their first poll, for the driver to spawn.
    pub spawn: Vec<(u64, HostFuture)>,
    /// Output produced during the step.
    pub output: Vec<OutputItem>,
    /// When the earliest pending timer is due (the driver wakes the run then).
    pub next_timer: Option<Instant>,
}

impl StepOutput {
    /// A step that ended the run with `error`, and nothing else.
    pub fn failed(error: RunError) -> Self {
        Self {
            progress: Progress::Failed(error),
            spawn: Vec::new(),
            output: Vec::new(),
            next_timer: None,
        }
    }
}

/// A thrown value caught by Rust, reduced to what classification needs.
struct Caught {
    message: String,
    /// The value is what QuickJS throws when an allocation fails: `null` (it could not even
    /// allocate the error) or `InternalError: out of memory`. A guest can throw either itself, so
    /// this alone never makes a failure the memory limit (see [`Engine::classify`]).
    looks_like_oom: bool,
}

/// One fresh VM with the guest setup installed and the program compiled, not yet begun.
pub struct Engine {
    vm: Vm,
    state: Arc<Mutex<BridgeState>>,
    flags: Arc<Flags>,
    host: Arc<dyn BridgeHost>,
    limits: Limits,
    /// What the VM's allocator counts (allocations refused, bytes held), and how many it had
    /// refused when the current step (or the build) began.
    gauge: Arc<HeapGauge>,
    refusals_before_step: u64,
    /// Records or replays the run's nondeterministic inputs (see tape.rs).
    tape: Option<Arc<dyn Tape>>,
    started: bool,
    /// The program's return value once it returned while calls were still pending.
    returned: Option<(Value, Option<Truncation>)>,
}

/// A VM with the bootstrap loaded and no guest setup: a fresh runtime and context that no guest
/// code has ever run in. [`Engine::build`] makes one for each run, or takes one a pool made
/// ahead of time (vm_pool.rs).
pub struct PreparedVm {
    vm: Vm,
    state: Arc<Mutex<BridgeState>>,
    flags: Arc<Flags>,
    gauge: Arc<HeapGauge>,
}

impl PreparedVm {
    /// Builds the runtime under `limits`, its context, and runs the bootstrap, under the flags'
    /// current deadline (none for a pool's VM: no guest code runs here).
    pub fn build(limits: &Limits, flags: Arc<Flags>) -> Result<Self, RunError> {
        // Once per process: the engine check runs on a thread of its own, and a bootstrap that
        // does not ship as bytecode for this engine build compiles on another (the core while
        // this one builds the runtime and context, then the parts a VM loads on first use).
        // The verdict is read below, before the VM is handed to any guest code.
        crate::bytecode::start_warming_up(probe::warm_up);
        let state = Arc::new(Mutex::new(BridgeState {
            plan: InstallPlan::empty(),
            host: None,
            tape: None,
            next_id: 1,
            in_flight: BTreeMap::new(),
            queued: VecDeque::new(),
            args_bytes: 0,
            yields: Vec::new(),
            yield_requested: false,
            timers: BTreeMap::new(),
            output: Vec::new(),
            output_bytes: 0,
            finish: None,
        }));

        let unavailable = |error: rquickjs::Error| RunError::RuntimeUnavailable(error.to_string());
        // The allocator enforces the memory limit (QuickJS's own limit stays unset, see heap.rs)
        // and records refusals, the one sign of exhausted memory a guest cannot forge.
        let gauge = Arc::new(HeapGauge::default());
        let runtime =
            Runtime::new_with_alloc(HeapAllocator::new(limits.memory_bytes, Arc::clone(&gauge)))
                .map_err(unavailable)?;
        runtime.set_max_stack_size(limits.stack_bytes.min(crate::MAX_GUEST_STACK_BYTES));
        // QuickJS's first collection comes at 256 KiB of heap, which the bootstrap alone passes:
        // every VM would walk its whole heap once before any guest code. The first collection
        // waits for `GC_THRESHOLD_BYTES` (or a quarter of the memory limit) instead; the limit
        // itself is the allocator's, untouched by this.
        runtime.set_gc_threshold(GC_THRESHOLD_BYTES.min(limits.memory_bytes / 4));
        let interrupt_flags = Arc::clone(&flags);
        runtime.set_interrupt_handler(Some(Box::new(move || interrupt_flags.interrupt())));
        let context = Context::full(&runtime).map_err(unavailable)?;
        let natives = Natives {
            state: Arc::clone(&state),
            flags: Arc::clone(&flags),
            limits: limits.clone(),
        };
        let booted = context.with(|ctx| {
            bootstrap(&ctx, natives)
                .map(drop)
                .map_err(|error| caught(&ctx, &error).message)
        });
        if let Err(message) = booted {
            return Err(flags.tripped().unwrap_or_else(|| {
                RunError::RuntimeUnavailable(format!("the sandbox could not start: {message}"))
            }));
        }
        probe::check_engine()?;
        crate::stats::vm_built();
        Ok(Self {
            vm: Vm { context, runtime },
            state,
            flags,
            gauge,
        })
    }

    /// The flags the VM's interrupt handler and natives read: the run that takes it uses them.
    pub fn flags(&self) -> &Arc<Flags> {
        &self.flags
    }
}

impl Engine {
    /// The run's stop flags.
    pub fn flags(&self) -> &Flags {
        &self.flags
    }

    /// Takes `prepared` (or builds a VM under the flags' current deadline), installs the guest
    /// setup and compiles `program` as the body of an async function. A prepared VM must have
    /// been built with these `flags` and `limits`.
    pub fn build(
        program: &str,
        plan: Arc<InstallPlan>,
        limits: Limits,
        host: Arc<dyn BridgeHost>,
        flags: Arc<Flags>,
        prepared: Option<PreparedVm>,
    ) -> Result<Self, RunError> {
        let prepared = match prepared {
            Some(prepared) => prepared,
            None => PreparedVm::build(&limits, Arc::clone(&flags))?,
        };
        let tape = host.tape();
        {
            let mut state = lock(&prepared.state);
            state.plan = Arc::clone(&plan);
            state.host = Some(Arc::clone(&host));
            state.tape.clone_from(&tape);
        }
        let engine = Self {
            vm: prepared.vm,
            state: prepared.state,
            flags,
            host,
            limits,
            gauge: prepared.gauge,
            refusals_before_step: 0,
            tape,
            started: false,
            returned: None,
        };
        // `Err(Ok(message))`: the setup did not install; `Err(Err(caught))`: compiling threw.
        let compiled =
            engine
                .vm
                .context
                .with(|ctx| -> Result<Option<String>, Result<String, Caught>> {
                    let readings = engine.tape.is_some();
                    let installed =
                        control(&ctx).and_then(|control| plan.install(&control, readings));
                    if let Err(error) = installed {
                        return Err(Ok(caught(&ctx, &error).message));
                    }
                    let compile: Function<'_> = control(&ctx)
                        .and_then(|control| control.get("compile"))
                        .map_err(|error| Err(caught(&ctx, &error)))?;
                    compile
                        .call::<_, Option<String>>((program,))
                        .map_err(|error| Err(caught(&ctx, &error)))
                });
        let failure = match compiled {
            // Compiling cannot be interrupted: a deadline that passed meanwhile ends the leg now.
            Ok(None) if engine.flags.interrupt() => return Err(RunError::Timeout),
            Ok(None) => return Ok(engine),
            Ok(Some(failure)) => failure,
            Err(Ok(message)) => {
                return Err(engine.flags.tripped().unwrap_or_else(|| {
                    RunError::RuntimeUnavailable(format!(
                        "the guest setup could not be installed: {message}"
                    ))
                }));
            }
            Err(Err(caught)) => return Err(engine.classify(caught)),
        };
        if let Some(tripped) = engine.flags.tripped() {
            return Err(tripped);
        }
        let message = truncate(failure.get(1..).unwrap_or_default().to_owned());
        Err(
            match failure
                .strip_prefix('S')
                .and_then(|rest| rest.split_once('\u{0}'))
            {
                Some((stack, text)) => RunError::Syntax(truncate(syntax_message(
                    text,
                    stack,
                    program.lines().count(),
                ))),
                None => engine.classify(Caught {
                    looks_like_oom: message == "InternalError: out of memory",
                    message,
                }),
            },
        )
    }

    /// Advances the run as far as it goes without waiting for host work, until the deadline its
    /// flags hold (set by the driver once per leg).
    pub fn step(&mut self, input: StepInput) -> StepOutput {
        let StepInput {
            settlements,
            resume_yields,
            handle,
        } = input;
        self.refusals_before_step = self.gauge.refusals();
        let _entered = handle.as_ref().map(tokio::runtime::Handle::enter);
        let mut spawn = Vec::new();
        let progress = match self.advance(settlements, resume_yields, &mut spawn) {
            Ok(progress) => progress,
            Err(error) => Progress::Failed(error),
        };
        let mut state = lock(&self.state);
        StepOutput {
            progress,
            spawn,
            output: std::mem::take(&mut state.output),
            next_timer: state.timers.values().map(|timer| timer.due).min(),
        }
    }

    fn advance(
        &mut self,
        settlements: Vec<(u64, Result<Value, String>)>,
        resume_yields: bool,
        spawn: &mut Vec<(u64, HostFuture)>,
    ) -> Result<Progress, RunError> {
        if resume_yields {
            let yields = {
                let mut state = lock(&self.state);
                state.yield_requested = false;
                std::mem::take(&mut state.yields)
            };
            for id in yields {
                self.settle(id, true, "null")?;
            }
        }
        for (id, outcome) in settlements {
            self.settle_outcome(id, outcome)?;
        }
        if !self.started {
            self.started = true;
            self.call_control("begin", ())?;
        }
        loop {
            self.run_jobs()?;
            if let Some(error) = self.flags.tripped() {
                return Err(error);
            }
            if let Some(message) = self.tape.as_ref().and_then(|tape| tape.abort()) {
                return Err(RunError::Aborted(message));
            }
            self.take_finish()?;
            let startable = self.startable();
            if startable.is_empty() {
                // Microtasks are drained: the earliest due timer runs, then its microtasks.
                if self.fire_due_timer()? {
                    continue;
                }
                break;
            }
            let mut answered = false;
            for request in startable {
                let id = request.id.0;
                let host = Arc::clone(&self.host);
                let mut future: HostFuture = Box::pin(async move { host.call(request).await });
                let mut context = std::task::Context::from_waker(std::task::Waker::noop());
                match catch_unwind(AssertUnwindSafe(|| future.as_mut().poll(&mut context))) {
                    Ok(Poll::Ready(outcome)) => {
                        self.settle_outcome(id, outcome)?;
                        answered = true;
                    }
                    Ok(Poll::Pending) => spawn.push((id, future)),
                    Err(_) => {
                        self.settle_outcome(id, Err(HOST_CALL_FAILED.to_owned()))?;
                        answered = true;
                    }
                }
            }
            if !answered {
                break;
            }
        }
        let state = lock(&self.state);
        if state.yield_requested {
            return Ok(Progress::Yielded);
        }
        let nothing_pending = state.in_flight.is_empty()
            && state.queued.is_empty()
            && state.yields.is_empty()
            && state.timers.is_empty();
        drop(state);
        if nothing_pending {
            if let Some((value, truncated)) = self.returned.take() {
                return Ok(Progress::Completed(value, truncated));
            }
            // The program awaits something nothing can settle.
            return Err(if self.allocation_refused() {
                RunError::MemoryLimitExceeded
            } else {
                RunError::PendingWithoutHostWork
            });
        }
        Ok(Progress::Idle)
    }

    /// Takes the program's settlement: a failure ends the run, a value waits for pending work.
    fn take_finish(&mut self) -> Result<(), RunError> {
        let finish = lock(&self.state).finish.take();
        match finish {
            None => Ok(()),
            Some(Finish::TooLarge) => Err(RunError::OutputLimitExceeded),
            Some(Finish::Value(text, original_bytes)) => {
                let total = lock(&self.state).output_bytes.saturating_add(text.len());
                if total > self.limits.max_output_bytes {
                    return Err(RunError::OutputLimitExceeded);
                }
                let truncated = original_bytes.map(|original_bytes| Truncation {
                    original_bytes,
                    kept_bytes: text.len(),
                });
                let value = parse_bridge_json::<Value>(&text)
                    .map_err(|message| RunError::Guest(format!("the return value {message}")))?;
                self.returned = Some((value, truncated));
                Ok(())
            }
            Some(Finish::Error {
                message,
                looks_like_oom,
            }) => Err(self.classify(Caught {
                message,
                looks_like_oom,
            })),
        }
    }

    /// Runs the earliest timer that is due, if any; `Ok(true)` when one ran.
    fn fire_due_timer(&self) -> Result<bool, RunError> {
        let now = Instant::now();
        let due = {
            let mut state = lock(&self.state);
            let by_clock = state
                .timers
                .iter()
                .filter(|(_, timer)| timer.due <= now)
                .min_by_key(|(_, timer)| (timer.due, timer.seq))
                .map(|(id, _)| *id);
            // A tape may pick another timer (a replay fires them in the recorded order).
            let chosen = match &self.tape {
                Some(tape) => {
                    let timers = &state.timers;
                    tape.next_timer(by_clock, &|id| timers.contains_key(&id))
                }
                None => by_clock,
            };
            let next = chosen.and_then(|id| state.timers.get(&id).map(|timer| (id, timer.period)));
            match next {
                Some((id, Some(period))) => {
                    let seq = state.next_id;
                    state.next_id += 1;
                    if let Some(timer) = state.timers.get_mut(&id) {
                        timer.due = now.checked_add(period).unwrap_or(now);
                        timer.seq = seq;
                    }
                    Some(id)
                }
                Some((id, None)) => {
                    state.timers.remove(&id);
                    Some(id)
                }
                None => None,
            }
        };
        let Some(id) = due else {
            return Ok(false);
        };
        self.call_control("fireTimer", (js_number(id),))?;
        Ok(true)
    }

    /// Moves queued calls to in flight while fewer than `max_pending_calls` are.
    fn startable(&self) -> Vec<BridgeRequest> {
        let mut state = lock(&self.state);
        let mut started = Vec::new();
        while state.in_flight.len() < self.limits.max_pending_calls.max(1) {
            let Some((request, args_bytes)) = state.queued.pop_front() else {
                break;
            };
            state.in_flight.insert(
                request.id.0,
                InFlight {
                    method: request.method.clone(),
                    args_bytes,
                },
            );
            started.push(request);
        }
        started
    }

    /// Bytes the VM's heap holds now (cheap: the allocator keeps the count).
    pub fn heap_bytes(&self) -> usize {
        self.gauge.held_bytes()
    }

    /// Bytes the parked run holds: the VM's measured heap (`malloc_size`) plus what the host side
    /// buffers for it (output of the current leg, arguments of calls not settled yet).
    pub fn memory_bytes(&self) -> usize {
        let heap = usize::try_from(self.vm.runtime.memory_usage().malloc_size).unwrap_or(0);
        let state = lock(&self.state);
        let output: usize = state.output.iter().map(output_bytes).sum();
        heap.saturating_add(output).saturating_add(state.args_bytes)
    }

    /// Calls not settled into the VM yet, started ones first, each group in request order.
    pub fn pending_calls(&self) -> Vec<PendingCall> {
        let state = lock(&self.state);
        let started = state.in_flight.iter().map(|(id, call)| PendingCall {
            id: RequestId(*id),
            method: call.method.clone(),
            started: true,
        });
        let queued = state.queued.iter().map(|(request, _)| PendingCall {
            id: request.id,
            method: request.method.clone(),
            started: false,
        });
        started.chain(queued).collect()
    }

    /// Output bytes the run has produced so far, as its output limit counts them.
    pub fn output_bytes(&self) -> usize {
        lock(&self.state).output_bytes
    }

    /// Output produced but not handed out yet (kept when the driver gives up on a step).
    pub fn take_output(&self) -> Vec<OutputItem> {
        std::mem::take(&mut lock(&self.state).output)
    }

    /// Classifies a fatal guest failure: flags first, then memory, else the guest's message.
    ///
    /// The memory limit is reported exactly when the failure is what QuickJS throws for exhausted
    /// memory *and* the allocator refused an allocation during this step: a guest's own
    /// `throw null` is its error, and a guest that caught an allocation failure and then threw
    /// something else fails with that.
    fn classify(&self, caught: Caught) -> RunError {
        if let Some(error) = self.flags.tripped() {
            return error;
        }
        if caught.looks_like_oom && self.allocation_refused() {
            return RunError::MemoryLimitExceeded;
        }
        RunError::Guest(truncate(caught.message))
    }

    /// Whether the VM's allocator refused an allocation since the current step (or the build)
    /// began.
    fn allocation_refused(&self) -> bool {
        let refused = self.gauge.refusals() > self.refusals_before_step;
        if refused {
            tracing::debug!(target: "codemode_sandbox", limit = self.limits.memory_bytes, "allocation refused");
        }
        refused
    }

    /// Calls a function of the control object; returns whether it answered `true`.
    fn call_control<A>(&self, name: &str, args: A) -> Result<bool, RunError>
    where
        A: for<'js> rquickjs::function::IntoArgs<'js>,
    {
        let result = self.vm.context.with(|ctx| {
            let function: Function<'_> = control(&ctx)
                .and_then(|c| c.get(name))
                .map_err(|error| caught(&ctx, &error))?;
            function
                .call::<_, JsValue<'_>>(args)
                .map(|value| value.as_bool() == Some(true))
                .map_err(|error| caught(&ctx, &error))
        });
        result.map_err(|caught| self.classify(caught))
    }

    /// Settles one bridge call or yield in the VM; `Ok(false)` when the VM knows no such id.
    pub(crate) fn settle(&self, id: u64, ok: bool, payload: &str) -> Result<bool, RunError> {
        let result = self.vm.context.with(|ctx| {
            settle_function(&ctx)
                .and_then(|settle| settle.call::<_, JsValue<'_>>((js_number(id), ok, payload)))
                .map(|value| value.as_bool() == Some(true))
                .map_err(|error| caught(&ctx, &error))
        });
        result.map_err(|caught| self.classify(caught))
    }

    fn settle_outcome(&self, id: u64, outcome: Result<Value, String>) -> Result<(), RunError> {
        {
            let mut state = lock(&self.state);
            let Some(call) = state.in_flight.remove(&id) else {
                return Ok(());
            };
            state.args_bytes = state.args_bytes.saturating_sub(call.args_bytes);
        }
        if let Some(tape) = &self.tape {
            tape.settling(RequestId(id));
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

    fn run_jobs(&self) -> Result<(), RunError> {
        let mut executed: u32 = 0;
        loop {
            match self.vm.runtime.execute_pending_job() {
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
            if executed.is_multiple_of(JOBS_PER_DEADLINE_CHECK) && self.flags.interrupt() {
                return Err(self.flags.tripped().unwrap_or(RunError::Timeout));
            }
        }
    }
}

/// A request id, timer id or byte count as a JS number: all stay far below 2^53, so exact.
#[allow(
    clippy::cast_precision_loss,
    reason = "ids and byte budgets are far below 2^53"
)]
fn js_number(n: impl Into<u64>) -> f64 {
    n.into() as f64
}

/// A byte count as a JS number (see [`js_number`]).
fn js_bytes(bytes: usize) -> f64 {
    js_number(u64::try_from(bytes).unwrap_or(u64::MAX))
}

/// The frozen control object made by the bootstrap, kept as runtime userdata.
fn control<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Object<'js>> {
    let guard = ctx
        .userdata::<Object<'js>>()
        .ok_or(rquickjs::Error::Unknown)?;
    Ok(guard.clone())
}

/// The control object's `settle`, kept as the runtime's `Function` userdata by the bootstrap
/// (natives.rs).
fn settle_function<'js>(ctx: &Ctx<'js>) -> rquickjs::Result<Function<'js>> {
    let guard = ctx
        .userdata::<Function<'js>>()
        .ok_or(rquickjs::Error::Unknown)?;
    Ok(guard.clone())
}

/// Takes the pending exception (if `error` is one) and describes it for classification.
fn caught(ctx: &Ctx<'_>, error: &rquickjs::Error) -> Caught {
    if !matches!(error, rquickjs::Error::Exception) {
        return Caught {
            message: error.to_string(),
            looks_like_oom: matches!(error, rquickjs::Error::Allocation),
        };
    }
    let value = ctx.catch();
    // Described like the bootstrap's `describe` does an uncaught guest value.
    if value.is_null() {
        return Caught {
            message: "null".into(),
            looks_like_oom: true,
        };
    }
    if value.is_undefined() {
        return Caught {
            message: "undefined".into(),
            looks_like_oom: false,
        };
    }
    let message = value
        .as_exception()
        .and_then(|exception| exception.message())
        .or_else(|| value.as_string().and_then(|s| s.to_string().ok()))
        .unwrap_or_else(|| "uncaught exception".into());
    let looks_like_oom = message == "out of memory";
    Caught {
        message,
        looks_like_oom,
    }
}
