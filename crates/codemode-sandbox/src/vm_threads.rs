//! Where a VM runs: a bounded, process-wide pool of OS threads of the sandbox's own.
//!
//! Guest code never runs on the caller's async worker threads. Every piece of VM work (building
//! the VM, compiling, running jobs, settling host answers) is one synchronous *step* sent here;
//! the caller's task awaits its answer without blocking its worker (it looks for the answer for
//! at most [`CALLER_SPIN`] first, [`BUILD_SPIN`] for a step that builds a VM while a core is
//! free for the caller: a short step answers sooner than a parked thread wakes up on a virtual
//! machine, and the wait is bounded whatever the step does). A CPU-bound cell therefore
//! occupies one VM thread until its deadline, never a tokio worker, and the operating system's
//! scheduler time-slices the VM threads, so a trivial cell beside CPU-bound neighbours still gets
//! the CPU within a scheduler slice.
//!
//! A step that keeps its thread busy past [`LONG_STEP`] (a CPU-bound cell) is a long step. While
//! long steps could fill every core and another step wants one, a long step lowers its thread's
//! scheduling priority by [`LONG_STEP_NICE`] (Linux; see [`note_guest_progress`]), so the
//! scheduler gives the cores to the short steps of other runs first. A long step beside short
//! ones, or alone, keeps the normal priority (demoted, it would yield to everything else on the
//! machine as well), and a demoted one still gets every cycle nobody else wants. An unprivileged
//! thread cannot raise its priority again, so a demoted thread finishes its step and exits, and
//! its caller starts a fresh thread.
//!
//! Bounds: [`thread_count`] threads (four per core, at least 4, at most 64), started lazily, and
//! at most [`MAX_QUEUED_STEPS`] steps waiting for a thread; a caller beyond that waits (async)
//! for a slot — back-pressure, never an unbounded queue and never a thread per cell.

use std::cell::Cell;
use std::collections::VecDeque;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::sync::{Arc, Condvar, Mutex, MutexGuard, OnceLock};

use codemode_engine::VM_THREAD_STACK_BYTES;
use tokio::sync::{Semaphore, oneshot};

/// How long a caller looks for its step's answer before its task parks (see
/// [`run_step_then_drop`]).
const CALLER_SPIN: std::time::Duration = std::time::Duration::from_micros(60);

/// How long a caller looks for the answer of a step that builds a VM ([`Expected::VmBuild`])
/// before its task parks, while a core is left for it. Building a fresh VM and running a short
/// program takes ~200 µs on the reference machine (2 cores, virtualized), and waking a parked
/// caller there costs another 20-30 µs; the caller's worker is held no longer than running the
/// build itself would hold it.
const BUILD_SPIN: std::time::Duration = std::time::Duration::from_micros(300);

/// What a step is expected to cost, which bounds how long its caller looks for the answer
/// before parking.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Expected {
    /// Settling answers, running jobs: tens of microseconds unless guest code computes.
    Brief,
    /// Building a fresh VM, then the program's first leg: hundreds of microseconds.
    VmBuild,
}

/// Steps that may wait for a free VM thread before callers wait for a slot.
pub const MAX_QUEUED_STEPS: usize = 4096;

/// A submitted step. It answers its caller itself, and returns what is left to drop after that
/// (a finished VM, the step's slot), which its thread drops before it takes another step.
type Job = Box<dyn FnOnce() -> Rest + Send>;

/// The steps waiting for a VM thread. Unlike a channel, submitting a step wakes a sleeping thread
/// only when no thread is *looking* for work (see [`serve_steps`]): on a VM, waking a thread costs more
/// than a trivial step, and a woken thread that finds its step taken still takes a core the
/// busy ones want.
struct StepQueue {
    jobs: Mutex<VecDeque<Job>>,
    ready: Condvar,
    /// Held by the one thread, if any, that is looking for the next step (spinning, or tearing
    /// down what its last step left, after which it looks): it will take what is submitted.
    looking: AtomicBool,
}

