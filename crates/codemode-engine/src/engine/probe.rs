//! The engine check: code mode runs only on the metered QuickJS of `codemode-quickjs-sys`.
//!
//! The deadline holds inside native built-ins only because the engine charges their work to the
//! interrupt counter (PATCHES.md, patches 2 and 10). An unmetered engine would still run every
//! program, and a long native call would then overrun `timeoutMs` by its whole length. So before
//! the first VM of a process is built, a probe runs [`PROBE`] in a bare runtime: one string
//! search whose work, charged, passes the counter's full reload (`JS_INTERRUPT_COUNTER_INIT`,
//! 10,000 ticks) twice over in a few bytecodes. The metered engine calls the interrupt handler
//! inside the search; an unmetered one never does, and every build then fails closed with
//! [`RunError::RuntimeUnavailable`]. The verdict is kept for the process's life.
//!
//! The first VM waits for the verdict, so the probe must cost less than building a VM (~0.9M
//! instructions against ~1.9M): a context with only the intrinsics it needs, and a search that
//! is charged for a long needle at each position but compares one character there. Its texts
//! stay under 128 KiB each, below glibc's threshold for mapping a block on its own (a system
//! call and fresh pages each).

use std::sync::Arc;
use std::sync::OnceLock;
use std::sync::atomic::{AtomicU32, Ordering};

use rquickjs::{Context, Runtime};

use crate::RunError;

/// The probe: a needle of 25,601 characters is charged 101 ticks (one per 256 characters, plus
/// one) at each of the 199 positions of the text where it could start, 20,099 ticks; at each,
/// its first character differs, so one character is compared. No loop: bytecode alone never
/// reaches the handler.
pub(crate) const PROBE: &str = "const text = 'a'.repeat(128).repeat(200); \
    ('a'.repeat(199) + text).indexOf('b' + text);";

/// The message of a build on an engine that is not the metered one.
pub(crate) const NOT_METERED: &str = "the linked QuickJS is not the metered engine of \
    codemode-quickjs-sys (a native built-in's work does not reach the interrupt handler), so \
    code mode refuses to run: a deadline could not stop a long native call";

/// `Ok` when the linked engine is the metered one; the first call probes, later calls answer
/// the kept verdict.
pub(crate) fn check_engine() -> Result<(), RunError> {
    static VERDICT: OnceLock<Result<(), String>> = OnceLock::new();
    VERDICT
        .get_or_init(probe)
        .clone()
        .map_err(RunError::RuntimeUnavailable)
}

/// Probes the engine, if no thread did yet (the verdict is kept): for a thread that warms the
/// process up.
pub(crate) fn warm_up() {
    let _ = check_engine();
}

/// Runs [`PROBE`]: the engine is the metered one when it reached the handler.
fn probe() -> Result<(), String> {
    match handler_calls(PROBE)? {
        0 => Err(NOT_METERED.to_owned()),
        _ => Ok(()),
    }
}

/// How often the interrupt handler ran while `program` ran in a bare runtime.
fn handler_calls(program: &str) -> Result<u32, String> {
    let unavailable = |error: rquickjs::Error| format!("the engine probe could not run: {error}");
    let runtime = Runtime::new().map_err(unavailable)?;
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    runtime.set_interrupt_handler(Some(Box::new(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        false
    })));
    let context =
        Context::custom::<(rquickjs::context::intrinsic::Eval,)>(&runtime).map_err(unavailable)?;
    context
        .with(|ctx| {
            // A new context's counter starts empty: its first poll calls the handler and reloads
            // the counter in full. That call is not the program's.
            ctx.eval::<(), _>("(function () {})();")?;
            calls.store(0, Ordering::Relaxed);
            ctx.eval::<(), _>(program)
        })
        .map_err(unavailable)?;
    Ok(calls.load(Ordering::Relaxed))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_linked_engine_passes_the_probe() {
        assert_eq!(probe(), Ok(()));
        assert!(check_engine().is_ok());
    }

    /// The probe's program with a short needle never reaches the handler: what the probe sees
    /// is the search's charge, not the bytecode around it.
    #[test]
    fn bytecode_alone_does_not_reach_the_handler() {
        assert_eq!(
            handler_calls(&PROBE.replace(".repeat(200)", ".repeat(2)")),
            Ok(0)
        );
    }
}
