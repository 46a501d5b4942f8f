//! The JavaScript tokenizer behind the checks run on a program before it is compiled:
//! [`check_module_access`](crate::check_module_access) and [`check_body`].
//!
//! The sandbox compiles a program with `new AsyncFunction(program)`; QuickJS then evaluates the
//! text `(async function anonymous(\n) {\n` + program + `\n})`. Two things must hold of that text,
//! and this module checks them with a tokenizer (no parser), in time linear in the program's
//! length:
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
//! Readings advance together, the one furthest behind first, and two readings that reach the
//! same state at the same place merge (they usually do within a few tokens: `await /a/;` and
//! `await / a / ;` agree again after the `;`). The readings alive at once are bounded by
//! [`MAX_READINGS`], their total work by 4 times the program's length (plus 64 KiB), and bracket
//! nesting by [`MAX_NESTING`]; beyond any of these the program is refused. So the checks are
//! linear in the program's length, and nothing recurses.
//!
//! Keywords written with `\u` escapes are identifiers to QuickJS (reserved ones cannot be used),
//! and are read as such; `import` and `require` are recognised escaped or not.
//!
//! Other deliberate refusals of legal code: `import` used as a method or class field name
//! (`{ import() {} }`); `require` followed by a template (`` require`x` ``) or `?.(`.
//!
//! The lexical details follow QuickJS (quickjs-ng): its whitespace and line terminators (U+2028
//! and U+2029 end a `//` comment and count as line breaks), Annex B HTML-like comments (`<!--`
//! anywhere, `-->` at the start of a line), escapes in strings, templates and regular
//! expressions, `\u` escapes in identifiers (`\u0069mport` is `import`), `?.` versus `? .5`.

use std::cell::Cell;
use std::rc::Rc;

use crate::RunError;

/// The deepest bracket nesting a checked program may have; deeper programs are refused with
/// [`RunError::Syntax`]. QuickJS's own parser gives up far earlier under the default stack limit.
pub const MAX_NESTING: usize = 10_000;

/// How many readings of one program the checks follow at once at most (see the module docs:
/// each `/` whose meaning depends on whether `await`, `yield` or `of` is a keyword forks the
/// scan, and readings that reach the same state merge again). A program needing more, or whose
/// readings together scan more than 4 times its length (plus 64 KiB), is refused with
/// [`RunError::Syntax`].
pub const MAX_READINGS: usize = 16;

/// The scanning work allowed for all readings of a program, in multiples of its length; with
/// `WORK_SLACK` it keeps the checks linear in the program's length.
const WORK_FACTOR: usize = 4;

/// Bytes of scanning work allowed on top of `WORK_FACTOR` times the program's length.
const WORK_SLACK: usize = 1 << 16;

/// Refuses a program that could close the async function it is compiled into.
///
/// The sandbox compiles a program as the body of `(async function anonymous(\n) {\n` + program +
/// `\n})`. This check refuses:
/// - a `)`, `]` or `}` that closes no opener of the program (it would close the wrapper, and the
///   code after it would run while the program is compiled), or closes an opener of another kind
///   (`(]`, a syntax error anyway);
/// - a program ending inside a template literal or a block comment, or containing an
///   unterminated string or regular expression literal (these could swallow the wrapper's end);
/// - a program nesting brackets deeper than [`MAX_NESTING`], or too ambiguous to tokenize within
///   [`MAX_READINGS`] readings.
///
/// It is not a parser: brackets left open at the end are left for QuickJS to report, and any
/// other syntax error too. It runs in time linear in the program's length, without recursion.
///
/// # Errors
/// [`RunError::Syntax`] with a message such as ``SyntaxError: unexpected `}` closes the code mode
/// function body (line 1, column 1)``.
///
/// # Example
/// ```
/// use codemode_sandbox::{RunError, check_body};
///
/// assert!(check_body("const o = { a: [1, 2] }; return `${o.a.map((x) => x / 2)}`;").is_ok());
/// let error = check_body("}); while (true) {} (async function () {").unwrap_err();
/// assert_eq!(
///     error,
///     RunError::Syntax(
///         "SyntaxError: unexpected `}` closes the code mode function body (line 1, column 1)".into()
///     )
/// );
/// ```
pub fn check_body(program: &str) -> Result<(), RunError> {
    let verdict = Verdict::of(program);
    verdict.limits(program)?;
    verdict.body(program)
}

/// [`check_module_access`](crate::check_module_access) and [`check_body`] in one pass over the
/// program, and the bound on its names ([`MAX_PROGRAM_NAMES`]): what the sandbox runs before it
/// compiles a program.
///
/// # Errors
/// [`RunError::ModuleAccess`] first, then the [`RunError::Syntax`] errors of [`check_body`], then
/// [`RunError::ProgramTooComplex`].
///
/// # Example
/// ```
/// use codemode_sandbox::{RunError, check_program};
///
/// assert!(check_program("return [1, 2].map((x) => x / 2);").is_ok());
/// assert_eq!(check_program("a++ / import('fs') / 1"), Err(RunError::ModuleAccess));
/// assert!(matches!(check_program("})(); (async function () {"), Err(RunError::Syntax(_))));
/// ```
pub fn check_program(program: &str) -> Result<(), RunError> {
    let verdict = Verdict::of(program);
    verdict.limits(program)?;
    verdict.module_access()?;
    verdict.body(program)?;
    if verdict.names > MAX_PROGRAM_NAMES {
        return Err(RunError::ProgramTooComplex {
            names: verdict.names,
            limit: MAX_PROGRAM_NAMES,
        });
    }
    Ok(())
}

