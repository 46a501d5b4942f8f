//! Scanning within a token: whitespace and comments, string, template, regular expression and
//! numeric literals, identifiers and their escapes.

use super::context::{Level, OPERAND, Prev, VALUE};
use super::reading::Reading;

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

    /// Template text after `` ` `` or after the `}` of a substitution, up to the closing
    /// backtick (a value) or the next `${` (a substitution opens).
    pub(super) fn template_text(&mut self) -> Scan {
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

    pub(super) fn skip_string(&mut self, quote: u8) -> Scan {
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
    pub(super) fn skip_regex(&mut self) -> Scan {
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

    pub(super) fn skip_number(&mut self) {
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
}

pub(super) fn is_digit(byte: u8) -> bool {
    byte.is_ascii_digit()
}

pub(super) fn is_identifier_start(byte: u8) -> bool {
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
