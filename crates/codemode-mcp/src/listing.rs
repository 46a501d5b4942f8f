//! What a server lists, after the untrusted parts were bounded.

use serde::Serialize;
use serde_json::Value;

use crate::config::{MAX_DESCRIPTION_BYTES, MAX_SCHEMA_DEPTH, MAX_TOOL_NAME_BYTES};

/// Longest tool title kept, in bytes.
const MAX_TITLE_BYTES: usize = 256;

/// Longest server `instructions` kept, in bytes.
const MAX_INSTRUCTIONS_BYTES: usize = 16 * 1024;

/// One tool of a server, as listed by `tools/list` and admitted by the hub.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ToolInfo {
    /// The tool's name on the server (non-empty, at most
    /// [`MAX_TOOL_NAME_BYTES`], no control characters or whitespace).
    pub name: String,
    /// Human-readable title (`title`, else `annotations.title`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub title: Option<String>,
    /// Description (empty when the server gives none; cut at
    /// [`MAX_DESCRIPTION_BYTES`]).
    pub description: String,
    /// The JSON Schema of the input (`inputSchema`).
    pub input_schema: Value,
    /// The JSON Schema of `structuredContent`, when declared (`outputSchema`).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub output_schema: Option<Value>,
    /// `annotations.readOnlyHint == true`. A hint from the server, not a guarantee.
    pub read_only: bool,
}

/// One running server and what it offers.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[serde(rename_all = "camelCase")]
#[non_exhaustive]
pub struct ServerInfo {
    /// The server's name from the config (the `<owner>` of its catalog ids).
    pub name: String,
    /// Its admitted tools, in the server's order.
    pub tools: Vec<ToolInfo>,
    /// The server announced the `resources` capability.
    pub has_resources: bool,
    /// The server announced the `prompts` capability.
    pub has_prompts: bool,
    /// The server's `instructions` from the handshake, if any (bounded).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub instructions: Option<String>,
    /// What the hub dropped or shortened while admitting the listing.
    pub warnings: Vec<String>,
    /// The operating system's id of the server process.
    #[serde(skip)]
    pub process_id: Option<u32>,
}

/// A tool as the server described it, before admission. Kept free of rmcp
/// types so the admission rules are plain functions over JSON.
#[derive(Debug, Clone, PartialEq)]
pub(crate) struct ListedTool {
    pub(crate) name: String,
    pub(crate) title: Option<String>,
    pub(crate) description: Option<String>,
    pub(crate) input_schema: Value,
    pub(crate) output_schema: Option<Value>,
    pub(crate) read_only_hint: Option<bool>,
}

/// Admits listed tools: drops invalid names, duplicates (first wins),
/// too-deep schemas and everything past `max_tools`; shortens long text.
/// Returns the admitted tools and one warning per dropped or shortened item.
pub(crate) fn admit_tools(
    listed: Vec<ListedTool>,
    max_tools: usize,
) -> (Vec<ToolInfo>, Vec<String>) {
    let mut tools: Vec<ToolInfo> = Vec::new();
    let mut warnings = Vec::new();
    let listed_count = listed.len();
    for tool in listed {
        if tools.len() >= max_tools {
            warnings.push(format!(
                "only the first {max_tools} of {listed_count} tools were kept"
            ));
            break;
        }
        if let Err(reason) = check_tool_name(&tool.name) {
            warnings.push(format!(
                "skipped tool {}: {reason}",
                quoted_prefix(&tool.name)
            ));
            continue;
        }
        if tools.iter().any(|admitted| admitted.name == tool.name) {
            warnings.push(format!("skipped duplicate tool `{}`", tool.name));
            continue;
        }
        let too_deep = json_depth_exceeds(&tool.input_schema, MAX_SCHEMA_DEPTH)
            || tool
                .output_schema
                .as_ref()
                .is_some_and(|schema| json_depth_exceeds(schema, MAX_SCHEMA_DEPTH));
        if too_deep {
            warnings.push(format!(
                "skipped tool `{}`: its schema nests deeper than {MAX_SCHEMA_DEPTH} levels",
                tool.name
            ));
            continue;
        }
        let description = tool.description.unwrap_or_default();
        if description.len() > MAX_DESCRIPTION_BYTES {
            warnings.push(format!(
                "shortened the description of tool `{}` ({} bytes)",
                tool.name,
                description.len()
            ));
        }
        tools.push(ToolInfo {
            description: shorten(description, MAX_DESCRIPTION_BYTES),
            title: tool.title.map(|title| shorten(title, MAX_TITLE_BYTES)),
            input_schema: tool.input_schema,
            output_schema: tool.output_schema,
            read_only: tool.read_only_hint == Some(true),
            name: tool.name,
        });
    }
    (tools, warnings)
}

