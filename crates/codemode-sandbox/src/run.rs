//! One run: the async side of a program. It owns the run's host work (spawned on the caller's
//! tokio runtime) and sends every piece of VM work, as one synchronous step, to where the VM
//! lives: a VM thread (vm_threads.rs), where the engine (engine.rs) does the step, or a worker
//! process (worker/) running the same engine, per the run's `Placement`. `Run::step` is that one
//! seam. The leg's deadline reaches the VM one way: `drive` sets it in the run's flags, which the
//! engine reads (a worker process gets it in the step's frame and sets its own flags).

use std::collections::HashMap;
use std::panic::catch_unwind;
use std::sync::Arc;
use std::time::{Duration, Instant};

use serde::{Deserialize, Serialize};
use serde_json::Value;
use tokio::task::{JoinError, JoinSet};

use crate::engine::{Engine, Flags, HOST_CALL_FAILED, PreparedVm, Progress, StepInput, StepOutput};
use crate::install::{InstallPlan, PreparedSetup};
use crate::vm_pool::Refill;
use crate::vm_threads::{Expected, Leftover, run_step_then_drop};
use crate::worker::{WorkerPhase, WorkerStop, WorkerVm, step_in_worker};
use crate::{
    BridgeHost, Limits, OutputItem, PendingCall, Placement, RunError, Truncation, WorkerPool,
    check_program,
};

/// How long after its deadline a leg still waits for a VM step stuck in one native call before it
/// reports `timeout` anyway (the VM is then dropped on its own thread when the call returns).
pub const DEADLINE_GRACE: Duration = Duration::from_millis(500);

/// An idle leg woken (by a host answer or a timer) this close to its deadline, or within a
/// twentieth of the leg when that is less, parks, and what woke it settles in the next leg.
/// Settling would race the deadline: a guest stopped at its deadline fails with `timeout`, where
/// one awaiting host work parks, and which of the two a late answer meets must not depend on how
/// fast the machine is.
pub const SETTLE_MARGIN: Duration = Duration::from_millis(50);

/// Why a leg ended with the run still alive.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WaitReason {
    /// The deadline came while the guest was idle awaiting host work.
    PendingTools,
    /// The guest called `yield_control()`.
    Yield,
}

/// How one leg of a run ended.
#[derive(Debug, Clone, PartialEq)]
pub enum LegEnd {
    /// The program returned and nothing it started is still pending; `value` is its JSON
    /// adaptation (`undefined` becomes `null`).
    Completed {
        /// The returned value.
        value: Value,
        /// Output produced during this leg.
        output: Vec<OutputItem>,
        /// Set when the value was cut to fit what was left of the output budget.
        truncated: Option<Truncation>,
    },
    /// The run is alive and can be parked and driven again later.
    Suspended {
        /// Why the leg ended.
        reason: WaitReason,
        /// Bridge calls not settled into the VM yet: started ones, then queued ones.
        pending: Vec<PendingCall>,
        /// Output produced during this leg.
        output: Vec<OutputItem>,
    },
    /// The run failed; it is dead (its VM and host work are already released).
    Failed {
        /// What went wrong.
        error: RunError,
        /// Output produced during this leg before the failure.
        output: Vec<OutputItem>,
    },
}

/// Where the run's VM is.
enum Phase {
    /// Checked, not built yet: the first leg builds and compiles under its deadline.
    Unbuilt {
        program: String,
        plan: Arc<InstallPlan>,
        /// A VM a pool built ahead of time, taken at start.
        prepared: Option<PreparedVm>,
    },
    /// Built and idle (between steps).
    Built(Box<Engine>),
    /// Built in a worker process and idle (`Placement::Process`).
    InWorker(Box<WorkerVm>),
    /// Completed, failed, or lost with a step that never answered.
    Dead,
}

impl LegEnd {
    /// The same step with its output replaced by `f(output)` (a host that must not deliver some
    /// of it twice, or adds earlier output in front).
    #[must_use]
    pub fn map_output(self, f: impl FnOnce(Vec<OutputItem>) -> Vec<OutputItem>) -> LegEnd {
        match self {
            LegEnd::Completed {
                value,
                output,
                truncated,
            } => LegEnd::Completed {
                value,
                output: f(output),
                truncated,
            },
            LegEnd::Suspended {
                reason,
                pending,
                output,
            } => LegEnd::Suspended {
                reason,
                pending,
                output: f(output),
            },
            LegEnd::Failed { error, output } => LegEnd::Failed {
                error,
                output: f(output),
            },
        }
    }
}

