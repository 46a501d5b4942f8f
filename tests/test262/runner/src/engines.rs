//! The two engines, each running one function body under the same limits: codemode-sandbox
//! through its public `Run` API, and upstream rquickjs 0.14 (the unmodified quickjs-ng) the way
//! the sandbox compiles a program, as the text of an async function.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_sandbox::{
    BridgeHost, BridgeRequest, GuestSetup, LegEnd, Limits, Placement, Run, RunError,
};
use rquickjs::promise::PromiseState;
use serde_json::Value;

use crate::suite::Negative;

/// How a run ended, before the test's expectations are applied.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) enum Ending {
    /// The function's promise fulfilled.
    Completed,
    /// The body did not compile: `<name>: <message>`.
    CompileError(String),
    /// The body threw (its promise rejected): `<name>: <message>` for an error object.
    Threw(String),
    /// Anything else: a timeout, the memory limit, a promise never settled.
    Other(String),
    /// The engine panicked (the message says where).
    Panicked(String),
}

impl Ending {
    /// The test's verdict: `Ok` when the run did what the test expects (completed, or for a
    /// negative test failed in the expected phase with the expected error type), else why not.
    pub(crate) fn verdict(&self, negative: Option<&Negative>) -> Result<(), String> {
        let is_kind =
            |message: &str, kind: &str| message == kind || message.starts_with(&format!("{kind}:"));
        match (negative, self) {
            (None, Ending::Completed) => Ok(()),
            (Some(negative), Ending::CompileError(message))
                if negative.phase == "parse" && is_kind(message, &negative.kind) =>
            {
                Ok(())
            }
            (Some(negative), Ending::Threw(message))
                if negative.phase == "runtime" && is_kind(message, &negative.kind) =>
            {
                Ok(())
            }
            (Some(negative), Ending::Completed) => Err(format!(
                "completed; expected a {} {} error",
                negative.phase, negative.kind
            )),
            (_, Ending::CompileError(message)) => Err(format!("does not compile: {message}")),
            (_, Ending::Threw(message) | Ending::Other(message) | Ending::Panicked(message)) => {
                Err(message.clone())
            }
        }
    }
}

/// Each run's wall-clock budget in either engine (the sandbox's own default for a leg).
pub(crate) const TIMEOUT: Duration = Duration::from_secs(10);

/// The sandbox's host: test262 calls no tool.
struct NoTools;

#[async_trait::async_trait]
impl BridgeHost for NoTools {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        Err(format!("no tool {}", request.method))
    }
}

/// Runs `body` on codemode-sandbox: `Run::start` with the default guest setup, then one `drive`
/// to `timeout` from now. A panic is an ending like any other.
pub(crate) fn sandbox(
    body: &str,
    limits: &Limits,
    timeout: Duration,
    runtime: &tokio::runtime::Runtime,
) -> Ending {
    let run = AssertUnwindSafe(|| {
        runtime.block_on(async {
            let deadline = Instant::now() + timeout;
            let setup = GuestSetup::default();
            let placement = Placement::Thread;
            let mut run = match Run::start(body, setup, limits, &placement, Arc::new(NoTools)) {
                Ok(run) => run,
                Err(error) => return Ending::Other(format!("refused: {error}")),
            };
            match run.drive(deadline).await {
                LegEnd::Completed { .. } => Ending::Completed,
                LegEnd::Failed {
                    error: RunError::Syntax(message),
                    ..
                } => Ending::CompileError(message),
                LegEnd::Failed {
                    error: RunError::Guest(message),
                    ..
                } => Ending::Threw(message),
                LegEnd::Failed { error, .. } => Ending::Other(error.to_string()),
                LegEnd::Suspended { reason, .. } => Ending::Other(format!("suspended: {reason:?}")),
            }
        })
    });
    catch_unwind(run).unwrap_or_else(|panic| Ending::Panicked(panic_message(&*panic)))
}

