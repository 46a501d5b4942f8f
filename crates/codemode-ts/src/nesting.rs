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
//! Limitation: like any tokenizer that is not the parser, the `/` heuristic
//! can be misled by crafted input (a regular expression after `if (…)`), which
//! could hide nesting on one line from this estimate. The transform therefore
//! also runs on its own large stack (see `TransformOptions::stack_size`).

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

/// What the previous significant token allows next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Previous {
    /// An expression may start here: a `/` begins a regular expression.
    ExpressionExpected,
    /// An operand ended here (identifier, literal, `)`, `]`); `/` divides.
    Operand,
    /// A `}` ended here; `/` divides (object literal) or starts a regex
    /// (block); either way a new statement may follow a line break.
    ClosingBrace,
}

/// One open bracket.
struct Frame {
    /// The byte that opened it; `$` for a template substitution `${`.
    opener: u8,
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
            chain: 0,
        }],
        depth: 0,
        previous: Previous::ExpressionExpected,
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
                b'/' if self.previous == Previous::ExpressionExpected => {
                    self.skip_regex();
                    self.significant(Previous::Operand);
                }
                b'\'' | b'"' => {
                    self.statement_start_reset(false);
                    self.skip_string(byte);
                    self.significant(Previous::Operand);
                }
                b'`' => {
                    self.position += 1;
                    self.scan_template()?;
                }
                b'(' | b'[' | b'{' => {
                    self.position += 1;
                    self.open(byte)?;
                }
                b')' | b']' => {
                    self.position += 1;
                    self.close();
                    self.significant(Previous::Operand);
                }
                b'}' => {
                    self.position += 1;
                    if self.close() == Some(b'$') {
                        // End of a template substitution: back into the template.
                        self.scan_template()?;
                    } else {
                        self.significant(Previous::ClosingBrace);
                    }
                }
                b';' | b',' => {
                    self.position += 1;
                    self.reset_chain();
                    self.significant(Previous::ExpressionExpected);
                }
                b'0'..=b'9' => {
                    self.statement_start_reset(false);
                    self.skip_word();
                    self.significant(Previous::Operand);
                }
                _ if is_word_byte(byte) => self.word()?,
                _ => self.operator_run()?,
            }
        }
        Ok(())
    }

    /// Record a significant token.
    fn significant(&mut self, previous: Previous) {
        self.previous = previous;
        self.line_break = false;
    }

    /// At a line break between an operand and a new word, a new statement
    /// starts (automatic semicolon insertion): restart the chain.
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

    fn open(&mut self, opener: u8) -> Result<(), usize> {
        let offset = self.position.saturating_sub(1);
        self.statement_start_reset(false);
        // The group is one element of the enclosing chain ...
        self.extend_chain(1, offset)?;
        // ... and one level of its own.
        self.frames.push(Frame { opener, chain: 0 });
        self.depth += 1;
        self.significant(Previous::ExpressionExpected);
        if self.depth > self.limit {
            Err(offset)
        } else {
            Ok(())
        }
    }

    /// Close the innermost frame (never the root); returns its opener.
    fn close(&mut self) -> Option<u8> {
        if self.frames.len() <= 1 {
            return None;
        }
        let frame = self.frames.pop()?;
        self.depth = self.depth.saturating_sub(frame.chain + 1);
        Some(frame.opener)
    }

    fn word(&mut self) -> Result<(), usize> {
        let start = self.position;
        self.skip_word();
        let word = self.bytes.get(start..self.position).unwrap_or_default();
        let after_dot = start > 0 && self.bytes.get(start - 1) == Some(&b'.');
        if after_dot {
            // A property name, whatever its spelling.
            self.significant(Previous::Operand);
            return Ok(());
        }
        let continuation = self.previous == Previous::ClosingBrace
            && CONTINUATION_KEYWORDS.contains(&word)
            || self.previous != Previous::ClosingBrace && NESTING_KEYWORDS.contains(&word);
        self.statement_start_reset(continuation);
        if NESTING_KEYWORDS.contains(&word) {
            self.extend_chain(1, start)?;
            self.significant(Previous::ExpressionExpected);
        } else {
            self.significant(Previous::Operand);
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
        self.significant(Previous::ExpressionExpected);
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
    fn skip_regex(&mut self) {
        self.position += 1;
        let mut in_class = false;
        while let Some(byte) = self.peek(0) {
            match byte {
                b'\n' | b'\r' => return,
                b'\\' => self.position += 1,
                b'[' => in_class = true,
                b']' => in_class = false,
                b'/' if !in_class => {
                    self.position += 1;
                    self.skip_word();
                    return;
                }
                _ => {}
            }
            self.position += 1;
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
                    self.significant(Previous::Operand);
                    return Ok(());
                }
                b'$' if self.peek(1) == Some(b'{') => {
                    self.position += 2;
                    return self.open(b'$');
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
            "const s = '{0}'; const t = \"{0}\"; // {0}\n/* {0} */ const r = /{0}/; const u = `{0}`;",
            "(".repeat(100)
        );
        assert!(depth_ok(&cell, 16));
    }

    #[test]
    fn template_substitutions_nest() {
        let nested = format!("x = {}1{}", "`${".repeat(50), "}`".repeat(50));
        assert!(!depth_ok(&nested, 40));
        assert!(depth_ok("x = `a${`b${c}`}d`", 16));
    }
}