/// Shortens server instructions to a bounded size.
pub(crate) fn admit_instructions(instructions: Option<String>) -> Option<String> {
    instructions.map(|text| shorten(text, MAX_INSTRUCTIONS_BYTES))
}

/// Why a tool name is refused, if it is.
pub(crate) fn check_tool_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("empty name")
    } else if name.len() > MAX_TOOL_NAME_BYTES {
        Err("name longer than 128 bytes")
    } else if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        Err("name contains control characters or whitespace")
    } else {
        Ok(())
    }
}

/// Why a server name is refused, if it is: it becomes the `<owner>` of
/// `mcp:<owner>:<tool>` ids, so it may not contain `:`.
pub(crate) fn check_server_name(name: &str) -> Result<(), &'static str> {
    if name.is_empty() {
        Err("the name is empty")
    } else if name.len() > MAX_TOOL_NAME_BYTES {
        Err("the name is longer than 128 bytes")
    } else if name.contains(':') {
        Err("the name contains `:`, which separates the parts of catalog ids")
    } else if name.chars().any(|c| c.is_control() || c.is_whitespace()) {
        Err("the name contains control characters or whitespace")
    } else {
        Ok(())
    }
}

/// Cuts `text` to at most `max` bytes at a character boundary, ending with `…`.
pub(crate) fn shorten(mut text: String, max: usize) -> String {
    const ELLIPSIS: &str = "…";
    if text.len() <= max {
        return text;
    }
    let mut end = max.saturating_sub(ELLIPSIS.len());
    while end > 0 && !text.is_char_boundary(end) {
        end -= 1;
    }
    text.truncate(end);
    if max >= ELLIPSIS.len() {
        text.push_str(ELLIPSIS);
    }
    text
}

/// A short, printable rendering of an untrusted name for warnings.
fn quoted_prefix(name: &str) -> String {
    let printable: String = name.chars().take(40).flat_map(char::escape_debug).collect();
    if name.chars().count() > 40 {
        format!("\"{printable}…\"")
    } else {
        format!("\"{printable}\"")
    }
}

/// Whether `value` nests deeper than `max` levels (a scalar is depth 0, `[]`
/// and `{}` are depth 1). Iterative, so hostile input cannot overflow the stack.
pub(crate) fn json_depth_exceeds(value: &Value, max: usize) -> bool {
    let mut stack: Vec<(&Value, usize)> = vec![(value, 0)];
    while let Some((value, depth)) = stack.pop() {
        let children: Box<dyn Iterator<Item = &Value>> = match value {
            Value::Array(items) => Box::new(items.iter()),
            Value::Object(entries) => Box::new(entries.values()),
            _ => continue,
        };
        let depth = depth + 1;
        if depth > max {
            return true;
        }
        stack.extend(children.map(|child| (child, depth)));
    }
    false
}

#[cfg(test)]
mod tests {
    use proptest::prelude::*;
    use serde_json::json;

    use super::*;

    fn listed(name: &str) -> ListedTool {
        ListedTool {
            name: name.to_owned(),
            title: None,
            description: Some(format!("The {name} tool.")),
            input_schema: json!({ "type": "object" }),
            output_schema: None,
            read_only_hint: None,
        }
    }

