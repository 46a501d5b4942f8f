//! The TypeScript transform behind its nesting bound. The source is made of fragments that
//! nest (brackets, operator chains, keywords, type arguments, template literals, and the
//! lexically ambiguous `/` and `<!--`), then raw text; the first byte picks the bound. The
//! transform must answer (JavaScript or an error) without a panic or a stack overflow, the
//! bound alone must take time linear in the source, and a refusal by the bound must be the
//! transform's `NestingTooDeep`. Bounds above the default (on the default stack) hold the
//! estimate to a tighter margin than the default gives.
//!
//! A panic inside swc unwinds to the transform pool, which reports it as `TsError::Internal`
//! (the crate's contract); fuzz builds turn on swc's own debug assertions, some of which fail on
//! malformed input, so those panics are let through to the pool (libFuzzer's hook would abort)
//! and an `Internal` error is accepted only after one. Any other panic is a crash.
#![no_main]

use std::sync::Once;
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::{Duration, Instant};

use arbitrary::Arbitrary;
use codemode_ts::fuzzing::nesting_bound;
use codemode_ts::{TransformOptions, TsError, transform_with};
use libfuzzer_sys::fuzz_target;

const FRAGMENTS: &[&str] = &[
    "(",
    ")",
    "[",
    "]",
    "{",
    "}",
    "${",
    "`",
    "<",
    ">",
    "-",
    "+",
    "!",
    "~",
    "=>",
    "a",
    ".b",
    "()",
    "typeof ",
    "await ",
    "new ",
    "if (a) ",
    "else ",
    "x ",
    "/",
    "/re/g",
    "<!--",
    "-->",
    "\n",
    ";",
    ",",
    "'",
    "\"",
    "//",
    "/*",
    "*/",
    "Array<",
    "as T",
    "x`a`",
    "function f() {",
    "() => ",
    "class C { m() {",
    "enum E { A = ",
    "namespace N {",
    "let v: ",
    "? :",
    "...",
    "\\u0061",
    "\u{2028}",
    "#!",
    "of / (",
    "return ",
    "do ",
    "while (1) ",
    "label: ",
    "yield ",
    "void ",
];

/// Nesting bounds the transform is given: small, the default, and above it.
const LIMITS: [usize; 4] = [16, 128, codemode_ts::DEFAULT_MAX_NESTING_DEPTH, 2048];

#[derive(Arbitrary, Debug)]
struct Case {
    limit: u8,
    /// Fragment choices, each repeated (count + 1) times.
    fragments: Vec<(u8, u8)>,
    tail: String,
}

/// Panics inside swc so far.
static SWC_PANICS: AtomicU64 = AtomicU64::new(0);

/// Lets panics located in swc's crates unwind (to the pool's `catch_unwind`) instead of
/// aborting; every other panic still goes to libFuzzer's hook.
fn let_swc_panics_unwind() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let fuzzer_hook = std::panic::take_hook();
        std::panic::set_hook(Box::new(move |info| {
            if info
                .location()
                .is_some_and(|at| at.file().contains("/swc_"))
            {
                SWC_PANICS.fetch_add(1, Ordering::SeqCst);
                return;
            }
            fuzzer_hook(info);
        }));
    });
}

fuzz_target!(|case: Case| {
    let_swc_panics_unwind();
    let limit = LIMITS[usize::from(case.limit) % LIMITS.len()];
    let mut source = String::new();
    for (index, count) in case.fragments {
        let fragment = FRAGMENTS[usize::from(index) % FRAGMENTS.len()];
        for _ in 0..=count {
            source.push_str(fragment);
        }
    }
    source.push_str(&case.tail);

    let started = Instant::now();
    let bound = nesting_bound(&source, limit);
    // Linear: a few microseconds per byte even in a loaded, instrumented build.
    let allowed = Duration::from_millis(50) + Duration::from_micros(20) * source.len() as u32;
    assert!(
        started.elapsed() < allowed,
        "the bound took {:?}",
        started.elapsed()
    );

    let options = TransformOptions {
        max_nesting_depth: limit,
        ..TransformOptions::default()
    };
    let panics = SWC_PANICS.load(Ordering::SeqCst);
    match transform_with(&source, &options) {
        Ok(_) => assert!(bound.is_ok(), "transformed past the bound"),
        Err(TsError::NestingTooDeep { .. }) => assert!(bound.is_err()),
        Err(TsError::Internal { message }) => assert!(
            SWC_PANICS.load(Ordering::SeqCst) > panics,
            "internal error without a panic in swc: {message}"
        ),
        Err(_) => assert!(bound.is_ok(), "the bound refused, the transform did not"),
    }
});
