//! A single-pass upper bound of how deeply swc recurses over a cell.
//!
//! swc's parser, the fast-strip transform and the code generator recurse once
//! per level of syntax nesting, and a Rust stack overflow aborts the process,
//! so pathological input (100,000 `(`, `-+-+…x`, `a.b.c…`, `if (a) if (b) …`,
//! `Array<Array<…>>`, `` x`a``b`… ``) must be refused *before* parsing. This
//! scanner refuses input whose estimated depth crosses the limit. It runs in
//! O(n) time (at most [`MAX_READINGS`] readings step over each byte; forking
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
//! Readings advance in lock-step by position. Two readings at the same place
//! with the same brackets open become one whose chains are the larger of both
//! and whose other state is the more cautious of both (for example "a `/` here
//! may divide" if either says so), so every reading, and therefore the one
//! swc takes, stays below the estimate. Ordinary code re-joins within a line;
//! a reading whose closing bracket matches nothing is dropped while another
//! reading exists (swc fails the parse there if it is its reading). More than
//! [`MAX_READINGS`] readings at once is refused like too deep a nesting, as
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

use std::rc::Rc;

/// Most readings of one text followed at once before it is refused.
pub(crate) const MAX_READINGS: usize = 16;

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

/// What a `/` can be after the previous significant token.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
enum Slash {
    /// Only the start of a regular expression: nothing to divide (after an
    /// operator, `(`, `,`, `;`, …).
    #[default]
    Regex,
    /// Only a division: an operand ended, and nothing can start an
    /// expression right after it (an identifier, a literal, `)`, `]`). After
    /// a line break, either (TypeScript's automatic semicolons).
    Division,
    /// Either: an operand may have ended, or a statement or expression may
    /// start (`)` of `if (…)`, `}`, keywords such as `of`, postfix or prefix
    /// `++`).
    Either,
}

/// What the previous significant token allows next.
#[derive(Clone, Copy, Debug, Default)]
struct After {
    /// What a `/` here can be.
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
            slash: if self.slash == other.slash {
                self.slash
            } else {
                Slash::Either
            },
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

/// What one step of a reading found.
enum Step {
    /// Keep going.
    Continue,
    /// Keep going; the text also has this other reading from here.
    Fork(Box<Reading>),
    /// This reading is a fatal syntax error here (an unterminated regular
    /// expression): swc stops, so nothing after it matters for this reading.
    Dead,
    /// A closer that matches no open bracket: a fatal syntax error in swc
    /// if this is its reading. Nothing was closed; the caller drops this
    /// reading if another one exists (a wrong guess about a `/` is far
    /// likelier than broken code) and otherwise keeps going.
    Mismatch,
    /// End of the text.
    Done,
}

/// The open frames, innermost first; the outermost is the root and is never
/// closed.
///
/// Only the innermost frame ever changes, so it is kept inline and the ones
/// around it form an immutable list shared between readings: a fork clones
/// a reading in O(1), and comparing or joining two readings stops where
/// they share frames (usually right below what changed since they forked).
#[derive(Clone)]
struct FrameStack {
    top: Frame,
    outer: Outer,
    len: usize,
}

/// The frames around the innermost one.
#[derive(Clone, Default)]
struct Outer(Option<Rc<OuterNode>>);

struct OuterNode {
    frame: Frame,
    outer: Outer,
}

impl Drop for OuterNode {
    /// Iteratively: dropping a long list recursively could itself overflow
    /// the stack.
    fn drop(&mut self) {
        let mut next = self.outer.0.take();
        while let Some(node) = next {
            next = match Rc::try_unwrap(node) {
                Ok(mut node) => node.outer.0.take(),
                // Still shared: the rest lives on.
                Err(_) => None,
            };
        }
    }
}

impl FrameStack {
    fn new(root: Frame) -> FrameStack {
        FrameStack {
            top: root,
            outer: Outer::default(),
            len: 1,
        }
    }

    fn top(&self) -> &Frame {
        &self.top
    }

    fn top_mut(&mut self) -> &mut Frame {
        &mut self.top
    }

    fn push(&mut self, frame: Frame) {
        let below = std::mem::replace(&mut self.top, frame);
        let outer = std::mem::take(&mut self.outer);
        self.outer = Outer(Some(Rc::new(OuterNode {
            frame: below,
            outer,
        })));
        self.len += 1;
    }

    /// Close the innermost frame; never the root.
    fn pop(&mut self) -> Option<Frame> {
        let node = self.outer.0.take()?;
        let (frame, outer) = match Rc::try_unwrap(node) {
            Ok(mut node) => (node.frame, std::mem::take(&mut node.outer)),
            Err(shared) => (shared.frame, shared.outer.clone()),
        };
        self.outer = outer;
        self.len -= 1;
        Some(std::mem::replace(&mut self.top, frame))
    }