impl StepQueue {
    fn jobs(&self) -> MutexGuard<'_, VecDeque<Job>> {
        // A job never runs under this lock, so a poisoned queue is still consistent.
        self.jobs
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }

    fn push(&self, job: Job) {
        self.jobs().push_back(job);
        // After the push: a thread that stops looking checks the queue after it lets go (see
        // `stop_looking`), so a step is never left waiting with every thread asleep.
        if !self.looking.load(Ordering::SeqCst) {
            self.ready.notify_one();
        }
    }

    /// Claims the looking role; `false` if another thread holds it.
    fn start_looking(&self) -> bool {
        !self.looking.swap(true, Ordering::SeqCst)
    }

    /// Lets the looking role go, and wakes a sleeping thread for any step submitted while it was
    /// held (its submitter woke nobody).
    fn stop_looking(&self) {
        self.looking.store(false, Ordering::SeqCst);
        if !self.jobs().is_empty() {
            self.ready.notify_one();
        }
    }

    /// For a thread holding the looking role: the next step, looked for until `until`. The role
    /// is let go either way.
    fn look_until(&self, until: std::time::Instant) -> Option<Job> {
        loop {
            // Popped before `stop_looking` locks the queue again.
            let found = self.jobs().pop_front();
            if let Some(job) = found {
                self.stop_looking();
                return Some(job);
            }
            if std::time::Instant::now() >= until {
                self.stop_looking();
                return None;
            }
            std::hint::spin_loop();
        }
    }

    /// The next step, sleeping until one is submitted.
    fn wait(&self) -> Job {
        let mut jobs = self.jobs();
        loop {
            if let Some(job) = jobs.pop_front() {
                return job;
            }
            jobs = self
                .ready
                .wait(jobs)
                .unwrap_or_else(std::sync::PoisonError::into_inner);
        }
    }
}

struct VmThreads {
    queue: StepQueue,
    /// Permits = threads + queued steps; a step holds one from submission to completion.
    slots: Arc<Semaphore>,
    started: AtomicUsize,
    threads: usize,
    /// Available cores: more steps than this at once compete for them.
    cores: usize,
    /// Steps that have computed for more than [`LONG_STEP`] and are still running.
    long_steps: AtomicUsize,
    /// Steps submitted whose step function has not returned yet (what a VM leaves to tear down
    /// after answering is not counted).
    computing: AtomicUsize,
    mechanisms: Mechanisms,
}

/// The mechanisms of the VM threads that exist only for speed. Each is on in production; `cargo
/// xtask bench sched` turns them off in turns (through [`PLAIN_SCHEDULING_VAR`]) to measure what
/// each gains against the plain alternative, a queue whose every submission wakes a sleeping
/// thread through its condvar (ARCHITECTURE.md keeps the figures).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Mechanisms {
    /// After a step, one thread looks for the next step for [`SPIN_BEFORE_SLEEP`] before it
    /// sleeps, and a submission wakes nobody while it looks.
    looking: bool,
    /// A caller looks for its step's answer for [`CALLER_SPIN`] ([`BUILD_SPIN`] for a VM
    /// build) before its task parks.
    caller_spin: bool,
    /// A thread takes the looking role before it drops a brief leftover (a small VM), not after.
    /// A refinement of `looking`: off whenever `looking` is.
    brief_teardown: bool,
    /// A long step lowers its thread's priority by [`LONG_STEP_NICE`] while long steps fill the
    /// cores and another step waits.
    demotion: bool,
}

/// Names the mechanisms a benchmark turns off, comma-separated (`looking`, `caller-spin`,
/// `brief-teardown`, `demotion`, or `all`). Read once, when the first step is submitted; meant
/// for `cargo xtask bench sched` only, never for a deployment.
const PLAIN_SCHEDULING_VAR: &str = "CODEMODE_PLAIN_SCHEDULING";

impl Mechanisms {
    /// Every mechanism on, except those `plain` names (see [`PLAIN_SCHEDULING_VAR`]).
    fn all_except(plain: &str) -> Self {
        let off = |name: &str| {
            plain
                .split(',')
                .map(str::trim)
                .any(|word| word == name || word == "all")
        };
        Self {
            looking: !off("looking"),
            caller_spin: !off("caller-spin"),
            brief_teardown: !off("brief-teardown") && !off("looking"),
            demotion: !off("demotion"),
        }
    }
}

