//! A single-pass upper bound of how deeply a recursive-descent parser recurses over a program
//! (written for swc, the TypeScript transform's parser, and the rules below are swc's).
//!
//! swc's parser, the fast-strip transform and the code generator recurse once
//! per level of syntax nesting, and a Rust stack overflow aborts the process,
//! so pathological input (100,000 `(`, `-+-+…x`, `a.b.c…`, `if (a) if (b) …`,
//! `Array<Array<…>>`, `` x`a``b`… ``) must be refused *before* parsing. This
//! scanner refuses input whose estimated depth crosses the limit. It runs in
//! O(n) time (at most [`MAX_READINGS`](crate::MAX_READINGS) readings step over each byte; forking
//! a reading is O(1)) and O(limit) memory (the open frames, shared between
//! readings).
//!
//! # The estimate
//!
//! The estimate is, over the open brackets (`(`, `[`, `{`, `${`, and every
//! `<`, which may open type arguments), one per bracket plus the *chain* in
//! it: every operator byte (`-+-+` is four, `===` is three), every template
//! literal, every bracketed group, every keyword that takes an operand
//! (`typeof`, `new`, `await`, `if`, `else`, …) and every word that directly
//! follows another word. A chain only shrinks where the parser has certainly
//! returned: at `;` (but `else` and `while` after it take the chain back), at
//! `,` (down to the statement prefix: `if (…)`, `else`, `do`, a label), after
//! a block's `}` followed by a word, and at a line break between a complete
//! operand and a word that cannot continue it. Closers only close what they
//! match; a `>` closes an open `<`, a stray one closes nothing.
//!
//! # Why it cannot be fooled by the lexer
//!
//! Estimates from a mis-lexed text are worthless: a `/` taken for a regular
//! expression can hide a whole line of code, a quote inside a real regular
//! expression can start a "string" that hides the rest of the line, a
//! backtick can hide many lines. So the scanner does not guess. Wherever the
//! lexing is ambiguous it follows *every* reading, the way swc could read it:
//!
//! - a `/` where both an operand may have ended and an expression may
//!   start is division in one reading and the start of a regular expression
//!   in the other: after a keyword or contextual keyword (`of`, `await`,
//!   `yield`, `return`, …, or any word spelled with escapes), after the `)`
//!   of `if (…)`, `while (…)`, `for (…)`, `with (…)`, after any `}`, after
//!   `++`, `--`, `!` and `>`, and after *any* token when a line break comes
//!   first (TypeScript's automatic semicolons: `let x: T` then `/re/`).
//!   After an identifier, a literal, `)` or `]` on the same line only
//!   division is possible, and after an operator only a regular expression.
//!   A regular expression that would be unterminated on its line is not a
//!   reading: swc's lexer fails the parse there;
//! - `<!--` inside a run of operator characters is an HTML-like comment in
//!   one reading and operators in the other;
//! - a `#!` line at the very start is a comment (module parse) and code
//!   (inside the cell wrapper).
//!
//! Readings advance in lock-step by position (the crate's one forking driver,
//! shared with [`Verdict`](crate::Verdict)). Two readings at the same place
//! with the same brackets open become one whose chains are the larger of both
//! and whose other state is the more cautious of both (for example "a `/` here
//! may divide" if either says so), so every reading, and therefore the one
//! swc takes, stays below the estimate. Ordinary code re-joins within a line;
//! a reading whose closing bracket matches nothing is dropped while another
//! reading exists (swc fails the parse there if it is its reading). More than
//! [`MAX_READINGS`](crate::MAX_READINGS) readings at once is refused like too deep a nesting, as
//! is any reading that crosses the limit.
//!
//! Everything else the lexer does is followed exactly: strings (which end at
//! an unescaped line break, as swc ends them), template literals and their
//! substitutions, `//`, `/* */`, `<!--` at the start of a token and `-->`
//! after a line break (HTML-like comments of script code), regular
//! expressions with their character classes, numeric literals (`1.` is one
//! token), and Unicode: U+2028 and U+2029 end lines and line comments, other
//! non-alphanumeric characters (no-break and other Unicode spaces) separate
//! words, so `typeof` `typeof` with a no-break space between still counts
//! twice. Where this scanner splits a word that swc keeps whole (a joiner
//! inside an identifier), it only counts more.

mod frames;
mod lex;
mod reading;
#[cfg(test)]
mod tests;

use reading::Reading;

use crate::{Slash, readings};

/// Words that take an operand or a statement: each one nests what follows
/// (so it counts), and a line break after it does not end the statement.
const PREFIX_WORDS: &[&[u8]] = &[
    b"abstract",
    b"accessor",
    b"as",
    b"assert",
    b"asserts",
    b"async",
    b"await",
    b"case",
    b"class",
    b"const",
    b"declare",
    b"default",
    b"delete",
    b"do",
    b"else",
    b"enum",
    b"export",
    b"extends",
    b"for",
    b"function",
    b"get",
    b"global",
    b"if",
    b"implements",
    b"import",
    b"in",
    b"infer",
    b"instanceof",
    b"interface",
    b"is",
    b"keyof",
    b"let",
    b"module",
    b"namespace",
    b"new",
    b"of",
    b"out",
    b"override",
    b"private",
    b"protected",
    b"public",
    b"readonly",
    b"return",
    b"satisfies",
    b"set",
    b"static",
    b"switch",
    b"throw",
    b"type",
    b"typeof",
    b"unique",
    b"using",
    b"var",
    b"void",
    b"while",
    b"with",
    b"yield",
];