    /// The same brackets are open in both.
    fn same_openers(&self, other: &FrameStack) -> bool {
        if self.len != other.len || self.top.opener != other.top.opener {
            return false;
        }
        let (mut mine, mut theirs) = (&self.outer, &other.outer);
        loop {
            match (&mine.0, &theirs.0) {
                (None, None) => return true,
                (Some(a), Some(b)) if Rc::ptr_eq(a, b) => return true,
                (Some(a), Some(b)) if a.frame.opener == b.frame.opener => {
                    mine = &a.outer;
                    theirs = &b.outer;
                }
                _ => return false,
            }
        }
    }

    /// Take the larger chain and floor of each frame of `other` (which has
    /// the same openers); returns how much the sum of the chains grew.
    fn join(&mut self, other: &FrameStack) -> usize {
        let mut grown = join_frame(&mut self.top, &other.top);
        let mut differing = Vec::new();
        let (mut mine, mut theirs) = (&self.outer, &other.outer);
        let shared = loop {
            match (&mine.0, &theirs.0) {
                (Some(a), Some(b)) if !Rc::ptr_eq(a, b) => {
                    let mut frame = a.frame;
                    grown += join_frame(&mut frame, &b.frame);
                    differing.push(frame);
                    mine = &a.outer;
                    theirs = &b.outer;
                }
                _ => break mine.clone(),
            }
        };
        let mut outer = shared;
        for frame in differing.into_iter().rev() {
            outer = Outer(Some(Rc::new(OuterNode { frame, outer })));
        }
        self.outer = outer;
        grown
    }
}

/// The larger chain and floor of two frames into `mine`; returns how much its
/// chain grew.
fn join_frame(mine: &mut Frame, theirs: &Frame) -> usize {
    let grown = theirs.chain.saturating_sub(mine.chain);
    mine.chain += grown;
    mine.floor = mine.floor.max(theirs.floor);
    mine.header |= theirs.header;
    grown
}

/// One way of lexing the text, with its estimate.
#[derive(Clone)]
struct Reading {
    position: usize,
    frames: FrameStack,
    /// Current estimate: open frames (except the root) plus all chains.
    depth: usize,
    after: After,
    /// A line break since the previous significant token.
    line_break: bool,
    /// The chain before the last `;`, for an `else` or `while` right after.
    restore: Option<usize>,
    /// The `<!--` at this offset is operators, not a comment (the other
    /// reading took it as a comment).
    html_comment_is_code_at: Option<usize>,
}

/// Estimate the nesting depth of `source` over all its readings;
/// `Err(byte offset)` where the estimate first exceeds `limit` (or where the
/// text has more than [`MAX_READINGS`] readings at once).
pub(crate) fn check_nesting(source: &str, limit: usize) -> Result<(), usize> {
    let bytes = source.as_bytes();
    let mut current = Reading::new();
    // The other readings; `current` is always one furthest behind.
    let mut others: Vec<Reading> = Vec::new();
    if bytes.starts_with(b"#!") {
        // A hashbang line is a comment where the text starts a module (the
        // parse that finds type-only imports), and code inside the cell
        // wrapper: both readings.
        let mut hashbang = Reading::new();
        hashbang.skip_line_comment(bytes);
        others.push(hashbang);
    }
    loop {
        match current.step(bytes, limit)? {
            Step::Continue => {}
            Step::Mismatch if others.is_empty() => continue,
            Step::Mismatch => {
                if let Some(next) = take_furthest_behind(&mut others) {
                    current = next;
                }
                continue;
            }
            Step::Fork(other) => {
                if others.len() + 2 > MAX_READINGS {
                    return Err(current.position);
                }
                others.push(*other);
            }
            Step::Dead => match take_furthest_behind(&mut others) {
                Some(next) => {
                    current = next;
                    continue;
                }
                None => return Ok(()),
            },
            // `current` is furthest behind: every reading is done.
            Step::Done => return Ok(()),
        }
        if others.is_empty() {
            continue;
        }
        let mut index = 0;
        while let Some(other) = others.get(index) {
            if current.can_join(other) {
                let other = others.swap_remove(index);
                current.join(&other, limit)?;
            } else {
                index += 1;
            }
        }
        if let Some(behind) = others
            .iter_mut()
            .filter(|other| other.position < current.position)
            .min_by_key(|other| other.position)
        {
            std::mem::swap(&mut current, behind);
        }
    }
}

fn take_furthest_behind(readings: &mut Vec<Reading>) -> Option<Reading> {
    let index = readings
        .iter()
        .enumerate()
        .min_by_key(|(_, reading)| reading.position)
        .map(|(index, _)| index)?;
    Some(readings.swap_remove(index))
}

impl Reading {
    fn new() -> Reading {
        Reading {
            position: 0,
            frames: FrameStack::new(Frame {
                opener: Opener::Root,
                header: false,
                chain: 0,
                floor: 0,
            }),
            depth: 0,
            after: After {
                statement_start: true,
                ..After::default()
            },
            // swc starts the first token "after a line break" (and the cell
            // wrapper's header ends with one).
            line_break: true,
            restore: None,
            html_comment_is_code_at: None,
        }
    }

