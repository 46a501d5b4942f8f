//! A cheap, single-pass estimate of how deeply the parser would recurse.
//!
//! swc's parser and visitors recurse once per level of syntax nesting, so a
//! pathological cell (100,000 `(`, `!!!!…x`, `a.b.c…`, `if (a) if (b) …`,
//! `Array<Array<…>>`) would overflow the stack and abort the process. This
//! scanner runs before the parser, in O(n) time and O(limit) memory, and
//! rejects input whose estimated depth crosses the limit.
//!
//! The estimate is the sum, over the currently open brackets (`(`, `[`, `{`,
//! `${`), of one per bracket plus the length of the operator/keyword *chain*
//! in it: every operator run, every nesting keyword (`if`, `else`, `typeof`,
//! `new`, …) and every bracketed group adds one, and the chain restarts at
//! `;`, `,` and at a line break that starts a new statement. Strings,
//! templates, comments and regular expressions are skipped with the usual
//! previous-token heuristic for `/`.
//!
//! `/` is read as a regular expression after an operator, a keyword, the
//! `)` of an `if`/`for`/`while`/`with` header and the `}` of a block (a `{`
//! after `;`, `{`, `}`, `)`, `=>`, `:`, `else`, `do`, `try`, `finally`),
//! and as division otherwise. If that guess is wrong in the regex direction,
//! the brackets inside the would-be regex still count.
//!
//! Limitation: this is not the parser. Input crafted to make the guess wrong
//! in the division direction (an identifier that the scanner takes for a
//! keyword, such as a variable named `of` followed by a regex-looking
//! string) can hide nesting from this estimate. That is why the transform
//! also runs on its own large stack (see `TransformOptions::stack_size`);
//! a host that must survive deliberately hostile TypeScript should also run
//! transforms in a separate process.

/// Words that nest the next construct inside themselves and expect an
/// expression (or statement) after them: they extend the chain and a `/` after
/// them starts a regular expression.
const NESTING_KEYWORDS: &[&[u8]] = &[
    b"if",
    b"else",
    b"for",
    b"while",
    b"do",
    b"with",
    b"typeof",
    b"void",
    b"delete",
    b"await",
    b"new",
    b"yield",
    b"in",
    b"instanceof",
    b"return",
    b"throw",
    b"case",
    b"as",
    b"satisfies",
    b"keyof",
    b"extends",
    b"of",
];

/// Words that, after a `}` and a line break, still continue the previous
/// statement or expression.
const CONTINUATION_KEYWORDS: &[&[u8]] = &[
    b"else",
    b"catch",
    b"finally",
    b"while",
    b"in",
    b"instanceof",
    b"as",
    b"satisfies",
    b"of",
];

/// Words after which a `{` opens a block.
const BLOCK_KEYWORDS: &[&[u8]] = &[b"else", b"do", b"try", b"finally"];

/// Words whose parenthesised header is followed by a statement.
const HEADER_KEYWORDS: &[&[u8]] = &[b"if", b"while", b"for", b"with"];

/// What the previous significant token allows next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Previous {
    /// An expression or statement may start here (start, operator, `(`,
    /// `,`, `;`, a keyword, the `)` of an `if`/`for`/`while`/`with` header):
    /// a `/` begins a regular expression.
    ExpressionExpected,
    /// An operand ended here (identifier, literal, `)`, `]`, the `}` of an
    /// object literal): a `/` divides.
    Operand,
    /// The `}` of a block: a `/` begins a regular expression and, after a
    /// line break, a new statement starts unless `else`, `catch`, … follows.
    BlockEnd,
}

/// The last significant token, as far as telling a block `{` from an object
/// literal `{` needs.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Last {
    /// Start of input, `;`, `{`, `}`, `)`, `=>`, `:` or one of `else`, `do`,
    /// `try`, `finally`: a `{` here opens a block. (`:` is ambiguous, a label
    /// or a property; taking it as a block errs towards regular expressions,
    /// whose misreading is confined to one line.)
    BlockIntro,
    /// `if`, `while`, `for` or `with`: a `(` here opens a statement header.
    HeaderKeyword,
    /// Anything else: a `{` here is an object literal.
    Other,
}

/// One open bracket.
struct Frame {
    /// The byte that opened it; `$` for a template substitution `${`.
    opener: u8,
    /// A `(` after `if`/`while`/`for`/`with`, or a block `{`.
    statement: bool,
    /// Length of the current operator/keyword chain inside it.
    chain: usize,
}

