//! Where runs execute, chosen once by whoever builds them (codemode-core's `CodeMode` holds one)
//! and given to every [`Run::start`](crate::Run::start).

use crate::{VmPool, WorkerPool};

/// Where the VM of each run lives. Cheap to clone (the pools it holds are shared). Every
/// [`Limits`](crate::Limits) applies the same in each; a worker process adds that the host kills
/// it at the leg's deadline plus [`DEADLINE_GRACE`](crate::DEADLINE_GRACE), whatever the VM is
/// doing.
///
/// ```
/// use codemode_sandbox::{Limits, Placement, VmPool};
///
/// let placement = Placement::PrebuiltThreads(VmPool::new(4));
/// if let Placement::PrebuiltThreads(pool) = &placement {
///     pool.fill(&Limits::default()); // builds in the background, inside a tokio runtime
/// }
/// ```
#[derive(Debug, Clone, Default)]
#[non_exhaustive]
pub enum Placement {
    /// A VM built for each run by its first leg, on a VM thread of this process.
    #[default]
    Thread,
    /// On a VM thread of this process, in a VM the pool built ahead of time under the run's
    /// limits when one is ready (else built by the first leg, as with `Thread`).
    PrebuiltThreads(VmPool),
    /// In a worker process of this pool, which builds the run's VM there.
    Process(WorkerPool),
}