    /// Same place, same lexer state, same brackets open: the two readings
    /// continue identically, up to their chains.
    fn can_join(&self, other: &Reading) -> bool {
        self.position == other.position
            && self.line_break == other.line_break
            && self.html_comment_is_code_at == other.html_comment_is_code_at
            && self.frames.same_openers(&other.frames)
    }

    /// Become the more cautious of `self` and `other` (see [`can_join`](Self::can_join)).
    fn join(&mut self, other: &Reading, limit: usize) -> Result<(), usize> {
        self.depth += self.frames.join(&other.frames);
        self.after = self.after.join(other.after);
        self.restore = self.restore.max(other.restore);
        if self.depth > limit {
            Err(self.position)
        } else {
            Ok(())
        }
    }

    fn step(&mut self, bytes: &[u8], limit: usize) -> Result<Step, usize> {
        let Some(&byte) = bytes.get(self.position) else {
            return Ok(Step::Done);
        };
        match byte {
            b'\n' | b'\r' => {
                self.line_break = true;
                self.position += 1;
            }
            b' ' | b'\t' | 0x0b | 0x0c => self.position += 1,
            b'/' => match bytes.get(self.position + 1) {
                Some(b'/') => self.skip_line_comment(bytes),
                Some(b'*') => self.skip_block_comment(bytes),
                _ => return self.slash(bytes, limit),
            },
            b'\'' | b'"' => {
                self.skip_string(bytes, byte);
                self.finish_token(After::operand());
            }
            b'`' => {
                let start = self.position;
                self.position += 1;
                self.restore = None;
                // Tagged templates chain: x`a``b``c` nests once per literal.
                self.extend(1, start, limit)?;
                self.scan_template(bytes, limit)?;
            }
            b'(' | b'[' | b'{' => self.open(byte, limit)?,
            b')' | b']' => return Ok(self.close_group(byte)),
            b'}' => return self.close_brace(bytes, limit),
            b';' => self.semicolon(),
            b',' => self.comma(),
            _ if byte >= 0x80 => match character_at(bytes, self.position) {
                // U+2028 and U+2029 end lines (and line comments) for swc.
                Some(character @ ('\u{2028}' | '\u{2029}')) => {
                    self.line_break = true;
                    self.position += character.len_utf8();
                }
                Some(character) if character.is_alphanumeric() => self.word(bytes, limit)?,
                // Unicode white space (or an identifier part such as a joiner,
                // which splitting into two words only over-counts).
                Some(character) => self.position += character.len_utf8(),
                None => self.position += 1,
            },
            _ if starts_word(byte) => self.word(bytes, limit)?,
            _ if is_operator_byte(byte) => return self.operator_run(bytes, limit),
            // A stray byte (a control character): nothing to count.
            _ => self.position += 1,
        }
        Ok(Step::Continue)
    }

    /// Record the end of a significant token.
    fn finish_token(&mut self, after: After) {
        self.after = after;
        self.line_break = false;
        self.restore = None;
    }

    /// Add `amount` to the current chain, failing at `offset` past the limit.
    fn extend(&mut self, amount: usize, offset: usize, limit: usize) -> Result<(), usize> {
        self.frames.top_mut().chain += amount;
        self.depth += amount;
        if self.depth > limit {
            Err(offset)
        } else {
            Ok(())
        }
    }

    fn push(
        &mut self,
        opener: Opener,
        header: bool,
        offset: usize,
        limit: usize,
    ) -> Result<(), usize> {
        self.frames.push(Frame {
            opener,
            header,
            chain: 0,
            floor: 0,
        });
        self.depth += 1;
        if self.depth > limit {
            Err(offset)
        } else {
            Ok(())
        }
    }

    /// Close the innermost frame if it was opened by `opener`.
    fn pop(&mut self, opener: Opener) -> Option<Frame> {
        if self.frames.top().opener != opener {
            return None;
        }
        let frame = self.frames.pop()?;
        self.depth = self.depth.saturating_sub(frame.chain + 1);
        Some(frame)
    }

    /// Close every `<` that is still open in the innermost real bracket: type
    /// arguments cannot span what ends here.
    fn close_angles(&mut self) {
        while self.pop(Opener::Angle).is_some() {}
    }

