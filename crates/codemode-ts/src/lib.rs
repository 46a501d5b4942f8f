//! TypeScript code-mode cells to JavaScript: a source transform only.
//!
//! A cell is the *body* of an async function (top-level `await` and `return`
//! work), and so is the JavaScript that comes out; the sandbox wraps it
//! again. Types are erased, `enum`, `namespace` and constructor parameter
//! properties are transformed (never silently dropped), `import type` is
//! erased. Decorators are refused with a clear error. There is no type
//! checking and no module resolution.
//!
//! Errors read `typescript transform failed: <parser message> at <line>:<col>`
//! with the user's own 1-based line and column. Oversized input and
//! pathologically nested input are rejected *before* parsing (see
//! [`TransformOptions`]): the nesting bound is an upper bound of how deep swc
//! recurses, whatever the input, so hostile input gets an error, never a
//! stack overflow (which would abort the process).
//!
//! What runs is apart from where it runs: the parser and transform run on a
//! few long-lived threads with large stacks (see
//! [`transform_thread_count`]), never on the caller's stack. [`transform`] and
//! [`transform_with`] block their caller until the result is back;
//! [`transform_async`] is the same for async callers and never blocks their
//! thread.
//!
//! This crate is the only one in the workspace that knows swc. It knows
//! nothing about the sandbox, the catalog, MCP or the host: it turns text into
//! text. JavaScript cells must never reach it; [`transform_count`] lets the
//! core prove that. No feature flags.
//!
//! ```
//! let js = codemode_ts::transform(
//!     "enum Color { Red, Green }\nconst c: Color = Color.Green;\nreturn await Promise.resolve(c as number);",
//! )?;
//! assert!(js.contains("Color[\"Green\"] = 1"));
//! assert!(js.contains("return await Promise.resolve(c);"));
//! # Ok::<(), codemode_ts::TsError>(())
//! ```
#![forbid(unsafe_code)]

mod cell;
mod declarations;
mod error;
#[doc(hidden)]
pub mod fuzzing;
mod position;
mod threads;
mod transpile;

use std::sync::atomic::{AtomicU64, Ordering};

use crate::cell::CellWrapper;
pub use crate::declarations::check_declaration_file;
pub use crate::error::TsError;
use crate::position::LineColumn;

/// Default [`TransformOptions::max_source_bytes`]: 1 MiB.
pub const DEFAULT_MAX_SOURCE_BYTES: usize = codemode_jslex::DEFAULT_MAX_SOURCE_BYTES;

/// Default [`TransformOptions::max_nesting_depth`].
///
/// Ordinary cells estimate well below 100; 512 allows about 256 nested
/// brackets, or long operator chains (500 `+` terms in one expression).
pub const DEFAULT_MAX_NESTING_DEPTH: usize = 512;

/// Default [`TransformOptions::stack_size`], and the stack of every transform
/// transform thread: 64 MiB of address space (pages are only committed when
/// touched). Measured: an unoptimized build survives 4,000 levels of every
/// construct the nesting estimate counts on this stack, an optimized one far
/// more, so the default limit of 512 leaves a wide margin.
pub const DEFAULT_STACK_SIZE: usize = 64 * 1024 * 1024;

/// Queue slots of the transform threads per thread: transforms waiting for
/// a thread, on top of the ones running (see [`transform_thread_count`]).
pub const TRANSFORM_QUEUE_SLOTS_PER_THREAD: usize = 4;

