//! What the nesting estimate reads as words and operators (the rest of the lexical grammar is
//! [`crate::scan`]'s).

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
            match crate::scan::char_at(bytes, position) {
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
