//! The host's side of process isolation: the pool of worker processes and the step of a run
//! whose VM lives in one.
//!
//! A step runs on a VM thread (vm_threads.rs) like an in-process step, but instead of the engine
//! that thread drives the worker's pipe: it writes the step, answers the worker's synchronous calls
//! and host calls (polling each host call once in place, exactly as the engine does in-process),
//! and reads the step's end. The async driver gives up at the deadline plus the grace and kills
//! the worker, which ends the thread's blocking read.

use std::collections::{HashMap, HashSet};
use std::fmt;
use std::io::BufReader;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::process::{Child, ChildStdin, ChildStdout, Command, ExitStatus, Stdio};
use std::sync::atomic::{AtomicBool, AtomicU64, AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::task::Poll;
use std::time::{Duration, Instant};

use serde_json::Value;
use tokio::sync::{Notify, OwnedSemaphorePermit, Semaphore};

use super::protocol::{
    BuildRef, Done, FrameError, HostMessage, MAX_HELLO_BYTES, PROTOCOL_VERSION, ProgressWire,
    WorkerMessage, instant_in, nanos, read_frame, write_frame,
};
use super::{WorkerCommand, WorkerPoolConfig};
use crate::codec::{encode_host_value, output_bytes};
use crate::engine::{HOST_CALL_FAILED, HostFuture, Progress, StepInput, StepOutput};
use crate::install::InstallPlan;
use crate::vm_threads::{Expected, Leftover, run_step_then_drop};
use crate::{
    BridgeHost, DEADLINE_GRACE, Limits, MAX_JSON_DEPTH, PendingCall, ReadingKind, RequestId,
    RunError, Tape,
};
use codemode_worker::ADDRESS_SPACE_FLAG;

mod exchange;

use exchange::{RunSide, exchange};

fn lock<T>(mutex: &Mutex<T>) -> MutexGuard<'_, T> {
    mutex.lock().unwrap_or_else(PoisonError::into_inner)
}

/// A bounded pool of worker processes. Cheap to clone (one shared pool). Dropping the last clone
/// kills the idle workers; workers of live runs end with their runs.
///
/// ```no_run
/// use codemode_sandbox::{Placement, WorkerCommand, WorkerPool, WorkerPoolConfig};
/// let pool = WorkerPool::new(WorkerPoolConfig {
///     command: Some(WorkerCommand::new("/usr/local/bin/codemode-worker")),
///     ..WorkerPoolConfig::default()
/// });
/// let placement = Placement::Process(pool);
/// ```
#[derive(Clone)]
pub struct WorkerPool {
    inner: Arc<PoolInner>,
}

impl fmt::Debug for WorkerPool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("WorkerPool")
            .field("config", &self.inner.config)
            .field("live", &self.live_workers())
            .finish_non_exhaustive()
    }
}

struct PoolInner {
    config: WorkerPoolConfig,
    command: Result<WorkerCommand, String>,
    idle: Mutex<Vec<Worker>>,
    /// One permit per live worker process.
    permits: Arc<Semaphore>,
    /// Woken when a worker becomes idle or a process ends.
    changed: Notify,
    pids: Mutex<HashSet<u32>>,
    warming: AtomicUsize,
    warned_unlocked: AtomicBool,
}

impl WorkerPool {
    /// A pool with these settings; starts `warm_workers` workers in the background. The worker
    /// binary is located now (see [`WorkerCommand::locate`]); when there is none, every run in
    /// this pool fails with `runtime_unavailable` naming where it looked.
    pub fn new(config: WorkerPoolConfig) -> Self {
        let command = match &config.command {
            Some(command) => Ok(command.clone()),
            None => WorkerCommand::locate(),
        };
        let inner = Arc::new(PoolInner {
            permits: Arc::new(Semaphore::new(config.max_workers.max(1))),
            config,
            command,
            idle: Mutex::new(Vec::new()),
            changed: Notify::new(),
            pids: Mutex::new(HashSet::new()),
            warming: AtomicUsize::new(0),
            warned_unlocked: AtomicBool::new(false),
        });
        inner.warm();
        Self { inner }
    }