/// The scanner's state over one source text.
struct NestingScan<'a> {
    bytes: &'a [u8],
    position: usize,
    limit: usize,
    /// Open frames; the first is the root and never popped.
    frames: Vec<Frame>,
    /// Current estimate: open frames (excluding the root) plus all chains.
    depth: usize,
    previous: Previous,
    last: Last,
    /// A line break was seen since the previous significant token.
    line_break: bool,
}

/// Estimate the nesting depth of `source`; `Err(byte offset)` where the
/// estimate first exceeds `limit`.
pub(crate) fn check_nesting(source: &str, limit: usize) -> Result<(), usize> {
    let mut scan = NestingScan {
        bytes: source.as_bytes(),
        position: 0,
        limit,
        frames: vec![Frame {
            opener: 0,
            statement: true,
            chain: 0,
        }],
        depth: 0,
        previous: Previous::ExpressionExpected,
        last: Last::BlockIntro,
        line_break: false,
    };
    scan.run()
}

impl NestingScan<'_> {
    fn peek(&self, ahead: usize) -> Option<u8> {
        self.bytes.get(self.position + ahead).copied()
    }

    fn run(&mut self) -> Result<(), usize> {
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\n' | b'\r' => {
                    self.line_break = true;
                    self.position += 1;
                }
                b' ' | b'\t' | 0x0b | 0x0c => self.position += 1,
                b'/' if self.peek(1) == Some(b'/') => self.skip_line_comment(),
                b'/' if self.peek(1) == Some(b'*') => self.skip_block_comment(),
                b'/' if self.previous != Previous::Operand => {
                    self.scan_regex()?;
                    self.significant(Previous::Operand, Last::Other);
                }
                b'\'' | b'"' => {
                    self.statement_start_reset(false);
                    self.skip_string(byte);
                    self.significant(Previous::Operand, Last::Other);
                }
                b'`' => {
                    self.position += 1;
                    self.scan_template()?;
                }
                b'(' | b'[' | b'{' => {
                    self.position += 1;
                    let statement = match byte {
                        b'(' => self.last == Last::HeaderKeyword,
                        b'{' => self.last == Last::BlockIntro,
                        _ => false,
                    };
                    self.open(byte, statement)?;
                }
                b')' | b']' => {
                    self.position += 1;
                    match self.close() {
                        // After `if (…)` a statement follows, which may be a
                        // regular expression or another nested `if`.
                        Some((b'(', true)) => {
                            self.significant(Previous::ExpressionExpected, Last::BlockIntro);
                        }
                        _ if byte == b')' => self.significant(Previous::Operand, Last::BlockIntro),
                        _ => self.significant(Previous::Operand, Last::Other),
                    }
                }
                b'}' => {
                    self.position += 1;
                    match self.close() {
                        // End of a template substitution: back into the template.
                        Some((b'$', _)) => self.scan_template()?,
                        Some((_, true)) | None => {
                            self.significant(Previous::BlockEnd, Last::BlockIntro);
                        }
                        Some(_) => self.significant(Previous::Operand, Last::Other),
                    }
                }
                b';' | b',' => {
                    self.position += 1;
                    self.reset_chain();
                    let last = if byte == b';' {
                        Last::BlockIntro
                    } else {
                        Last::Other
                    };
                    self.significant(Previous::ExpressionExpected, last);
                }
                b'0'..=b'9' => {
                    self.statement_start_reset(false);
                    self.skip_word();
                    self.significant(Previous::Operand, Last::Other);
                }
                _ if is_word_byte(byte) => self.word()?,
                _ => self.operator_run()?,
            }
        }
        Ok(())
    }

    /// Record a significant token.
    fn significant(&mut self, previous: Previous, last: Last) {
        self.previous = previous;
        self.last = last;
        self.line_break = false;
    }

    /// At a line break between an operand (or a block) and a new word, a new
    /// statement starts (automatic semicolon insertion): restart the chain.
    fn statement_start_reset(&mut self, continuation: bool) {
        if self.line_break && !continuation && self.previous != Previous::ExpressionExpected {
            self.reset_chain();
        }
    }

    fn reset_chain(&mut self) {
        if let Some(frame) = self.frames.last_mut() {
            self.depth = self.depth.saturating_sub(frame.chain);
            frame.chain = 0;
        }
    }

    /// Add `amount` to the current chain, failing at `offset` past the limit.
    fn extend_chain(&mut self, amount: usize, offset: usize) -> Result<(), usize> {
        if let Some(frame) = self.frames.last_mut() {
            frame.chain += amount;
        }
        self.depth += amount;
        if self.depth > self.limit {
            Err(offset)
        } else {
            Ok(())
        }
    }

    fn open(&mut self, opener: u8, statement: bool) -> Result<(), usize> {
        let offset = self.position.saturating_sub(1);
        self.statement_start_reset(false);
        // The group is one element of the enclosing chain ...
        self.extend_chain(1, offset)?;
        // ... and one level of its own.
        self.frames.push(Frame {
            opener,
            statement,
            chain: 0,
        });
        self.depth += 1;
        let last = if opener == b'{' && statement {
            Last::BlockIntro
        } else {
            Last::Other
        };
        self.significant(Previous::ExpressionExpected, last);
        if self.depth > self.limit {
            Err(offset)
        } else {
            Ok(())
        }
    }

    /// Close the innermost frame (never the root); returns its opener and
    /// whether it was a statement header or block.
    fn close(&mut self) -> Option<(u8, bool)> {
        if self.frames.len() <= 1 {
            return None;
        }
        let frame = self.frames.pop()?;
        self.depth = self.depth.saturating_sub(frame.chain + 1);
        Some((frame.opener, frame.statement))
    }

    fn word(&mut self) -> Result<(), usize> {
        let start = self.position;
        self.skip_word();
        let word = self.bytes.get(start..self.position).unwrap_or_default();
        let after_dot = start > 0 && self.bytes.get(start - 1) == Some(&b'.');
        if after_dot {
            // A property name, whatever its spelling.
            self.significant(Previous::Operand, Last::Other);
            return Ok(());
        }
        let continuation = if self.previous == Previous::BlockEnd {
            CONTINUATION_KEYWORDS.contains(&word)
        } else {
            NESTING_KEYWORDS.contains(&word)
        };
        self.statement_start_reset(continuation);
        let last = if HEADER_KEYWORDS.contains(&word) {
            Last::HeaderKeyword
        } else if BLOCK_KEYWORDS.contains(&word) {
            Last::BlockIntro
        } else {
            Last::Other
        };
        if NESTING_KEYWORDS.contains(&word) {
            self.extend_chain(1, start)?;
            self.significant(Previous::ExpressionExpected, last);
        } else {
            self.significant(Previous::Operand, last);
        }
        Ok(())
    }

    /// A run of operator bytes: `!` and `~` count one each (they are only
    /// prefix operators); other bytes one per three, so `===` counts once.
    fn operator_run(&mut self) -> Result<(), usize> {
        let start = self.position;
        let mut unary = 0usize;
        let mut other = 0usize;
        while let Some(byte) = self.peek(0) {
            let is_operator = matches!(
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
            ) || byte == b'/' && !matches!(self.peek(1), Some(b'/' | b'*'));
            if !is_operator {
                break;
            }
            if matches!(byte, b'!' | b'~') {
                unary += 1;
            } else {
                other += 1;
            }
            self.position += 1;
        }
        if self.position == start {
            // Any other byte (`\`, a stray control character): skip it.
            self.position += 1;
            return Ok(());
        }
        self.extend_chain(unary + other.div_ceil(3), start)?;
        let run = self.bytes.get(start..self.position).unwrap_or_default();
        let last = if run.ends_with(b"=>") || run == b":" {
            Last::BlockIntro
        } else {
            Last::Other
        };
        self.significant(Previous::ExpressionExpected, last);
        Ok(())
    }

    fn skip_word(&mut self) {
        while let Some(byte) = self.peek(0) {
            if is_word_byte(byte) || byte.is_ascii_digit() {
                self.position += 1;
            } else {
                break;
            }
        }
    }

    fn skip_line_comment(&mut self) {
        while let Some(byte) = self.peek(0) {
            if matches!(byte, b'\n' | b'\r') {
                return;
            }
            self.position += 1;
        }
    }

    fn skip_block_comment(&mut self) {
        self.position += 2;
        while let Some(byte) = self.peek(0) {
            if byte == b'*' && self.peek(1) == Some(b'/') {
                self.position += 2;
                return;
            }
            if matches!(byte, b'\n' | b'\r') {
                self.line_break = true;
            }
            self.position += 1;
        }
    }

    /// A quoted string; ends at the closing quote or an unescaped line break.
    fn skip_string(&mut self, quote: u8) {
        self.position += 1;
        while let Some(byte) = self.peek(0) {
            self.position += 1;
            match byte {
                b'\\' => {
                    if self.peek(0) == Some(b'\r') && self.peek(1) == Some(b'\n') {
                        self.position += 1;
                    }
                    self.position += 1;
                }
                b'\n' | b'\r' => return,
                _ if byte == quote => return,
                _ => {}
            }
        }
    }

    /// A regular expression literal; ends at the closing `/` outside a
    /// character class, or at a line break. Flags are skipped as a word.
    ///
    /// Should the heuristic be wrong and the parser read this as code, the
    /// brackets and `!`/`~` inside still count (temporarily) against the limit.
    fn scan_regex(&mut self) -> Result<(), usize> {
        let start = self.position;
        self.position += 1;
        let mut in_class = false;
        let mut open = 0usize;
        let mut deepest = 0usize;
        let mut unary = 0usize;
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\n' | b'\r' => break,
                b'\\' => self.position += 1,
                b'(' | b'[' | b'{' => {
                    open += 1;
                    deepest = deepest.max(open);
                    in_class |= byte == b'[';
                }
                b')' | b']' | b'}' => {
                    open = open.saturating_sub(1);
                    in_class &= byte != b']';
                }
                b'!' | b'~' => unary += 1,
                b'/' if !in_class => {
                    self.position += 1;
                    self.skip_word();
                    break;
                }
                _ => {}
            }
            self.position += 1;
        }
        if self.depth + 2 * deepest + unary > self.limit {
            Err(start)
        } else {
            Ok(())
        }
    }

    /// Inside a template literal (after the opening backtick or after the `}`
    /// of a substitution): up to the closing backtick, or into a `${`.
    fn scan_template(&mut self) -> Result<(), usize> {
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\\' => self.position += 2,
                b'`' => {
                    self.position += 1;
                    self.significant(Previous::Operand, Last::Other);
                    return Ok(());
                }
                b'$' if self.peek(1) == Some(b'{') => {
                    self.position += 2;
                    return self.open(b'$', false);
                }
                _ => self.position += 1,
            }
        }
        Ok(())
    }
}

