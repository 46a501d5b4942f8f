//! JSON both ways across the bridge, and the byte counts the limits are measured in.

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::MAX_JSON_DEPTH;

/// Longest failure message kept from guest code; longer ones are cut at a char boundary.
pub const MAX_ERROR_MESSAGE_BYTES: usize = 4096;

/// One item of guest output, in guest call order: the one output type of the workspace (core
/// re-exports it in its results).
///
/// Serialized as `{"type":"text","text":..}` / `{"type":"json","value":..}`.
///
/// ```
/// use codemode_engine::OutputItem;
/// let item = OutputItem::Text { text: "hi".into() };
/// assert_eq!(serde_json::to_string(&item).unwrap(), r#"{"type":"text","text":"hi"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
#[serde(tag = "type", rename_all = "lowercase")]
pub enum OutputItem {
    /// From `text(value)`.
    Text {
        /// Strings verbatim, other values as compact JSON.
        text: String,
    },
    /// From `json(value)`.
    Json {
        /// A JSON-compatible copy of the value.
        value: Value,
    },
}

/// How a final value too big for the output budget was cut to fit: arrays keep their first
/// items, objects their first keys, long strings their beginning, each with a marker saying what
/// was dropped; the result is still valid JSON.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct Truncation {
    /// UTF-8 bytes of the value's JSON before it was cut.
    pub original_bytes: usize,
    /// UTF-8 bytes of the JSON that was kept.
    pub kept_bytes: usize,
}

/// Lines the async-function wrapper adds before the program (`(async function anonymous(` and
/// `) {`), subtracted from QuickJS's line numbers.
const WRAPPER_LINES: u32 = 2;

/// `SyntaxError: <text> (line L, column C)` with the position in the program's own lines, taken
/// from the first `<input>:L:C` of the error's stack; "(at the end of the program)" when the
/// parser only stumbled on the wrapper's closing line.
pub(crate) fn syntax_message(text: &str, stack: &str, program_lines: usize) -> String {
    let position = stack
        .lines()
        .next()
        .and_then(|line| line.split("<input>:").nth(1))
        .and_then(|at| {
            let mut parts = at.trim_end_matches(')').split(':');
            let line: u32 = parts.next()?.parse().ok()?;
            let column: u32 = parts.next()?.parse().ok()?;
            Some((line.saturating_sub(WRAPPER_LINES).max(1), column))
        });
    match position {
        Some((line, _)) if usize::try_from(line).unwrap_or(usize::MAX) > program_lines.max(1) => {
            format!("{text} (at the end of the program)")
        }
        Some((line, column)) => format!("{text} (line {line}, column {column})"),
        None => text.to_owned(),
    }
}