    /// The settings.
    pub fn config(&self) -> &WorkerPoolConfig {
        &self.inner.config
    }

    /// Live worker processes (idle, starting, or serving a run).
    pub fn live_workers(&self) -> usize {
        self.inner.config.max_workers.max(1) - self.inner.permits.available_permits()
    }

    /// Process ids of the live workers, for diagnostics (and the tests that kill one).
    pub fn worker_pids(&self) -> Vec<u32> {
        let mut pids: Vec<u32> = lock(&self.inner.pids).iter().copied().collect();
        pids.sort_unstable();
        pids
    }

    /// An idle worker, or the right to start one; waits until `deadline` when every worker is
    /// busy.
    async fn take(&self, deadline: Instant) -> Result<Slot, RunError> {
        let sleep = tokio::time::sleep_until(deadline.into());
        tokio::pin!(sleep);
        loop {
            let changed = self.inner.changed.notified();
            tokio::pin!(changed);
            changed.as_mut().enable();
            let idle = lock(&self.inner.idle).pop();
            if let Some(worker) = idle {
                if worker.process.exited().is_some() {
                    // Died while idle (killed, or out of memory): never handed to a run. Dropping
                    // it frees its place, so the next turn of the loop may take another idle one
                    // or start one. (`step_on_this_thread` checks again, on the VM thread, for a
                    // worker that dies after this check: that one it must replace itself.)
                    drop(worker);
                    continue;
                }
                self.inner.warm();
                return Ok(Slot::Idle(worker));
            }
            if let Ok(permit) = Arc::clone(&self.inner.permits).try_acquire_owned() {
                self.inner.warm();
                return Ok(Slot::Start(permit));
            }
            tokio::select! {
                () = &mut changed => {}
                () = &mut sleep => {
                    return Err(RunError::RuntimeUnavailable(format!(
                        "no code mode worker process is free: all {} are running or hold parked \
                         runs; wait for or cancel a parked run",
                        self.inner.config.max_workers.max(1)
                    )));
                }
            }
        }
    }
}

impl Drop for PoolInner {
    fn drop(&mut self) {
        lock(&self.idle).clear();
    }
}

impl PoolInner {
    /// Starts workers in the background until `warm_workers` are idle or starting.
    fn warm(self: &Arc<Self>) {
        loop {
            let idle = lock(&self.idle).len();
            if idle + self.warming.load(Ordering::SeqCst) >= self.config.warm_workers {
                return;
            }
            let Ok(permit) = Arc::clone(&self.permits).try_acquire_owned() else {
                return;
            };
            self.warming.fetch_add(1, Ordering::SeqCst);
            // The pool itself is not kept alive by a warming thread.
            let pool = Arc::downgrade(self);
            let started = std::thread::Builder::new()
                .name("codemode-worker-start".into())
                .spawn(move || {
                    let Some(pool) = pool.upgrade() else { return };
                    match start_worker(&pool, permit) {
                        Ok(worker) => lock(&pool.idle).push(worker),
                        Err(error) => {
                            tracing::warn!(target: "codemode_sandbox", %error, "a warm code mode worker did not start");
                        }
                    }
                    pool.warming.fetch_sub(1, Ordering::SeqCst);
                    pool.changed.notify_waiters();
                });
            if started.is_err() {
                self.warming.fetch_sub(1, Ordering::SeqCst);
                return;
            }
        }
    }

    /// Takes a worker back after its run ended: idle again, or replaced when it served its
    /// runs or its memory grew past the bound.
    fn give_back(self: &Arc<Self>, worker: Worker) {
        let worn = worker.runs >= self.config.max_runs_per_worker
            || worker.peak_rss_bytes >= self.config.max_worker_rss_bytes;
        if worn {
            let mut worker = worker;
            worker.retired = true;
            drop(worker);
            self.warm();
        } else {
            lock(&self.idle).push(worker);
            self.changed.notify_waiters();
        }
    }
}

/// What [`WorkerPool::take`] gives: a started worker or a permit to start one.
enum Slot {
    Idle(Worker),
    Start(OwnedSemaphorePermit),
}