/// Runs `body` on upstream rquickjs, in a fresh runtime with the sandbox's memory, stack and time
/// limits: the non-strict global script `(async function anonymous(\n) {\n` BODY `\n})()` (what
/// the sandbox's `new AsyncFunction(body)` compiles, then called), its jobs run until none is
/// left or the deadline,
/// then its promise read. Everything the body does at run time rejects that promise, so an
/// exception out of the evaluation itself is a compile error.
pub(crate) fn upstream(body: &str, limits: &Limits, timeout: Duration) -> Ending {
    catch_unwind(AssertUnwindSafe(|| {
        upstream_unguarded(body, limits, timeout)
    }))
    .unwrap_or_else(|panic| Ending::Panicked(panic_message(&*panic)))
}

fn upstream_unguarded(body: &str, limits: &Limits, timeout: Duration) -> Ending {
    let runtime = match rquickjs::Runtime::new() {
        Ok(runtime) => runtime,
        Err(error) => return Ending::Other(format!("no runtime: {error}")),
    };
    runtime.set_memory_limit(limits.memory_bytes);
    runtime.set_max_stack_size(limits.stack_bytes);
    let deadline = Instant::now() + timeout;
    runtime.set_interrupt_handler(Some(Box::new(move || Instant::now() >= deadline)));
    let context = match rquickjs::Context::full(&runtime) {
        Ok(context) => context,
        Err(error) => return Ending::Other(format!("no context: {error}")),
    };
    let timed_out = || Ending::Other(RunError::Timeout.to_string());
    context.with(|ctx| {
        let source = format!("(async function anonymous(\n) {{\n{body}\n}})()");
        // The global `eval` called from outside JavaScript is an indirect eval: global code, not
        // strict (strictness comes from the body's own directive, as in the sandbox), and a
        // JavaScript string, so a test holding a NUL character runs too (`Ctx::eval` takes a C
        // string).
        let evaluated = rquickjs::String::from_str(ctx.clone(), &source).and_then(|source| {
            let eval: rquickjs::Function<'_> = ctx.globals().get("eval")?;
            eval.call::<_, rquickjs::Promise<'_>>((source,))
        });
        let promise = match evaluated {
            Ok(promise) => promise,
            Err(rquickjs::Error::Exception) => {
                let thrown = describe(&ctx.catch());
                return if Instant::now() >= deadline {
                    timed_out()
                } else {
                    Ending::CompileError(thrown)
                };
            }
            Err(error) => return Ending::Other(error.to_string()),
        };
        while Instant::now() < deadline && ctx.execute_pending_job() {}
        if Instant::now() >= deadline {
            return timed_out();
        }
        match promise.state() {
            PromiseState::Resolved => Ending::Completed,
            PromiseState::Pending => Ending::Other(RunError::PendingWithoutHostWork.to_string()),
            PromiseState::Rejected => {
                let _ = promise.result::<rquickjs::Value<'_>>();
                let reason = ctx.catch();
                if is_out_of_memory(&reason) {
                    Ending::Other(RunError::MemoryLimitExceeded.to_string())
                } else {
                    Ending::Threw(describe(&reason))
                }
            }
        }
    })
}

fn is_out_of_memory(value: &rquickjs::Value<'_>) -> bool {
    describe(value) == "InternalError: out of memory"
}

