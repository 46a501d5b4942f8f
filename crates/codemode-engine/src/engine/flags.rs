//! The run's stop flags: the leg's deadline and the sticky reasons a VM must stop, read by the
//! interrupt handler, the natives, the step and the async driver.

use std::sync::OnceLock;
use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::RunError;

/// Stop signals this process received: `SIGUSR1`, which the host sends a worker process when it
/// ends a run in the middle of a step (`wait` terminate, the run's life). Never raised in the
/// host's own process, where the driver stops a VM through its [`Flags`].
static STOP_SIGNALS: AtomicU64 = AtomicU64::new(0);

/// Counts one stop signal: what the worker's signal handler does. Async-signal-safe (one atomic
/// add, no lock, no allocation).
pub fn count_stop_signal() {
    STOP_SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Told of guest progress by every interrupt poll: the sandbox's VM threads, which demote a
/// thread whose step runs long. Unset (a worker process), the poll tells no one.
static GUEST_PROGRESS: OnceLock<fn(Instant)> = OnceLock::new();

/// Names the function every interrupt poll of guest code calls with the time it read (once per
/// process; a later call changes nothing). It runs on the VM's thread, inside guest code: it must
/// be cheap, and must not block or panic.
pub fn on_guest_progress(hook: fn(Instant)) {
    let _ = GUEST_PROGRESS.set(hook);
}

/// Set by the interrupt handler and the natives; read by the step and by the async driver.
/// Lock-free, so the interrupt handler never blocks.
pub struct Flags {
    origin: Instant,
    /// Deadline of the current leg, in nanoseconds since `origin`.
    deadline_nanos: AtomicU64,
    timed_out: AtomicBool,
    output_exceeded: AtomicBool,
    /// The stop signals sent before the current step: one more stops it (worker processes).
    stop_baseline: AtomicU64,
}

impl Default for Flags {
    fn default() -> Self {
        Self::new()
    }
}

impl Flags {
    /// No deadline, nothing tripped, no stop signal counted before the first step.
    pub fn new() -> Self {
        Self {
            origin: Instant::now(),
            deadline_nanos: AtomicU64::new(u64::MAX),
            timed_out: AtomicBool::new(false),
            output_exceeded: AtomicBool::new(false),
            stop_baseline: AtomicU64::new(0),
        }
    }

    /// Sets the current leg's deadline (the interrupt handler stops guest code past it).
    pub fn set_deadline(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.origin).as_nanos();
        self.deadline_nanos
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// Stops the VM at its next poll: the driver gave up waiting for a step.
    pub fn force_timeout(&self) {
        self.timed_out.store(true, Ordering::SeqCst);
    }

    /// In a worker process: the stop signals the host had sent before the step it starts now
    /// (it says so in the step's frame). A signal beyond them stops the step.
    pub fn set_stop_baseline(&self, signals: u64) {
        self.stop_baseline.store(signals, Ordering::SeqCst);
    }

    /// The interrupt handler: `true` stops guest code with an uncatchable exception.
    pub(crate) fn interrupt(&self) -> bool {
        // One clock reading per poll: the bridge polls on every call.
        let now = Instant::now();
        if let Some(hook) = GUEST_PROGRESS.get() {
            hook(now);
        }
        if self.output_exceeded.load(Ordering::Relaxed) || self.timed_out.load(Ordering::Relaxed) {
            return true;
        }
        if STOP_SIGNALS.load(Ordering::Relaxed) > self.stop_baseline.load(Ordering::Relaxed) {
            // The host ended the run: the step ends as at its deadline, with its output.
            self.timed_out.store(true, Ordering::SeqCst);
            return true;
        }
        let elapsed = now.saturating_duration_since(self.origin).as_nanos();
        let elapsed = u64::try_from(elapsed).unwrap_or(u64::MAX);
        if elapsed >= self.deadline_nanos.load(Ordering::Relaxed) {
            self.timed_out.store(true, Ordering::SeqCst);
            return true;
        }
        false
    }

    /// The output budget is spent: sticky, so the interrupt handler stops the guest even if it
    /// catches the error it was given.
    pub(crate) fn exceed_output(&self) {
        self.output_exceeded.store(true, Ordering::SeqCst);
    }

    /// The failure the flags force, whatever the guest made of it.
    pub(crate) fn tripped(&self) -> Option<RunError> {
        if self.timed_out.load(Ordering::SeqCst) {
            Some(RunError::Timeout)
        } else if self.output_exceeded.load(Ordering::SeqCst) {
            Some(RunError::OutputLimitExceeded)
        } else {
            None
        }
    }
}