/// A worker's process, shared with whoever may have to kill it.
struct Process {
    child: Mutex<Child>,
    pid: u32,
    /// Stop signals sent to it so far (`Process::interrupt`).
    stop_signals: AtomicU64,
}

impl Process {
    fn kill(&self) {
        let _ = lock(&self.child).kill();
    }

    /// Sends the stop signal (`SIGUSR1`): the worker ends its current step at the guest's next
    /// poll. Counted first, so a step whose frame carries the count from before ends.
    fn interrupt(&self) {
        let mut child = lock(&self.child);
        // Only to a process not yet reaped: its pid cannot have been given to another.
        if !matches!(child.try_wait(), Ok(None)) {
            return;
        }
        self.stop_signals.fetch_add(1, Ordering::SeqCst);
        #[cfg(target_os = "linux")]
        {
            use nix::sys::signal::{Signal, kill};
            use nix::unistd::Pid;
            if let Ok(pid) = i32::try_from(child.id()) {
                let _ = kill(Pid::from_raw(pid), Signal::SIGUSR1);
            }
        }
        #[cfg(not(target_os = "linux"))]
        let _ = child.kill();
    }

    /// How the process ended: it may still be on its way out (its pipe just closed), so it gets
    /// a moment to exit on its own before it is killed. Blocking, briefly.
    fn end(&self) -> Option<ExitStatus> {
        for _ in 0..100 {
            if let Ok(Some(status)) = lock(&self.child).try_wait() {
                return Some(status);
            }
            std::thread::sleep(Duration::from_millis(1));
        }
        let mut child = lock(&self.child);
        let _ = child.kill();
        child.wait().ok()
    }

    /// The exit status if the process already ended.
    fn exited(&self) -> Option<ExitStatus> {
        lock(&self.child).try_wait().ok().flatten()
    }
}

/// One worker process and its pipes. Dropping it kills the process (and reaps it on a thread
/// of its own).
pub(crate) struct Worker {
    process: Arc<Process>,
    stdin: ChildStdin,
    stdout: BufReader<ChildStdout>,
    buffer: Vec<u8>,
    greeted: bool,
    /// The worker said it installed its system-call filter.
    locked_down: bool,
    runs: u64,
    peak_rss_bytes: u64,
    /// Weak: the pool's idle list holds workers, so a strong handle would keep a dropped pool
    /// (and its idle processes) alive.
    pool: Weak<PoolInner>,
    permit: Option<OwnedSemaphorePermit>,
    /// Set when the pool retires it (its runs or memory bound), for the count of replaced
    /// workers (`stats.rs`).
    retired: bool,
}

impl Drop for Worker {
    fn drop(&mut self) {
        self.process.kill();
        let pool = self.pool.upgrade();
        crate::stats::worker_ended(pool.is_some() && !self.retired);
        if let Some(pool) = &pool {
            lock(&pool.pids).remove(&self.process.pid);
        }
        let process = Arc::clone(&self.process);
        let reaped = std::thread::Builder::new()
            .name("codemode-worker-reap".into())
            .spawn(move || {
                let _ = process.end();
            });
        if reaped.is_err() {
            // No thread: the killed process is reaped by the next `try_wait`, or stays a zombie
            // until this process exits.
            let _ = self.process.exited();
        }
        drop(self.permit.take());
        if let Some(pool) = pool {
            pool.changed.notify_waiters();
        }
    }
}

