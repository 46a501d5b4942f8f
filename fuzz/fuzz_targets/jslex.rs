//! The tokenizer (`codemode-jslex`) against QuickJS's own parser, on the text the sandbox
//! compiles: `(async function anonymous(\n) {\n` + program + `\n})`, as a sloppy-mode script.
//!
//! Three claims are checked, each only where it is sound (no false alarms):
//!
//! - **Rejection.** When every reading of the program is invalid (an unterminated string,
//!   template, comment or regular expression, a `(]`) and no reading escapes, QuickJS must fail
//!   to compile the text.
//! - **No escape.** When no reading escapes and QuickJS compiles the text, the script's value
//!   must be one function whose source text is the whole program (`Function.prototype.toString`
//!   is the slice of source QuickJS parsed as that function). The script is *evaluated* for this
//!   (it only creates the function, unless the tokenizer missed an escape), with a deadline, a
//!   memory limit and a stack limit.
//! - **Regex or division.** When the program has a single reading (no `/` is read both ways) and
//!   QuickJS compiles it, QuickJS must read each `/` token as the tokenizer did. QuickJS's choice
//!   is observed by inserting `import.meta` right after the `/`: inside a regular expression it
//!   is plain pattern text and the program still compiles; as code after a division it is a
//!   syntax error in a script. So the probe compiles iff QuickJS read a regular expression.
//!
//! Limits: programs with several readings get only the first two checks (which reading QuickJS
//! took is not observed); escaped code that restores what the check looks at
//! (`Function.prototype.toString`) would hide its escape; at most 8 slashes of a program are
//! probed; inputs that are not UTF-8, hold a NUL or are longer than 4 KiB are skipped.
#![no_main]

use std::ffi::CString;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant};

use codemode_jslex::{Slash, slash_readings};
use libfuzzer_sys::fuzz_target;
use rquickjs::context::EvalOptions;
use rquickjs::{Context, Ctx, Function, Runtime, Value, qjs};

const PREFIX: &str = "(async function anonymous(\n) {\n";
const SUFFIX: &str = "\n})";

struct Engine {
    runtime: Runtime,
    context: Context,
    /// Set by a watchdog while an evaluation runs past its deadline.
    stop: Arc<AtomicBool>,
}

thread_local! {
    static ENGINE: Engine = {
        let runtime = Runtime::new().expect("a runtime");
        runtime.set_memory_limit(64 << 20);
        runtime.set_max_stack_size(256 << 10);
        let stop = Arc::new(AtomicBool::new(false));
        let flag = Arc::clone(&stop);
        runtime.set_interrupt_handler(Some(Box::new(move || flag.load(Ordering::Relaxed))));
        let context = Context::full(&runtime).expect("a context");
        Engine { runtime, context, stop }
    };
}

/// Whether QuickJS compiles `text` as a global script (without running it).
fn compiles(ctx: &Ctx<'_>, text: &str) -> bool {
    let Ok(source) = CString::new(text) else {
        return false;
    };
    let ctx_ptr = ctx.as_raw().as_ptr();
    // SAFETY: `ctx` is live and current on this thread; `source` is NUL-terminated and outlives
    // the call. The compiled script is ours and freed at once.
    unsafe {
        let script = qjs::JS_Eval(
            ctx_ptr,
            source.as_ptr(),
            text.len() as _,
            c"probe".as_ptr(),
            (qjs::JS_EVAL_TYPE_GLOBAL | qjs::JS_EVAL_FLAG_COMPILE_ONLY) as i32,
        );
        if qjs::JS_IsException(script) {
            drop(ctx.catch());
            return false;
        }
        qjs::JS_FreeValue(ctx_ptr, script);
        true
    }
}

/// The source text of the function `text` evaluates to, if it evaluates to one in time.
fn function_source(engine: &Engine, ctx: &Ctx<'_>, text: &str) -> Option<String> {
    engine.stop.store(false, Ordering::Relaxed);
    let deadline = Instant::now() + Duration::from_millis(200);
    let stop = Arc::clone(&engine.stop);
    let done = Arc::new(AtomicBool::new(false));
    let finished = Arc::clone(&done);
    let watchdog = std::thread::spawn(move || {
        while !finished.load(Ordering::Relaxed) {
            if Instant::now() > deadline {
                stop.store(true, Ordering::Relaxed);
                return;
            }
            std::thread::sleep(Duration::from_millis(5));
        }
    });
    // Sloppy mode, as `new AsyncFunction(program)` compiles (and as `compiles` does).
    let mut options = EvalOptions::default();
    options.global = true;
    options.strict = false;
    let value: Option<Value<'_>> = ctx
        .eval_with_options(text.as_bytes().to_vec(), options)
        .ok();
    done.store(true, Ordering::Relaxed);
    let _ = watchdog.join();
    engine.stop.store(false, Ordering::Relaxed);
    let function = value?.into_function()?;
    let to_string: Function<'_> = ctx
        .eval("(f) => Function.prototype.toString.call(f)")
        .ok()?;
    to_string.call((function,)).ok()
}

fuzz_target!(|data: &[u8]| {
    let Ok(program) = std::str::from_utf8(data) else {
        return;
    };
    if program.len() > 4096 || program.contains('\0') {
        return;
    }
    let (verdict, slashes) = slash_readings(program);
    if verdict.limit.is_some() || verdict.escape.is_some() {
        return;
    }
    let wrapped = format!("{PREFIX}{program}{SUFFIX}");
    ENGINE.with(|engine| {
        engine.context.with(|ctx| {
            let accepted = compiles(&ctx, &wrapped);
            if let Some(refusal) = &verdict.invalid {
                assert!(
                    !accepted,
                    "the tokenizer refuses ({}) what QuickJS compiles: {program:?}",
                    refusal.message(program)
                );
                return;
            }
            if !accepted {
                return;
            }
            let expected = format!("async function anonymous(\n) {{\n{program}\n}}");
            let source = function_source(engine, &ctx, &wrapped);
            assert_eq!(
                source.as_deref(),
                Some(expected.as_str()),
                "QuickJS read the program out of its function, the tokenizer did not: {program:?}"
            );
            if slashes.iter().any(|&(_, slash)| slash == Slash::Either) {
                return;
            }
            for &(at, slash) in slashes.iter().take(8) {
                let probe = format!(
                    "{PREFIX}{}import.meta{}{SUFFIX}",
                    &program[..=at],
                    &program[at + 1..]
                );
                let regex = compiles(&ctx, &probe);
                assert_eq!(
                    regex,
                    slash == Slash::Regex,
                    "the `/` at {at} is {} to QuickJS, {slash:?} to the tokenizer: {program:?}",
                    if regex {
                        "a regular expression"
                    } else {
                        "not a regular expression"
                    },
                );
            }
        });
        let _ = &engine.runtime;
    });
});