/// VM threads of this process: four per available core, at least 4 and at most 64.
///
/// More threads than cores on purpose: a VM thread busy with a CPU-bound cell until its deadline
/// must not keep a trivial cell of another session waiting for a thread.
pub fn thread_count() -> usize {
    let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
    cores.saturating_mul(4).clamp(4, 64)
}

/// VM threads started so far (they start lazily, one per concurrently running step).
pub fn threads_started() -> usize {
    vm_threads().started.load(Ordering::SeqCst)
}

fn vm_threads() -> &'static VmThreads {
    static POOL: OnceLock<VmThreads> = OnceLock::new();
    POOL.get_or_init(|| {
        let threads = thread_count();
        let cores = std::thread::available_parallelism().map_or(1, std::num::NonZero::get);
        VmThreads {
            queue: StepQueue {
                jobs: Mutex::new(VecDeque::new()),
                ready: Condvar::new(),
                looking: AtomicBool::new(false),
            },
            slots: Arc::new(Semaphore::new(threads + MAX_QUEUED_STEPS)),
            started: AtomicUsize::new(0),
            threads,
            cores,
            long_steps: AtomicUsize::new(0),
            computing: AtomicUsize::new(0),
            mechanisms: Mechanisms::all_except(
                &std::env::var(PLAIN_SCHEDULING_VAR).unwrap_or_default(),
            ),
        }
    })
}

/// Why a step produced no answer.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum StepLost {
    /// The step panicked (a defect) or no VM thread could be started.
    Failed,
}

/// Runs `step` on a VM thread and returns its answer. Waits (asynchronously) for a slot when
/// the pool is saturated. Dropping the returned future does not stop the step: it finishes on
/// its thread and its answer (with whatever it owns, such as a VM) is dropped there.
#[cfg(test)]
pub(crate) async fn run_step<T, F>(step: F) -> Result<T, StepLost>
where
    F: FnOnce() -> T + Send + 'static,
    T: Send + 'static,
{
    run_step_then_drop(move || (step(), Leftover::none()), Expected::Brief).await
}

/// What a step leaves behind for its thread to drop once the answer is on its way (a finished
/// VM: tearing it down is off the caller's path).
pub(crate) struct Leftover {
    value: Option<Box<dyn Send>>,
    /// Dropping it takes well under a millisecond: the thread may keep the queue's looking role
    /// meanwhile (see [`serve_steps`]).
    brief: bool,
}

/// A VM whose heap holds at most this much tears down in well under a millisecond (a trivial
/// program's VM, ~180 KiB, in ~25 µs on the reference machine).
const BRIEF_TEARDOWN_BYTES: usize = 1 << 20;

impl Leftover {
    /// Nothing to drop.
    pub(crate) fn none() -> Self {
        Self {
            value: None,
            brief: true,
        }
    }

    /// A finished VM whose heap holds `heap_bytes`.
    pub(crate) fn vm(vm: Box<dyn Send>, heap_bytes: usize) -> Self {
        Self {
            value: Some(vm),
            brief: heap_bytes <= BRIEF_TEARDOWN_BYTES,
        }
    }
}

/// What a step's thread drops after the step answered.
struct Rest {
    value: Box<dyn Send>,
    brief: bool,
}