fn start_worker(pool: &Arc<PoolInner>, permit: OwnedSemaphorePermit) -> Result<Worker, RunError> {
    let command = pool
        .command
        .as_ref()
        .map_err(|message| RunError::RuntimeUnavailable(message.clone()))?;
    let mut child = Command::new(&command.program)
        .args(&command.args)
        .arg(format!(
            "{ADDRESS_SPACE_FLAG}{}",
            pool.config.address_space_bytes
        ))
        .env_clear()
        .current_dir("/")
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .map_err(|error| {
            RunError::RuntimeUnavailable(format!(
                "cannot start the code mode worker process {}: {error}",
                command.program.display()
            ))
        })?;
    let (Some(stdin), Some(stdout)) = (child.stdin.take(), child.stdout.take()) else {
        let _ = child.kill();
        let _ = child.wait();
        return Err(RunError::RuntimeUnavailable(
            "the code mode worker process has no pipes".into(),
        ));
    };
    let pid = child.id();
    lock(&pool.pids).insert(pid);
    crate::stats::worker_started();
    Ok(Worker {
        process: Arc::new(Process {
            child: Mutex::new(child),
            pid,
            stop_signals: AtomicU64::new(0),
        }),
        stdin,
        stdout: BufReader::with_capacity(64 * 1024, stdout),
        buffer: Vec::new(),
        greeted: false,
        locked_down: false,
        runs: 0,
        peak_rss_bytes: 0,
        pool: Arc::downgrade(pool),
        permit: Some(permit),
        retired: false,
    })
}

/// Why a worker was given up on.
enum Fault {
    /// Its pipe closed: it exited or was killed.
    Closed,
    TooLong {
        bytes: usize,
        limit: usize,
    },
    Malformed(String),
}

impl From<FrameError> for Fault {
    fn from(error: FrameError) -> Self {
        match error {
            FrameError::Closed => Self::Closed,
            FrameError::TooLong { bytes, limit } => Self::TooLong { bytes, limit },
            FrameError::Malformed(detail) => Self::Malformed(detail),
        }
    }
}

impl Fault {
    /// The run's error; ends the process first (to report how it ended).
    fn into_error(self, process: &Process) -> RunError {
        RunError::RuntimeUnavailable(match self {
            Self::Closed => format!(
                "the code mode worker process running this program exited ({}); the run is lost",
                describe(process.end())
            ),
            Self::TooLong { bytes, limit } => {
                process.kill();
                format!(
                    "the code mode worker process sent a message of {bytes} bytes, over the \
                     limit of {limit}; it was stopped"
                )
            }
            Self::Malformed(detail) => {
                process.kill();
                format!(
                    "the code mode worker process sent a malformed message ({}); it was stopped",
                    crate::codec::truncate(detail)
                )
            }
        })
    }
}

/// An exit status in words, naming the usual signals.
fn describe(status: Option<ExitStatus>) -> String {
    let Some(status) = status else {
        return "its exit status is unknown".into();
    };
    #[cfg(target_os = "linux")]
    {
        use std::os::unix::process::ExitStatusExt;
        if let Some(signal) = status.signal() {
            let name = match signal {
                6 => " (SIGABRT)",
                7 => " (SIGBUS)",
                9 => " (SIGKILL)",
                11 => " (SIGSEGV)",
                31 => " (SIGSYS: a forbidden system call)",
                _ => "",
            };
            return format!("killed by signal {signal}{name}");
        }
    }
    match status.code() {
        Some(code) => format!("exit status {code}"),
        None => status.to_string(),
    }
}

/// A run whose VM lives in a worker process, between steps.
pub(crate) struct WorkerVm {
    worker: Worker,
    run: RunSide,
}

impl WorkerVm {
    /// Measured VM heap plus what the worker buffers, as the worker last reported it.
    pub(crate) fn memory_bytes(&self) -> usize {
        self.run.memory_bytes
    }

    pub(crate) fn pending_calls(&self) -> Vec<PendingCall> {
        self.run.pending.clone()
    }

    pub(crate) fn output_bytes(&self) -> usize {
        self.run.output_bytes
    }
}

/// Where the run is when its next step starts.
pub(crate) enum WorkerPhase {
    /// Not built: the step takes a worker and builds the VM there first.
    Unbuilt {
        program: String,
        plan: Arc<InstallPlan>,
    },
    Built(Box<WorkerVm>),
}

/// Kills the step's worker: at the deadline plus the grace, or when the driver went away. It
/// carries the run's [`WorkerStop`], which the step's worker answers to while the step lasts.
struct Killer {
    process: Mutex<Option<Arc<Process>>>,
    killed: AtomicBool,
    stop: Arc<WorkerStop>,
}