    /// The chain restarts: a new statement begins.
    fn restart_statement(&mut self) {
        self.close_angles();
        let frame = self.frames.top_mut();
        self.depth = self.depth.saturating_sub(frame.chain);
        frame.chain = 0;
        frame.floor = 0;
    }

    /// What follows is inside the statement prefix so far: `,` returns here.
    fn set_floor(&mut self) {
        let frame = self.frames.top_mut();
        frame.floor = frame.chain;
    }

    fn open(&mut self, byte: u8, limit: usize) -> Result<(), usize> {
        let start = self.position;
        self.position += 1;
        let header = byte == b'(' && self.after.header_word;
        let opener = match byte {
            b'(' => Opener::Paren,
            b'[' => Opener::Bracket,
            _ => Opener::Brace,
        };
        // The group is one element of the enclosing chain ...
        self.extend(1, start, limit)?;
        // ... and one level of its own.
        self.push(opener, header, start, limit)?;
        self.finish_token(After {
            statement_start: byte == b'{',
            ..After::expression_expected()
        });
        Ok(())
    }

    fn close_group(&mut self, byte: u8) -> Step {
        self.position += 1;
        self.close_angles();
        let opener = if byte == b')' {
            Opener::Paren
        } else {
            Opener::Bracket
        };
        let Some(frame) = self.pop(opener) else {
            self.finish_token(After::operand());
            return Step::Mismatch;
        };
        let header = frame.header;
        if header {
            self.set_floor();
        }
        self.finish_token(After {
            // After `if (…)` a statement starts, which may be a regular
            // expression.
            slash: if header {
                Slash::Either
            } else {
                Slash::Division
            },
            operand_end: !header,
            statement_start: header,
            ..After::default()
        });
        Step::Continue
    }

    fn close_brace(&mut self, bytes: &[u8], limit: usize) -> Result<Step, usize> {
        self.position += 1;
        self.close_angles();
        if self.pop(Opener::Substitution).is_some() {
            // Back inside the template literal.
            self.scan_template(bytes, limit)?;
            return Ok(Step::Continue);
        }
        // A `}` at the root may close the cell wrapper: the text after it is
        // still parsed, so it is still counted.
        let matched = self.pop(Opener::Brace).is_some() || self.frames.top().opener == Opener::Root;
        self.finish_token(After {
            // A block's `}` (a statement may follow) or an object's.
            slash: Slash::Either,
            block_end: true,
            statement_start: true,
            ..After::default()
        });
        Ok(if matched {
            Step::Continue
        } else {
            Step::Mismatch
        })
    }

    fn semicolon(&mut self) {
        self.position += 1;
        self.close_angles();
        let chain = self.frames.top().chain;
        self.restart_statement();
        self.finish_token(After {
            statement_start: true,
            ..After::expression_expected()
        });
        self.restore = Some(chain);
    }

    fn comma(&mut self) {
        self.position += 1;
        let frame = self.frames.top_mut();
        let floor = frame.floor.min(frame.chain);
        self.depth = self.depth.saturating_sub(frame.chain - floor);
        frame.chain = floor;
        self.finish_token(After::expression_expected());
    }

    fn word(&mut self, bytes: &[u8], limit: usize) -> Result<(), usize> {
        let start = self.position;
        self.position = if bytes.get(start).is_some_and(u8::is_ascii_digit) {
            skip_number(bytes, start)
        } else {
            skip_word(bytes, start)
        };
        let word = bytes.get(start..self.position).unwrap_or_default();
        let restore = self.restore.take();
        let after = self.after;
        let number = word.first().is_some_and(u8::is_ascii_digit);
        let property = after.dot;
        // A keyword spelled with escapes is an error swc may recover from:
        // count it as a keyword too.
        let escaped = word.contains(&b'\\');
        let keyword = !property && !number && (escaped || PREFIX_WORDS.contains(&word));
        let continuation = !property && CONTINUATION_WORDS.contains(&word);
        let restart = !property
            && !continuation
            && (after.block_end || (self.line_break && after.operand_end));
        if restart {
            self.restart_statement();
        }
        let takes_back = word == b"else" || word == b"while";
        if let (true, Some(chain)) = (takes_back, restore) {
            let current = self.frames.top().chain;
            self.extend(chain.saturating_sub(current), start, limit)?;
        }
        if keyword || after.word {
            self.extend(1, start, limit)?;
        }
        let prefix_end = !property && (word == b"else" || word == b"do");
        if prefix_end {
            self.set_floor();
        }
        // A keyword such as `of`, `await`, `return` takes an expression; so
        // may a word spelled with escapes. After any other word, only a
        // division can follow on the same line.
        let slash = if keyword {
            Slash::Either
        } else {
            Slash::Division
        };
        self.finish_token(After {
            slash,
            operand_end: !keyword,
            statement_start: prefix_end,
            label_candidate: (after.statement_start || restart) && !keyword && !number,
            word: true,
            header_word: !property && (escaped || HEADER_WORDS.contains(&word)),
            ..After::default()
        });
        Ok(())
    }

