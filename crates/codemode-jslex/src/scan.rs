//! The lexical grammar both readers share: where a comment, a string, a template's text, a
//! regular expression or a numeric literal that starts at some byte ends, and which characters
//! are line terminators and white space.
//!
//! Every function works on the program's bytes and a byte offset, and never panics: an offset
//! past the end reads as the end of the text. They follow ECMAScript's lexical grammar; where it
//! leaves a choice to the implementation (the white space outside ASCII), they follow QuickJS.
//!
//! ```
//! use codemode_jslex::scan;
//!
//! let text = br#"/a[/]\//gi.test("x\"y")"#;
//! assert_eq!(scan::regex_end(text, 0), Some(10));
//! assert_eq!(scan::string_end(text, 16), Ok(22));
//! assert_eq!(scan::number_end(b"1.5e-3n)", 0), 7);
//! ```

/// U+2028 (line separator) and U+2029 (paragraph separator) in UTF-8.
const UNICODE_LINE_TERMINATORS: [&[u8]; 2] = ["\u{2028}".as_bytes(), "\u{2029}".as_bytes()];

/// The length of the line terminator at `at` (`\n`, `\r`, U+2028 or U+2029), 0 if none is there.
#[must_use]
pub fn line_terminator_len(bytes: &[u8], at: usize) -> usize {
    match bytes.get(at) {
        Some(b'\n' | b'\r') => 1,
        Some(0xe2)
            if UNICODE_LINE_TERMINATORS
                .iter()
                .any(|t| starts_with(bytes, at, t)) =>
        {
            3
        }
        _ => 0,
    }
}

/// Where the line comment (`//`, or an HTML-like `<!--` or `-->`) containing `at` ends: at the
/// next line terminator, which is not part of it, or at the end of the text.
#[must_use]
pub fn line_comment_end(bytes: &[u8], mut at: usize) -> usize {
    while at < bytes.len() && line_terminator_len(bytes, at) == 0 {
        at += 1;
    }
    at.min(bytes.len())
}

/// The end of the block comment whose `/*` is at `at` (after its `*/`), and whether it holds a
/// line terminator (then it counts as one); `None` for the end if it does not end.
#[must_use]
pub fn block_comment_end(bytes: &[u8], at: usize) -> (Option<usize>, bool) {
    let mut newline = false;
    let mut at = at.saturating_add(2);
    while let Some(&byte) = bytes.get(at) {
        if byte == b'*' && bytes.get(at + 1) == Some(&b'/') {
            return (Some(at + 2), newline);
        }
        newline |= line_terminator_len(bytes, at) > 0;
        at += 1;
    }
    (None, newline)
}

/// The end of the string literal whose quote is at `at` (after the closing quote), or
/// `Err(offset)` of the unescaped `\n` or `\r` (or the end of the text) that leaves it
/// unterminated. U+2028 and U+2029 may appear in strings.
///
/// # Errors
/// The offset where the string is found unterminated.
pub fn string_end(bytes: &[u8], at: usize) -> Result<usize, usize> {
    let Some(&quote) = bytes.get(at) else {
        return Err(bytes.len());
    };
    let mut at = at + 1;
    while let Some(&byte) = bytes.get(at) {
        match byte {
            // A line continuation may be `\` + CR LF.
            b'\\' if starts_with(bytes, at, b"\\\r\n") => at += 3,
            b'\\' => at += 2,
            b'\n' | b'\r' => return Err(at),
            _ if byte == quote => return Ok(at + 1),
            _ => at += 1,
        }
    }
    Err(bytes.len())
}

/// What ends a template literal's text.
#[derive(Clone, Copy, PartialEq, Eq, Debug)]
pub enum TemplateText {
    /// The closing backtick; the offset after it.
    End(usize),
    /// A substitution's `${`, at this offset.
    Substitution(usize),
    /// The end of the text.
    Unterminated,
}

