//! VMs built ahead of time: a bounded pool of [`PreparedVm`]s (runtime, context and bootstrap,
//! no guest setup, no guest code) that [`Run::start`](crate::Run::start) takes from under
//! [`Placement::PrebuiltThreads`](crate::Placement::PrebuiltThreads), so a run skips building its
//! VM on the request path. The pool holds no limits of its own: each VM is built under the
//! limits of the call that asked for it, and only a run under the same limits takes it.
//!
//! A VM is taken by exactly one run and never returns: isolation between runs stays absolute,
//! as with a VM built per run. The run that takes one holds a [`Refill`] for it, which starts a
//! background build of the replacement on a VM thread (never on the caller's async workers) when
//! the run's first step has answered (or the run is dropped): the build does not compete for
//! the cores with the very step it replaces a VM for, and the pool refills off the request path.
//! The pool holds at most `capacity` VMs, ready, being built, or owed to a run's [`Refill`]; each
//! costs the memory of a fresh VM (a few hundred KiB) until a run takes it or the pool is
//! dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use tokio::sync::Notify;

use crate::Limits;
use crate::engine::{Flags, PreparedVm};
use crate::vm_threads::{Expected, Leftover, run_step_then_drop};

/// Largest pool: more ready VMs than this would hold memory for little gain.
pub const MAX_POOLED_VMS: usize = 64;

/// A bounded pool of VMs built ahead of time; cheap to clone (shared).
///
/// ```
/// use codemode_sandbox::VmPool;
///
/// let pool = VmPool::new(4);
/// assert_eq!(pool.capacity(), 4);
/// assert_eq!(pool.ready(), 0); // filled in the background, on first use or by `fill`
/// ```
#[derive(Clone)]
pub struct VmPool {
    inner: Arc<Inner>,
}

struct Inner {
    capacity: usize,
    /// Ready VMs, each with the limits it was built under.
    ready: Mutex<Vec<(Limits, PreparedVm)>>,
    /// Builds started and not finished yet.
    building: AtomicUsize,
    /// VMs taken whose replacement waits for the taking run's [`Refill`] to be dropped.
    owed: AtomicUsize,
    /// Told whenever a build ends.
    built: Notify,
}

/// The replacement a run owes the pool for the VM it took: dropping it (after the run's first
/// step, or with the run) starts the replacement's build, under the run's limits, in the
/// background.
pub(crate) struct Refill {
    pool: Weak<Inner>,
    limits: Limits,
}

impl Drop for Refill {
    fn drop(&mut self) {
        if let Some(inner) = self.pool.upgrade() {
            inner.owed.fetch_sub(1, Ordering::SeqCst);
            Inner::refill(&inner, &self.limits);
        }
    }
}

impl std::fmt::Debug for VmPool {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("VmPool")
            .field("capacity", &self.inner.capacity)
            .field("ready", &self.ready())
            .finish_non_exhaustive()
    }
}

impl VmPool {
    /// A pool of at most `capacity` VMs (clamped to [`MAX_POOLED_VMS`]). It starts empty;
    /// [`VmPool::fill`] or the first run that takes a VM starts building.
    pub fn new(capacity: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                capacity: capacity.min(MAX_POOLED_VMS),
                ready: Mutex::new(Vec::new()),
                building: AtomicUsize::new(0),
                owed: AtomicUsize::new(0),
                built: Notify::new(),
            }),
        }
    }

    /// The bound on VMs held, ready or being built.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// VMs ready to be taken now.
    pub fn ready(&self) -> usize {
        self.inner.ready_vms().len()
    }

    /// Starts background builds under `limits` up to the capacity, on VM threads. Needs a tokio
    /// runtime (it does nothing outside one).
    pub fn fill(&self, limits: &Limits) {
        Inner::refill(&self.inner, limits);
    }

    /// Fills the pool and returns once it is full (for hosts and tests that want a warm pool
    /// before serving): builds what it lacks in the calling task (still on VM threads), and
    /// waits for builds already under way, so the pool never holds more than its capacity. VMs
    /// owed to runs that have not driven their first step yet are not waited for. Returns early
    /// if a VM cannot be built.
    pub async fn fill_now(&self, limits: &Limits) {
        let inner = &self.inner;
        loop {
            // Registered before the counts are read, so a build finishing in between wakes us.
            let built = inner.built.notified();
            if inner.ready_vms().len() + inner.owed.load(Ordering::SeqCst) >= inner.capacity {
                return;
            }
            if inner.held() < inner.capacity {
                inner.building.fetch_add(1, Ordering::SeqCst);
                if !inner.built(limits, build(limits.clone()).await) {
                    return;
                }
            } else {
                built.await;
            }
        }
    }

    /// Takes a ready VM built under `limits`, if any, with the [`Refill`] that builds its
    /// replacement once dropped. With none ready, starts building what the pool lacks; a VM
    /// built under other limits is dropped.
    pub(crate) fn take(&self, limits: &Limits) -> Option<(PreparedVm, Refill)> {
        let taken = self.inner.ready_vms().pop();
        let Some((_, vm)) = taken.filter(|(built_under, _)| built_under == limits) else {
            Inner::refill(&self.inner, limits);
            return None;
        };
        self.inner.owed.fetch_add(1, Ordering::SeqCst);
        let refill = Refill {
            pool: Arc::downgrade(&self.inner),
            limits: limits.clone(),
        };
        Some((vm, refill))
    }
}

