//! Untrusted text (descriptions, names) made safe for TypeScript comments.

use std::borrow::Cow;

/// Cuts `text` to at most `max_chars` characters, marking a cut with "…".
pub(crate) fn truncate_chars(text: &str, max_chars: usize) -> String {
    match text.char_indices().nth(max_chars) {
        None => text.to_owned(),
        Some((cut, _)) => {
            let mut out = text.get(..cut).unwrap_or("").trim_end().to_owned();
            out.push('…');
            out
        }
    }
}

/// Sanitises untrusted text for use inside a `/** ... */` comment: line terminators normalised to
/// `\n` (`\r`, U+2028 and U+2029 included), other control characters dropped, `*/` written as
/// `*\/`, at most `max_chars` characters (a cut marked with "…"), blank runs collapsed. Returns
/// the lines.
pub(crate) fn comment_lines(text: &str, max_chars: usize) -> Vec<String> {
    // Cut first so a 100 KB description costs no more than a short one.
    let (body, cut) = match text.char_indices().nth(max_chars) {
        None => (text, false),
        Some((at, _)) => (text.get(..at).unwrap_or(""), true),
    };
    let needs_cleaning = body.contains("*/")
        || body
            .chars()
            .any(|c| (c.is_control() && c != '\n') || c == '\u{2028}' || c == '\u{2029}');
    let clean: Cow<'_, str> = if needs_cleaning {
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
                '*' if chars.peek() == Some(&'/') => clean.push_str("*\\"),
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
    if text.len() <= max_chars
        && !text.contains("*/")
        && !text
            .chars()
            .any(|c| c.is_control() || c == '\u{2028}' || c == '\u{2029}')
    {
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
