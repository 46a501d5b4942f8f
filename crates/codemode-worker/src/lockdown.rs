//! Least privilege for a worker process, applied by the worker to itself.
//!
//! On Linux, at start-up (before any VM exists): every inherited file descriptor beyond stdin,
//! stdout and stderr is closed, `RLIMIT_NOFILE` allows no new one, `RLIMIT_AS` bounds the
//! address space, `RLIMIT_CORE` forbids core files. After the warm-up VM was built and dropped,
//! a seccomp filter is installed on every thread: `read` on stdin, `write` on stdout and stderr,
//! memory management, futexes, clocks, signal returns and exiting, and what dying of a fault
//! takes (the runtime's fault handler restoring the default action of `SIGSEGV`, `SIGBUS` or
//! `SIGABRT`, and a signal to this process itself), nothing else. Any other system call
//! (`open`, `socket`, `execve`, `clone`, …) kills the whole process with `SIGSYS`. So a worker
//! that faults is reported by its true signal, not as a forbidden call.
//! The environment is empty and the working directory is `/` (the host starts it so).
//!
//! Elsewhere the worker runs without these (see the README): the process boundary still
//! contains crashes and the host still kills a worker at the deadline plus the grace.
//!
//! `SIGUSR1` is the host's stop signal (`handle_stop_signal`): a run ended mid-step stops at the
//! guest's next poll.
//!
//! This module is the workspace's second documented exception to its unsafe-code ban: closing
//! descriptors by number has no safe interface (nothing in this process owns them as Rust
//! objects), and neither has installing a signal handler. Both happen first thing in the
//! worker's `main`.

/// Settings the host passes on the worker's command line.
#[derive(Debug, Clone, Copy, Default)]
pub(super) struct Settings {
    /// `RLIMIT_AS` in bytes (`--address-space-bytes=N`).
    pub(super) address_space_bytes: Option<u64>,
}

/// A fault a test worker dies of (`Misbehaviour::Segfault`, `Misbehaviour::BusError`).
#[derive(Debug, Clone, Copy)]
pub(super) enum Fault {
    Segmentation,
    Bus,
}

/// The command-line flag carrying a worker's `RLIMIT_AS` in bytes (`--address-space-bytes=N`),
/// which its host adds after the worker command's own arguments.
pub const ADDRESS_SPACE_FLAG: &str = "--address-space-bytes=";

impl Settings {
    pub(super) fn from_args(args: impl Iterator<Item = std::ffi::OsString>) -> Self {
        let mut settings = Self::default();
        for arg in args {
            if let Some(value) = arg
                .to_str()
                .and_then(|a| a.strip_prefix(ADDRESS_SPACE_FLAG))
            {
                settings.address_space_bytes = value.parse().ok();
            }
        }
        settings
    }
}

#[cfg(target_os = "linux")]
mod linux {
    use std::collections::BTreeMap;

    use nix::sys::resource::{Resource, UsageWho, getrusage, setrlimit};
    use seccompiler::{
        BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
        SeccompRule, TargetArch,
    };

    use super::Settings;

    /// Closes inherited descriptors and sets the resource limits.
    pub(crate) fn start_up(settings: Settings) -> Result<(), String> {
        close_inherited_descriptors();
        let limit = |resource, value: u64| {
            setrlimit(resource, value, value).map_err(|error| format!("{resource:?}: {error}"))
        };
        limit(Resource::RLIMIT_CORE, 0)?;
        // Descriptors 0..=2 stay; no new one can be made (seccomp forbids it anyway).
        limit(Resource::RLIMIT_NOFILE, 3)?;
        if let Some(bytes) = settings.address_space_bytes {
            limit(Resource::RLIMIT_AS, bytes)?;
        }
        Ok(())
    }

    /// Closes every descriptor above stderr.
    #[allow(unsafe_code)]
    fn close_inherited_descriptors() {
        // SAFETY: `close_range(3, ~0, 0)` closes descriptors this process inherited and never
        // wrapped in a Rust object: it runs first thing in the worker's `main`, before anything
        // of this program opened a descriptor, so no `File` or `OwnedFd` is invalidated. It
        // takes no pointers.
        let closed = unsafe { libc::syscall(libc::SYS_close_range, 3_u32, u32::MAX, 0_u32) };
        if closed != 0 {
            // Kernels before 5.9: descriptors are few; close them one by one.
            for fd in 3..1024 {
                // SAFETY: as above, for one descriptor number; EBADF for a closed one is fine.
                unsafe { libc::close(fd) };
            }
        }
    }

