//! Lexing on bytes: where regular expressions, words and numbers end, and which bytes start
//! words and operators.

/// Where the regular expression starting with the `/` at `start` ends (after
/// its flags), or `None` if a line break or the end of the text comes first
/// (swc's lexer then fails the parse).
pub(super) fn regex_end(bytes: &[u8], start: usize) -> Option<usize> {
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
pub(super) fn skip_word(bytes: &[u8], mut position: usize) -> usize {
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
pub(super) fn skip_number(bytes: &[u8], mut position: usize) -> usize {
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
pub(super) fn character_at(bytes: &[u8], position: usize) -> Option<char> {
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
pub(super) fn is_unicode_line_break(bytes: &[u8], position: usize) -> bool {
    starts_with(bytes, position, "\u{2028}".as_bytes())
        || starts_with(bytes, position, "\u{2029}".as_bytes())
}

pub(super) fn starts_with(bytes: &[u8], position: usize, prefix: &[u8]) -> bool {
    bytes
        .get(position..)
        .is_some_and(|rest| rest.starts_with(prefix))
}

/// Identifier, number and escape bytes (any non-ASCII byte too: Unicode
/// identifiers, and over-counting a Unicode space is harmless).
pub(super) fn starts_word(byte: u8) -> bool {
    byte.is_ascii_alphanumeric() || matches!(byte, b'_' | b'$' | b'#' | b'@' | b'\\')
}

/// Bytes of operator tokens, except `/` (handled on its own: it may start a
/// regular expression or a comment).
pub(super) fn is_operator_byte(byte: u8) -> bool {
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