/// Limits of one transform. `Default` gives the documented defaults.
///
/// ```
/// use codemode_ts::{TransformOptions, TsError, transform_with};
///
/// let options = TransformOptions { max_source_bytes: 16, ..TransformOptions::default() };
/// let error = transform_with("const answer: number = 42;", &options).unwrap_err();
/// assert!(matches!(error, TsError::SourceTooLarge { actual: 26, limit: 16 }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct TransformOptions {
    /// Largest accepted source, in bytes (UTF-8). Checked first, before any
    /// scanning. Covers the source only, not the size of the output (which
    /// can grow, e.g. by indentation of deeply nested blocks).
    pub max_source_bytes: usize,
    /// Largest accepted *estimated* nesting depth, checked by a linear
    /// pre-parse scan (O(n) time, O(limit) memory) on the transform thread:
    /// one per open bracket (`(`, `[`, `{`, `${`, and every `<`) plus the
    /// length of the chain inside each: every operator character (`-+-+x`
    /// is four), keyword (`typeof`, `new`, `await`, `if`, `else`, …), template
    /// literal and bracketed group (`a.b.c`, `f()()`, `if (a) if (b)`,
    /// `Array<Array<…>>`). A chain shrinks only where the parser has certainly
    /// returned: at `;`, at `,` (back to the statement prefix), and where a
    /// word starts a new statement after a `}` or a line break.
    ///
    /// The estimate is never below how deep swc's parser, the transform and
    /// the printer recurse, whatever the input: where lexing is ambiguous
    /// (is this `/` a division or a regular expression, is this `<!--` a
    /// comment?) the scan follows every reading and keeps the deepest, so
    /// no regular expression, string or comment it guessed wrong can hide
    /// brackets or operators. The price is rare false refusals of weird but
    /// legal code, reported as [`TsError::NestingTooDeep`]: more than 16
    /// such readings open at once (e.g. a long line of `of / (of / (…`), or
    /// an estimate above the limit for code that is less deep than it looks.
    ///
    /// The guarantee that nothing overflows holds for limits the stack can
    /// take: the default limit on the default stack, or a higher limit with
    /// a proportionally larger [`stack_size`](Self::stack_size).
    pub max_nesting_depth: usize,
    /// Stack size, in bytes, the parser and transform need. Up to
    /// [`DEFAULT_STACK_SIZE`] they run on the transform threads, whose threads
    /// have that stack; a larger request runs on a thread of its own, started
    /// for the call (named `ts-large-stack`). The caller's own stack (e.g. a
    /// 2 MiB async worker) is never used for parsing.
    pub stack_size: usize,
}

impl Default for TransformOptions {
    fn default() -> Self {
        TransformOptions {
            max_source_bytes: DEFAULT_MAX_SOURCE_BYTES,
            max_nesting_depth: DEFAULT_MAX_NESTING_DEPTH,
            stack_size: DEFAULT_STACK_SIZE,
        }
    }
}

static TRANSFORM_CALLS: AtomicU64 = AtomicU64::new(0);

/// Process-wide number of calls to [`transform`], [`transform_with`] and
/// [`transform_async`] (successful or not). Lets the core prove that JavaScript cells never reach
/// this crate: the count does not move across a JavaScript `exec`.
///
/// ```
/// let before = codemode_ts::transform_count();
/// codemode_ts::transform("return 1 as number;")?;
/// assert!(codemode_ts::transform_count() > before);
/// # Ok::<(), codemode_ts::TsError>(())
/// ```
pub fn transform_count() -> u64 {
    TRANSFORM_CALLS.load(Ordering::Relaxed)
}

/// TypeScript cell -> JavaScript, with [`TransformOptions::default`].
///
/// Input and output are both the *body* of an async function (top-level
/// `await` and `return` allowed); the sandbox wraps the output again.
/// The output is swc's printed JavaScript: comments are dropped, statements
/// keep the indentation of the internal wrapper (template literal text is
/// never re-indented), hoisted `var`s of transformed namespaces come last.
/// Syntax newer than QuickJS understands (e.g. `using`) passes through as is.
/// Import declarations other than type-only ones, and `export`, are errors:
/// a cell is a function body, not a module.
///
/// The work runs on a transform thread (see [`transform_thread_count`]);
/// this call blocks its thread until the result is back, first waiting for a
/// free queue slot if the queue is full. On an async runtime, use
/// [`transform_async`] instead.
///
/// ```
/// let js = codemode_ts::transform("const xs: number[] = [1, 2];\nreturn xs.length;")?;
/// assert_eq!(js.split_whitespace().collect::<Vec<_>>().join(" "), "const xs = [ 1, 2 ]; return xs.length;");
///
/// let error = codemode_ts::transform("const a = 1;\nconst b = ;").unwrap_err();
/// assert_eq!(error.to_string(), "typescript transform failed: Expression expected at 2:11");
/// # Ok::<(), codemode_ts::TsError>(())
/// ```
pub fn transform(source: &str) -> Result<String, TsError> {
    transform_with(source, &TransformOptions::default())
}

/// TypeScript cell -> JavaScript, with explicit limits. See [`transform`].
///
/// ```
/// use codemode_ts::{TransformOptions, TsError, transform_with};
///
/// let hostile = "(".repeat(100_000);
/// let error = transform_with(&hostile, &TransformOptions::default()).unwrap_err();
/// assert!(matches!(error, TsError::NestingTooDeep { line: 1, .. }));
/// ```
pub fn transform_with(source: &str, options: &TransformOptions) -> Result<String, TsError> {
    TRANSFORM_CALLS.fetch_add(1, Ordering::Relaxed);
    check_size(source, options)?;
    let source = source.to_owned();
    let options = options.clone();
    let stack_size = options.stack_size;
    let work = move || transform_on_this_thread(&source, &options);
    if stack_size <= DEFAULT_STACK_SIZE {
        threads::transform_threads().run_blocking(work)
    } else {
        threads::run_on_own_thread_blocking(stack_size, work)
    }
}