    /// The system calls a worker makes after start-up, found by running the sandbox's tests
    /// under the filter (each missing one kills the worker with `SIGSYS`).
    fn allowed() -> Vec<(i64, Vec<SeccompRule>)> {
        let fd_is = |fd: u64| {
            SeccompCondition::new(0, SeccompCmpArgLen::Dword, SeccompCmpOp::Eq, fd)
                .and_then(|condition| SeccompRule::new(vec![condition]))
        };
        let mut rules = Vec::new();
        if let Ok(stdin) = fd_is(0) {
            rules.push((libc::SYS_read, vec![stdin]));
        }
        if let (Ok(stdout), Ok(stderr)) = (fd_is(1), fd_is(2)) {
            rules.push((libc::SYS_write, vec![stdout, stderr]));
        }
        // Dying of a fault: Rust's handler of SIGSEGV and SIGBUS restores the default action
        // and returns, so the fault strikes again and kills; `abort` (a stack overflow, a
        // failed allocation) restores SIGABRT's and signals this process itself.
        let signal_is = |signal: libc::c_int| {
            SeccompCondition::new(
                0,
                SeccompCmpArgLen::Dword,
                SeccompCmpOp::Eq,
                u64::from(signal.unsigned_abs()),
            )
            .and_then(|condition| SeccompRule::new(vec![condition]))
        };
        let fatal: Vec<SeccompRule> = [libc::SIGSEGV, libc::SIGBUS, libc::SIGABRT]
            .into_iter()
            .filter_map(|signal| signal_is(signal).ok())
            .collect();
        rules.push((libc::SYS_rt_sigaction, fatal));
        let this_process = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Dword,
            SeccompCmpOp::Eq,
            u64::from(std::process::id()),
        )
        .and_then(|condition| SeccompRule::new(vec![condition]));
        if let Ok(this_process) = this_process {
            rules.push((libc::SYS_tgkill, vec![this_process]));
        }
        for call in [
            // Memory.
            libc::SYS_brk,
            libc::SYS_mmap,
            libc::SYS_munmap,
            libc::SYS_mremap,
            libc::SYS_mprotect,
            libc::SYS_madvise,
            // Threads waiting on each other, clocks.
            libc::SYS_futex,
            libc::SYS_sched_yield,
            libc::SYS_clock_gettime,
            libc::SYS_getrusage,
            libc::SYS_getrandom,
            // Signals (a signal's return, masks around them) and exiting.
            libc::SYS_rt_sigreturn,
            libc::SYS_rt_sigprocmask,
            libc::SYS_sigaltstack,
            libc::SYS_restart_syscall,
            libc::SYS_getpid,
            libc::SYS_gettid,
            libc::SYS_exit,
            libc::SYS_exit_group,
        ] {
            rules.push((call, Vec::new()));
        }
        rules
    }

    /// Makes glibc's allocator do, before the filter, the one file access it makes on its own:
    /// the first time a thread's heap shrinks it reads `/proc/sys/vm/overcommit_memory` (and
    /// caches the answer). Freeing a few MiB of small blocks on this thread shrinks its heap.
    ///
    /// A heap shrinks only when its free top passes the trim threshold, and glibc raises that
    /// threshold (up to 64 MiB) each time the process frees a block it had mapped on its own
    /// (over 128 KiB): one large free during the warm-up, and the blocks below no longer shrink
    /// anything, so the read would happen later, under the filter, and kill the worker. Setting
    /// the threshold turns that adjustment off for good: it stays at glibc's starting value
    /// (128 KiB), and so does the threshold for mapping a block on its own.
    #[allow(unsafe_code)]
    fn prime_the_allocator() {
        #[cfg(target_env = "gnu")]
        // SAFETY: `mallopt` only changes the allocator's tuning; it takes no pointer.
        unsafe {
            libc::mallopt(libc::M_TRIM_THRESHOLD, 128 * 1024);
        }
        let blocks: Vec<Box<[u8; 1024]>> = (0..4096)
            .map(|_| std::hint::black_box(Box::new([0u8; 1024])))
            .collect();
        drop(std::hint::black_box(blocks));
    }

    /// Installs the seccomp filter on every thread of the process. Called on the VM thread.
    pub(crate) fn seccomp() -> Result<(), String> {
        prime_the_allocator();
        let arch = TargetArch::try_from(std::env::consts::ARCH).map_err(|e| e.to_string())?;
        let rules: BTreeMap<i64, Vec<SeccompRule>> = allowed().into_iter().collect();
        let filter = SeccompFilter::new(
            rules,
            SeccompAction::KillProcess,
            SeccompAction::Allow,
            arch,
        )
        .map_err(|e| e.to_string())?;
        let program: BpfProgram = filter
            .try_into()
            .map_err(|e: seccompiler::BackendError| e.to_string())?;
        seccompiler::apply_filter_all_threads(&program).map_err(|e| e.to_string())
    }

    /// Raises the fault's signal twice: the first reaches the runtime's handler, which restores
    /// the default action (the system calls a real fault makes), the second kills.
    pub(crate) fn die_of_fault(fault: super::Fault) -> ! {
        use nix::sys::signal::{Signal, raise};
        let signal = match fault {
            super::Fault::Segmentation => Signal::SIGSEGV,
            super::Fault::Bus => Signal::SIGBUS,
        };
        let _ = raise(signal);
        let _ = raise(signal);
        std::process::abort()
    }

    /// Peak resident memory of this process, in bytes.
    pub(crate) fn peak_rss_bytes() -> u64 {
        getrusage(UsageWho::RUSAGE_SELF)
            .ok()
            .and_then(|usage| u64::try_from(usage.max_rss()).ok())
            .map_or(0, |kib| kib.saturating_mul(1024))
    }
}