impl Killer {
    fn new(stop: &Arc<WorkerStop>) -> Self {
        Self {
            process: Mutex::default(),
            killed: AtomicBool::new(false),
            stop: Arc::clone(stop),
        }
    }

    fn watch(&self, process: &Arc<Process>) {
        *lock(&self.process) = Some(Arc::clone(process));
        if self.killed.load(Ordering::SeqCst) {
            process.kill();
        }
    }

    fn kill(&self) {
        self.killed.store(true, Ordering::SeqCst);
        if let Some(process) = lock(&self.process).as_ref() {
            process.kill();
        }
    }
}

/// Kills the worker if the step's future is dropped before it answered.
struct KillOnDrop(Option<Arc<Killer>>);

impl KillOnDrop {
    fn defuse(mut self) {
        self.0 = None;
    }
}

impl Drop for KillOnDrop {
    fn drop(&mut self) {
        if let Some(killer) = self.0.take() {
            killer.kill();
        }
    }
}

/// Ends a run's step in its worker process early, keeping the step's output: what
/// [`Flags::force_timeout`](crate::engine::Flags) is to a VM thread. One per run; the driver
/// calls [`WorkerStop::stop`] when the host ends the run (terminated, past its life).
#[derive(Default)]
pub(crate) struct WorkerStop {
    stopped: AtomicBool,
    /// The worker of the step in flight, while one is.
    process: Mutex<Option<Arc<Process>>>,
}

impl WorkerStop {
    /// Stops the run's step in flight at the guest's next poll, or the next step as soon as its
    /// frame is sent.
    pub(crate) fn stop(&self) {
        self.stopped.store(true, Ordering::SeqCst);
        if let Some(process) = lock(&self.process).as_ref() {
            process.interrupt();
        }
    }

    fn watch(&self, process: &Arc<Process>) {
        *lock(&self.process) = Some(Arc::clone(process));
    }

    /// The step is over: no signal of this run reaches the worker after this returns (the
    /// worker may serve another run next).
    fn unwatch(&self) {
        *lock(&self.process) = None;
    }

    /// The step's frame, carrying the signals sent before it, is written: a stop that came
    /// before is signalled again, now that the worker counts it.
    fn frame_sent(&self, process: &Process) {
        if self.stopped.load(Ordering::SeqCst) {
            process.interrupt();
        }
    }
}

/// One step of a run in a worker process. Returns the VM back when the run is still alive.
pub(crate) async fn step_in_worker(
    pool: &super::WorkerPool,
    phase: WorkerPhase,
    input: StepInput,
    host: &Arc<dyn BridgeHost>,
    limits: &Limits,
    deadline: Instant,
    stop: &Arc<WorkerStop>,
) -> (Option<Box<WorkerVm>>, Result<StepOutput, RunError>) {
    let (slot, run, build) = match phase {
        WorkerPhase::Built(vm) => {
            let WorkerVm { worker, run } = *vm;
            (Slot::Idle(worker), run, None)
        }
        WorkerPhase::Unbuilt { program, plan } => {
            let slot = match pool.take(deadline).await {
                Ok(slot) => slot,
                Err(error) => return (None, Err(error)),
            };
            let run = RunSide::new(&plan, Arc::clone(host), limits);
            (slot, run, Some((program, plan)))
        }
    };
    let killer = Arc::new(Killer::new(stop));
    let job_killer = Arc::clone(&killer);
    let pool_inner = Arc::clone(&pool.inner);
    let job = move || {
        let answer =
            step_on_this_thread(&pool_inner, slot, run, build, input, deadline, &job_killer);
        (answer, Leftover::none())
    };
    let give_up = deadline.checked_add(DEADLINE_GRACE).unwrap_or(deadline);
    let guard = KillOnDrop(Some(Arc::clone(&killer)));
    // The VM is in the worker process; this thread only relays.
    let answer =
        tokio::time::timeout_at(give_up.into(), run_step_then_drop(job, Expected::Brief)).await;
    guard.defuse();
    match answer {
        Ok(Ok(answer)) => answer,
        Ok(Err(_lost)) => (
            None,
            Err(RunError::Internal("a code mode VM step failed".into())),
        ),
        Err(_elapsed) => {
            // Stuck (a native call that never returns) or stalled: the worker is killed, which
            // also ends the blocking read of the thread serving it; that thread drops it.
            killer.kill();
            (None, Err(RunError::Timeout))
        }
    }
}