    /// A run of operator bytes: each counts one (`-+-+x` nests four times,
    /// `===` is over-counted as three); each `<` may open type arguments,
    /// each `>` not after `=` may close them.
    fn operator_run(&mut self, bytes: &[u8], limit: usize) -> Result<Step, usize> {
        let start = self.position;
        let html_comment_is_code = self.html_comment_is_code_at.take() == Some(start);
        if (starts_with(bytes, start, b"<!--") && !html_comment_is_code)
            || (self.line_break && starts_with(bytes, start, b"-->"))
        {
            // An HTML-like comment of script code: to the end of the line.
            self.skip_line_comment(bytes);
            return Ok(Step::Continue);
        }
        let mut end = start;
        let mut fork = None;
        while let Some(&byte) = bytes.get(end) {
            if !is_operator_byte(byte) {
                break;
            }
            if end > start && starts_with(bytes, end, b"<!--") {
                // Whether `<!--` starts a token here depends on how the
                // lexer splits the run: follow both readings.
                let mut comment = self.clone();
                comment.position = end;
                fork = Some(Box::new(comment));
                self.html_comment_is_code_at = Some(end);
                break;
            }
            end += 1;
        }
        let run = bytes.get(start..end).unwrap_or_default();
        let mut previous = 0u8;
        for (offset, &byte) in (start..end).zip(run) {
            self.extend(1, offset, limit)?;
            match byte {
                b'<' => self.push(Opener::Angle, false, offset, limit)?,
                b'>' if previous != b'=' => {
                    let _ = self.pop(Opener::Angle);
                }
                _ => {}
            }
            previous = byte;
        }
        self.position = end;
        let label = run == b":" && self.after.label_candidate;
        if label {
            self.set_floor();
        }
        // `++`, `--`, `!` and `>` may end an operand (postfix, non-null, the
        // end of type arguments) or not (prefix, comparison).
        let slash = if [&b"++"[..], b"--", b"!", b">"]
            .iter()
            .any(|ending| run.ends_with(ending))
        {
            Slash::Either
        } else {
            Slash::Regex
        };
        // `fork` was cloned before this run's fields were updated; its own
        // step re-reads the run's tail.
        if let Some(comment) = fork.as_deref_mut() {
            comment.frames = self.frames.clone();
            comment.depth = self.depth;
            comment.html_comment_is_code_at = None;
        }
        self.finish_token(After {
            slash,
            statement_start: label,
            dot: run.ends_with(b"."),
            ..After::expression_expected()
        });
        if let Some(comment) = fork.as_deref_mut() {
            comment.after = self.after;
            comment.line_break = false;
            comment.restore = None;
        }
        Ok(fork.map_or(Step::Continue, Step::Fork))
    }

    /// A `/` that is not a comment.
    fn slash(&mut self, bytes: &[u8], limit: usize) -> Result<Step, usize> {
        let start = self.position;
        let regex_end = regex_end(bytes, start);
        let slash = match self.after.slash {
            // TypeScript ends a statement at a line break before a `/` that
            // cannot continue it (`let x: T` then `/re/.test(s)`).
            Slash::Division if self.line_break => Slash::Either,
            slash => slash,
        };
        if slash == Slash::Regex {
            return Ok(match regex_end {
                Some(end) => {
                    self.position = end;
                    self.finish_token(After::operand());
                    Step::Continue
                }
                None => Step::Dead,
            });
        }
        // Division; and where an expression may start too, a regular
        // expression (unless it would be unterminated).
        let fork = regex_end.filter(|_| slash == Slash::Either).map(|end| {
            let mut regex = self.clone();
            regex.position = end;
            regex.finish_token(After::operand());
            Box::new(regex)
        });
        self.position += 1;
        self.extend(1, start, limit)?;
        self.finish_token(After::expression_expected());
        Ok(fork.map_or(Step::Continue, Step::Fork))
    }

    /// To the end of the line (`\n`, `\r`, U+2028 or U+2029, as swc).
    fn skip_line_comment(&mut self, bytes: &[u8]) {
        while let Some(&byte) = bytes.get(self.position) {
            if matches!(byte, b'\n' | b'\r') || is_unicode_line_break(bytes, self.position) {
                return;
            }
            self.position += 1;
        }
    }

    fn skip_block_comment(&mut self, bytes: &[u8]) {
        self.position += 2;
        while let Some(&byte) = bytes.get(self.position) {
            if byte == b'*' && bytes.get(self.position + 1) == Some(&b'/') {
                self.position += 2;
                return;
            }
            if matches!(byte, b'\n' | b'\r') || is_unicode_line_break(bytes, self.position) {
                self.line_break = true;
            }
            self.position += 1;
        }
    }