/// A running program. `Send`: it can be parked and driven again on another task or thread.
///
/// One fresh VM per run; dropping the run releases the VM and aborts its host work.
///
/// ```
/// use std::{sync::Arc, time::Instant};
/// use codemode_sandbox::{
///     BridgeHost, BridgeRequest, Callable, GuestSetup, Limits, Placement, Run, LegEnd,
/// };
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
/// let limits = Limits::default();
/// let mut run = Run::start(program, setup, &limits, &Placement::Thread, Arc::new(Echo)).unwrap();
/// match run.drive(Instant::now() + std::time::Duration::from_secs(10)).await {
///     LegEnd::Completed { value, output, .. } => {
///         assert_eq!(value, 21);
///         assert_eq!(output, vec![codemode_sandbox::OutputItem::Text { text: "hi".into() }]);
///     }
///     other => panic!("unexpected {other:?}"),
/// }
/// # });
/// ```
pub struct Run {
    phase: Phase,
    flags: Arc<Flags>,
    host: Arc<dyn BridgeHost>,
    limits: Limits,
    tasks: JoinSet<Result<Value, String>>,
    task_requests: HashMap<tokio::task::Id, u64>,
    /// Host answers that arrived and are not settled into the VM yet.
    ready: Vec<(u64, Result<Value, String>)>,
    /// The last leg ended in a yield: the next one settles the yields first.
    resume_yields: bool,
    /// The replacement owed to the pool this run's VM came from: let go after the first leg, so
    /// its build does not compete with that leg for the cores.
    refill: Option<Refill>,
    /// The worker pool of `Placement::Process`, and what ends a step in a worker early.
    worker: Option<(WorkerPool, Arc<WorkerStop>)>,
}