/// Like [`run_step`], for a step that also leaves something to drop after it answered, and is
/// `expected` to take that long.
pub(crate) async fn run_step_then_drop<T, F>(step: F, expected: Expected) -> Result<T, StepLost>
where
    F: FnOnce() -> (T, Leftover) + Send + 'static,
    T: Send + 'static,
{
    let pool = vm_threads();
    let permit = Arc::clone(&pool.slots)
        .acquire_owned()
        .await
        .map_err(|_| StepLost::Failed)?;
    let (answer, receiver) = oneshot::channel();
    pool.computing.fetch_add(1, Ordering::SeqCst);
    // The core the step runs on, once it runs (see the caller's spin below).
    let step_cpu = Arc::new(AtomicUsize::new(NO_CPU));
    let job_cpu = Arc::clone(&step_cpu);
    // The caller's span (a run's leg) is the VM thread's while the step runs, so that what the
    // step starts (a VM build, host calls polled in place) is traced under it.
    let span = tracing::Span::current();
    let caller_spin = pool.mechanisms.caller_spin;
    let job: Job = Box::new(move || -> Rest {
        if caller_spin {
            job_cpu.store(current_cpu(), Ordering::Relaxed);
        }
        let outcome = {
            let _entered = span.enter();
            catch_unwind(AssertUnwindSafe(step))
        };
        // Before the answer goes out: the caller may end the span the moment it has it.
        drop(span);
        pool.computing.fetch_sub(1, Ordering::SeqCst);
        // Before the answer goes out, so that the caller (below) starts the replacement.
        leave_if_demoted();
        match outcome {
            Ok((value, leftover)) => {
                // The caller may be gone (its future was dropped); the answer is dropped with
                // the rest then. The slot is held until the leftover is gone.
                let _ = answer.send(value);
                Rest {
                    value: Box::new((leftover.value, permit)),
                    brief: leftover.brief,
                }
            }
            Err(_) => Rest {
                value: Box::new(permit),
                brief: true,
            },
        }
    });
    ensure_thread(pool);
    pool.queue.push(job);
    // A short step answers sooner than a parked caller thread can be woken on a virtual machine:
    // look for the answer for a moment before parking. Longer for a VM build, but only while
    // the steps computing (this one included) leave a core for the caller: spinning beside
    // steps that want every core would slow them down. And never on the core the step runs on
    // (the scheduler placed both threads there): the spin would take half the step's time.
    let spin = match expected {
        _ if !caller_spin => std::time::Duration::ZERO,
        Expected::VmBuild if pool.computing.load(Ordering::SeqCst) < pool.cores => BUILD_SPIN,
        Expected::Brief | Expected::VmBuild => CALLER_SPIN,
    };
    let mut receiver = receiver;
    let spin_until = std::time::Instant::now() + spin;
    while std::time::Instant::now() < spin_until {
        let cpu = step_cpu.load(Ordering::Relaxed);
        if cpu != NO_CPU && cpu == current_cpu() {
            break;
        }
        match receiver.try_recv() {
            Ok(value) => {
                ensure_thread(pool);
                return Ok(value);
            }
            Err(oneshot::error::TryRecvError::Closed) => return Err(StepLost::Failed),
            Err(oneshot::error::TryRecvError::Empty) => std::hint::spin_loop(),
        }
    }
    let answer = receiver.await.map_err(|_| StepLost::Failed);
    // A thread that left the pool after this step (demoted) is replaced from here: a new thread
    // inherits the priority of the thread that starts it, and only a caller's is the normal one.
    ensure_thread(pool);
    answer
}

/// Steps submitted and not yet finished (running or waiting for a thread).
fn busy_steps(pool: &VmThreads) -> usize {
    pool.threads + MAX_QUEUED_STEPS - pool.slots.available_permits()
}

/// Starts one more VM thread while fewer are running than steps have been submitted, up to the
/// bound. Threads exit only when demoted (see [`leave_if_demoted`]); an idle one blocks on the
/// job queue.
fn ensure_thread(pool: &'static VmThreads) {
    if DEMOTED.get() {
        // A host future polled in place on a demoted VM thread: a thread started here would
        // inherit the lowered priority. The next caller starts it.
        return;
    }
    let busy = busy_steps(pool);
    let mut started = pool.started.load(Ordering::SeqCst);
    while started < busy.min(pool.threads) {
        match pool.started.compare_exchange(
            started,
            started + 1,
            Ordering::SeqCst,
            Ordering::SeqCst,
        ) {
            Ok(_) => {
                let spawned = std::thread::Builder::new()
                    .name(format!("codemode-vm-{started}"))
                    .stack_size(VM_THREAD_STACK_BYTES)
                    .spawn(move || serve_steps(&pool.queue, pool.mechanisms));
                if spawned.is_err() {
                    pool.started.fetch_sub(1, Ordering::SeqCst);
                    tracing::warn!(target: "codemode_sandbox", "could not start a VM thread");
                    return;
                }
                return;
            }
            Err(now) => started = now,
        }
    }
}

/// How long the spinning VM thread looks for the next step before it sleeps. Waking a sleeping
/// thread costs 50-100 µs on a virtual machine, more than a trivial step itself: a run's next
/// step (after a quick host answer) or the next request's first step usually comes within this.
const SPIN_BEFORE_SLEEP: std::time::Duration = std::time::Duration::from_micros(500);