/// `<name>: <message>` for an object with a string `name`, or else a constructor with one
/// (`<name>` alone when the message is empty), the text of a string, JSON for another object,
/// the string conversion of anything else: close to the sandbox's rendering of an uncaught
/// exception, and the same where a negative test's error type is read.
fn describe(value: &rquickjs::Value<'_>) -> String {
    if let Some(object) = value.as_object() {
        let constructor_name = || {
            object
                .get::<_, rquickjs::Object<'_>>("constructor")
                .and_then(|constructor| constructor.get::<_, String>("name"))
        };
        if let Ok(name) = object
            .get::<_, String>("name")
            .or_else(|_| constructor_name())
        {
            return match object.get::<_, String>("message") {
                Ok(message) if !message.is_empty() => format!("{name}: {message}"),
                _ => name,
            };
        }
        if let Ok(Some(json)) = value.ctx().json_stringify(value.clone())
            && let Ok(json) = json.to_string()
        {
            return json;
        }
    }
    if let Some(text) = value.as_string() {
        return text.to_string().unwrap_or_default();
    }
    value
        .get::<rquickjs::convert::Coerced<String>>()
        .map_or_else(|_| format!("{value:?}"), |text| text.0)
}

fn panic_message(panic: &(dyn std::any::Any + Send)) -> String {
    let text = panic
        .downcast_ref::<&str>()
        .map(|text| (*text).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned())
        .unwrap_or_default();
    format!("the engine panicked: {text}")
}

#[cfg(test)]
mod tests {
    use super::*;

    fn negative(phase: &str, kind: &str) -> Negative {
        Negative {
            phase: phase.into(),
            kind: kind.into(),
        }
    }

    #[test]
    fn negative_tests_need_their_phase_and_type() {
        let parse = negative("parse", "SyntaxError");
        assert!(
            Ending::CompileError("SyntaxError: x (line 1, column 2)".into())
                .verdict(Some(&parse))
                .is_ok()
        );
        assert!(
            Ending::Threw("SyntaxError: x".into())
                .verdict(Some(&parse))
                .is_err()
        );
        assert!(Ending::Completed.verdict(Some(&parse)).is_err());
        let runtime = negative("runtime", "TypeError");
        assert!(
            Ending::Threw("TypeError".into())
                .verdict(Some(&runtime))
                .is_ok()
        );
        assert!(
            Ending::Threw("TypeErrorish: x".into())
                .verdict(Some(&runtime))
                .is_err()
        );
        assert!(Ending::Completed.verdict(None).is_ok());
        assert!(
            Ending::Threw("Test262Error: x".into())
                .verdict(None)
                .is_err()
        );
    }

    #[test]
    fn both_engines_run_the_same_body() {
        let limits = Limits::default();
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        for (body, expected) in [
            ("await null; return 1;", Ending::Completed),
            (
                "await null; throw new TypeError('x');",
                Ending::Threw("TypeError: x".into()),
            ),
        ] {
            assert_eq!(upstream(body, &limits, TIMEOUT), expected, "{body}");
            assert_eq!(
                sandbox(body, &limits, TIMEOUT, &runtime),
                expected,
                "{body}"
            );
        }
        for ending in [
            upstream("let let = 1;", &limits, TIMEOUT),
            sandbox("let let = 1;", &limits, TIMEOUT, &runtime),
        ] {
            assert!(
                matches!(&ending, Ending::CompileError(m) if m.starts_with("SyntaxError")),
                "{ending:?}"
            );
        }
        let short = Duration::from_millis(200);
        assert_eq!(
            upstream("while (true) {}", &limits, short),
            Ending::Other(RunError::Timeout.to_string())
        );
        assert_eq!(
            sandbox("while (true) {}", &limits, short, &runtime),
            Ending::Other(RunError::Timeout.to_string())
        );
    }

    /// The runner is the one test crate CI builds in release, where the engine is compiled
    /// without QuickJS's assertions and dumps (`NDEBUG`), while the bootstrap's shipped bytecode
    /// is written by a test build, with them. It must load here all the same: were it refused,
    /// every process would compile its bootstrap before its first `exec` answered.
    #[test]
    fn a_release_build_loads_the_shipped_bootstrap() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .expect("a tokio runtime");
        let limits = Limits::default();
        assert_eq!(
            sandbox("return 1", &limits, TIMEOUT, &runtime),
            Ending::Completed
        );
        assert_eq!(codemode_sandbox::stats().bootstrap_compiles, 0);
    }
}