impl std::fmt::Debug for Run {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Run")
            .field("alive", &self.is_alive())
            .field("in_flight", &self.task_requests.len())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl Run {
    /// Checks `program` (JavaScript, types already stripped; run as the body of an async
    /// function) and takes the guest setup: a [`GuestSetup`](crate::GuestSetup) is prepared here,
    /// a [`PreparedSetup`] made once is shared by `Arc`. Cheap and linear in the program: the VM
    /// is built (or, under [`Placement::PrebuiltThreads`], taken from the pool when one built
    /// under `limits` is ready), the setup installed and the program compiled by the first
    /// [`Run::drive`], where `placement` says and under that leg's deadline, so a compile error
    /// is reported by that `drive` as [`LegEnd::Failed`] with [`RunError::Syntax`]. A VM taken from
    /// the pool never ran guest code and is never used by another run; the pool builds its
    /// replacement once the first `drive` has answered (or the run is dropped).
    ///
    /// # Errors
    /// [`RunError::ProgramTooLarge`] over `limits.max_source_bytes`, [`RunError::ModuleAccess`]
    /// (code `invalid_input`); a refused program leaves the pool's VM in the pool.
    pub fn start(
        program: &str,
        setup: impl Into<PreparedSetup>,
        limits: &Limits,
        placement: &Placement,
        host: Arc<dyn BridgeHost>,
    ) -> Result<Self, RunError> {
        if program.len() > limits.max_source_bytes {
            return Err(RunError::ProgramTooLarge {
                bytes: program.len(),
                limit: limits.max_source_bytes,
            });
        }
        // Module access and a body that would close its async-function wrapper are refused in
        // one tokenizer pass, before anything is built.
        check_program(program)?;
        let (prepared, refill) = match placement {
            Placement::PrebuiltThreads(pool) => pool.take(limits).unzip(),
            Placement::Thread | Placement::Process(_) => (None, None),
        };
        let worker = match placement {
            Placement::Process(pool) => Some((pool.clone(), Arc::default())),
            Placement::Thread | Placement::PrebuiltThreads(_) => None,
        };
        // Every interrupt poll of guest code tells the VM threads of its progress (a long step's
        // thread is demoted); set once per process, before any run's first step.
        crate::engine::on_guest_progress(crate::vm_threads::note_guest_progress);
        let flags = prepared
            .as_ref()
            .map_or_else(|| Arc::new(Flags::new()), |vm| Arc::clone(vm.flags()));
        Ok(Self {
            phase: Phase::Unbuilt {
                program: program.to_owned(),
                plan: Arc::clone(setup.into().plan()),
                prepared,
            },
            flags,
            host,
            limits: limits.clone(),
            tasks: JoinSet::new(),
            task_requests: HashMap::new(),
            ready: Vec::new(),
            resume_yields: false,
            refill,
            worker,
        })
    }

    /// Drives the program until it completes, fails, yields, or `deadline` passes while it is
    /// idle awaiting host work. VM work runs on a VM thread; host calls are spawned on the current
    /// tokio runtime and finished ones are settled into the VM. Output produced during this leg is
    /// returned in the step.
    ///
    /// The program completes only when it has returned *and* every bridge call and yield it
    /// started has settled: unawaited calls still run, within this leg's budget or later legs'.
    /// If guest code is still running when `deadline` passes, the run fails with
    /// [`RunError::Timeout`], at the latest [`DEADLINE_GRACE`] after it even when the VM is stuck
    /// in a native call. Must be called inside a tokio runtime with timers enabled (else
    /// [`RunError::RuntimeUnavailable`]). After `Completed` or `Failed` the run is dead and a
    /// further call fails with [`RunError::Finished`]. Dropping the future while a VM step is
    /// running ends the run (the step finishes on its thread and the VM is dropped there);
    /// dropping it while the run is idle awaiting host work leaves the run consistent.
    pub async fn drive(&mut self, deadline: Instant) -> LegEnd {
        self.drive_until(deadline, std::future::pending()).await
    }

    /// [`Run::drive`], ended early by `stop`: when it resolves (a host ending the run on
    /// request, or the run's whole life running out), the run fails with the error it gives,
    /// keeping the output of this leg so far. While the run idles on host work it ends at once;
    /// while guest code runs in a VM thread the VM is stopped at its next interrupt poll (a VM
    /// in a worker process finishes its step first, at the latest at `deadline` plus
    /// [`DEADLINE_GRACE`]). Dropping the run then aborts its host work, as always.
    pub async fn drive_until(
        &mut self,
        deadline: Instant,
        stop: impl std::future::Future<Output = RunError>,
    ) -> LegEnd {
        tokio::pin!(stop);
        let step = self.drive_leg(deadline, stop).await;
        self.refill = None;
        step
    }

    async fn drive_leg(
        &mut self,
        deadline: Instant,
        mut stop: std::pin::Pin<&mut impl std::future::Future<Output = RunError>>,
    ) -> LegEnd {
        if !self.is_alive() {
            return LegEnd::Failed {
                error: RunError::Finished,
                output: Vec::new(),
            };
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return self.fail(
                RunError::RuntimeUnavailable("Run::drive needs a tokio runtime".into()),
                Vec::new(),
            );
        };
        // `sleep_until` panics on a runtime built without timers; report that instead.
        let Ok(sleep) = catch_unwind(|| tokio::time::sleep_until(deadline.into())) else {
            return self.fail(
                RunError::RuntimeUnavailable("the tokio runtime has no timers enabled".into()),
                Vec::new(),
            );
        };
        tokio::pin!(sleep);
        let margin = SETTLE_MARGIN.min(deadline.saturating_duration_since(Instant::now()) / 20);
        // The one way the leg's deadline reaches the VM: the engine and its interrupt handler
        // read it from the run's flags (a worker's step frame carries it to the worker's flags).
        self.flags.set_deadline(deadline);
        let mut output = Vec::new();
        loop {
            let input = StepInput {
                settlements: std::mem::take(&mut self.ready),
                resume_yields: std::mem::take(&mut self.resume_yields),
                handle: Some(handle.clone()),
            };
            let flags = Arc::clone(&self.flags);
            let worker_stop = self.worker.as_ref().map(|(_, stop)| Arc::clone(stop));
            let mut stopped = None;
            let answer = {
                let step = self.step(input, deadline);
                tokio::pin!(step);
                tokio::select! {
                    biased;
                    answer = &mut step => answer,
                    error = &mut stop => {
                        // Stop the guest at its next poll, and take what the step made.
                        flags.force_timeout();
                        if let Some(worker_stop) = &worker_stop {
                            worker_stop.stop();
                        }
                        stopped = Some(error);
                        step.await
                    }
                }
            };
            if let Some(error) = stopped {
                if let Ok(answer) = answer {
                    output.extend(answer.output);
                }
                return self.fail(error, output);
            }
            let answer = match answer {
                Ok(answer) => answer,
                Err(error) => return self.fail(error, output),
            };
            if !answer.output.is_empty() {
                self.host.on_output(&answer.output);
            }
            output.extend(answer.output);
            for (id, future) in answer.spawn {
                let task = self.tasks.spawn(future);
                self.task_requests.insert(task.id(), id);
            }
            match answer.progress {
                Progress::Completed(value, truncated) => {
                    self.release();
                    return LegEnd::Completed {
                        value,
                        output,
                        truncated,
                    };
                }
                Progress::Failed(error) => return self.fail(error, output),
                Progress::Yielded => {
                    self.resume_yields = true;
                    return self.suspend(WaitReason::Yield, output);
                }
                Progress::Idle => {}
            }
            if self.tasks.is_empty() && answer.next_timer.is_none() {
                return self.fail(RunError::PendingWithoutHostWork, output);
            }
            if Instant::now() >= deadline {
                return self.suspend(WaitReason::PendingTools, output);
            }
            // A timer due before the deadline wakes the run; one due later parks it.
            let timer = answer.next_timer.filter(|due| *due < deadline);
            let joined = tokio::select! {
                biased;
                error = &mut stop => return self.fail(error, output),
                joined = self.tasks.join_next_with_id(), if !self.tasks.is_empty() => joined,
                () = sleep_until_timer(timer) => None,
                () = &mut sleep => return self.suspend(WaitReason::PendingTools, output),
            };
            if let Some(joined) = joined {
                self.collect(joined);
            }
            while let Some(joined) = self.tasks.try_join_next_with_id() {
                self.collect(joined);
            }
            // Woken at, after or just before the deadline (see [`SETTLE_MARGIN`]): the leg is
            // over, and what arrived is settled in the next one. Stepping now would risk ending
            // the leg with a timeout instead of parking it.
            if deadline.saturating_duration_since(Instant::now()) <= margin {
                return self.suspend(WaitReason::PendingTools, output);
            }
        }
    }

    /// Runs one engine step on a VM thread, or in a worker process. The engine goes there and
    /// comes back; when the run ends in the step, it is dropped there. `deadline` is the leg's,
    /// already in the run's flags: here it only bounds the wait for the step's answer.
    async fn step(&mut self, input: StepInput, deadline: Instant) -> Result<StepOutput, RunError> {
        if let Some((pool, stop)) = &self.worker {
            let phase = match std::mem::replace(&mut self.phase, Phase::Dead) {
                Phase::Unbuilt { program, plan, .. } => WorkerPhase::Unbuilt { program, plan },
                Phase::InWorker(vm) => WorkerPhase::Built(vm),
                Phase::Built(_) | Phase::Dead => return Err(RunError::Finished),
            };
            let (vm, answer) =
                step_in_worker(pool, phase, input, &self.host, &self.limits, deadline, stop).await;
            if let Some(vm) = vm {
                self.phase = Phase::InWorker(vm);
            }
            return answer;
        }
        let phase = std::mem::replace(&mut self.phase, Phase::Dead);
        let expected = match &phase {
            Phase::Unbuilt { prepared: None, .. } => Expected::VmBuild,
            _ => Expected::Brief,
        };
        let flags = Arc::clone(&self.flags);
        let host = Arc::clone(&self.host);
        let limits = self.limits.clone();
        let job = move || -> ((Option<Box<Engine>>, StepOutput), Leftover) {
            let mut engine = match phase {
                Phase::Built(engine) => engine,
                Phase::Unbuilt {
                    program,
                    plan,
                    prepared,
                } => match tracing::debug_span!(target: "codemode", "vm_build", prebuilt = prepared.is_some())
                    .in_scope(|| Engine::build(&program, plan, limits, host, flags, prepared))
                {
                    Ok(engine) => Box::new(engine),
                    Err(error) => return ((None, StepOutput::failed(error)), Leftover::none()),
                },
                Phase::InWorker(_) | Phase::Dead => {
                    return (
                        (None, StepOutput::failed(RunError::Finished)),
                        Leftover::none(),
                    );
                }
            };
            let answer = engine.step(input);
            match answer.progress {
                // The finished VM is torn down after the answer went out.
                Progress::Completed(..) | Progress::Failed(_) => {
                    let heap_bytes = engine.heap_bytes();
                    ((None, answer), Leftover::vm(engine, heap_bytes))
                }
                Progress::Yielded | Progress::Idle => ((Some(engine), answer), Leftover::none()),
            }
        };
        let give_up = deadline.checked_add(DEADLINE_GRACE).unwrap_or(deadline);
        // If this future is dropped mid-step (the caller gave up), the VM stops at its next poll.
        let abandon = StopOnDrop(Some(Arc::clone(&self.flags)));
        let answer =
            tokio::time::timeout_at(give_up.into(), run_step_then_drop(job, expected)).await;
        abandon.defuse();
        match answer {
            Ok(Ok((engine, answer))) => {
                if let Some(engine) = engine {
                    self.phase = Phase::Built(engine);
                }
                Ok(answer)
            }
            Ok(Err(_lost)) => Err(RunError::Internal("a code mode VM step failed".into())),
            Err(_elapsed) => {
                // The VM is stuck in a native call: stop it at its next poll, and let its thread
                // drop it then.
                self.flags.force_timeout();
                Err(RunError::Timeout)
            }
        }
    }

    fn collect(&mut self, joined: Result<(tokio::task::Id, Result<Value, String>), JoinError>) {
        let (task, outcome) = match joined {
            Ok((task, outcome)) => (task, outcome),
            Err(error) => (error.id(), Err(HOST_CALL_FAILED.to_owned())),
        };
        if let Some(id) = self.task_requests.remove(&task) {
            self.ready.push((id, outcome));
        }
    }

    /// Bytes the parked run holds: the VM's measured heap (`malloc_size`) plus what the host side
    /// buffers for it (output of the current leg, arguments of unsettled bridge calls, answers
    /// not settled into the VM yet). `0` once the run is dead or before its VM is built.
    pub fn memory_bytes(&self) -> usize {
        let vm = match &self.phase {
            Phase::Built(engine) => engine.memory_bytes(),
            Phase::InWorker(vm) => vm.memory_bytes(),
            Phase::Unbuilt { .. } | Phase::Dead => return 0,
        };
        let ready: usize = self
            .ready
            .iter()
            .map(|(_, outcome)| match outcome {
                Ok(value) => serde_json::to_vec(value).map_or(0, |bytes| bytes.len()),
                Err(message) => message.len(),
            })
            .sum();
        vm.saturating_add(ready)
    }

    /// Bridge calls not settled into the VM yet (for the `waiting` result): started ones, then
    /// queued ones, each in request order.
    pub fn pending_calls(&self) -> Vec<PendingCall> {
        match &self.phase {
            Phase::Built(engine) => engine.pending_calls(),
            Phase::InWorker(vm) => vm.pending_calls(),
            _ => Vec::new(),
        }
    }

    /// Output bytes counted so far over the whole run (against `max_output_bytes`).
    pub fn output_bytes(&self) -> usize {
        match &self.phase {
            Phase::Built(engine) => engine.output_bytes(),
            Phase::InWorker(vm) => vm.output_bytes(),
            _ => 0,
        }
    }

    /// Whether the run can still be driven (it has not completed or failed).
    pub fn is_alive(&self) -> bool {
        !matches!(self.phase, Phase::Dead)
    }

    /// Ends the run: releases the VM and aborts host work.
    fn release(&mut self) {
        self.phase = Phase::Dead;
        self.tasks.abort_all();
        self.task_requests.clear();
        self.ready.clear();
    }

    fn fail(&mut self, error: RunError, mut output: Vec<OutputItem>) -> LegEnd {
        tracing::debug!(target: "codemode_sandbox", %error, "code mode run failed");
        if let Phase::Built(engine) = &self.phase {
            output.extend(engine.take_output());
        }
        self.release();
        LegEnd::Failed { error, output }
    }

    fn suspend(&mut self, reason: WaitReason, output: Vec<OutputItem>) -> LegEnd {
        LegEnd::Suspended {
            reason,
            pending: self.pending_calls(),
            output,
        }
    }
}

/// Stops the VM of a step whose driver went away before the step answered.
struct StopOnDrop(Option<Arc<Flags>>);

impl StopOnDrop {
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for StopOnDrop {
    fn drop(&mut self) {
        if let Some(flags) = self.0.take() {
            flags.force_timeout();
        }
    }
}

/// Sleeps until a timer is due; never wakes without one.
async fn sleep_until_timer(due: Option<Instant>) {
    match due {
        Some(due) => tokio::time::sleep_until(due.into()).await,
        None => std::future::pending().await,
    }
}