/// How long one step may keep a VM thread busy before the thread is demoted (see the module
/// documentation). Far above any step that is not guest computation: a fresh VM is built and a
/// trivial program run in under a millisecond.
pub(crate) const LONG_STEP: std::time::Duration = std::time::Duration::from_millis(10);

/// The nice value a demoted VM thread adds to its own (the kernel caps the result at 19, whose
/// weight is about 1.5% of nice 0's when both want a core). Measured on 2 cores, a trivial exec
/// beside two CPU-bound cells: p99 5.3–5.9 ms undemoted, 2.0–4.6 ms at +10, 1.3–2.6 ms at +19.
pub(crate) const LONG_STEP_NICE: i32 = 19;

thread_local! {
    /// When the current step of this VM thread began; `None` outside a step and on threads that
    /// are not VM threads.
    static STEP_BEGAN: Cell<Option<std::time::Instant>> = const { Cell::new(None) };
    /// Whether this VM thread lowered its own priority (it exits after its step).
    static DEMOTED: Cell<bool> = const { Cell::new(false) };
    /// Whether the current step is counted in `VmThreads::long_steps`.
    static COUNTED_LONG: Cell<bool> = const { Cell::new(false) };
}

/// Called by a VM's interrupt handler while guest code runs: once the current step has kept its
/// VM thread busy past [`LONG_STEP`], counts it as a long step, and lowers the thread's priority
/// (once) while long steps occupy every core and another step wants one. A no-op on threads that
/// are not VM threads, and the priority is left alone on systems other than Linux. `now` is the
/// caller's reading of the clock (one reading serves the deadline check too).
pub(crate) fn note_guest_progress(now: std::time::Instant) {
    let Some(began) = STEP_BEGAN.get() else {
        return;
    };
    if DEMOTED.get() || now.saturating_duration_since(began) < LONG_STEP {
        return;
    }
    let pool = vm_threads();
    if !pool.mechanisms.demotion {
        return;
    }
    if !COUNTED_LONG.replace(true) {
        pool.long_steps.fetch_add(1, Ordering::SeqCst);
    }
    let long = pool.long_steps.load(Ordering::SeqCst);
    if should_demote(long, busy_steps(pool), pool.cores) {
        DEMOTED.set(true);
        demote_this_thread();
    }
}

/// Whether a long step yields the cores: `long` long steps and `busy` steps in all are under way
/// on `cores` cores. Only when long steps could occupy every core and another step is waiting for
/// one; a long step beside short ones, or long steps that leave a core free, keep their priority
/// (they would otherwise compete at the lowest priority with everything else on the machine).
fn should_demote(long: usize, busy: usize, cores: usize) -> bool {
    long >= cores && busy > cores
}

#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn demote_this_thread() {
    // SAFETY: `gettid` and `getpriority`/`setpriority` on this thread's own id only read and
    // change the calling thread's nice value (Linux keeps nice per thread); no memory is shared.
    unsafe {
        let tid = libc::gettid();
        #[allow(clippy::cast_sign_loss, reason = "a thread id is positive")]
        let who = tid as libc::id_t;
        let nice = libc::getpriority(libc::PRIO_PROCESS, who);
        let _ = libc::setpriority(libc::PRIO_PROCESS, who, nice.saturating_add(LONG_STEP_NICE));
    }
}

#[cfg(not(target_os = "linux"))]
fn demote_this_thread() {}

/// What [`current_cpu`] answers when it does not know.
const NO_CPU: usize = usize::MAX;

/// The core the calling thread runs on (it may move at any time: a hint), or [`NO_CPU`].
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
fn current_cpu() -> usize {
    // SAFETY: `sched_getcpu` takes no arguments and only reads the calling thread's state.
    let cpu = unsafe { libc::sched_getcpu() };
    usize::try_from(cpu).unwrap_or(NO_CPU)
}

#[cfg(not(target_os = "linux"))]
fn current_cpu() -> usize {
    NO_CPU
}

