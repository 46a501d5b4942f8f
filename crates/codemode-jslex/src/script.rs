//! Reading a program the way QuickJS reads the body of the sandbox's async function: where its
//! brackets open and close, where `import` and `require(` appear in code, and how many names it
//! holds, over every way its `/` can be read.
//!
//! The sandbox compiles a program as the body of `(async function anonymous(\n) {\n` + program +
//! `\n})`. Two things must hold of that text, and [`Verdict`] has what is needed to check them in
//! time linear in the program's length:
//!
//! - no `import` / `import()` / `import.meta` / `require(` in code (strings, comments, regular
//!   expressions and template text do not count);
//! - the program cannot close the wrapper: every `)`, `]`, `}` closes an opener of the program
//!   itself, and nothing the program leaves open (a comment, a template literal) swallows the
//!   wrapper's closing `\n})`. Otherwise `}); evil(); (async function () {` runs `evil()` while
//!   the function is being *compiled*.
//!
//! # Where a `/` starts a regular expression
//! That is the one hard question for a JavaScript tokenizer, and it is answered like sweet.js /
//! esprima do, from the previous significant token and a stack of open brackets that remembers
//! what each bracket opened (a `Context` records the answer for the next token):
//!
//! - After a value (identifier, literal, `]`): division. After an operator, `(`, `[`, `,`, `;`,
//!   `?`, `=>`, at the start of a statement, or after `return typeof instanceof in new delete void
//!   throw case extends do else`: a regular expression.
//! - After `)`: a regular expression only if the `(` followed `if`, `while`, `for` (also
//!   `for await`) or `with`; division otherwise.
//! - After `}`: a regular expression when the `{` opened a statement block, the body of a
//!   function or class *declaration*, or an arrow function body (whose `}` can only be followed
//!   by `/` through automatic semicolon insertion); division when it opened an object literal or
//!   the body of a function or class *expression*. A `}` that ends a template substitution
//!   continues the template text.
//! - `{` opens a block at the start of a statement (after `;`, `{`, `}`, `)` of a statement
//!   header, `else`, `do`, `try`, `finally`, a label's or a `case`'s `:`, `return` followed by a
//!   line break, and after a value, where only a line break can make it legal); it opens an object
//!   literal where an operand is expected (after `(`, `[`, `,`, `=`, an operator, `?`, the `:` of
//!   an object property or of `?:`, `return` on the same line, `typeof`...); after `=>` it opens an
//!   arrow body; after the `)` of `function name(...)` a function body; after `class`, its name or
//!   its `extends` clause a class body. `function` and `class` are expressions or declarations by
//!   the same rule as `{` (object literal position = expression).
//! - `++`/`--` are postfix (then `/` divides) after a value on the same line, prefix otherwise.
//! - A `:` is a label's or a `case`'s in a statement list (statement start), an object property's
//!   inside an object literal, and a conditional's when the same bracket level has an open `?`.
//!
//! # Failing closed
//! Some answers cannot be known by a tokenizer: `await`, `yield` and `of` are keywords in some
//! functions and plain identifiers in others, so `await /x/` may be a regular expression or a
//! division, and a `{` on the line after them a block or an object literal (then the `/` after
//! its `}` is unknown too, as after a function or class whose position is). At every such `/`
//! the program is read *both ways*: the scan forks into two readings, and a program is refused
//! when any reading finds module access or a bracket closing the wrapper. A reading is only
//! dropped when QuickJS would reject the program if it read it that way: a lexical error (an
//! unterminated regular expression, string, comment or template) or a closing bracket of the
//! wrong kind (`(]`), which no JavaScript parser accepts. The first reading in which that happens
//! stops there; the program is refused with its error only if *every* reading is invalid, since
//! otherwise QuickJS reads it one of the other ways, which are all checked. (A closing bracket
//! with no opener is the opposite case: QuickJS accepts it by closing the wrapper.)
//! Where several readings find an escaping bracket or an error, the earliest is reported.
//! Readings advance together, the one furthest behind first, and two readings that reach the
//! same state at the same place merge (they usually do within a few tokens: `await /a/;` and
//! `await / a / ;` agree again after the `;`): the crate's one forking driver, shared with
//! [`check_nesting`](crate::check_nesting). The readings alive at once are bounded by
//! [`MAX_READINGS`](crate::MAX_READINGS), their total work by 4 times the program's length (plus
//! 64 KiB), and bracket nesting by [`MAX_NESTING`]; beyond any of these the program is refused.
//! So the checks are linear in the program's length, and nothing recurses.
//!
//! Keywords written with `\u` escapes are identifiers to QuickJS (reserved ones cannot be used),
//! and are read as such; `import` and `require` are recognised escaped or not.
//!
//! Other deliberate refusals of legal code: `import` used as a method or class field name
//! (`{ import() {} }`); `require` followed by a template (`` require`x` ``) or `?.(`.
//!
//! The lexical details follow QuickJS (quickjs-ng): its whitespace and line terminators (U+2028
//! and U+2029 end a `//` comment and count as line breaks), Annex B HTML-like comments (`<!--`
//! where a token starts, so not right after `<<`; `-->` at the start of a line), escapes in
//! strings, templates and regular expressions, `\u` escapes in identifiers (`\u0069mport` is
//! `import`), `?.` versus `? .5`.