#[cfg(target_os = "linux")]
pub(super) use linux::{die_of_fault, peak_rss_bytes, seccomp, start_up};

/// Makes `SIGUSR1` count a stop signal (`engine::count_stop_signal`): the host sends it when it
/// ends a run in the middle of a step, and the step then ends at the guest's next interrupt
/// poll, as at its deadline, with the output it made. Installed at start-up, before the
/// system-call filter (which allows returning from a handler, not installing one).
#[cfg(target_os = "linux")]
#[allow(unsafe_code)]
pub(super) fn handle_stop_signal() -> Result<(), String> {
    use nix::sys::signal::{SaFlags, SigAction, SigHandler, SigSet, Signal, sigaction};
    extern "C" fn on_stop(_signal: libc::c_int) {
        crate::engine::count_stop_signal();
    }
    // Restarted, so a read of the pipe the signal interrupts goes on.
    let action = SigAction::new(
        SigHandler::Handler(on_stop),
        SaFlags::SA_RESTART,
        SigSet::empty(),
    );
    // SAFETY: the handler is async-signal-safe (one atomic add, no lock, no allocation), and
    // nothing else in the worker handles `SIGUSR1`.
    unsafe { sigaction(Signal::SIGUSR1, &action) }
        .map(drop)
        .map_err(|error| format!("SIGUSR1: {error}"))
}

#[cfg(not(target_os = "linux"))]
pub(super) fn handle_stop_signal() -> Result<(), String> {
    Ok(())
}

/// Elsewhere: no resource limits or system-call filter (see the module docs).
#[cfg(not(target_os = "linux"))]
pub(super) fn start_up(_settings: Settings) -> Result<(), String> {
    Err("resource limits are applied on Linux only".into())
}

#[cfg(not(target_os = "linux"))]
pub(super) fn seccomp() -> Result<(), String> {
    Err("the system-call filter exists on Linux only".into())
}

#[cfg(not(target_os = "linux"))]
pub(super) fn die_of_fault(_fault: Fault) -> ! {
    std::process::abort()
}

#[cfg(not(target_os = "linux"))]
pub(super) fn peak_rss_bytes() -> u64 {
    0
}