/// A VM thread's loop. After each step, the thread that wins the queue's looking role looks for
/// the next step for [`SPIN_BEFORE_SLEEP`] before it sleeps; the others sleep at once. So an idle
/// pool burns at most one thread's spin per step, never a core per thread. A thread takes the
/// role before it drops what its step left when that is brief (a small VM, see
/// [`BRIEF_TEARDOWN_BYTES`]): a step submitted meanwhile waits the teardown out (tens of
/// microseconds) instead of waking a sleeping thread, which on a virtual machine costs as much
/// and competes for the same cores. A long teardown never holds the role, so another session's
/// step never waits for it.
fn serve_steps(queue: &StepQueue, mechanisms: Mechanisms) {
    let mut looking = false;
    while !DEMOTED.get() {
        if !looking && mechanisms.looking {
            looking = queue.start_looking();
        }
        let job = if looking {
            looking = false;
            let until = std::time::Instant::now() + SPIN_BEFORE_SLEEP;
            match queue.look_until(until) {
                Some(job) => job,
                None => queue.wait(),
            }
        } else {
            queue.wait()
        };
        STEP_BEGAN.set(Some(std::time::Instant::now()));
        let rest = job();
        STEP_BEGAN.set(None);
        if COUNTED_LONG.replace(false) {
            vm_threads().long_steps.fetch_sub(1, Ordering::SeqCst);
        }
        if rest.brief && mechanisms.brief_teardown && !DEMOTED.get() {
            looking = queue.start_looking();
        }
        let value = rest.value;
        drop(catch_unwind(AssertUnwindSafe(move || drop(value))));
    }
    if looking {
        queue.stop_looking();
    }
}

