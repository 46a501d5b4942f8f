//! Where a VM runs, out of process: a pool of worker processes (`codemode-worker`, or the
//! `codemode` command acting as one) that each hold one VM at a time.
//!
//! The async driver (run.rs) sends a step to a VM thread of this process (vm_threads.rs), or,
//! with [`Placement::Process`](crate::Placement::Process), to
//! a worker process through its pipes (host_side.rs, on a VM thread as well, which waits for the
//! worker's answer). The worker (`codemode-worker`) runs the same engine on the same steps. The
//! guest's host calls and local calls cross the pipe as requests the worker makes and the host
//! answers, as the same JSON they are in-process (`codemode_worker::protocol`).
//!
//! What a worker process adds: an engine bug (memory corruption, a native call that never
//! returns) is a bug in a process that holds nothing but one guest's VM. The host kills it at the
//! deadline plus [`DEADLINE_GRACE`](crate::DEADLINE_GRACE) and replaces it; a worker that dies
//! fails only its own run. On Linux the worker also drops every privilege it does not need
//! (`codemode-worker`'s lockdown.rs).

mod host_side;

use std::ffi::OsString;
use std::path::PathBuf;

pub use host_side::WorkerPool;
pub(crate) use host_side::{WorkerPhase, WorkerStop, WorkerVm, step_in_worker};
// The worker's side of the pipe, and the frames both sides exchange.
pub(crate) use codemode_worker::protocol;
pub use codemode_worker::serve_worker;
#[doc(hidden)]
pub use codemode_worker::{Misbehaviour, serve_misbehaving_worker};

use crate::MAX_SUSPENDED_RUNS;

/// The environment variable naming the worker binary when the config names none.
pub const WORKER_ENV: &str = "CODEMODE_WORKER";

/// The worker binary's file name, looked for next to the current executable last.
pub const WORKER_BINARY: &str = "codemode-worker";

/// Default number of worker processes kept started and idle, ready for the next run.
pub const DEFAULT_WARM_WORKERS: usize = 2;

/// Default bound on live worker processes (idle, running or holding a parked run): the
/// 64 parked runs a `CodeMode` may hold ([`MAX_SUSPENDED_RUNS`]) plus 8 for running ones, so a
/// full snapshot store never starves new runs.
pub const DEFAULT_MAX_WORKERS: usize = MAX_SUSPENDED_RUNS + 8;

/// Default number of runs a worker serves before it is replaced.
pub const DEFAULT_MAX_RUNS_PER_WORKER: u64 = 1000;

/// Default peak resident memory after which a worker is replaced once its run ends (256 MiB).
pub const DEFAULT_MAX_WORKER_RSS_BYTES: u64 = 256 * 1024 * 1024;

/// Default address-space limit of a worker (`RLIMIT_AS`, Linux): 4 GiB, room for the largest
/// VM heap the config allows (1 GiB) and the process around it.
pub const DEFAULT_WORKER_ADDRESS_SPACE_BYTES: u64 = 4 * 1024 * 1024 * 1024;

/// How a worker process is started: a program and its arguments. The host adds its own
/// settings after them.
///
/// ```
/// use codemode_sandbox::WorkerCommand;
/// let command = WorkerCommand::new("/usr/bin/codemode").arg("worker");
/// assert_eq!(command.args, vec![std::ffi::OsString::from("worker")]);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerCommand {
    /// The executable.
    pub program: PathBuf,
    /// Its arguments, before the ones the host adds.
    pub args: Vec<OsString>,
}

impl WorkerCommand {
    /// `program` without arguments.
    pub fn new(program: impl Into<PathBuf>) -> Self {
        Self {
            program: program.into(),
            args: Vec::new(),
        }
    }

    /// Adds an argument.
    #[must_use]
    pub fn arg(mut self, arg: impl Into<OsString>) -> Self {
        self.args.push(arg.into());
        self
    }

    /// The worker binary when none is configured: `$CODEMODE_WORKER` if set, else
    /// `codemode-worker` next to the current executable.
    ///
    /// # Errors
    /// A message naming where it looked when neither exists.
    pub fn locate() -> Result<Self, String> {
        if let Some(path) = std::env::var_os(WORKER_ENV).filter(|path| !path.is_empty()) {
            return Ok(Self::new(path));
        }
        let beside = std::env::current_exe()
            .ok()
            .and_then(|exe| exe.parent().map(|dir| dir.join(WORKER_BINARY)))
            .filter(|path| path.is_file());
        beside.map(Self::new).ok_or_else(|| {
            format!(
                "no code mode worker binary: set {WORKER_ENV}, name one in the worker pool's \
                 config, or install `{WORKER_BINARY}` next to this executable"
            )
        })
    }
}

/// The settings of a [`WorkerPool`]; [`WorkerPoolConfig::default`] uses the `DEFAULT_*`
/// constants of this module.
///
/// Bounds, and how they meet the snapshot store's: a worker serves one run at a time, and a
/// parked run keeps its worker (its VM lives there) until it completes, fails, is cancelled or
/// expires. A run that needs a worker while all `max_workers` are busy waits for one until its
/// leg's deadline, then fails with `runtime_unavailable` ("no code mode worker process is
/// free"). With `max_workers` above [`MAX_SUSPENDED_RUNS`] (the default), parked runs alone can
/// never exhaust the pool: the store refuses the 65th parked run first.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct WorkerPoolConfig {
    /// The worker to start; `None`: [`WorkerCommand::locate`].
    pub command: Option<WorkerCommand>,
    /// Live worker processes at most: idle, running a step, or holding a parked run.
    pub max_workers: usize,
    /// Workers kept started and idle (within `max_workers`).
    pub warm_workers: usize,
    /// Runs a worker serves before it is replaced.
    pub max_runs_per_worker: u64,
    /// A worker whose peak resident memory reached this is replaced when its run ends.
    pub max_worker_rss_bytes: u64,
    /// `RLIMIT_AS` of a worker (Linux).
    pub address_space_bytes: u64,
}

impl Default for WorkerPoolConfig {
    fn default() -> Self {
        Self {
            command: None,
            max_workers: DEFAULT_MAX_WORKERS,
            warm_workers: DEFAULT_WARM_WORKERS,
            max_runs_per_worker: DEFAULT_MAX_RUNS_PER_WORKER,
            max_worker_rss_bytes: DEFAULT_MAX_WORKER_RSS_BYTES,
            address_space_bytes: DEFAULT_WORKER_ADDRESS_SPACE_BYTES,
        }
    }
}