/// [`transform_with`] for callers on an async runtime: the caller's thread is
/// never blocked, neither by the transform nor by back-pressure.
///
/// The returned future is pending while the transform queue is full (it is
/// woken when a slot frees up) and while a transform thread transforms the cell;
/// nothing is dropped. Dropping the future abandons the result, not the work
/// already queued. The future is runtime-agnostic (no tokio needed).
///
/// ```
/// # fn block_on<F: std::future::Future>(future: F) -> F::Output {
/// #     use std::task::{Context, Poll, Wake, Waker};
/// #     struct Unpark(std::thread::Thread);
/// #     impl Wake for Unpark { fn wake(self: std::sync::Arc<Self>) { self.0.unpark(); } }
/// #     let waker = Waker::from(std::sync::Arc::new(Unpark(std::thread::current())));
/// #     let mut context = Context::from_waker(&waker);
/// #     let mut future = std::pin::pin!(future);
/// #     loop {
/// #         if let Poll::Ready(output) = future.as_mut().poll(&mut context) { return output; }
/// #         std::thread::park();
/// #     }
/// # }
/// use codemode_ts::{TransformOptions, transform_async};
///
/// let js = block_on(transform_async("return 1 as number;".to_owned(), TransformOptions::default()))?;
/// assert_eq!(js.trim(), "return 1;");
/// # Ok::<(), codemode_ts::TsError>(())
/// ```
pub async fn transform_async(source: String, options: TransformOptions) -> Result<String, TsError> {
    TRANSFORM_CALLS.fetch_add(1, Ordering::Relaxed);
    check_size(&source, &options)?;
    let stack_size = options.stack_size;
    let work = move || transform_on_this_thread(&source, &options);
    if stack_size <= DEFAULT_STACK_SIZE {
        threads::transform_threads().run_async(work).await
    } else {
        threads::run_on_own_thread(stack_size, work).await
    }
}

/// Threads of the transform threads: the number of cores
/// ([`std::thread::available_parallelism`]), at least two.
///
/// The transform threads are named `codemode-ts-0`, `codemode-ts-1`, …, have
/// [`DEFAULT_STACK_SIZE`] of stack each, are started one at a time (the first
/// by the first transform, another only when a transform finds every started
/// thread busy), and live as long as the process. A panic inside swc is
/// caught on the transform thread and reported as [`TsError::Internal`]; the thread
/// lives on.
///
/// Transforms wait in a queue of [`TRANSFORM_QUEUE_SLOTS_PER_THREAD`] `×`
/// the thread count. When it is full, a
/// new transform waits for a free slot: [`transform`] and [`transform_with`]
/// block their thread, the future of [`transform_async`] stays pending until
/// a transform thread takes a queued job. Nothing is dropped and nothing fails
/// because the threads are busy.
///
/// ```
/// assert!(codemode_ts::transform_thread_count() >= 2);
/// ```
pub fn transform_thread_count() -> usize {
    threads::thread_count()
}

/// Transform threads started so far in this process (never more than
/// [`transform_thread_count`]). For tests.
#[doc(hidden)]
pub fn transform_threads_started() -> usize {
    threads::transform_threads().threads_started()
}

fn check_size(source: &str, options: &TransformOptions) -> Result<(), TsError> {
    if source.len() > options.max_source_bytes {
        return Err(TsError::SourceTooLarge {
            actual: source.len(),
            limit: options.max_source_bytes,
        });
    }
    Ok(())
}

/// The nesting bound of `source`, as a [`TsError::NestingTooDeep`] at the
/// user's position.
fn check_nesting(source: &str, limit: usize) -> Result<(), TsError> {
    codemode_jslex::check_nesting(source, limit).map_err(|offset| {
        let position = LineColumn::of_offset(source, offset);
        TsError::NestingTooDeep {
            limit,
            line: position.line,
            column: position.column,
        }
    })
}

/// The whole transform, on the current thread (a transform thread).
fn transform_on_this_thread(source: &str, options: &TransformOptions) -> Result<String, TsError> {
    check_nesting(source, options.max_nesting_depth)?;
    CellWrapper::for_source(source).transform(source, options.max_nesting_depth)
}