/// Where the template text starting at `at` (after a backtick or a substitution's `}`) ends.
#[must_use]
pub fn template_text_end(bytes: &[u8], mut at: usize) -> TemplateText {
    while let Some(&byte) = bytes.get(at) {
        match byte {
            b'\\' => at += 2,
            b'`' => return TemplateText::End(at + 1),
            b'$' if bytes.get(at + 1) == Some(&b'{') => return TemplateText::Substitution(at),
            _ => at += 1,
        }
    }
    TemplateText::Unterminated
}

/// The end of the regular expression literal whose opening `/` is at `at`, flags included, or
/// `None` if a line terminator (U+2028 and U+2029 too) or the end of the text comes first: no
/// parser can read a regular expression there.
#[must_use]
pub fn regex_end(bytes: &[u8], at: usize) -> Option<usize> {
    let mut at = at + 1;
    let mut in_class = false;
    loop {
        let byte = *bytes.get(at)?;
        if line_terminator_len(bytes, at) > 0 {
            return None;
        }
        at += 1;
        match byte {
            b'\\' => {
                if at >= bytes.len() || line_terminator_len(bytes, at) > 0 {
                    return None;
                }
                at += 1;
            }
            b'[' => in_class = true,
            b']' => in_class = false,
            b'/' if !in_class => break,
            _ => {}
        }
    }
    // Flags: identifier parts.
    while let Some(&byte) = bytes.get(at) {
        if is_identifier_part(byte) {
            at += 1;
        } else if byte >= 0x80 {
            match char_at(bytes, at) {
                Some(c) if !is_space(c) && !is_line_terminator(c) => at += c.len_utf8(),
                _ => break,
            }
        } else {
            break;
        }
    }
    Some(at)
}

/// The end of the numeric literal starting at `at` (a digit, or a `.` before one): `1.` and
/// `1.5e-3` are one token each (so `1./x/` divides), `0x1F`, `1_000n`; `1.e5.x` is a number and
/// a member access.
#[must_use]
pub fn number_end(bytes: &[u8], mut at: usize) -> usize {
    let digits = |mut at: usize| {
        while bytes
            .get(at)
            .is_some_and(|&byte| byte.is_ascii_digit() || byte == b'_')
        {
            at += 1;
        }
        at
    };
    if bytes.get(at) == Some(&b'0')
        && matches!(
            bytes.get(at + 1),
            Some(b'x' | b'X' | b'o' | b'O' | b'b' | b'B')
        )
    {
        at += 2;
        while bytes
            .get(at)
            .is_some_and(|&byte| byte.is_ascii_alphanumeric() || byte == b'_')
        {
            at += 1;
        }
        return at;
    }
    at = digits(at);
    if bytes.get(at) == Some(&b'.') {
        at = digits(at + 1);
    }
    if matches!(bytes.get(at), Some(b'e' | b'E')) {
        let sign = usize::from(matches!(bytes.get(at + 1), Some(b'+' | b'-')));
        if bytes.get(at + 1 + sign).is_some_and(u8::is_ascii_digit) {
            at = digits(at + 1 + sign);
        }
    }
    if bytes.get(at) == Some(&b'n') {
        at += 1;
    }
    at
}

