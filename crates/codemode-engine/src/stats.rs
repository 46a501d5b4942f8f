//! The engine's process-wide counters: VMs built, and bootstrap scripts compiled from source. A
//! relaxed add per event; the sandbox reads them into its `SandboxStats`.

use std::sync::atomic::{AtomicU64, Ordering};

static VM_BUILDS: AtomicU64 = AtomicU64::new(0);
static BOOTSTRAP_COMPILES: AtomicU64 = AtomicU64::new(0);

pub(crate) fn vm_built() {
    VM_BUILDS.fetch_add(1, Ordering::Relaxed);
}

pub(crate) fn bootstrap_compiled(parts: u64) {
    BOOTSTRAP_COMPILES.fetch_add(parts, Ordering::Relaxed);
}

/// VMs built in this process since it started (monotonic).
pub fn vm_builds() -> u64 {
    VM_BUILDS.load(Ordering::Relaxed)
}

/// Bootstrap scripts compiled from source in this process since it started (monotonic). Zero
/// while the bytecode shipped with the crate loads, which it does in every build of the same
/// engine sources, debug or release: a count above zero means this build compiles its
/// bootstrap, ~7.5M instructions that its first `exec` waits for.
pub fn bootstrap_compiles() -> u64 {
    BOOTSTRAP_COMPILES.load(Ordering::Relaxed)
}
