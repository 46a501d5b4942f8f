//! The run's stop flags: the leg's deadline and the sticky reasons a VM must stop, read by the
//! interrupt handler, the natives, the step and the async driver.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

use crate::RunError;

/// Stop signals this process received: `SIGUSR1`, which the host sends a worker process when it
/// ends a run in the middle of a step (`wait` terminate, the run's life). Never raised in the
/// host's own process, where the driver stops a VM through its [`Flags`].
static STOP_SIGNALS: AtomicU64 = AtomicU64::new(0);

/// Counts one stop signal: what the worker's signal handler does. Async-signal-safe (one atomic
/// add, no lock, no allocation).
pub(crate) fn count_stop_signal() {
    STOP_SIGNALS.fetch_add(1, Ordering::SeqCst);
}

/// Set by the interrupt handler and the natives; read by the step and by the async driver.
/// Lock-free, so the interrupt handler never blocks.
pub(crate) struct Flags {
    origin: Instant,
    /// Deadline of the current leg, in nanoseconds since `origin`.
    deadline_nanos: AtomicU64,
    timed_out: AtomicBool,
    output_exceeded: AtomicBool,
    /// The stop signals sent before the current step: one more stops it (worker processes).
    stop_baseline: AtomicU64,
}

impl Flags {
    pub(crate) fn new() -> Self {
        Self {
            origin: Instant::now(),
            deadline_nanos: AtomicU64::new(u64::MAX),
            timed_out: AtomicBool::new(false),
            output_exceeded: AtomicBool::new(false),
            stop_baseline: AtomicU64::new(0),
        }
    }

    pub(crate) fn set_deadline(&self, deadline: Instant) {
        let nanos = deadline.saturating_duration_since(self.origin).as_nanos();
        self.deadline_nanos
            .store(u64::try_from(nanos).unwrap_or(u64::MAX), Ordering::SeqCst);
    }

    /// Stops the VM at its next poll: the driver gave up waiting for a step.
    pub(crate) fn force_timeout(&self) {
        self.timed_out.store(true, Ordering::SeqCst);
    }

    /// In a worker process: the stop signals the host had sent before the step it starts now
    /// (it says so in the step's frame). A signal beyond them stops the step.
    pub(crate) fn set_stop_baseline(&self, signals: u64) {
        self.stop_baseline.store(signals, Ordering::SeqCst);
    }

    /// The interrupt handler: `true` stops guest code with an uncatchable exception.
    pub(crate) fn interrupt(&self) -> bool {
        // One clock reading per poll: the bridge polls on every call.
        let now = Instant::now();
        crate::vm_threads::note_guest_progress(now);
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
