//! The engine's one process-wide counter: VMs built. A relaxed add per build; the sandbox reads
//! it into its `SandboxStats`.

use std::sync::atomic::{AtomicU64, Ordering};

static VM_BUILDS: AtomicU64 = AtomicU64::new(0);

pub(crate) fn vm_built() {
    VM_BUILDS.fetch_add(1, Ordering::Relaxed);
}

/// VMs built in this process since it started (monotonic).
pub fn vm_builds() -> u64 {
    VM_BUILDS.load(Ordering::Relaxed)
}