    /// A quoted string; ends at the closing quote or at an unescaped line
    /// break (swc reports the unterminated string and goes on from there).
    fn skip_string(&mut self, bytes: &[u8], quote: u8) {
        self.position += 1;
        while let Some(&byte) = bytes.get(self.position) {
            self.position += 1;
            match byte {
                b'\\' => {
                    if bytes.get(self.position) == Some(&b'\r')
                        && bytes.get(self.position + 1) == Some(&b'\n')
                    {
                        self.position += 1;
                    }
                    self.position += 1;
                }
                b'\n' | b'\r' => {
                    self.position -= 1;
                    return;
                }
                _ if byte == quote => return,
                _ => {}
            }
        }
    }

    /// Inside a template literal (after the opening backtick or after the `}`
    /// of a substitution): up to the closing backtick, or into a `${`.
    fn scan_template(&mut self, bytes: &[u8], limit: usize) -> Result<(), usize> {
        while let Some(&byte) = bytes.get(self.position) {
            match byte {
                b'\\' => self.position += 2,
                b'`' => {
                    self.position += 1;
                    self.finish_token(After::operand());
                    return Ok(());
                }
                b'$' if bytes.get(self.position + 1) == Some(&b'{') => {
                    let start = self.position;
                    self.position += 2;
                    self.extend(1, start, limit)?;
                    self.push(Opener::Substitution, false, start, limit)?;
                    self.finish_token(After::expression_expected());
                    return Ok(());
                }
                _ => self.position += 1,
            }
        }
        // Unterminated: the end of the text.
        Ok(())
    }
}

/// Where the regular expression starting with the `/` at `start` ends (after
/// its flags), or `None` if a line break or the end of the text comes first
/// (swc's lexer then fails the parse).
fn regex_end(bytes: &[u8], start: usize) -> Option<usize> {
    let mut position = start + 1;
    let mut in_class = false;
    loop {
        match *bytes.get(position)? {
            b'\n' | b'\r' => return None,
            b'\\' => {
                position += 1;
                if matches!(bytes.get(position), None | Some(b'\n' | b'\r')) {
                    return None;
                }
            }
            b'[' => in_class = true,
            b']' => in_class = false,
            b'/' if !in_class => return Some(skip_flags(bytes, position + 1)),
            _ => {}
        }
        position += 1;
    }
}

/// The end of the word starting at `position`: ASCII letters, digits, `_`,
/// `$`, `\` (escapes) and alphanumeric Unicode characters; a leading `#`
/// (private name) or `@`. Anything else ends it, so a keyword is never
/// glued to its neighbour (swc may split where this does not only by
/// over-counting).
fn skip_word(bytes: &[u8], mut position: usize) -> usize {
    if matches!(bytes.get(position), Some(b'#' | b'@')) {
        position += 1;
    }
    while let Some(&byte) = bytes.get(position) {
        if byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'$' | b'\\') {
            position += 1;
        } else if byte >= 0x80 {
            match character_at(bytes, position) {
                Some(character) if character.is_alphanumeric() => {
                    position += character.len_utf8();
                }
                _ => break,
            }
        } else {
            break;
        }
    }
    position
}

/// The end of the numeric literal starting at `position`, as swc lexes it:
/// `1.` and `1.5e-3` are one token each (so `1./x/` divides), `1.e5.x` is a
/// number and a member access.
fn skip_number(bytes: &[u8], mut position: usize) -> usize {
    let digits = |bytes: &[u8], mut position: usize| {
        while bytes
            .get(position)
            .is_some_and(|&byte| byte.is_ascii_digit() || byte == b'_')
        {
            position += 1;
        }
        position
    };
    if bytes.get(position) == Some(&b'0')
        && matches!(
            bytes.get(position + 1),
            Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B')
        )
    {
        position += 2;
        while bytes
            .get(position)
            .is_some_and(|&byte| byte.is_ascii_alphanumeric() || byte == b'_')
        {
            position += 1;
        }
        return position;
    }
    position = digits(bytes, position);
    if bytes.get(position) == Some(&b'.') {
        position = digits(bytes, position + 1);
    }
    if matches!(bytes.get(position), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(position + 1), Some(b'+' | b'-')));
        if bytes
            .get(position + 1 + sign)
            .is_some_and(u8::is_ascii_digit)
        {
            position = digits(bytes, position + 1 + sign);
        }
    }
    if bytes.get(position) == Some(&b'n') {
        position += 1;
    }
    position
}