/// Whether any reading of `program` contains module access; the errors of the readings' limits
/// (too deep, too ambiguous) come first, since then the program was not fully checked.
pub(crate) fn check_module_access_only(program: &str) -> Result<(), RunError> {
    let verdict = Verdict::of(program);
    verdict.limits(program)?;
    verdict.module_access()
}

/// Most names (declarations and references, keywords included) a program may hold.
///
/// QuickJS resolves each name by walking the declarations of its scopes, and checks each new
/// declaration against the others of its scope, so compiling costs up to the square of the
/// number of names, and the compiler cannot be interrupted. 20,000 names (far more than any cell
/// written to orchestrate tools) compile in well under the deadline grace; a program of 80,000
/// `let` lines took seconds.
pub const MAX_PROGRAM_NAMES: usize = 20_000;

/// What the readings of one program found.
struct Verdict {
    /// Names counted over all readings (an over-count where readings fork).
    names: usize,
    /// The first `import` / `require(` in code, over all readings.
    module_access: Option<usize>,
    /// The first bracket that closes what the program did not open, over all readings.
    escape: Option<Refusal>,
    /// A lexical error, kept only when every reading has one (QuickJS then cannot parse it).
    invalid: Option<Refusal>,
    /// A limit that stopped the checks: too deep or too many readings.
    limit: Option<Refusal>,
}

impl Verdict {
    fn of(program: &str) -> Self {
        let ids = Rc::new(Cell::new(1));
        let names = Rc::new(Cell::new(0));
        let mut live = vec![Reading::new(program, Rc::clone(&ids), Rc::clone(&names))];
        let mut finished = Vec::new();
        let mut verdict = Verdict {
            names: 0,
            module_access: None,
            escape: None,
            invalid: None,
            limit: None,
        };
        // Readings advance in step, the one furthest behind first, so that two readings that
        // reach the same state at the same place (they usually do within a few tokens) merge.
        let budget = program
            .len()
            .saturating_mul(WORK_FACTOR)
            .saturating_add(WORK_SLACK);
        let mut work = 0usize;
        let mut spawned = Vec::new();
        while let Some(index) = live
            .iter()
            .enumerate()
            .min_by_key(|(_, reading)| reading.pos)
            .map(|(index, _)| index)
        {
            let Some(reading) = live.get_mut(index) else {
                break;
            };
            let before = reading.pos;
            let more = reading.step(&mut spawned);
            work = work.saturating_add(reading.pos.saturating_sub(before).max(1));
            let at = reading.pos;
            if !more {
                finished.push(live.swap_remove(index));
            } else {
                let twin = (0..live.len()).find(|&other| {
                    other != index
                        && live
                            .get(other)
                            .zip(live.get(index))
                            .is_some_and(|(a, b)| a.same_state(b))
                });
                if let Some(other) = twin {
                    let merged = live.swap_remove(index);
                    // `swap_remove` moved the last reading to `index`.
                    let other = if other == live.len() { index } else { other };
                    if let Some(keeper) = live.get_mut(other) {
                        keeper.absorb(merged);
                    }
                }
            }
            live.append(&mut spawned);
            if live.len() > MAX_READINGS || work > budget {
                verdict.limit = Some(Refusal {
                    at,
                    reason: Reason::TooAmbiguous,
                });
                break;
            }
        }
        let mut first_invalid = None;
        let mut all_invalid = true;
        for mut reading in finished {
            if let Some(at) = reading.module_access {
                verdict.module_access = Some(verdict.module_access.map_or(at, |seen| seen.min(at)));
            }
            if verdict.escape.is_none() {
                verdict.escape = reading.escape.take();
            }
            if let Some(limit) = reading.limit.take() {
                verdict.limit.get_or_insert(limit);
            }
            match reading.invalid.take() {
                Some(refusal) => {
                    first_invalid.get_or_insert(refusal);
                }
                None => all_invalid = false,
            }
        }
        if all_invalid {
            verdict.invalid = first_invalid;
        }
        verdict.names = names.get();
        verdict
    }

    fn limits(&self, program: &str) -> Result<(), RunError> {
        match &self.limit {
            Some(refusal) => Err(refusal.to_error(program)),
            None => Ok(()),
        }
    }

    fn module_access(&self) -> Result<(), RunError> {
        match self.module_access {
            Some(_) => Err(RunError::ModuleAccess),
            None => Ok(()),
        }
    }

    fn body(&self, program: &str) -> Result<(), RunError> {
        match self.escape.as_ref().or(self.invalid.as_ref()) {
            Some(refusal) => Err(refusal.to_error(program)),
            None => Ok(()),
        }
    }
}

/// Why a program is refused, and where (a byte offset into the program).
#[derive(Clone, Debug)]
struct Refusal {
    at: usize,
    reason: Reason,
}

