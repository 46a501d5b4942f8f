//! One reading of a program: the state machine that reads it token by token, forks at an
//! ambiguous `/` and merges with a reading in the same state.

use std::cell::Cell;
use std::convert::Infallible;
use std::rc::Rc;

use super::context::{
    AWAIT_NEW_LINE, AWAIT_SAME_LINE, BraceGuess, BraceKind, Context, Level, OPERAND, Open,
    ParenKind, Position, Prev, STATEMENT, Slash, SlashLog, Tag, VALUE,
};
use super::scan::Scan;
use super::{MAX_NESTING, Reason, Refusal, earliest};
use crate::readings::{self, Step};
use crate::scan::is_identifier_start;

/// One way of reading the program, token by token.
#[derive(Clone)]
pub(super) struct Reading<'a> {
    /// The next stack entry id, shared by all readings of one program.
    ids: Rc<Cell<u64>>,
    /// Names (identifiers other than property names after `.`) seen by all readings together.
    names: Rc<Cell<usize>>,
    /// Where each `/` token was read how, when asked for ([`super::slash_readings`]).
    slashes: Option<SlashLog>,
    pub(super) bytes: &'a [u8],
    pub(super) pos: usize,
    pub(super) prev: Prev,
    /// A line terminator since the previous significant token (true at the start: the wrapper
    /// puts the program on a line of its own).
    pub(super) newline: bool,
    /// Never empty: `opens[0]` is the program itself.
    opens: Vec<Open>,
    /// Classes whose body is still to come (after an `extends` clause), by bracket depth.
    classes: Vec<(usize, Position)>,
    /// The bracket depth of the last `var`, `let` or `const` whose declaration list may still
    /// go on: a `,` at that depth is followed by another binding name. Cleared by `;`. A guess
    /// that outlives its declaration only makes a `/` on the next line ambiguous (both readings
    /// are followed).
    declaring: Option<usize>,
    /// An `import` that is module access unless the next token is `:` (a property name).
    import_at: Option<usize>,
    /// A `require` that is module access if the next token is `(`, `?.` or a template.
    require_at: Option<usize>,
    pub(super) module_access: Option<usize>,
    pub(super) escape: Option<Refusal>,
    pub(super) invalid: Option<Refusal>,
    pub(super) limit: Option<Refusal>,
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
];

/// Keywords after which a statement starts.
const STATEMENT_KEYWORDS: &[&str] = &["else", "do", "try", "finally", "debugger"];

impl<'a> Reading<'a> {
    pub(super) fn new(
        text: &'a str,
        ids: Rc<Cell<u64>>,
        names: Rc<Cell<usize>>,
        slashes: Option<SlashLog>,
    ) -> Self {
        Reading {
            ids,
            names,
            slashes,
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
            declaring: None,
            import_at: None,
            require_at: None,
            module_access: None,
            escape: None,
            invalid: None,
            limit: None,
        }
    }

    pub(super) fn peek(&self, offset: usize) -> Option<u8> {
        self.bytes.get(self.pos.saturating_add(offset)).copied()
    }