    /// Admits `input` with at most `max` tools and compares the admitted
    /// names and the warnings with `expect`.
    fn check(input: Vec<ListedTool>, max: usize, expect: (&[&str], &[&str])) {
        let (tools, warnings) = admit_tools(input, max);
        let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_str()).collect();
        assert_eq!(names, expect.0);
        assert_eq!(warnings, expect.1);
    }

    fn nested(depth: usize) -> Value {
        let mut value = json!("leaf");
        for _ in 0..depth {
            value = json!({ "d": value });
        }
        value
    }

    #[test]
    fn admits_valid_tools_in_order() {
        check(
            vec![listed("b"), listed("a"), listed("get-sum")],
            10,
            (&["b", "a", "get-sum"], &[]),
        );
    }

    #[test]
    fn hostile_names_are_skipped_with_a_warning() {
        check(
            vec![
                listed(""),
                listed(&"x".repeat(129)),
                listed("bad\u{0}name"),
                listed("two words"),
                listed("ok"),
            ],
            10,
            (
                &["ok"],
                &[
                    "skipped tool \"\": empty name",
                    "skipped tool \"xxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxxx…\": name longer than 128 bytes",
                    "skipped tool \"bad\\0name\": name contains control characters or whitespace",
                    "skipped tool \"two words\": name contains control characters or whitespace",
                ],
            ),
        );
    }

    #[test]
    fn duplicates_keep_the_first() {
        let mut second = listed("echo");
        second.description = Some("second".to_owned());
        let (tools, warnings) = admit_tools(vec![listed("echo"), second], 10);
        assert_eq!(tools.len(), 1);
        assert_eq!(
            tools.first().map(|tool| tool.description.as_str()),
            Some("The echo tool.")
        );
        assert_eq!(warnings, ["skipped duplicate tool `echo`"]);
    }

    #[test]
    fn too_many_tools_are_cut() {
        check(
            vec![listed("a"), listed("b"), listed("c")],
            2,
            (&["a", "b"], &["only the first 2 of 3 tools were kept"]),
        );
    }

    #[test]
    fn deep_schemas_are_skipped() {
        let mut deep_input = listed("deep_input");
        deep_input.input_schema = nested(MAX_SCHEMA_DEPTH + 1);
        let mut deep_output = listed("deep_output");
        deep_output.output_schema = Some(nested(MAX_SCHEMA_DEPTH + 1));
        let mut just_fits = listed("fits");
        just_fits.input_schema = nested(MAX_SCHEMA_DEPTH);
        check(
            vec![deep_input, deep_output, just_fits],
            10,
            (
                &["fits"],
                &[
                    "skipped tool `deep_input`: its schema nests deeper than 64 levels",
                    "skipped tool `deep_output`: its schema nests deeper than 64 levels",
                ],
            ),
        );
    }

    #[test]
    fn long_descriptions_are_shortened() {
        let mut wordy = listed("wordy");
        wordy.description = Some("é".repeat(MAX_DESCRIPTION_BYTES));
        let (tools, warnings) = admit_tools(vec![wordy], 10);
        let description = tools
            .first()
            .map(|tool| tool.description.clone())
            .unwrap_or_default();
        assert!(description.len() <= MAX_DESCRIPTION_BYTES);
        assert!(description.ends_with('…'));
        assert_eq!(
            warnings,
            [format!(
                "shortened the description of tool `wordy` ({} bytes)",
                2 * MAX_DESCRIPTION_BYTES
            )]
        );
    }

    #[test]
    fn read_only_comes_from_the_hint_only_when_true() {
        let hints = [(Some(true), true), (Some(false), false), (None, false)];
        for (hint, expect) in hints {
            let mut tool = listed("t");
            tool.read_only_hint = hint;
            let (tools, _) = admit_tools(vec![tool], 1);
            assert_eq!(
                tools.first().map(|tool| tool.read_only),
                Some(expect),
                "hint {hint:?}"
            );
        }
    }

    #[test]
    fn server_names() {
        let cases = [
            ("everything", Ok(())),
            ("my-server_2.local", Ok(())),
            ("", Err("the name is empty")),
            (
                "a:b",
                Err("the name contains `:`, which separates the parts of catalog ids"),
            ),
            (
                "a b",
                Err("the name contains control characters or whitespace"),
            ),
        ];
        for (name, expect) in cases {
            assert_eq!(check_server_name(name), expect, "{name:?}");
        }
    }

    #[test]
    fn depth_counts_levels() {
        assert!(!json_depth_exceeds(&json!(1), 0));
        assert!(json_depth_exceeds(&json!([]), 0));
        assert!(!json_depth_exceeds(&json!({ "a": [1] }), 2));
        assert!(json_depth_exceeds(&json!({ "a": [[1]] }), 2));
    }

    proptest! {
        #[test]
        fn shorten_is_bounded_and_a_prefix(text in "\\PC{0,300}", max in 0usize..200) {
            let shortened = shorten(text.clone(), max);
            prop_assert!(shortened.len() <= max);
            let kept = shortened.strip_suffix('…').unwrap_or(&shortened);
            prop_assert!(text.starts_with(kept));
        }

        #[test]
        fn admitted_tools_are_unique_valid_and_bounded(
            names in proptest::collection::vec("[a-c ]{0,3}|\\PC{0,5}", 0..20),
            max in 0usize..10,
        ) {
            let listed_tools: Vec<ListedTool> = names.iter().map(|name| listed(name)).collect();
            let (tools, _) = admit_tools(listed_tools, max);
            prop_assert!(tools.len() <= max);
            for (index, tool) in tools.iter().enumerate() {
                prop_assert!(check_tool_name(&tool.name).is_ok());
                prop_assert!(tools.iter().skip(index + 1).all(|other| other.name != tool.name));
            }
        }
    }
}
