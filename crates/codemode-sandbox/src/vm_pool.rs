//! VMs built ahead of time: a bounded pool of [`PreparedVm`]s (runtime, context and bootstrap,
//! no guest setup, no guest code) that [`Run::start_pooled`](crate::Run::start_pooled) takes
//! from, so a run skips building its VM on the request path.
//!
//! A VM is taken by exactly one run and never returns: isolation between runs stays absolute,
//! as with a VM built per run. Taking one starts a background build of its replacement on a VM
//! thread (never on the caller's async workers), so the pool refills off the request path. The
//! pool holds at most `capacity` VMs, ready or being built; each costs the memory of a fresh VM
//! (a few hundred KiB) until a run takes it or the pool is dropped.

use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, PoisonError, Weak};

use crate::Limits;
use crate::engine::{Flags, PreparedVm};
use crate::vm_threads::run_step_then_drop;

/// Largest pool: more ready VMs than this would hold memory for little gain.
pub const MAX_POOLED_VMS: usize = 64;

/// A bounded pool of VMs built ahead of time under one [`Limits`]; cheap to clone (shared).
///
/// ```
/// use codemode_sandbox::{Limits, VmPool};
///
/// let pool = VmPool::new(Limits::default(), 4);
/// assert_eq!(pool.capacity(), 4);
/// assert_eq!(pool.ready(), 0); // filled in the background, on first use or by `fill`
/// ```
#[derive(Clone)]
pub struct VmPool {
    inner: Arc<Inner>,
}

struct Inner {
    limits: Limits,
    capacity: usize,
    ready: Mutex<Vec<PreparedVm>>,
    /// Builds started and not finished yet.
    building: AtomicUsize,
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
    /// A pool of at most `capacity` VMs (clamped to [`MAX_POOLED_VMS`]) built under `limits`.
    /// It starts empty; [`VmPool::fill`] or the first run that takes a VM starts building.
    pub fn new(limits: Limits, capacity: usize) -> Self {
        Self {
            inner: Arc::new(Inner {
                limits,
                capacity: capacity.min(MAX_POOLED_VMS),
                ready: Mutex::new(Vec::new()),
                building: AtomicUsize::new(0),
            }),
        }
    }

    /// The limits every VM of the pool is built under (and runs taking them use).
    pub fn limits(&self) -> &Limits {
        &self.inner.limits
    }

    /// The bound on VMs held, ready or being built.
    pub fn capacity(&self) -> usize {
        self.inner.capacity
    }

    /// VMs ready to be taken now.
    pub fn ready(&self) -> usize {
        self.inner.ready_vms().len()
    }

    /// Starts background builds up to the capacity, on VM threads. Needs a tokio runtime (it
    /// does nothing outside one).
    pub fn fill(&self) {
        Inner::refill(&self.inner);
    }

    /// Builds VMs until the pool is full, in the calling task (for hosts and tests that want a
    /// warm pool before serving).
    pub async fn fill_now(&self) {
        let limits = self.inner.limits.clone();
        while self.ready() < self.inner.capacity {
            let limits = limits.clone();
            let built = run_step_then_drop(move || {
                (PreparedVm::build(&limits, Arc::new(Flags::new())), None)
            })
            .await;
            match built {
                Ok(Ok(vm)) => self.inner.ready_vms().push(vm),
                _ => return,
            }
        }
    }

    /// Takes a ready VM, if any, and starts building replacements.
    pub(crate) fn take(&self) -> Option<PreparedVm> {
        let taken = self.inner.ready_vms().pop();
        Inner::refill(&self.inner);
        taken
    }
}

impl Inner {
    fn ready_vms(&self) -> std::sync::MutexGuard<'_, Vec<PreparedVm>> {
        self.ready.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Starts as many background builds as the pool lacks. Each holds only a weak reference: a
    /// pool dropped meanwhile drops the VM its build made.
    fn refill(inner: &Arc<Self>) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        loop {
            let held = inner.ready_vms().len() + inner.building.load(Ordering::SeqCst);
            if held >= inner.capacity {
                return;
            }
            inner.building.fetch_add(1, Ordering::SeqCst);
            let weak: Weak<Self> = Arc::downgrade(inner);
            let limits = inner.limits.clone();
            handle.spawn(async move {
                let built = run_step_then_drop(move || {
                    (PreparedVm::build(&limits, Arc::new(Flags::new())), None)
                })
                .await;
                let Some(inner) = weak.upgrade() else { return };
                if let Ok(Ok(vm)) = built {
                    inner.ready_vms().push(vm);
                }
                inner.building.fetch_sub(1, Ordering::SeqCst);
            });
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn the_pool_fills_to_its_capacity_and_refills_after_a_take() {
        let pool = VmPool::new(Limits::default(), 2);
        pool.fill_now().await;
        assert_eq!(pool.ready(), 2);
        assert!(pool.take().is_some());
        // The replacement is built in the background; wait for it without a timing assumption.
        for _ in 0..2000 {
            if pool.ready() == 2 {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
        assert_eq!(pool.ready(), 2);
        assert_eq!(
            VmPool::new(Limits::default(), 1000).capacity(),
            MAX_POOLED_VMS
        );
    }
}