/// The blocking part of a step, on a VM thread.
fn step_on_this_thread(
    pool: &Arc<PoolInner>,
    slot: Slot,
    mut run: RunSide,
    build: Option<(String, Arc<InstallPlan>)>,
    input: StepInput,
    deadline: Instant,
    killer: &Killer,
) -> (Option<Box<WorkerVm>>, Result<StepOutput, RunError>) {
    let parked = build.is_none();
    let mut worker = match slot {
        // An idle worker that died meanwhile (killed from outside) is replaced, not blamed on
        // the run that would have been its next.
        Slot::Idle(mut worker) if !parked && worker.process.exited().is_some() => {
            let permit = worker.take_permit();
            drop(worker);
            match permit.map(|permit| start_worker(pool, permit)) {
                Some(Ok(worker)) => worker,
                Some(Err(error)) => return (None, Err(error)),
                None => {
                    return (
                        None,
                        Err(RunError::Internal(
                            "a code mode worker without a slot".into(),
                        )),
                    );
                }
            }
        }
        Slot::Idle(worker) => worker,
        Slot::Start(permit) => match start_worker(pool, permit) {
            Ok(worker) => worker,
            Err(error) => return (None, Err(error)),
        },
    };
    killer.watch(&worker.process);
    if parked && let Some(status) = worker.process.exited() {
        return (
            None,
            Err(RunError::RuntimeUnavailable(format!(
                "the code mode worker process holding this run exited while it was parked ({}); \
                 the run is lost",
                describe(Some(status))
            ))),
        );
    }
    let build_ref = build
        .as_ref()
        .map(|(program, plan)| (program.as_str(), &**plan));
    killer.stop.watch(&worker.process);
    let exchanged = exchange(
        &mut worker,
        &mut run,
        build_ref,
        input,
        deadline,
        &killer.stop,
    );
    killer.stop.unwatch();
    match exchanged {
        Ok((done, spawn)) => {
            if !worker.locked_down {
                // Logged once per pool: the platform could not lock the worker down.
                if !pool.warned_unlocked.swap(true, Ordering::SeqCst) {
                    tracing::warn!(target: "codemode_sandbox", "code mode worker processes run without a system-call filter on this platform");
                }
            }
            let progress = match done.progress {
                ProgressWire::Completed { value, truncated } => {
                    Progress::Completed(value, truncated)
                }
                ProgressWire::Failed(failure) => Progress::Failed(failure.into_error()),
                ProgressWire::Yielded => Progress::Yielded,
                ProgressWire::Idle => Progress::Idle,
            };
            let output = StepOutput {
                progress,
                spawn,
                output: done.output,
                next_timer: done.next_timer_nanos.map(instant_in),
            };
            let alive = matches!(output.progress, Progress::Idle | Progress::Yielded);
            if alive {
                (Some(Box::new(WorkerVm { worker, run })), Ok(output))
            } else {
                worker.runs += 1;
                pool.give_back(worker);
                (None, Ok(output))
            }
        }
        Err(fault) => {
            let error = fault.into_error(&worker.process);
            drop(worker);
            (None, Err(error))
        }
    }
}

impl Worker {
    /// Takes the worker's place in the pool (for its replacement).
    fn take_permit(&mut self) -> Option<OwnedSemaphorePermit> {
        self.permit.take()
    }

    fn write(&mut self, message: &HostMessage<'_>) -> Result<(), Fault> {
        write_frame(&mut self.stdin, &mut self.buffer, message).map_err(|_| Fault::Closed)
    }

    fn read(&mut self, limit: usize) -> Result<WorkerMessage, Fault> {
        Ok(read_frame(&mut self.stdout, &mut self.buffer, limit)?)
    }
}
