//! Process-wide counters of where runs live: VMs built, bootstrap scripts compiled, and worker
//! processes started, ended and replaced. Plain relaxed atomics, always on (a relaxed add per VM
//! build or worker start costs nothing a run can measure), read by a host's metrics through
//! [`stats`].

use std::sync::atomic::{AtomicU64, Ordering};

static WORKERS_STARTED: AtomicU64 = AtomicU64::new(0);
static WORKERS_ENDED: AtomicU64 = AtomicU64::new(0);
static WORKERS_REPLACED: AtomicU64 = AtomicU64::new(0);

/// A reading of the sandbox's process-wide counters (every [`Run`](crate::Run),
/// [`VmPool`](crate::VmPool) and [`WorkerPool`](crate::WorkerPool) of this process together),
/// each monotonic since the process started.
///
/// ```
/// let before = codemode_sandbox::stats();
/// assert!(codemode_sandbox::stats().vm_builds >= before.vm_builds);
/// ```
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
#[non_exhaustive]
pub struct SandboxStats {
    /// VMs built in this process (for a run, or ahead of time for a [`VmPool`](crate::VmPool)).
    /// A worker process builds its runs' VMs itself: those are not counted here.
    pub vm_builds: u64,
    /// Bootstrap scripts compiled from source in this process. Zero while the bytecode shipped
    /// with the engine loads, as it does in debug and release builds of the same sources; above
    /// zero, each process compiles its bootstrap before its first `exec` answers. A worker
    /// process loads its bootstrap itself: its compiles are not counted here.
    pub bootstrap_compiles: u64,
    /// Worker processes started (`isolation: "process"`).
    pub workers_started: u64,
    /// Worker processes ended (retired, replaced, or their pool dropped).
    pub workers_ended: u64,
    /// Worker processes given up on while their pool still needed them: one that died, broke
    /// the protocol or stalled past its deadline (a new one takes its place when next needed),
    /// as opposed to one retired after its runs or its memory bound.
    pub workers_replaced: u64,
}

/// Reads the counters.
pub fn stats() -> SandboxStats {
    SandboxStats {
        vm_builds: codemode_engine::vm_builds(),
        bootstrap_compiles: codemode_engine::bootstrap_compiles(),
        workers_started: WORKERS_STARTED.load(Ordering::Relaxed),
        workers_ended: WORKERS_ENDED.load(Ordering::Relaxed),
        workers_replaced: WORKERS_REPLACED.load(Ordering::Relaxed),
    }
}

pub(crate) fn worker_started() {
    WORKERS_STARTED.fetch_add(1, Ordering::Relaxed);
}

/// A worker ended; `replaced` when its pool gave up on it rather than retiring it.
pub(crate) fn worker_ended(replaced: bool) {
    WORKERS_ENDED.fetch_add(1, Ordering::Relaxed);
    if replaced {
        WORKERS_REPLACED.fetch_add(1, Ordering::Relaxed);
    }
}