/// Parses JSON made by the guest's `JSON.stringify`, refusing text nested deeper than
/// [`MAX_JSON_DEPTH`] (checked by a linear pass first), the bound host values are held to:
/// serde_json's own fixed limit would stop one level short of it.
pub fn parse_bridge_json<T: serde::de::DeserializeOwned>(text: &str) -> Result<T, String> {
    if nests_deeper_than(text.as_bytes(), MAX_JSON_DEPTH) {
        return Err(format!(
            "cannot cross the code mode bridge: JSON nested deeper than {MAX_JSON_DEPTH} levels"
        ));
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    T::deserialize(&mut deserializer)
        .and_then(|value| deserializer.end().map(|()| value))
        .map_err(|error| format!("cannot cross the code mode bridge: {error}"))
}

/// Whether JSON text nests arrays and objects deeper than `max` (one linear pass; strings and
/// their escapes are skipped). Text that is not JSON is left to the parser.
pub fn nests_deeper_than(text: &[u8], max: usize) -> bool {
    let mut depth = 0usize;
    let mut in_string = false;
    let mut escaped = false;
    for &byte in text {
        if in_string {
            if escaped {
                escaped = false;
            } else if byte == b'\\' {
                escaped = true;
            } else if byte == b'"' {
                in_string = false;
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// JSON text of a host value, refusing values nested deeper than [`MAX_JSON_DEPTH`] (checked
/// without recursion; a too-deep value is also dropped without recursion).
pub fn encode_host_value(value: Value) -> Result<String, String> {
    if exceeds_depth(&value, MAX_JSON_DEPTH) {
        dismantle(value);
        return Err(format!(
            "the host value nests deeper than {MAX_JSON_DEPTH} levels"
        ));
    }
    serde_json::to_string(&value).map_err(|error| error.to_string())
}

/// Whether `value` nests deeper than `max` levels (see [`json_nests_deeper_than`]).
pub fn exceeds_depth(value: &Value, max: usize) -> bool {
    json_nests_deeper_than(value, max)
}

/// Whether `value` holds an array or object at nesting depth `max` or deeper (the root is at
/// depth 0), so that a value with at most `max` levels of brackets passes. Checked without
/// recursion, keeping one iterator per open level: memory grows with the depth checked, never
/// with the width of the value.
///
/// ```
/// use codemode_engine::json_nests_deeper_than;
/// let value = serde_json::json!([[1], {"a": [2]}]);
/// assert!(!json_nests_deeper_than(&value, 3));
/// assert!(json_nests_deeper_than(&value, 2));
/// ```
pub fn json_nests_deeper_than(value: &Value, max: usize) -> bool {
    fn children(value: &Value) -> Option<Box<dyn Iterator<Item = &Value> + '_>> {
        match value {
            Value::Array(items) => Some(Box::new(items.iter())),
            Value::Object(map) => Some(Box::new(map.values())),
            _ => None,
        }
    }
    let mut open: Vec<Box<dyn Iterator<Item = &Value> + '_>> = Vec::new();
    let mut next = Some(value);
    loop {
        if let Some(children) = next.take().and_then(children) {
            if open.len() >= max {
                return true;
            }
            open.push(children);
        }
        let Some(level) = open.last_mut() else {
            return false;
        };
        match level.next() {
            Some(child) => next = Some(child),
            None => {
                open.pop();
            }
        }
    }
}

pub(crate) fn dismantle(value: Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Array(items) => stack.extend(items),
            Value::Object(map) => stack.extend(map.into_iter().map(|(_, child)| child)),
            _ => {}
        }
    }
}

/// UTF-8 bytes of `text` encoded as a JSON string (quotes and escapes included), as serde_json
/// writes it.
pub(crate) fn json_string_bytes(text: &str) -> usize {
    2 + text
        .chars()
        .map(|c| match c {
            '"' | '\\' | '\n' | '\r' | '\t' | '\u{08}' | '\u{0c}' => 2,
            c if (c as u32) < 0x20 => 6,
            c => c.len_utf8(),
        })
        .sum::<usize>()
}

pub(crate) fn json_bytes(value: &Value) -> usize {
    serde_json::to_string(value).map_or(0, |text| text.len())
}

/// Bytes of `{"type":"text","text":` and of `{"type":"json","value":`, plus the closing `}` and
/// the `,` that separates items in the result's `output` array.
const TEXT_ENVELOPE_BYTES: usize = r#"{"type":"text","text":}"#.len() + 1;
const JSON_ENVELOPE_BYTES: usize = r#"{"type":"json","value":}"#.len() + 1;

/// Wire bytes of one output item as the result carries it: the item's full JSON object plus
/// its separator in the `output` array, from the UTF-8 bytes of its text or JSON payload.
pub(crate) fn output_item_bytes(is_json: bool, payload_bytes: usize) -> usize {
    let envelope = if is_json {
        JSON_ENVELOPE_BYTES
    } else {
        TEXT_ENVELOPE_BYTES
    };
    envelope.saturating_add(payload_bytes)
}

/// Wire bytes of an output item (see `output_item_bytes`).
pub fn output_bytes(output: &OutputItem) -> usize {
    match output {
        OutputItem::Text { text } => output_item_bytes(false, json_string_bytes(text)),
        OutputItem::Json { value } => output_item_bytes(true, json_bytes(value)),
    }
}

/// `message` cut to [`MAX_ERROR_MESSAGE_BYTES`] at a char boundary.
pub fn truncate(mut message: String) -> String {
    if message.len() > MAX_ERROR_MESSAGE_BYTES {
        let mut cut = MAX_ERROR_MESSAGE_BYTES;
        while !message.is_char_boundary(cut) {
            cut -= 1;
        }
        message.truncate(cut);
        message.push('…');
    }
    message
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn json_string_bytes_matches_serde() {
        for text in [
            "",
            "plain",
            "quote\" back\\slash",
            "ctl\u{1}\u{1f}\n\t\r\u{8}\u{c}",
            "ünïcødé ✓ 🎉",
        ] {
            assert_eq!(
                json_string_bytes(text),
                serde_json::to_string(text).unwrap().len(),
                "{text:?}"
            );
        }
    }

    #[test]
    fn depth_check_is_exact_and_iterative() {
        let mut value = Value::Null;
        for _ in 0..MAX_JSON_DEPTH {
            value = Value::Array(vec![value]);
        }
        assert!(!exceeds_depth(&value, MAX_JSON_DEPTH));
        let deeper = Value::Array(vec![value]);
        assert!(exceeds_depth(&deeper, MAX_JSON_DEPTH));
        // A million levels: neither the check nor the drop may recurse.
        let mut huge = Value::Null;
        for _ in 0..1_000_000 {
            huge = Value::Array(vec![huge]);
        }
        assert!(encode_host_value(huge).is_err());
    }

    #[test]
    fn guest_json_crosses_at_the_host_bound_and_numbers_keep_their_bits() {
        let nested = |levels: usize| "[".repeat(levels) + &"]".repeat(levels);
        // The same bound both ways: what a host may send, the guest may send back.
        let value: Value = parse_bridge_json(&nested(MAX_JSON_DEPTH)).unwrap();
        assert!(encode_host_value(value).is_ok());
        let refused = parse_bridge_json::<Value>(&nested(MAX_JSON_DEPTH + 1)).unwrap_err();
        assert!(
            refused.contains("nested deeper than 128 levels"),
            "{refused}"
        );
        assert!(parse_bridge_json::<Value>(&nested(1_000_000)).is_err());
        // Found by the fuzz target `json_codec`: the default parse was one unit off here.
        for text in [
            "91844674407370955161",
            "9.184467440737095e19",
            "-2.474782374934037e143",
        ] {
            let value: Value = parse_bridge_json(text).unwrap();
            let again: Value =
                parse_bridge_json(&encode_host_value(value.clone()).unwrap()).unwrap();
            assert_eq!(value, again, "{text}");
        }
    }

    #[test]
    fn syntax_positions_are_given_in_program_lines() {
        let text = "SyntaxError: expecting ';'";
        let at = |stack: &str, lines: usize| syntax_message(text, stack, lines);
        let expect = |suffix: &str| format!("{text} {suffix}");
        assert_eq!(
            at("    at <input>:4:10\n    at f (native)", 2),
            expect("(line 2, column 10)")
        );
        assert_eq!(at("    at <input>:1:3\n", 1), expect("(line 1, column 3)"));
        assert_eq!(
            at("    at <input>:4:1\n", 1),
            expect("(at the end of the program)")
        );
        for odd in ["", "    at <input>:x:1", "    at <input>:9", "garbage"] {
            assert_eq!(at(odd, 3), text);
        }
    }

    #[test]
    fn truncate_respects_char_boundaries() {
        let long = "é".repeat(MAX_ERROR_MESSAGE_BYTES);
        let cut = truncate(long);
        assert!(cut.len() <= MAX_ERROR_MESSAGE_BYTES + '…'.len_utf8());
        assert!(cut.ends_with('…'));
    }
}
