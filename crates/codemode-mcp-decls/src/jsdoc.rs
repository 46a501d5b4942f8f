//! Untrusted text (descriptions, names) made safe for TypeScript comments.

use std::borrow::Cow;

/// The byte offset where `text` exceeds `max_chars` characters, if it does.
fn cut_point(text: &str, max_chars: usize) -> Option<usize> {
    if text.len() <= max_chars {
        // Never more characters than bytes: no need to count.
        return None;
    }
    text.char_indices().nth(max_chars).map(|(at, _)| at)
}

/// Cuts `text` to at most `max_chars` characters, marking a cut with "…".
pub(crate) fn truncate_chars(text: &str, max_chars: usize) -> String {
    match cut_point(text, max_chars) {
        None => text.to_owned(),
        Some(cut) => {
            let mut out = text.get(..cut).unwrap_or("").trim_end().to_owned();
            out.push('…');
            out
        }
    }
}

/// Whether `text` has anything [`comment_lines`] must rewrite: `*/`, control characters other
/// than `\n`, U+2028 / U+2029. A byte scan: this runs on every description and property name.
fn needs_cleaning(text: &str, newline_ok: bool) -> bool {
    let bytes = text.as_bytes();
    bytes.iter().enumerate().any(|(i, &b)| match b {
        b'\n' => !newline_ok,
        0x00..=0x1f | 0x7f => true,
        b'*' => bytes.get(i + 1) == Some(&b'/'),
        // C1 controls (U+0080..U+009F) are 0xC2 0x80..0x9F; U+2028/9 are 0xE2 0x80 0xA8/0xA9.
        0xc2 => matches!(bytes.get(i + 1), Some(0x80..=0x9f)),
        0xe2 => bytes.get(i + 1) == Some(&0x80) && matches!(bytes.get(i + 2), Some(0xa8 | 0xa9)),
        _ => false,
    })
}

/// Sanitises untrusted text for use inside a `/** ... */` comment: line terminators normalised to
/// `\n` (`\r`, U+2028 and U+2029 included), other control characters dropped, `*/` written as
/// `*\/`, at most `max_chars` characters (a cut marked with "…"), blank runs collapsed. Returns
/// the lines.
pub(crate) fn comment_lines(text: &str, max_chars: usize) -> Vec<String> {
    // Cut first so a 100 KB description costs no more than a short one.
    let (body, cut) = match cut_point(text, max_chars) {
        None => (text, false),
        Some(at) => (text.get(..at).unwrap_or(""), true),
    };
    let clean: Cow<'_, str> = if needs_cleaning(body, true) {
        let mut clean = String::with_capacity(body.len() + 8);
        let mut chars = body.chars().peekable();
        while let Some(c) = chars.next() {
            match c {
                '\r' => {
                    if chars.peek() != Some(&'\n') {
                        clean.push('\n');
                    }
                }
                '\n' | '\u{2028}' | '\u{2029}' => clean.push('\n'),
                '\t' => clean.push(' '),
                // Checked on what was written, not on the input: a dropped control character
                // between `*` and `/` must not let them meet (`*\0/`).
                '/' if clean.ends_with('*') => clean.push_str("\\/"),
                c if c.is_control() => {}
                c => clean.push(c),
            }
        }
        Cow::Owned(clean)
    } else {
        Cow::Borrowed(body)
    };
    let mut lines: Vec<String> = Vec::new();
    let mut blank = false;
    for line in clean.lines() {
        let line = line.trim_end();
        if line.is_empty() {
            blank = !lines.is_empty();
            continue;
        }
        if blank {
            lines.push(String::new());
            blank = false;
        }
        lines.push(line.to_owned());
    }
    if cut {
        match lines.last_mut() {
            Some(last) => last.push('…'),
            None => lines.push("…".to_owned()),
        }
    }
    lines
}

/// Like [`comment_lines`] but joined into one line, for a `@param` tag or a one-line comment.
pub(crate) fn comment_line(text: &str, max_chars: usize) -> String {
    // Fast path: a short, clean, one-line text is used as it is.
    if text.len() <= max_chars && !needs_cleaning(text, false) {
        return text.trim().to_owned();
    }
    let mut out = String::new();
    for line in comment_lines(text, max_chars) {
        if line.is_empty() {
            continue;
        }
        if !out.is_empty() {
            out.push(' ');
        }
        out.push_str(&line);
    }
    out
}

/// Writes a JSDoc block at `indent` (spaces) with the given lines into `out`.
pub(crate) fn write_block(out: &mut String, indent: &str, lines: &[String]) {
    if lines.is_empty() {
        return;
    }
    out.push_str(indent);
    out.push_str("/**\n");
    for line in lines {
        out.push_str(indent);
        if line.is_empty() {
            out.push_str(" *\n");
        } else {
            out.push_str(" * ");
            out.push_str(line);
            out.push('\n');
        }
    }
    out.push_str(indent);
    out.push_str(" */\n");
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;

    use super::*;

    /// The character-level definition the byte scan must agree with.
    fn needs_cleaning_by_chars(text: &str, newline_ok: bool) -> bool {
        text.contains("*/")
            || text.chars().any(|c| {
                (c.is_control() && !(newline_ok && c == '\n')) || c == '\u{2028}' || c == '\u{2029}'
            })
    }

    proptest! {
        #[test]
        fn byte_scan_agrees_with_chars(text in "(.|\n|\r|\u{85}|\u{9f}|\u{a0}|\u{2028}|\u{2029}|\u{2027}|\\*/|\\*)*", newline_ok: bool) {
            prop_assert_eq!(needs_cleaning(&text, newline_ok), needs_cleaning_by_chars(&text, newline_ok));
        }

        #[test]
        fn comment_text_never_closes_the_comment(
            text in prop_oneof![any::<String>(), "(\\*|/|\u{0}|\u{85}|\u{7f}|\r|\n|\t|a)*"],
            max in 0usize..40,
        ) {
            for line in comment_lines(&text, max) {
                prop_assert!(!line.contains("*/") && !line.contains('\n'));
            }
            let line = comment_line(&text, max);
            let breaks = ['\n', '\r', '\u{2028}', '\u{2029}'];
            prop_assert!(!line.contains("*/") && !line.contains(breaks));
            // At most `max` characters of the text (escapes aside) plus the "…" of a cut.
            let shown = line.replace("*\\/", "*/").chars().count();
            prop_assert!(shown <= max + 1, "{} > {}", shown, max + 1);
        }
    }

    #[test]
    fn cuts_are_marked() {
        assert_eq!(truncate_chars("héllo wörld", 5), "héllo…");
        assert_eq!(truncate_chars("héllo", 5), "héllo");
        assert_eq!(
            comment_lines("a */ b\r\nc\u{2028}d\u{85}e", 100),
            ["a *\\/ b", "c", "de"]
        );
        assert_eq!(comment_lines("one\n\n\n\ntwo", 100), ["one", "", "two"]);
        // A dropped control character must not let `*` and `/` meet.
        assert_eq!(comment_line("/*\0/*", 100), "/*\\/*");
        assert_eq!(comment_lines("*\u{85}/ *\u{7f}\u{1}/", 100), ["*\\/ *\\/"]);
        assert_eq!(comment_line("  plain  ", 100), "plain");
    }
}
