//! One reading of the text: the state machine that steps over it token by token, keeping its
//! estimate, and forks where the lexing is ambiguous.

use super::frames::FrameStack;
use super::lex::{is_operator_byte, skip_word, starts_word};
use super::{After, CONTINUATION_WORDS, Frame, HEADER_WORDS, Opener, PREFIX_WORDS};
use crate::Slash;
use crate::readings::{self, Step};
use crate::scan::{
    TemplateText, block_comment_end, char_at as character_at, line_comment_end, number_end,
    regex_end, starts_with, string_end, template_text_end,
};

/// One way of lexing the text, with its estimate.
#[derive(Clone)]
pub(super) struct Reading<'a> {
    bytes: &'a [u8],
    /// The estimate allowed.
    limit: usize,
    pub(super) position: usize,
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

impl<'a> Reading<'a> {
    pub(super) fn new(bytes: &'a [u8], limit: usize) -> Self {
        Reading {
            bytes,
            limit,
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

    fn token(&mut self, bytes: &[u8], forks: &mut Vec<Self>) -> Result<Step, usize> {
        let Some(&byte) = bytes.get(self.position) else {
            return Ok(Step::Ended);
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
                _ => return self.slash(bytes, forks),
            },
            b'\'' | b'"' => {
                self.skip_string(bytes);
                self.finish_token(After::operand());
            }
            b'`' => {
                let start = self.position;
                self.position += 1;
                self.restore = None;
                // Tagged templates chain: x`a``b``c` nests once per literal.
                self.extend(1, start)?;
                self.scan_template(bytes)?;
            }
            b'(' | b'[' | b'{' => self.open(byte)?,
            b')' | b']' => return Ok(self.close_group(byte)),
            b'}' => return self.close_brace(bytes),
            b';' => self.semicolon(),
            b',' => self.comma(),
            _ if byte >= 0x80 => match character_at(bytes, self.position) {
                // U+2028 and U+2029 end lines (and line comments) for swc.
                Some(character @ ('\u{2028}' | '\u{2029}')) => {
                    self.line_break = true;
                    self.position += character.len_utf8();
                }
                Some(character) if character.is_alphanumeric() => self.word(bytes)?,
                // Unicode white space (or an identifier part such as a joiner,
                // which splitting into two words only over-counts).
                Some(character) => self.position += character.len_utf8(),
                None => self.position += 1,
            },
            _ if starts_word(byte) => self.word(bytes)?,
            _ if is_operator_byte(byte) => return self.operator_run(bytes, forks),
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
    fn extend(&mut self, amount: usize, offset: usize) -> Result<(), usize> {
        self.frames.top_mut().chain += amount;
        self.depth += amount;
        if self.depth > self.limit {
            Err(offset)
        } else {
            Ok(())
        }
    }

    fn push(&mut self, opener: Opener, header: bool, offset: usize) -> Result<(), usize> {
        self.frames.push(Frame {
            opener,
            header,
            chain: 0,
            floor: 0,
        });
        self.depth += 1;
        if self.depth > self.limit {
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

    fn open(&mut self, byte: u8) -> Result<(), usize> {
        let start = self.position;
        self.position += 1;
        let header = byte == b'(' && self.after.header_word;
        let opener = match byte {
            b'(' => Opener::Paren,
            b'[' => Opener::Bracket,
            _ => Opener::Brace,
        };
        // The group is one element of the enclosing chain ...
        self.extend(1, start)?;
        // ... and one level of its own.
        self.push(opener, header, start)?;
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
            return Step::Unlikely;
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

    fn close_brace(&mut self, bytes: &[u8]) -> Result<Step, usize> {
        self.position += 1;
        self.close_angles();
        if self.pop(Opener::Substitution).is_some() {
            // Back inside the template literal.
            self.scan_template(bytes)?;
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
            Step::Unlikely
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

    fn word(&mut self, bytes: &[u8]) -> Result<(), usize> {
        let start = self.position;
        self.position = if bytes.get(start).is_some_and(u8::is_ascii_digit) {
            number_end(bytes, start)
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
            self.extend(chain.saturating_sub(current), start)?;
        }
        if keyword || after.word {
            self.extend(1, start)?;
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
    fn operator_run(&mut self, bytes: &[u8], forks: &mut Vec<Self>) -> Result<Step, usize> {
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
                fork = Some(comment);
                self.html_comment_is_code_at = Some(end);
                break;
            }
            end += 1;
        }
        let run = bytes.get(start..end).unwrap_or_default();
        let mut previous = 0u8;
        for (offset, &byte) in (start..end).zip(run) {
            self.extend(1, offset)?;
            match byte {
                b'<' => self.push(Opener::Angle, false, offset)?,
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
        if let Some(comment) = fork.as_mut() {
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
        if let Some(comment) = fork.as_mut() {
            comment.after = self.after;
            comment.line_break = false;
            comment.restore = None;
        }
        forks.extend(fork);
        Ok(Step::Continue)
    }

    /// A `/` that is not a comment.
    fn slash(&mut self, bytes: &[u8], forks: &mut Vec<Self>) -> Result<Step, usize> {
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
                None => Step::Ended,
            });
        }
        // Division; and where an expression may start too, a regular
        // expression (unless it would be unterminated).
        let fork = regex_end.filter(|_| slash == Slash::Either).map(|end| {
            let mut regex = self.clone();
            regex.position = end;
            regex.finish_token(After::operand());
            regex
        });
        self.position += 1;
        self.extend(1, start)?;
        self.finish_token(After::expression_expected());
        forks.extend(fork);
        Ok(Step::Continue)
    }

    /// To the end of the line (`\n`, `\r`, U+2028 or U+2029, as swc).
    pub(super) fn skip_line_comment(&mut self, bytes: &[u8]) {
        self.position = line_comment_end(bytes, self.position);
    }

    fn skip_block_comment(&mut self, bytes: &[u8]) {
        let (end, newline) = block_comment_end(bytes, self.position);
        self.line_break |= newline;
        self.position = end.unwrap_or(bytes.len());
    }

    /// A quoted string; ends at the closing quote or at an unescaped line
    /// break (swc reports the unterminated string and goes on from there).
    fn skip_string(&mut self, bytes: &[u8]) {
        self.position = string_end(bytes, self.position).unwrap_or_else(|at| at);
    }

    /// Inside a template literal (after the opening backtick or after the `}`
    /// of a substitution): up to the closing backtick, or into a `${`.
    fn scan_template(&mut self, bytes: &[u8]) -> Result<(), usize> {
        match template_text_end(bytes, self.position) {
            TemplateText::End(end) => {
                self.position = end;
                self.finish_token(After::operand());
            }
            TemplateText::Substitution(start) => {
                self.position = start + 2;
                self.extend(1, start)?;
                self.push(Opener::Substitution, false, start)?;
                self.finish_token(After::expression_expected());
            }
            // Unterminated: the end of the text.
            TemplateText::Unterminated => self.position = bytes.len(),
        }
        Ok(())
    }
}

impl readings::Reading for Reading<'_> {
    type Stop = usize;

    fn position(&self) -> usize {
        self.position
    }

    fn step(&mut self, forks: &mut Vec<Self>) -> Result<Step, usize> {
        self.token(self.bytes, forks)
    }

    /// Same place, same lexer state, same brackets open: the two readings
    /// continue identically, up to their chains.
    fn same_state(&self, other: &Self) -> bool {
        self.position == other.position
            && self.line_break == other.line_break
            && self.html_comment_is_code_at == other.html_comment_is_code_at
            && self.frames.same_openers(&other.frames)
    }

    /// Become the more cautious of both: the larger chains, the more cautious
    /// rest.
    fn absorb(&mut self, other: Self) -> Result<(), usize> {
        self.depth += self.frames.join(&other.frames);
        self.after = self.after.join(other.after);
        self.restore = self.restore.max(other.restore);
        if self.depth > self.limit {
            Err(self.position)
        } else {
            Ok(())
        }
    }
}