use std::cell::{Cell, RefCell};
use std::rc::Rc;

use crate::readings;

mod context;
mod reading;
mod scan;

pub use context::Slash;
use context::SlashLog;
use reading::Reading;

/// The deepest bracket nesting a checked program may have; deeper programs are refused with
/// as too deep ([`Verdict::limit`]). QuickJS's own parser gives up far earlier under the default stack limit.
pub const MAX_NESTING: usize = 10_000;

/// The scanning work allowed for all readings of a program, in multiples of its length; with
/// `WORK_SLACK` it keeps the checks linear in the program's length.
const WORK_FACTOR: usize = 4;

/// Bytes of scanning work allowed on top of `WORK_FACTOR` times the program's length.
const WORK_SLACK: usize = 1 << 16;

/// What the readings of one program found.
///
/// # Example
/// ```
/// use codemode_jslex::Verdict;
///
/// let verdict = Verdict::of("const x = await import('fs');");
/// assert_eq!(verdict.module_access, Some(16));
/// let verdict = Verdict::of("}); evil(); (async function () {");
/// assert_eq!(
///     verdict.escape.map(|refusal| refusal.message("}")),
///     Some("unexpected `}` closes the code mode function body (line 1, column 1)".to_owned())
/// );
/// ```
#[derive(Debug)]
#[non_exhaustive]
pub struct Verdict {
    /// Names counted over all readings (an over-count where readings fork).
    pub names: usize,
    /// The first `import` / `require(` in code, over all readings (a byte offset).
    pub module_access: Option<usize>,
    /// The first bracket that closes what the program did not open, over all readings.
    pub escape: Option<Refusal>,
    /// A lexical error, kept only when every reading has one (QuickJS then cannot parse it): the
    /// earliest.
    pub invalid: Option<Refusal>,
    /// A limit that stopped the readings: too deep, too many readings or too much work. When
    /// set, the other findings are incomplete.
    pub limit: Option<Refusal>,
}

impl Verdict {
    /// Reads `program` every way it can be read.
    #[must_use]
    pub fn of(program: &str) -> Self {
        Self::read(program, None)
    }

    fn read(program: &str, slashes: Option<SlashLog>) -> Self {
        let names = Rc::new(Cell::new(0));
        let ids = Rc::new(Cell::new(1));
        let first = Reading::new(program, ids, Rc::clone(&names), slashes);
        let budget = program.len().saturating_mul(WORK_FACTOR);
        let Ok(followed) = readings::follow(vec![first], budget.saturating_add(WORK_SLACK));
        let mut verdict = Verdict {
            names: 0,
            module_access: None,
            escape: None,
            invalid: None,
            limit: followed.limit.map(|at| Refusal {
                at,
                reason: Reason::TooAmbiguous,
            }),
        };
        let (mut reading_limit, mut first_invalid, mut all_invalid) = (None, None, true);
        for reading in followed.ended {
            if let Some(at) = reading.module_access {
                verdict.module_access = Some(verdict.module_access.map_or(at, |seen| seen.min(at)));
            }
            verdict.escape = earliest(verdict.escape, reading.escape);
            reading_limit = earliest(reading_limit, reading.limit);
            all_invalid &= reading.invalid.is_some();
            first_invalid = earliest(first_invalid, reading.invalid);
        }
        verdict.limit = verdict.limit.or(reading_limit);
        verdict.invalid = first_invalid.filter(|_| all_invalid);
        verdict.names = names.get();
        verdict
    }