/// A demoted thread cannot raise its priority again: it leaves the pool when its step is done
/// (its `serve_steps` loop ends), and the step's caller, or the next step submitted, starts a thread at
/// the normal priority in its place. Never started from the demoted thread itself: a new thread
/// inherits its creator's priority.
fn leave_if_demoted() {
    if DEMOTED.get() {
        vm_threads().started.fetch_sub(1, Ordering::SeqCst);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn steps_run_off_the_caller_thread_and_threads_stay_bounded() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        let caller = std::thread::current().id();
        runtime.block_on(async {
            let steps = (0..200).map(|i| run_step(move || (i, std::thread::current().id())));
            let answers = futures_join_all(steps).await;
            for (i, answer) in answers.into_iter().enumerate() {
                let (value, thread) = answer.unwrap();
                assert_eq!(value, i);
                assert_ne!(thread, caller);
            }
        });
        assert!(threads_started() <= thread_count());
        assert!(threads_started() >= 1);
    }

    #[cfg(target_os = "linux")]
    #[allow(unsafe_code)]
    fn own_nice() -> i32 {
        // SAFETY: reads the calling thread's own nice value.
        unsafe {
            #[allow(clippy::cast_sign_loss, reason = "a thread id is positive")]
            let who = libc::gettid() as libc::id_t;
            libc::getpriority(libc::PRIO_PROCESS, who)
        }
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_long_step_demotes_its_thread_which_then_leaves() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let before = run_step(own_nice).await.unwrap();
            // With as many other long steps under way as there are cores, a step is demoted
            // once long (other tests' steps can only add to the counts).
            let (release, released) = crossbeam_channel::bounded::<()>(0);
            let (counted, long) = crossbeam_channel::unbounded::<()>();
            let cores = vm_threads().cores;
            let others: Vec<_> = (0..cores)
                .map(|_| {
                    let released = released.clone();
                    let counted = counted.clone();
                    tokio::spawn(run_step(move || {
                        std::thread::sleep(LONG_STEP + std::time::Duration::from_millis(5));
                        note_guest_progress(std::time::Instant::now());
                        counted.send(()).unwrap();
                        released.recv().is_err()
                    }))
                })
                .collect();
            let (late, demoted_thread) = run_step(move || {
                for _ in 0..cores {
                    long.recv().unwrap();
                }
                std::thread::sleep(LONG_STEP + std::time::Duration::from_millis(5));
                note_guest_progress(std::time::Instant::now());
                note_guest_progress(std::time::Instant::now());
                (own_nice(), std::thread::current().id())
            })
            .await
            .unwrap();
            drop(release);
            for other in others {
                assert_eq!(other.await.unwrap(), Ok(true));
            }
            assert_eq!(late, (before + LONG_STEP_NICE).min(19));
            // The demoted thread took no further step: later steps run on other threads, at the
            // priority a VM thread starts with.
            for _ in 0..8 {
                let (nice, thread) = run_step(|| (own_nice(), std::thread::current().id()))
                    .await
                    .unwrap();
                assert_ne!(thread, demoted_thread);
                assert_eq!(nice, before);
            }
        });
        assert!(threads_started() <= thread_count());
    }

    #[test]
    fn long_steps_are_demoted_only_when_they_fill_the_cores_and_another_step_waits() {
        assert!(should_demote(2, 3, 2));
        assert!(should_demote(3, 3, 2));
        assert!(should_demote(64, 65, 64));
        assert!(!should_demote(1, 3, 2), "one long step among short ones");
        assert!(!should_demote(2, 2, 2), "nobody waits for a core");
        assert!(!should_demote(1, 1, 2), "alone");
    }

    #[test]
    fn a_benchmark_turns_mechanisms_off_by_name() {
        let all_on = Mechanisms {
            looking: true,
            caller_spin: true,
            brief_teardown: true,
            demotion: true,
        };
        assert_eq!(Mechanisms::all_except(""), all_on);
        assert_eq!(Mechanisms::all_except("unknown"), all_on);
        assert_eq!(
            Mechanisms::all_except("caller-spin, demotion"),
            Mechanisms {
                caller_spin: false,
                demotion: false,
                ..all_on
            }
        );
        assert_eq!(
            Mechanisms::all_except("looking"),
            Mechanisms {
                looking: false,
                brief_teardown: false,
                ..all_on
            }
        );
        assert_eq!(
            Mechanisms::all_except("all"),
            Mechanisms {
                looking: false,
                caller_spin: false,
                brief_teardown: false,
                demotion: false,
            }
        );
    }

    #[test]
    fn a_panicking_step_is_reported_and_the_thread_survives() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let lost = run_step(|| -> u8 { panic!("a defect") }).await;
            assert_eq!(lost, Err(StepLost::Failed));
            assert_eq!(run_step(|| 7).await, Ok(7));
        });
    }

    /// A VM that takes long to tear down keeps no other step waiting: its thread does not keep
    /// the queue's looking role meanwhile, so the next step wakes (or starts) another thread.
    #[test]
    fn a_long_teardown_keeps_no_other_step_waiting() {
        struct HeldUntilReleased(crossbeam_channel::Receiver<()>);
        impl Drop for HeldUntilReleased {
            fn drop(&mut self) {
                let _ = self.0.recv_timeout(std::time::Duration::from_secs(30));
            }
        }
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            // Threads enough for both steps, idle and asleep by the time the steps come: the
            // second step must then wake one (a thread started for it would find it anyway).
            let barrier = Arc::new(std::sync::Barrier::new(3));
            let warm: Vec<_> = (0..3)
                .map(|_| {
                    let barrier = Arc::clone(&barrier);
                    tokio::spawn(run_step(move || {
                        barrier.wait();
                    }))
                })
                .collect();
            for step in warm {
                assert_eq!(step.await.unwrap(), Ok(()));
            }
            tokio::time::sleep(SPIN_BEFORE_SLEEP * 20).await;
            let (release, released) = crossbeam_channel::bounded::<()>(0);
            let leftover = HeldUntilReleased(released);
            let first = run_step_then_drop(
                move || ((), Leftover::vm(Box::new(leftover), usize::MAX)),
                Expected::Brief,
            )
            .await;
            assert_eq!(first, Ok(()));
            // The first thread is now stuck in its teardown until released, after this step.
            let second =
                tokio::time::timeout(std::time::Duration::from_secs(10), run_step(|| 7)).await;
            assert_eq!(second, Ok(Ok(7)));
            let _ = release.send(());
        });
    }

    /// Awaits every future in order (no extra dependency for one test).
    async fn futures_join_all<F: std::future::Future>(
        futures: impl Iterator<Item = F>,
    ) -> Vec<F::Output> {
        let mut handles = Vec::new();
        for future in futures {
            handles.push(Box::pin(future));
        }
        let mut out = Vec::new();
        for handle in handles {
            out.push(handle.await);
        }
        out
    }
}