impl Inner {
    fn ready_vms(&self) -> std::sync::MutexGuard<'_, Vec<(Limits, PreparedVm)>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// VMs ready, being built, or owed to a run's [`Refill`].
    fn held(&self) -> usize {
        self.ready_vms().len()
            + self.building.load(Ordering::SeqCst)
            + self.owed.load(Ordering::SeqCst)
    }

    /// Starts as many background builds under `limits` as the pool lacks. Each holds only a
    /// weak reference: a pool dropped meanwhile drops the VM its build made.
    fn refill(inner: &Arc<Self>, limits: &Limits) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        while inner.held() < inner.capacity {
            inner.building.fetch_add(1, Ordering::SeqCst);
            let weak: Weak<Self> = Arc::downgrade(inner);
            let limits = limits.clone();
            handle.spawn(async move {
                let vm = build(limits.clone()).await;
                if let Some(inner) = weak.upgrade() {
                    inner.built(&limits, vm);
                }
            });
        }
    }

    /// Ends a build counted in `building`: adds its VM, built under `limits`, to the ready
    /// ones. False if there is none (it could not be built).
    fn built(&self, limits: &Limits, vm: Option<PreparedVm>) -> bool {
        let built = vm.is_some();
        if let Some(vm) = vm {
            self.ready_vms().push((limits.clone(), vm));
        }
        self.building.fetch_sub(1, Ordering::SeqCst);
        self.built.notify_waiters();
        built
    }
}

/// Builds one VM under `limits` on a VM thread; `None` if it could not be built.
async fn build(limits: Limits) -> Option<PreparedVm> {
    // A background refill: nobody waits for it, so its caller never spins long for the answer.
    let built = run_step_then_drop(
        move || {
            let built = PreparedVm::build(&limits, Arc::new(Flags::new()));
            (built, Leftover::none())
        },
        Expected::Brief,
    )
    .await;
    built.ok().and_then(Result::ok)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_pool_fills_to_its_capacity_and_refills_after_a_take() {
        let limits = Limits::default();
        let pool = VmPool::new(2);
        pool.fill_now(&limits).await;
        assert_eq!(pool.ready(), 2);
        let (_vm, refill) = pool.take(&limits).expect("a ready VM");
        // The replacement is owed until the taking run lets it go: nothing builds meanwhile,
        // and filling does not build it either.
        assert_eq!(pool.inner.building.load(Ordering::SeqCst), 0);
        assert_eq!(pool.inner.owed.load(Ordering::SeqCst), 1);
        pool.fill_now(&limits).await;
        assert_eq!(pool.ready(), 1);
        assert_eq!(pool.inner.building.load(Ordering::SeqCst), 0);
        drop(refill);
        assert_eq!(pool.inner.owed.load(Ordering::SeqCst), 0);
        assert_eq!(pool.inner.held(), 2);
        // The replacement is built in the background; wait for it without a timing assumption.
        for _ in 0..2000 {
            if pool.ready() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(pool.ready(), 2);
        assert_eq!(VmPool::new(1000).capacity(), MAX_POOLED_VMS);
    }
}