/// The end of a regular expression's flags: ASCII letters and digits only
/// (stopping early only makes the rest count as code).
fn skip_flags(bytes: &[u8], mut position: usize) -> usize {
    while bytes.get(position).is_some_and(u8::is_ascii_alphanumeric) {
        position += 1;
    }
    position
}

/// The character whose UTF-8 encoding starts at `position`, if one does.
fn character_at(bytes: &[u8], position: usize) -> Option<char> {
    let length = match *bytes.get(position)? {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return None,
    };
    let encoded = bytes.get(position..position + length)?;
    std::str::from_utf8(encoded).ok()?.chars().next()
}

/// U+2028 or U+2029 at `position`: line terminators for swc.
fn is_unicode_line_break(bytes: &[u8], position: usize) -> bool {
    starts_with(bytes, position, "\u{2028}".as_bytes())
        || starts_with(bytes, position, "\u{2029}".as_bytes())
}

fn starts_with(bytes: &[u8], position: usize, prefix: &[u8]) -> bool {
    bytes
        .get(position..)
        .is_some_and(|rest| rest.starts_with(prefix))
}

/// Identifier, number and escape bytes (any non-ASCII byte too: Unicode
/// identifiers, and over-counting a Unicode space is harmless).
fn starts_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'$' | b'#' | b'@' | b'\\')
}

/// Bytes of operator tokens, except `/` (handled on its own: it may start a
/// regular expression or a comment).
fn is_operator_byte(byte: u8) -> bool {
    matches!(
        byte,
        b'!' | b'~'
            | b'+'
            | b'-'
            | b'*'
            | b'%'
            | b'&'
            | b'|'
            | b'^'
            | b'<'
            | b'>'
            | b'='
            | b'?'
            | b':'
            | b'.'
    )
}

#[cfg(test)]
mod tests {
    use super::check_nesting;

    fn depth_ok(source: &str, limit: usize) -> bool {
        check_nesting(source, limit).is_ok()
    }

    #[test]
    fn ordinary_code_is_far_below_the_default() {
        let cell = "const r = await tools.call('a:b:c', { q: [1, 2, 3], s: `x${y.z}` });\n\
                    if (r.ok) { return r.items.map((i) => i.name).join(', '); }\n\
                    const half = r.total / 2; // a / b\n\
                    const re = /a\\/b[/]/g.test(s) ? a / b / c : (x + y) / 2;\n";
        assert!(depth_ok(cell, 40));
    }

    #[test]
    fn bracket_depth_is_counted() {
        assert!(depth_ok(
            &format!("{}1{}", "(".repeat(10), ")".repeat(10)),
            40
        ));
        // Each `(` adds two: one to the enclosing chain, one level of its own.
        assert_eq!(check_nesting(&"(".repeat(100), 40), Err(20));
    }

    #[test]
    fn unbracketed_chains_are_counted() {
        for hostile in [
            format!("x = {}y", "!".repeat(100)),
            format!("x = {}y", "-+".repeat(50)),
            format!("x = 1{}", "+1".repeat(100)),
            format!("a{}", ".b".repeat(100)),
            format!("a{}", "()".repeat(100)),
            format!("{}x", "if (a) ".repeat(100)),
            format!("let x: {}number", "Array<".repeat(100)),
            format!("x = {}0", "a => ".repeat(100)),
            format!("x = {}y", "typeof ".repeat(100)),
            format!("x = {}y", "await ".repeat(100)),
            format!("x = {}y", "new ".repeat(100)),
            format!("x = a{}", " ? b".repeat(100)),
            format!("x = a{}", "`t`".repeat(100)),
            format!("if (a) x;{}", " else if (b) x;".repeat(100)),
            format!("{}x", "l: ".repeat(100)),
        ] {
            assert!(!depth_ok(&hostile, 64), "{hostile:.40}");
        }
    }

    #[test]
    fn statements_restart_the_chain() {
        let with_semicolons = "x = a + b;\n".repeat(200);
        let without = "x = a + b\n".repeat(200);
        let calls = "log(a, b, c)\n".repeat(200);
        let blocks = "if (a) { b() } else { c() }\n".repeat(200);
        let comparisons = "ok = a < b\n".repeat(200);
        let array = format!("[{}]", "1, ".repeat(1000));
        for text in [with_semicolons, without, calls, blocks, comparisons, array] {
            assert!(depth_ok(&text, 16), "{text:.40}");
        }
    }

    #[test]
    fn commas_keep_the_statement_prefix() {
        let prefix = "if (a) ".repeat(20);
        let chain = "-".repeat(30);
        assert!(!depth_ok(&format!("{prefix}x, {chain}y"), 64));
        assert!(!depth_ok(
            &format!("{}x{}", "A<".repeat(20), ", A<".repeat(30)),
            64
        ));
    }