    /// The refusal of a program whose brackets or literals could let it out of the function
    /// it is compiled into: an escaping bracket first, then an error of every reading.
    #[must_use]
    pub fn body(&self) -> Option<&Refusal> {
        self.escape.as_ref().or(self.invalid.as_ref())
    }
}

/// Where each reading of `program` met a `/` token (not a comment) and how it read it, by offset
/// (each offset once), with the [`Verdict`]: what a fuzzer compares with a parser's choices. A
/// [`Slash::Either`] means the readings forked there.
#[doc(hidden)]
#[must_use]
pub fn slash_readings(program: &str) -> (Verdict, Vec<(usize, Slash)>) {
    let log = Rc::new(RefCell::new(Vec::new()));
    let verdict = Verdict::read(program, Some(Rc::clone(&log)));
    let mut slashes = log.take();
    slashes.sort_by_key(|&(at, _)| at);
    slashes.dedup_by(|later, earlier| {
        if later.0 != earlier.0 {
            return false;
        }
        if later.1 != earlier.1 {
            earlier.1 = Slash::Either;
        }
        true
    });
    (verdict, slashes)
}

/// Why a program is refused, and where.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Refusal {
    /// A byte offset into the program.
    pub at: usize,
    /// What is wrong there.
    pub reason: Reason,
}

/// What is wrong with a program, for [`Refusal`].
#[derive(Clone, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum Reason {
    /// A closing bracket with no opener: it would close the wrapper function.
    Unopened(char),
    /// A closing bracket of another kind than the innermost open one (opened at `open_at`):
    /// the reading is invalid (QuickJS cannot parse it that way).
    Mismatched {
        /// The closing bracket.
        close: char,
        /// The innermost open bracket (`$` for a template substitution's `${`).
        open: char,
        /// Where that bracket opened (a byte offset).
        open_at: usize,
    },
    /// A literal or comment that does not end.
    Unterminated(&'static str),
    /// Brackets nested deeper than [`MAX_NESTING`].
    TooDeep,
    /// More than [`MAX_READINGS`](crate::MAX_READINGS) readings.
    TooAmbiguous,
}

impl Refusal {
    /// The refusal in words, with its 1-based line and column in `program`, such as
    /// ``unexpected `}` closes the code mode function body (line 1, column 1)``.
    #[must_use]
    pub fn message(&self, program: &str) -> String {
        let (line, column) = line_column(program, self.at);
        let text = match &self.reason {
            Reason::Unopened(close) => {
                format!("unexpected `{close}` closes the code mode function body")
            }
            Reason::Mismatched {
                close,
                open,
                open_at,
            } => {
                let (open_line, open_column) = line_column(program, *open_at);
                format!(
                    "unexpected `{close}`: the `{open}` at line {open_line}, column {open_column} is not closed"
                )
            }
            Reason::Unterminated(what) => format!("unterminated {what}"),
            Reason::TooDeep => format!("brackets nest deeper than {MAX_NESTING} levels"),
            Reason::TooAmbiguous => "too many ways to read the `/` after `await`, `yield` or `of`; the program cannot be checked".to_owned(),
        };
        format!("{text} (line {line}, column {column})")
    }
}

/// The refusal at the smaller offset (the first given on a tie), so that what the readings find
/// does not depend on the order they end or merge in.
fn earliest(first: Option<Refusal>, second: Option<Refusal>) -> Option<Refusal> {
    match (first, second) {
        (Some(first), Some(second)) if second.at < first.at => Some(second),
        (first, second) => first.or(second),
    }
}

/// 1-based line and column (in characters) of a byte offset; lines end at `\n`.
fn line_column(program: &str, at: usize) -> (usize, usize) {
    let before = program.get(..at).unwrap_or(program);
    let line = before.matches('\n').count() + 1;
    let line_start = before.rfind('\n').map_or(0, |newline| newline + 1);
    let column = before
        .get(line_start..)
        .map_or(0, |text| text.chars().count())
        + 1;
    (line, column)
}