fn is_word_byte(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || matches!(byte, b'_' | b'$' | b'#' | b'@') || byte >= 0x80
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
                    if (r.ok) { return r.items.map((i) => i.name).join(', '); }\n";
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
            format!("x = 1{}", "+1".repeat(100)),
            format!("a{}", ".b".repeat(100)),
            format!("a{}", "()".repeat(100)),
            format!("{}x", "if (a) ".repeat(100)),
            format!("let x: {}number", "Array<".repeat(100)),
            format!("x = {}0", "a => ".repeat(100)),
            format!("x = {}y", "typeof ".repeat(100)),
        ] {
            assert!(!depth_ok(&hostile, 64), "{hostile:.40}");
        }
    }

    #[test]
    fn statements_restart_the_chain() {
        let with_semicolons = "x = a + b;\n".repeat(200);
        let without = "x = a + b\n".repeat(200);
        let calls = "log(a, b, c)\n".repeat(200);
        assert!(depth_ok(&with_semicolons, 16));
        assert!(depth_ok(&without, 16));
        assert!(depth_ok(&calls, 16));
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
    fn regex_after_a_statement_header_or_block_does_not_hide_code() {
        let parens = "(".repeat(100);
        for hostile in [
            format!("if (a) /\"/.test(s) + {parens}"),
            format!("while (a) /`/.test(s)\n{parens}"),
            format!("function f() {{}}\n/'/.test(s); {parens}"),
            // Division the scanner takes for a regex: its brackets still count.
            format!("x = function () {{}} / {parens} / 2"),
        ] {
            assert!(!depth_ok(&hostile, 64), "{hostile:.40}");
        }
        assert!(depth_ok(
            "if (ok) /\\(/.test(s); else { x = {a: 1}.a / 2 / 3; }",
            16
        ));
    }

    #[test]
    fn template_substitutions_nest() {
        let nested = format!("x = {}1{}", "`${".repeat(50), "}`".repeat(50));
        assert!(!depth_ok(&nested, 40));
        assert!(depth_ok("x = `a${`b${c}`}d`", 16));
    }
}
