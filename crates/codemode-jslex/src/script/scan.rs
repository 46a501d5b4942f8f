//! Scanning within a token, on the lexical rules of [`crate::scan`]: whitespace and comments,
//! string, template, regular expression and numeric literals, identifiers and their escapes.

use super::context::{Level, OPERAND, Prev, VALUE};
use super::reading::Reading;
use crate::scan::{
    TemplateText, block_comment_end, char_at, is_identifier_part, is_line_terminator, is_space,
    line_comment_end, line_terminator_len, number_end, regex_end, string_end, unicode_escape,
};

/// How the reading ended a literal or comment scan.
pub(super) enum Scan {
    Done,
    Unterminated(&'static str),
}

impl Reading<'_> {
    /// Skips whitespace and comments, noting line terminators.
    pub(super) fn skip_trivia(&mut self) -> Scan {
        while let Some(byte) = self.peek(0) {
            match byte {
                b' ' | b'\t' | 0x0b | 0x0c => self.pos += 1,
                b'/' if self.peek(1) == Some(b'/') => {
                    self.pos = line_comment_end(self.bytes, self.pos);
                }
                b'/' if self.peek(1) == Some(b'*') => {
                    let (end, newline) = block_comment_end(self.bytes, self.pos);
                    self.newline |= newline;
                    match end {
                        Some(end) => self.pos = end,
                        None => {
                            self.pos = self.bytes.len();
                            return Scan::Unterminated("block comment");
                        }
                    }
                }
                // Annex B HTML-like comments, which QuickJS accepts in scripts.
                b'<' if self.starts_with(b"<!--") => {
                    self.pos = line_comment_end(self.bytes, self.pos);
                }
                b'-' if self.newline && self.starts_with(b"-->") => {
                    self.pos = line_comment_end(self.bytes, self.pos);
                }
                _ => match line_terminator_len(self.bytes, self.pos) {
                    0 => match char_at(self.bytes, self.pos) {
                        Some(c) if byte >= 0x80 && is_space(c) => self.pos += c.len_utf8(),
                        _ => return Scan::Done,
                    },
                    len => {
                        self.pos += len;
                        self.newline = true;
                    }
                },
            }
        }
        Scan::Done
    }

    /// Template text after `` ` `` or after the `}` of a substitution, up to the closing
    /// backtick (a value) or the next `${` (a substitution opens).
    pub(super) fn template_text(&mut self) -> Scan {
        match crate::scan::template_text_end(self.bytes, self.pos) {
            TemplateText::End(end) => {
                self.pos = end;
                self.prev = Prev::plain(VALUE);
                Scan::Done
            }
            TemplateText::Substitution(at) => {
                self.pos = at;
                self.open(Level::Substitution);
                self.prev = Prev::plain(OPERAND);
                Scan::Done
            }
            TemplateText::Unterminated => {
                self.pos = self.bytes.len();
                Scan::Unterminated("template literal")
            }
        }
    }

    pub(super) fn skip_string(&mut self) -> Scan {
        match string_end(self.bytes, self.pos) {
            Ok(end) => {
                self.pos = end;
                Scan::Done
            }
            Err(at) => {
                self.pos = at;
                Scan::Unterminated("string literal")
            }
        }
    }

    /// A regular expression literal from its opening `/`, flags included.
    pub(super) fn skip_regex(&mut self) -> Scan {
        match regex_end(self.bytes, self.pos) {
            Some(end) => {
                self.pos = end;
                Scan::Done
            }
            None => Scan::Unterminated("regular expression literal"),
        }
    }

    pub(super) fn skip_number(&mut self) {
        self.pos = number_end(self.bytes, self.pos);
        // Anything glued to the number (QuickJS rejects an identifier right after a number, so
        // nothing else can follow here in a valid program).
        while self.peek(0).is_some_and(is_identifier_part) {
            self.pos += 1;
        }
    }

    /// Consumes an identifier's characters (escapes decoded) and returns its name, or `None`
    /// when it is longer than any keyword (only keywords matter here).
    pub(super) fn identifier_text(&mut self) -> Option<String> {
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
                match unicode_escape(self.bytes, self.pos) {
                    Some((c, len)) => {
                        push(c, &mut name);
                        self.pos += len;
                    }
                    None => break,
                }
            } else if byte >= 0x80 {
                match char_at(self.bytes, self.pos) {
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
}