#[derive(Clone, Debug)]
enum Reason {
    /// A closing bracket with no opener: it would close the wrapper function.
    Unopened(char),
    /// A closing bracket of another kind than the innermost open one (opened at `open_at`):
    /// the reading is invalid (QuickJS cannot parse it that way).
    Mismatched {
        close: char,
        open: char,
        open_at: usize,
    },
    /// A literal or comment that does not end.
    Unterminated(&'static str),
    /// Brackets nested deeper than [`MAX_NESTING`].
    TooDeep,
    /// More than [`MAX_READINGS`] readings.
    TooAmbiguous,
}

impl Refusal {
    fn to_error(&self, program: &str) -> RunError {
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
        RunError::Syntax(format!(
            "SyntaxError: {text} (line {line}, column {column})"
        ))
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

/// What a `/` means at some point.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Slash {
    Regex,
    Division,
    /// Unknown to a tokenizer: read both ways.
    Either,
}

/// What a `{` opens at some point, when no pending function or class decides it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BraceGuess {
    Block,
    Object,
    Unknown,
}

/// Whether a `function` or `class` keyword at some point starts an expression or a declaration.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Position {
    Expression,
    Declaration,
    Unknown,
}

/// What the next token means, as decided by the tokens before it.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Context {
    slash: Slash,
    brace: BraceGuess,
    function: Position,
}

/// A statement may start: `/` is a regular expression, `{` a block, `function` a declaration.
const STATEMENT: Context = Context {
    slash: Slash::Regex,
    brace: BraceGuess::Block,
    function: Position::Declaration,
};
/// An operand is expected: `/` is a regular expression, `{` an object, `function` an expression.
const OPERAND: Context = Context {
    slash: Slash::Regex,
    brace: BraceGuess::Object,
    function: Position::Expression,
};
/// A value just ended: `/` divides; `{` and `function` can only follow by automatic semicolon
/// insertion, so they start a statement.
const VALUE: Context = Context {
    slash: Slash::Division,
    brace: BraceGuess::Block,
    function: Position::Declaration,
};

impl Context {
    /// The context of a point that is `self` in one reading and `other` in another.
    fn or(self, other: Context) -> Context {
        Context {
            slash: if self.slash == other.slash {
                self.slash
            } else {
                Slash::Either
            },
            brace: if self.brace == other.brace {
                self.brace
            } else {
                BraceGuess::Unknown
            },
            function: if self.function == other.function {
                self.function
            } else {
                Position::Unknown
            },
        }
    }
}

/// `await`, `yield` (keyword or identifier) and `of` inside a `for (...)` header.
const AWAIT_SAME_LINE: Context = Context {
    slash: Slash::Either,
    brace: BraceGuess::Object,
    function: Position::Expression,
};
const AWAIT_NEW_LINE: Context = Context {
    slash: Slash::Either,
    brace: BraceGuess::Unknown,
    function: Position::Unknown,
};

/// The previous significant token: what it makes of the next one, on the same line and after a
/// line break, plus the few tokens that decide what a following `(` or `{` opens.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
struct Prev {
    tag: Tag,
    same_line: Context,
    new_line: Context,
}

impl Prev {
    fn plain(context: Context) -> Self {
        Prev {
            tag: Tag::None,
            same_line: context,
            new_line: context,
        }
    }