/// Words that can continue the statement before them, even after a line
/// break or a `}`.
const CONTINUATION_WORDS: &[&[u8]] = &[
    b"as",
    b"catch",
    b"else",
    b"extends",
    b"finally",
    b"from",
    b"implements",
    b"in",
    b"instanceof",
    b"is",
    b"keyof",
    b"of",
    b"satisfies",
    b"while",
];

/// Words whose parenthesised header is followed by a statement (`await` for
/// `for await (…)`).
const HEADER_WORDS: &[&[u8]] = &[
    b"await", b"catch", b"for", b"if", b"switch", b"while", b"with",
];

/// What opened a frame.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
enum Opener {
    /// The whole text; never closed.
    Root,
    /// `(`.
    Paren,
    /// `[`.
    Bracket,
    /// `{`.
    Brace,
    /// `${` of a template literal.
    Substitution,
    /// `<`, which may open type arguments; closed by `>` or at the end of
    /// what contains it.
    Angle,
}

/// One open bracket and the chain inside it.
#[derive(Clone, Copy, Debug)]
struct Frame {
    opener: Opener,
    /// A `(` after `if`, `while`, `for`, … : a statement follows its `)`.
    header: bool,
    /// Length of the current chain.
    chain: usize,
    /// Where `,` takes the chain back to: the statement prefix.
    floor: usize,
}

/// What the previous significant token allows next.
#[derive(Clone, Copy, Debug, Default)]
struct After {
    /// What a `/` here can be: only a regular expression after an operator,
    /// `(`, `,`, `;`, …; only a division after an identifier, a literal, `)`
    /// or `]` on the same line; either after `)` of `if (…)`, `}`, keywords
    /// such as `of`, postfix or prefix `++`.
    slash: Slash,
    /// It is a complete operand: a line break and then a word (other than a
    /// continuation) start a new statement.
    operand_end: bool,
    /// It is a `}`: a word other than a continuation starts a new statement.
    block_end: bool,
    /// A statement starts here (for labels).
    statement_start: bool,
    /// It is a word at the start of a statement: a `:` now ends a label.
    label_candidate: bool,
    /// It is a word (or number): another word directly after it counts.
    word: bool,
    /// It is a `.` or `?.`: a word now is a property name.
    dot: bool,
    /// It is `if`, `while`, … : a `(` now opens a statement header.
    header_word: bool,
}

impl After {
    /// The more cautious of two states (used when readings join).
    fn join(self, other: After) -> After {
        After {
            slash: self.slash.or(other.slash),
            operand_end: self.operand_end && other.operand_end,
            block_end: self.block_end && other.block_end,
            statement_start: self.statement_start || other.statement_start,
            label_candidate: self.label_candidate || other.label_candidate,
            word: self.word || other.word,
            dot: self.dot && other.dot,
            header_word: self.header_word || other.header_word,
        }
    }

    /// After an operator, `(`, `,` and the like.
    fn expression_expected() -> After {
        After::default()
    }

    /// After a literal, a template or a regular expression.
    fn operand() -> After {
        After {
            slash: Slash::Division,
            operand_end: true,
            ..After::default()
        }
    }
}

/// Estimates the nesting depth of the JavaScript or TypeScript `source` over all its readings:
/// an upper bound of how deeply a parser, a transform or a code generator recurses over it.
///
/// # Errors
/// The byte offset where the estimate first exceeds `limit`, or where the text has more than
/// [`MAX_READINGS`](crate::MAX_READINGS) readings at once.
///
/// # Example
/// ```
/// use codemode_jslex::check_nesting;
///
/// assert!(check_nesting("if (a) { return f(b[0]); }", 40).is_ok());
/// // Each `(` adds two: one to the enclosing chain, one level of its own.
/// assert_eq!(check_nesting(&"(".repeat(100), 40), Err(20));
/// ```
pub fn check_nesting(source: &str, limit: usize) -> Result<(), usize> {
    let bytes = source.as_bytes();
    let mut first = vec![Reading::new(bytes, limit)];
    if bytes.starts_with(b"#!") {
        // A hashbang line is a comment where the text starts a module (the
        // parse that finds type-only imports), and code inside the cell
        // wrapper: both readings.
        let mut hashbang = Reading::new(bytes, limit);
        hashbang.skip_line_comment(bytes);
        first.push(hashbang);
    }
    match readings::follow(first, usize::MAX)?.limit {
        Some(at) => Err(at),
        None => Ok(()),
    }
}