    pub(super) fn starts_with(&self, prefix: &[u8]) -> bool {
        self.bytes
            .get(self.pos..)
            .is_some_and(|rest| rest.starts_with(prefix))
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
            let optional_call =
                self.starts_with(b"?.") && !self.peek(2).is_some_and(|b| b.is_ascii_digit());
            if byte == b'(' || byte == b'`' || optional_call {
                self.found_module_access(at);
            }
        }
    }

    /// Consumes one token starting with `byte` in `context`.
    fn token(&mut self, byte: u8, context: Context, forks: &mut Vec<Reading<'a>>) -> Scan {
        let tag = self.prev.tag;
        match byte {
            b'/' => return self.slash(context, forks),
            b'\'' | b'"' => {
                let scan = self.skip_string();
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
                self.declaring = None;
                self.prev = Prev::plain(match self.top() {
                    Level::Paren(_) | Level::Bracket | Level::Substitution => OPERAND,
                    Level::Brace(BraceKind::Object) => OPERAND,
                    _ => STATEMENT,
                });
            }
            b',' => {
                self.pos += 1;
                self.prev = if self.declaring == Some(self.opens.len()) {
                    Prev::tagged(Tag::Binding, OPERAND)
                } else {
                    Prev::plain(OPERAND)
                };
            }
            b':' => {
                self.pos += 1;
                self.prev = Prev::plain(self.colon());
            }
            b'?' => {
                if self.starts_with(b"??") {
                    self.pos += if self.peek(2) == Some(b'=') { 3 } else { 2 };
                    self.prev = Prev::plain(OPERAND);
                } else if self.peek(1) == Some(b'.')
                    && !self.peek(2).is_some_and(|b| b.is_ascii_digit())
                {
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
                } else if self.peek(1).is_some_and(|b| b.is_ascii_digit()) {
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
            // `<<` and `<<=` are one token, so a `<!--` right after `<<` is `!` and `--`, not
            // an HTML-like comment.
            b'<' if self.peek(1) == Some(b'<') => {
                self.pos += if self.peek(2) == Some(b'=') { 3 } else { 2 };
                self.prev = Prev::plain(OPERAND);
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
        if let Some(log) = &self.slashes {
            log.borrow_mut().push((start, context.slash));
        }
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

    pub(super) fn open(&mut self, level: Level) {
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
            // A name a declaration binds: nothing can divide it, so a `/` on the next line
            // starts a statement (automatic semicolon insertion: `var x` ⏎ `/re/`).
            (_, Tag::Binding) => Prev {
                tag: Tag::None,
                same_line: VALUE,
                new_line: VALUE.or(STATEMENT),
            },
            // `break label` ⏎ `/re/`: the label cannot be divided either.
            ("break" | "continue", _) => Prev::tagged(Tag::Binding, STATEMENT),
            ("var" | "let" | "const", _) => {
                self.declaring = Some(self.opens.len());
                let after = if keyword == "let" { VALUE } else { OPERAND };
                Prev::tagged(Tag::Binding, after)
            }
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

impl<'a> readings::Reading for Reading<'a> {
    type Stop = Infallible;

    fn position(&self) -> usize {
        self.pos
    }

    /// Reads one token, pushing the other reading of an ambiguous `/` into `forks`. The reading
    /// ends at the end of the program (after the end checks), at its first lexical error, or at
    /// a limit.
    fn step(&mut self, forks: &mut Vec<Self>) -> Result<Step, Infallible> {
        if let Scan::Unterminated(what) = self.skip_trivia() {
            self.invalid = Some(Refusal {
                at: self.pos,
                reason: Reason::Unterminated(what),
            });
            return Ok(Step::Ended);
        }
        let Some(byte) = self.peek(0) else {
            self.finish();
            return Ok(Step::Ended);
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
        Ok(if self.invalid.is_none() && self.limit.is_none() {
            Step::Continue
        } else {
            Step::Ended
        })
    }

    /// Stacks are compared by their top entry's id, unique to one push (or change) and inherited
    /// by forks, so equal ids mean the same entries all the way down.
    fn same_state(&self, other: &Self) -> bool {
        self.pos == other.pos
            && self.newline == other.newline
            && self.prev == other.prev
            && self.opens.last().map(|open| open.id) == other.opens.last().map(|open| open.id)
            && self.classes == other.classes
            && self.declaring == other.declaring
            && self.import_at == other.import_at
            && self.require_at == other.require_at
    }

    /// Takes over the findings of `other`.
    fn absorb(&mut self, other: Self) -> Result<(), Infallible> {
        if let Some(at) = other.module_access {
            self.module_access = Some(self.module_access.map_or(at, |seen| seen.min(at)));
        }
        self.escape = earliest(self.escape.take(), other.escape);
        Ok(())
    }
}