    fn tagged(tag: Tag, context: Context) -> Self {
        Prev {
            tag,
            same_line: context,
            new_line: context,
        }
    }
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Tag {
    None,
    /// `.` or `?.`: the next identifier is a property name.
    Dot,
    /// `function`, `function*` or `function name`: the next `(` opens its parameters.
    Function(Position),
    /// `class` or `class Name`: the next `{` opens its body.
    Class(Position),
    /// `async` on the same line as a following `function`, which has this position.
    Async(Position),
    /// `if`, `while`, `with`, `for` (`for await`): the next `(` opens a statement header.
    Header {
        is_for: bool,
    },
    /// `=>`: the next `{` opens an arrow body.
    Arrow,
    /// The `)` closing a function's parameters: the next `{` opens its body.
    Parameters(Position),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Level {
    /// The program itself: a statement list.
    Root,
    Paren(ParenKind),
    Bracket,
    /// `${` of a template literal.
    Substitution,
    Brace(BraceKind),
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum ParenKind {
    Header { is_for: bool },
    Parameters(Position),
    Other,
}

#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum BraceKind {
    Block,
    Object,
    /// A block or an object literal: the readings differ.
    Unknown,
    Arrow,
    Function(Position),
    Class(Position),
}

impl BraceKind {
    /// What follows the `}` that closes this brace.
    fn after_close(self) -> Context {
        let after_body = |position| match position {
            Position::Expression => VALUE,
            Position::Declaration => STATEMENT,
            Position::Unknown => VALUE.or(STATEMENT),
        };
        match self {
            BraceKind::Block | BraceKind::Arrow => STATEMENT,
            BraceKind::Object => VALUE,
            BraceKind::Unknown => VALUE.or(STATEMENT),
            BraceKind::Function(position) | BraceKind::Class(position) => after_body(position),
        }
    }

    /// What follows the `{` itself.
    fn after_open(self) -> Context {
        match self {
            BraceKind::Object => OPERAND,
            BraceKind::Unknown => OPERAND.or(STATEMENT),
            _ => STATEMENT,
        }
    }
}

/// One open bracket: what it opened, where, and how many `?` of a conditional wait for their
/// `:` at this level.
#[derive(Clone, Copy, Debug)]
struct Open {
    level: Level,
    at: usize,
    conditionals: u32,
    /// Unique to this push (and renewed when `conditionals` changes); see `same_state`.
    id: u64,
}

/// How the reading ended a literal or comment scan.
enum Scan {
    Done,
    Unterminated(&'static str),
}

/// One way of reading the program, token by token.
#[derive(Clone)]
struct Reading<'a> {
    /// The next stack entry id, shared by all readings of one program.
    ids: Rc<Cell<u64>>,
    /// Names (identifiers other than property names after `.`) seen by all readings together.
    names: Rc<Cell<usize>>,
    text: &'a str,
    bytes: &'a [u8],
    pos: usize,
    prev: Prev,
    /// A line terminator since the previous significant token (true at the start: the wrapper
    /// puts the program on a line of its own).
    newline: bool,
    /// Never empty: `opens[0]` is the program itself.
    opens: Vec<Open>,
    /// Classes whose body is still to come (after an `extends` clause), by bracket depth.
    classes: Vec<(usize, Position)>,
    /// An `import` that is module access unless the next token is `:` (a property name).
    import_at: Option<usize>,
    /// A `require` that is module access if the next token is `(`, `?.` or a template.
    require_at: Option<usize>,
    module_access: Option<usize>,
    escape: Option<Refusal>,
    invalid: Option<Refusal>,
    limit: Option<Refusal>,
}

/// Keywords after which an operand is expected (a `/` starts a regular expression).
const OPERAND_KEYWORDS: &[&str] = &[
    "typeof",
    "instanceof",
    "in",
    "new",
    "delete",
    "void",
    "throw",
    "case",
    "extends",
    "var",
    "const",
];

/// Keywords after which a statement starts.
const STATEMENT_KEYWORDS: &[&str] = &[
    "else", "do", "try", "finally", "break", "continue", "debugger",
];

impl<'a> Reading<'a> {
    fn new(text: &'a str, ids: Rc<Cell<u64>>, names: Rc<Cell<usize>>) -> Self {
        Reading {
            ids,
            names,
            text,
            bytes: text.as_bytes(),
            pos: 0,
            prev: Prev::plain(STATEMENT),
            newline: true,
            opens: vec![Open {
                level: Level::Root,
                at: 0,
                conditionals: 0,
                id: 0,
            }],
            classes: Vec::new(),
            import_at: None,
            require_at: None,
            module_access: None,
            escape: None,
            invalid: None,
            limit: None,
        }
    }

    fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos.saturating_add(offset)).copied()
    }