    #[test]
    fn literals_and_comments_hide_their_brackets() {
        let cell = format!(
            "const s = '{0}'; const t = \"{0}\"; // {0}\n/* {0} */ const r = /a\\(b[(]/; const u = `{0}`;",
            "(".repeat(100)
        );
        assert!(depth_ok(&cell, 16));
    }

    #[test]
    fn an_ambiguous_slash_is_read_both_ways() {
        let chain = "-+".repeat(100);
        for hostile in [
            // Division taken for a regular expression would hide the chain.
            format!("let of = 2;\nreturn of / {chain}1 / 1;"),
            format!("return {{ a: {{}} / {chain}1 / 1 }};"),
            format!("x = a++ / {chain}1 / 1"),
            format!("x = a! / {chain}1 / 1"),
            // A regular expression taken for division: its quote would start
            // a "string" that hides the chain.
            format!("if (a) /\"/.test(s) + {chain}1"),
            format!("function f() {{}}\n/'/.test(s); {chain}1"),
            format!("for (x of /`/g) {chain}1"),
            format!("x = y\n/`/.test(s) + {chain}1"),
            // HTML-like comments, or not.
            format!("x = a <!-- `\n{chain}1\n`"),
            format!("x = a =<!-- `\n{chain}1\n`"),
            format!("x = 1\n--> `\n{chain}1\n`"),
        ] {
            assert!(!depth_ok(&hostile, 64), "{hostile:.60}");
        }
    }

    #[test]
    fn unicode_spaces_and_line_breaks_are_read_as_swc_reads_them() {
        let chain = "-+".repeat(100);
        for hostile in [
            // No-break spaces between keywords: each still counts.
            format!("x = {}y", "typeof\u{a0}".repeat(100)),
            format!("x = {}y", "await\u{3000}".repeat(100)),
            // U+2028 ends a line comment ...
            format!("x = 1 // note\u{2028}{chain}1"),
            // ... and is a line break before `-->`.
            format!("x = 1\u{2028}--> `\n{chain}1\n`"),
            format!("x = 1 /* \u{2029} */ --> `\n{chain}1\n`"),
        ] {
            assert!(!depth_ok(&hostile, 64), "{hostile:.60}");
        }
        assert!(depth_ok(
            "const naïve = 'é' + `ü${ß}`; // …\u{2028}x = 1",
            16
        ));
    }

    #[test]
    fn numbers_are_single_tokens() {
        let chain = "-+".repeat(100);
        for hostile in [
            // `1.` is a number: the `/` after it divides.
            format!("x = 1./ {chain}1 / 2"),
            format!("x = 1./ 2;\n{chain}1"),
            // The member access after a number still counts.
            format!("x = 1.5e+3{}", ".a".repeat(100)),
        ] {
            assert!(!depth_ok(&hostile, 64), "{hostile:.60}");
        }
        assert!(depth_ok(
            "x = [0x1F, 1_000n, .5, 1.e3, 2e-3, 0b1010, 1..toString()];",
            16
        ));
    }

    #[test]
    fn a_wrong_guess_with_unbalanced_brackets_is_dropped() {
        // The regular-expression reading of `a! / (` leaves a `(` open and
        // closes `f(`; its `)` then matches nothing, so it is dropped
        // instead of drifting (and multiplying) for the rest of the text.
        let line = "y = f(a! / (n - 1 / 2));\n";
        assert!(depth_ok(&line.repeat(200), 32));
    }

    #[test]
    fn a_hashbang_line_is_read_both_ways() {
        let chain = "-+".repeat(100);
        assert!(!depth_ok(&format!("#!/usr/bin/env `\n{chain}1\n`"), 64));
        assert!(!depth_ok(&format!("#!/bin/sh\nx = {chain}1"), 64));
        assert!(depth_ok("#!/usr/bin/env node\nreturn 1;", 16));
    }

    #[test]
    fn template_substitutions_nest() {
        let nested = format!("x = {}1{}", "`${".repeat(50), "}`".repeat(50));
        assert!(!depth_ok(&nested, 40));
        assert!(depth_ok("x = `a${`b${c}`}d`", 16));
    }

    #[test]
    fn deep_frames_are_freed_without_recursion() {
        // With an absurd limit, 300,000 open frames (and a fork sharing
        // them) are built and dropped on this test thread's small stack.
        let text = format!("{}}}/x/ + 1", "(".repeat(300_000));
        assert!(check_nesting(&text, usize::MAX).is_ok());
    }

    #[test]
    fn too_many_readings_are_refused() {
        // Every `/` after `of` may divide or start a regular expression that
        // ends at a later one; the readings never meet again on one line.
        let divisions = format!("x = of{}", " / (of".repeat(40));
        assert!(check_nesting(&divisions, 100_000).is_err());
    }
}