/// `\uXXXX` or `\u{X...}` at `at`: the character and the escape's length.
#[must_use]
pub fn unicode_escape(bytes: &[u8], at: usize) -> Option<(char, usize)> {
    let rest = bytes.get(at..)?;
    if rest.first() != Some(&b'\\') || rest.get(1) != Some(&b'u') {
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

/// The character whose UTF-8 encoding starts at `at`, if one does.
#[must_use]
pub fn char_at(bytes: &[u8], at: usize) -> Option<char> {
    let len = match *bytes.get(at)? {
        0x00..=0x7f => 1,
        0xc0..=0xdf => 2,
        0xe0..=0xef => 3,
        0xf0..=0xf7 => 4,
        _ => return None,
    };
    let encoded = bytes.get(at..at + len)?;
    std::str::from_utf8(encoded).ok()?.chars().next()
}

/// Whether `prefix` is at `at`.
#[must_use]
pub fn starts_with(bytes: &[u8], at: usize, prefix: &[u8]) -> bool {
    bytes.get(at..).is_some_and(|rest| rest.starts_with(prefix))
}

/// An ASCII byte that may start an identifier.
#[must_use]
pub fn is_identifier_start(byte: u8) -> bool {
    byte.is_ascii_alphabetic() || byte == b'_' || byte == b'$'
}

/// An ASCII byte that may continue an identifier.
#[must_use]
pub fn is_identifier_part(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$'
}

/// The line terminators outside ASCII.
#[must_use]
pub fn is_line_terminator(c: char) -> bool {
    matches!(c, '\u{2028}' | '\u{2029}')
}

/// White space outside ASCII, as QuickJS has it (`lre_is_space`).
#[must_use]
pub fn is_space(c: char) -> bool {
    matches!(
        c,
        '\u{a0}' | '\u{1680}' | '\u{2000}'
            ..='\u{200a}' | '\u{202f}' | '\u{205f}' | '\u{3000}' | '\u{feff}'
    )
}

#[cfg(test)]
mod tests {
    use super::{
        TemplateText, block_comment_end, line_comment_end, number_end, regex_end, string_end,
        template_text_end,
    };

    #[test]
    fn regular_expressions_end_at_their_slash_and_flags() {
        assert_eq!(regex_end(b"/a/gi;", 0), Some(5));
        assert_eq!(regex_end(b"/[/]/", 0), Some(5));
        assert_eq!(regex_end(br"/\//", 0), Some(4));
        // Flags are identifier parts, `$` and `_` too (the nesting reader stopped at them).
        assert_eq!(regex_end(b"/a/g$_ x", 0), Some(6));
        assert_eq!(regex_end(b"/a", 0), None);
        assert_eq!(regex_end(b"/a\n/", 0), None);
        assert_eq!(regex_end(b"/a\\\n/", 0), None);
    }

    #[test]
    fn unicode_line_terminators_end_regular_expressions_and_line_comments_only() {
        // ECMAScript: no LineTerminator in a regular expression, U+2028/U+2029 included (the
        // nesting reader read on past them).
        assert_eq!(regex_end("/a\u{2028}b/".as_bytes(), 0), None);
        assert_eq!(regex_end("/a\\\u{2029}b/".as_bytes(), 0), None);
        assert_eq!(line_comment_end("// a\u{2028}b".as_bytes(), 0), 4);
        // Strings may hold them (ES2019).
        assert_eq!(string_end("'a\u{2028}b'".as_bytes(), 0), Ok(7));
        assert_eq!(
            block_comment_end("/* \u{2029} */".as_bytes(), 0),
            (Some(9), true)
        );
    }

    #[test]
    fn strings_templates_and_numbers_end_where_the_grammar_says() {
        assert_eq!(string_end(b"'a\\'b' c", 0), Ok(6));
        assert_eq!(string_end(b"'a\\\r\nb'", 0), Ok(7));
        assert_eq!(string_end(b"'a\nb'", 0), Err(2));
        assert_eq!(string_end(b"'a", 0), Err(2));
        assert_eq!(template_text_end(b"a\\`b` x", 0), TemplateText::End(5));
        assert_eq!(
            template_text_end(b"a${b}`", 0),
            TemplateText::Substitution(1)
        );
        assert_eq!(template_text_end(b"a$ {", 0), TemplateText::Unterminated);
        assert_eq!(number_end(b"1./x/", 0), 2);
        assert_eq!(number_end(b"1.e5.x", 0), 4);
        assert_eq!(number_end(b"0x1F_n;", 0), 6);
        assert_eq!(number_end(b"1_000n;", 0), 6);
        assert_eq!(number_end(b".5)", 0), 2);
    }
}