    fn starts_with(&self, prefix: &[u8]) -> bool {
        self.bytes
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(prefix))
    }

    fn char_at(&self, pos: usize) -> Option<char> {
        self.text.get(pos..).and_then(|rest| rest.chars().next())
    }

    fn top(&self) -> Level {
        self.opens.last().map_or(Level::Root, |open| open.level)
    }

    fn found_module_access(&mut self, at: usize) {
        self.module_access.get_or_insert(at);
    }

    fn escaped(&mut self, at: usize, reason: Reason) {
        if self.escape.is_none() {
            self.escape = Some(Refusal { at, reason });
        }
    }

    /// Reads one token, pushing the other reading of an ambiguous `/` into `forks`. Returns
    /// false when the reading is over: at the end of the program (after the end checks), at its
    /// first lexical error, or at a limit.
    fn step(&mut self, forks: &mut Vec<Reading<'a>>) -> bool {
        if let Scan::Unterminated(what) = self.skip_trivia() {
            self.invalid = Some(Refusal {
                at: self.pos,
                reason: Reason::Unterminated(what),
            });
            return false;
        }
        let Some(byte) = self.peek(0) else {
            self.finish();
            return false;
        };
        let start = self.pos;
        let context = if self.newline {
            self.prev.new_line
        } else {
            self.prev.same_line
        };
        self.resolve_pending(byte);
        let outcome = self.token(byte, context, forks);
        self.newline = false;
        if let Scan::Unterminated(what) = outcome {
            self.invalid = Some(Refusal {
                at: start,
                reason: Reason::Unterminated(what),
            });
        }
        self.invalid.is_none() && self.limit.is_none()
    }

    /// The checks at the end of the program.
    fn finish(&mut self) {
        if let Some(at) = self.import_at.take() {
            self.found_module_access(at);
        }
        // A template substitution still open at the end: the wrapper's `}` would end it and the
        // rest of the wrapper would be template text.
        if let Some(open) = self
            .opens
            .iter()
            .find(|open| open.level == Level::Substitution)
        {
            self.invalid = Some(Refusal {
                at: open.at,
                reason: Reason::Unterminated("template literal"),
            });
        }
    }

    /// Whether `other` is in the same state: from here on both readings read alike. Stacks are
    /// compared by their top entry's id, unique to one push (or change) and inherited by forks,
    /// so equal ids mean the same entries all the way down.
    fn same_state(&self, other: &Reading<'_>) -> bool {
        self.pos == other.pos
            && self.newline == other.newline
            && self.prev == other.prev
            && self.opens.last().map(|open| open.id) == other.opens.last().map(|open| open.id)
            && self.classes == other.classes
            && self.import_at == other.import_at
            && self.require_at == other.require_at
    }

    /// Takes over the findings of a reading in the same state.
    fn absorb(&mut self, other: Reading<'_>) {
        if let Some(at) = other.module_access {
            self.module_access = Some(self.module_access.map_or(at, |seen| seen.min(at)));
        }
        if self.escape.is_none() {
            self.escape = other.escape;
        }
    }

    /// A fresh id for a stack entry that is pushed or changed.
    fn next_id(&self) -> u64 {
        let id = self.ids.get();
        self.ids.set(id.wrapping_add(1));
        id
    }

    /// Decides a pending `import` or `require` by the token that follows it.
    fn resolve_pending(&mut self, byte: u8) {
        if let Some(at) = self.import_at.take()
            && byte != b':'
        {
            self.found_module_access(at);
        }
        if let Some(at) = self.require_at.take() {
            let optional_call = self.starts_with(b"?.") && !self.peek(2).is_some_and(is_digit);
            if byte == b'(' || byte == b'`' || optional_call {
                self.found_module_access(at);
            }
        }
    }

    /// Skips whitespace and comments, noting line terminators.
    fn skip_trivia(&mut self) -> Scan {
        while let Some(byte) = self.peek(0) {
            match byte {
                b' ' | b'\t' | 0x0b | 0x0c => self.pos += 1,
                b'\n' | b'\r' => {
                    self.pos += 1;
                    self.newline = true;
                }
                b'/' if self.peek(1) == Some(b'/') => self.skip_line_comment(),
                b'/' if self.peek(1) == Some(b'*') => {
                    if let Scan::Unterminated(what) = self.skip_block_comment() {
                        return Scan::Unterminated(what);
                    }
                }
                // Annex B HTML-like comments, which QuickJS accepts in scripts.
                b'<' if self.starts_with(b"<!--") => self.skip_line_comment(),
                b'-' if self.newline && self.starts_with(b"-->") => self.skip_line_comment(),
                0x80.. => match self.char_at(self.pos) {
                    Some(c) if is_line_terminator(c) => {
                        self.pos += c.len_utf8();
                        self.newline = true;
                    }
                    Some(c) if is_space(c) => self.pos += c.len_utf8(),
                    _ => return Scan::Done,
                },
                _ => return Scan::Done,
            }
        }
        Scan::Done
    }

    fn skip_line_comment(&mut self) {
        while let Some(byte) = self.peek(0) {
            if byte == b'\n' || byte == b'\r' || self.at_unicode_line_terminator() {
                return;
            }
            self.pos += 1;
        }
    }

    /// U+2028 or U+2029 at the current position (`E2 80 A8` / `E2 80 A9`).
    fn at_unicode_line_terminator(&self) -> bool {
        self.starts_with(&[0xe2, 0x80, 0xa8]) || self.starts_with(&[0xe2, 0x80, 0xa9])
    }

    fn skip_block_comment(&mut self) -> Scan {
        self.pos += 2;
        while let Some(byte) = self.peek(0) {
            if byte == b'*' && self.peek(1) == Some(b'/') {
                self.pos += 2;
                return Scan::Done;
            }
            if byte == b'\n' || byte == b'\r' || self.at_unicode_line_terminator() {
                self.newline = true;
            }
            self.pos += 1;
        }
        Scan::Unterminated("block comment")
    }

    /// Consumes one token starting with `byte` in `context`.
    fn token(&mut self, byte: u8, context: Context, forks: &mut Vec<Reading<'a>>) -> Scan {
        let tag = self.prev.tag;
        match byte {
            b'/' => return self.slash(context, forks),
            b'\'' | b'"' => {
                let scan = self.skip_string(byte);
                self.prev = Prev::plain(VALUE);
                return scan;
            }
            b'`' => {
                self.pos += 1;
                return self.template_text();
            }
            // `function*`: still a function's head.
            b'*' if matches!(tag, Tag::Function(_)) => self.pos += 1,
            b'(' => {
                let kind = match tag {
                    Tag::Header { is_for } => ParenKind::Header { is_for },
                    Tag::Function(position) => ParenKind::Parameters(position),
                    _ => ParenKind::Other,
                };
                self.open(Level::Paren(kind));
                self.prev = Prev::plain(OPERAND);
            }
            b'[' => {
                self.open(Level::Bracket);
                self.prev = Prev::plain(OPERAND);
            }
            b'{' => {
                let kind = self.brace_kind(tag, context);
                self.open(Level::Brace(kind));
                self.prev = Prev::plain(kind.after_open());
            }
            b'}' | b')' | b']' => return self.close(byte),
            b';' => {
                self.pos += 1;
                self.prev = Prev::plain(match self.top() {
                    Level::Paren(_) | Level::Bracket | Level::Substitution => OPERAND,
                    Level::Brace(BraceKind::Object) => OPERAND,
                    _ => STATEMENT,
                });
            }
            b',' => {
                self.pos += 1;
                self.prev = Prev::plain(OPERAND);
            }
            b':' => {
                self.pos += 1;
                self.prev = Prev::plain(self.colon());
            }
            b'?' => {
                if self.starts_with(b"??") {
                    self.pos += if self.peek(2) == Some(b'=') { 3 } else { 2 };
                    self.prev = Prev::plain(OPERAND);
                } else if self.peek(1) == Some(b'.') && !self.peek(2).is_some_and(is_digit) {
                    self.pos += 2;
                    self.prev = Prev::tagged(Tag::Dot, VALUE);
                } else {
                    self.pos += 1;
                    let id = self.next_id();
                    if let Some(open) = self.opens.last_mut() {
                        open.conditionals = open.conditionals.saturating_add(1);
                        open.id = id;
                    }
                    self.prev = Prev::plain(OPERAND);
                }
            }
            b'.' => {
                if self.starts_with(b"...") {
                    self.pos += 3;
                    self.prev = Prev::plain(OPERAND);
                } else if self.peek(1).is_some_and(is_digit) {
                    self.skip_number();
                    self.prev = Prev::plain(VALUE);
                } else {
                    self.pos += 1;
                    self.prev = Prev::tagged(Tag::Dot, VALUE);
                }
            }
            b'=' if self.peek(1) == Some(b'>') => {
                self.pos += 2;
                self.prev = Prev::tagged(Tag::Arrow, OPERAND);
            }
            b'+' | b'-' if self.peek(1) == Some(byte) => {
                self.pos += 2;
                // No line break may precede a postfix `++`/`--`.
                self.prev = Prev::plain(match (self.newline, context.slash) {
                    (false, Slash::Division) => VALUE,
                    (false, Slash::Either) => VALUE.or(OPERAND),
                    _ => OPERAND,
                });
            }
            b'#' => {
                self.pos += 1;
                if self
                    .peek(0)
                    .is_some_and(|b| is_identifier_start(b) || b >= 0x80)
                {
                    self.identifier_text();
                    self.prev = Prev::plain(VALUE);
                } else {
                    self.prev = Prev::plain(OPERAND);
                }
            }
            b'0'..=b'9' => {
                self.skip_number();
                self.prev = Prev::plain(VALUE);
            }
            _ if is_identifier_start(byte) || byte >= 0x80 || byte == b'\\' => {
                self.identifier(context)
            }
            _ => {
                // Any other operator or punctuator (or a character QuickJS rejects).
                self.pos += 1;
                self.prev = Prev::plain(OPERAND);
            }
        }
        Scan::Done
    }

    /// A `/`: division, or a regular expression literal, or both (a fork).
    fn slash(&mut self, context: Context, forks: &mut Vec<Reading<'a>>) -> Scan {
        let start = self.pos;
        match context.slash {
            Slash::Regex => {
                let scan = self.skip_regex();
                self.prev = Prev::plain(VALUE);
                scan
            }
            Slash::Division => {
                self.division();
                Scan::Done
            }
            Slash::Either => {
                // The regular-expression reading, unless it is invalid (then QuickJS cannot
                // read it that way).
                if let Scan::Done = self.skip_regex() {
                    let mut regex = self.clone();
                    regex.prev = Prev::plain(VALUE);
                    regex.newline = false;
                    forks.push(regex);
                }
                self.pos = start;
                self.division();
                Scan::Done
            }
        }
    }

    fn division(&mut self) {
        self.pos += if self.peek(1) == Some(b'=') { 2 } else { 1 };
        self.prev = Prev::plain(OPERAND);
    }

    /// What a `{` opens, from the previous token and context.
    fn brace_kind(&mut self, tag: Tag, context: Context) -> BraceKind {
        match tag {
            Tag::Arrow => return BraceKind::Arrow,
            Tag::Parameters(position) => return BraceKind::Function(position),
            Tag::Class(position) => return BraceKind::Class(position),
            _ => {}
        }
        let depth = self.opens.len();
        if context.slash != Slash::Regex
            && let Some(&(class_depth, position)) = self.classes.last()
            && class_depth == depth
        {
            // The end of `class A extends <expression>`: the class body.
            self.classes.pop();
            return BraceKind::Class(position);
        }
        match context.brace {
            BraceGuess::Block => BraceKind::Block,
            BraceGuess::Object => BraceKind::Object,
            BraceGuess::Unknown => BraceKind::Unknown,
        }
    }

    /// What follows a `:`.
    fn colon(&mut self) -> Context {
        let id = self.next_id();
        let Some(open) = self.opens.last_mut() else {
            return STATEMENT;
        };
        if open.conditionals > 0 {
            open.conditionals -= 1;
            open.id = id;
            return OPERAND;
        }
        match open.level {
            // A label's or a `case`'s colon.
            Level::Root
            | Level::Brace(
                BraceKind::Block | BraceKind::Arrow | BraceKind::Function(_) | BraceKind::Class(_),
            ) => STATEMENT,
            Level::Brace(BraceKind::Unknown) => STATEMENT.or(OPERAND),
            Level::Brace(BraceKind::Object)
            | Level::Paren(_)
            | Level::Bracket
            | Level::Substitution => OPERAND,
        }
    }

    fn open(&mut self, level: Level) {
        if self.opens.len() > MAX_NESTING {
            self.limit = Some(Refusal {
                at: self.pos,
                reason: Reason::TooDeep,
            });
        }
        let id = self.next_id();
        self.opens.push(Open {
            level,
            at: self.pos,
            conditionals: 0,
            id,
        });
        self.pos += if level == Level::Substitution { 2 } else { 1 };
    }

    fn close(&mut self, byte: u8) -> Scan {
        let at = self.pos;
        self.pos += 1;
        let close = char::from(byte);
        let depth = self.opens.len();
        // Pending classes of this level can no longer get their body.
        self.classes.retain(|&(class_depth, _)| class_depth < depth);
        let open = if depth > 1 { self.opens.pop() } else { None };
        let Some(open) = open else {
            self.escaped(at, Reason::Unopened(close));
            // Read on as QuickJS would after closing the wrapper.
            self.prev = Prev::plain(if byte == b'}' { STATEMENT } else { VALUE });
            return Scan::Done;
        };
        let matched = match (open.level, byte) {
            (Level::Substitution, b'}') => return self.template_text(),
            (Level::Brace(kind), b'}') => Some(Prev::plain(kind.after_close())),
            (Level::Paren(ParenKind::Header { .. }), b')') => Some(Prev::plain(STATEMENT)),
            (Level::Paren(ParenKind::Parameters(position)), b')') => {
                Some(Prev::tagged(Tag::Parameters(position), VALUE))
            }
            (Level::Paren(ParenKind::Other), b')') | (Level::Bracket, b']') => {
                Some(Prev::plain(VALUE))
            }
            _ => None,
        };
        match matched {
            Some(prev) => self.prev = prev,
            None => {
                let open_char = match open.level {
                    Level::Paren(_) => '(',
                    Level::Bracket => '[',
                    Level::Substitution => '$',
                    Level::Brace(_) | Level::Root => '{',
                };
                // QuickJS cannot parse this reading past here: it is invalid, not an escape.
                self.invalid = Some(Refusal {
                    at,
                    reason: Reason::Mismatched {
                        close,
                        open: open_char,
                        open_at: open.at,
                    },
                });
            }
        }
        Scan::Done
    }

    /// Template text after `` ` `` or after the `}` of a substitution, up to the closing
    /// backtick (a value) or the next `${` (a substitution opens).
    fn template_text(&mut self) -> Scan {
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => self.pos += 2,
                b'`' => {
                    self.pos += 1;
                    self.prev = Prev::plain(VALUE);
                    return Scan::Done;
                }
                b'$' if self.peek(1) == Some(b'{') => {
                    self.open(Level::Substitution);
                    self.prev = Prev::plain(OPERAND);
                    return Scan::Done;
                }
                _ => self.pos += 1,
            }
        }
        Scan::Unterminated("template literal")
    }

    fn skip_string(&mut self, quote: u8) -> Scan {
        self.pos += 1;
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => {
                    // A line continuation may be `\` + CR LF.
                    self.pos += if self.starts_with(b"\\\r\n") { 3 } else { 2 };
                }
                b'\n' | b'\r' => return Scan::Unterminated("string literal"),
                _ if byte == quote => {
                    self.pos += 1;
                    return Scan::Done;
                }
                _ => self.pos += 1,
            }
        }
        Scan::Unterminated("string literal")
    }

    /// A regular expression literal from its opening `/`, flags included.
    fn skip_regex(&mut self) -> Scan {
        self.pos += 1;
        let mut in_class = false;
        loop {
            let Some(byte) = self.peek(0) else {
                return Scan::Unterminated("regular expression literal");
            };
            if byte == b'\n' || byte == b'\r' || self.at_unicode_line_terminator() {
                return Scan::Unterminated("regular expression literal");
            }
            self.pos += 1;
            match byte {
                b'\\' => {
                    if self.peek(0).is_none_or(|b| b == b'\n' || b == b'\r')
                        || self.at_unicode_line_terminator()
                    {
                        return Scan::Unterminated("regular expression literal");
                    }
                    self.pos += 1;
                }
                b'[' => in_class = true,
                b']' => in_class = false,
                b'/' if !in_class => break,
                _ => {}
            }
        }
        // Flags.
        while let Some(byte) = self.peek(0) {
            if is_identifier_part(byte) {
                self.pos += 1;
            } else if byte >= 0x80 {
                match self.char_at(self.pos) {
                    Some(c) if !is_space(c) && !is_line_terminator(c) => self.pos += c.len_utf8(),
                    _ => break,
                }
            } else {
                break;
            }
        }
        Scan::Done
    }

    fn skip_number(&mut self) {
        let radix_prefix = self.peek(0) == Some(b'0')
            && self
                .peek(1)
                .is_some_and(|b| matches!(b, b'x' | b'X' | b'o' | b'O' | b'b' | b'B'));
        if radix_prefix {
            self.pos += 2;
        } else {
            while self.peek(0).is_some_and(|b| is_digit(b) || b == b'_') {
                self.pos += 1;
            }
            if self.peek(0) == Some(b'.') {
                self.pos += 1;
                while self.peek(0).is_some_and(|b| is_digit(b) || b == b'_') {
                    self.pos += 1;
                }
            }
            if matches!(self.peek(0), Some(b'e' | b'E')) {
                let sign = usize::from(matches!(self.peek(1), Some(b'+' | b'-')));
                if self.peek(1 + sign).is_some_and(is_digit) {
                    self.pos += 1 + sign;
                }
            }
        }
        // Digits of other radixes, `_`, the BigInt `n` (QuickJS rejects an identifier right
        // after a number, so nothing else can follow here in a valid program).
        while self.peek(0).is_some_and(is_identifier_part) {
            self.pos += 1;
        }
    }

    /// Consumes an identifier's characters (escapes decoded) and returns its name, or `None`
    /// when it is longer than any keyword (only keywords matter here).
    fn identifier_text(&mut self) -> Option<String> {
        let mut name = String::new();
        let mut short = true;
        let mut push = |c: char, name: &mut String| {
            if name.len() < 16 {
                name.push(c);
            } else {
                short = false;
            }
        };
        while let Some(byte) = self.peek(0) {
            if is_identifier_part(byte) {
                push(char::from(byte), &mut name);
                self.pos += 1;
            } else if byte == b'\\' {
                match self.unicode_escape() {
                    Some((c, len)) => {
                        push(c, &mut name);
                        self.pos += len;
                    }
                    None => break,
                }
            } else if byte >= 0x80 {
                match self.char_at(self.pos) {
                    Some(c) if !is_space(c) && !is_line_terminator(c) => {
                        push(c, &mut name);
                        self.pos += c.len_utf8();
                    }
                    _ => break,
                }
            } else {
                break;
            }
        }
        short.then_some(name)
    }

    /// `\uXXXX` or `\u{X...}` at the current position: the character and the escape's length.
    fn unicode_escape(&self) -> Option<(char, usize)> {
        let rest = self.bytes.get(self.pos..)?;
        if rest.get(1) != Some(&b'u') {
            return None;
        }
        let (digits, len) = if rest.get(2) == Some(&b'{') {
            let close = rest.iter().skip(3).take(12).position(|&b| b == b'}')?;
            (rest.get(3..3 + close)?, 3 + close + 1)
        } else {
            (rest.get(2..6)?, 6)
        };
        if digits.is_empty() || !digits.iter().all(u8::is_ascii_hexdigit) {
            return None;
        }
        let value = u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()?;
        Some((char::from_u32(value)?, len))
    }

    /// An identifier or keyword.
    fn identifier(&mut self, context: Context) {
        let start = self.pos;
        let name = self.identifier_text();
        if self.pos == start {
            // A `\` that starts no escape: QuickJS rejects it.
            self.pos += 1;
            self.prev = Prev::plain(OPERAND);
            return;
        }
        let tag = self.prev.tag;
        if tag == Tag::Dot {
            // A property name.
            self.prev = Prev::plain(VALUE);
            return;
        }
        self.names.set(self.names.get().saturating_add(1));
        let name = name.unwrap_or_default();
        let escaped = self
            .bytes
            .get(start..self.pos)
            .is_some_and(|text| text.contains(&b'\\'));
        match name.as_str() {
            "import" => self.import_at = Some(start),
            "require" => self.require_at = Some(start),
            _ => {}
        }
        // Keywords written with escapes are not keywords to QuickJS (they are reserved words
        // that cannot be used), so they are read as plain identifiers.
        let keyword = if escaped { "" } else { name.as_str() };
        let same_line = !self.newline;
        self.prev = match (keyword, tag) {
            ("function", Tag::Async(position)) if same_line => {
                Prev::tagged(Tag::Function(position), VALUE)
            }
            ("function", _) => Prev::tagged(Tag::Function(context.function), VALUE),
            ("class", _) => Prev::tagged(Tag::Class(context.function), VALUE),
            ("extends", Tag::Class(position)) => {
                self.classes.push((self.opens.len(), position));
                Prev::plain(OPERAND)
            }
            // The name of a function or class.
            (_, Tag::Function(position)) => Prev::tagged(Tag::Function(position), VALUE),
            (_, Tag::Class(position)) => Prev::tagged(Tag::Class(position), VALUE),
            ("async", _) => Prev::tagged(Tag::Async(context.function), VALUE),
            ("if" | "while" | "with", _) => Prev::tagged(Tag::Header { is_for: false }, VALUE),
            ("for", _) => Prev::tagged(Tag::Header { is_for: true }, VALUE),
            ("await", Tag::Header { is_for: true }) => {
                Prev::tagged(Tag::Header { is_for: true }, VALUE)
            }
            ("await" | "yield", _) => Prev {
                tag: Tag::None,
                same_line: AWAIT_SAME_LINE,
                new_line: AWAIT_NEW_LINE,
            },
            ("of", _) if self.top() == Level::Paren(ParenKind::Header { is_for: true }) => Prev {
                tag: Tag::None,
                same_line: AWAIT_SAME_LINE,
                new_line: AWAIT_NEW_LINE,
            },
            // `return` then a line break is `return;`.
            ("return", _) => Prev {
                tag: Tag::None,
                same_line: OPERAND,
                new_line: STATEMENT,
            },
            _ if OPERAND_KEYWORDS.contains(&keyword) => Prev::plain(OPERAND),
            _ if STATEMENT_KEYWORDS.contains(&keyword) => Prev::plain(STATEMENT),
            _ => Prev::plain(VALUE),
        };
    }
}

fn is_digit(byte: u8) -> bool {
    byte.is_ascii_digit()
}

fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte == b'$'
}

fn is_identifier_part(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$'
}

/// QuickJS's line terminators outside ASCII.
fn is_line_terminator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// QuickJS's white space outside ASCII (`lre_is_space`).
fn is_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}
