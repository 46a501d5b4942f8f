//! The captured `tools/list` fixtures as [`McpServer`]s.

use codemode_mcp_decls::{McpServer, McpTool};
use serde_json::Value;

fn load(file: &str) -> Value {
    let path = format!("{}/tests/fixtures/{file}", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap_or_else(|e| panic!("{path}: {e}"))
}

/// A server from a `tools/list` result; catalog ids are `mcp:<server>:<tool>`.
pub(crate) fn server(name: &str, file: &str, has_resources: bool, has_prompts: bool) -> McpServer {
    let list = load(file);
    let tools = list["tools"]
        .as_array()
        .expect("tools/list result has tools")
        .iter()
        .map(|t| McpTool {
            name: t["name"].as_str().expect("tool name").to_owned(),
            catalog_id: format!("mcp:{name}:{}", t["name"].as_str().unwrap_or("")),
            description: t["description"].as_str().unwrap_or("").to_owned(),
            input_schema: t["inputSchema"].clone().into(),
            output_schema: t.get("outputSchema").cloned().map(Into::into),
        })
        .collect();
    McpServer {
        name: name.to_owned(),
        tools,
        has_resources,
        has_prompts,
    }
}

fn capabilities(file: &str) -> (bool, bool) {
    let init = load(file);
    let caps = &init["capabilities"];
    (
        caps.get("resources").is_some(),
        caps.get("prompts").is_some(),
    )
}

pub(crate) fn everything() -> McpServer {
    let (resources, prompts) = capabilities("server-everything.initialize.json");
    server(
        "everything",
        "server-everything.tools.json",
        resources,
        prompts,
    )
}

pub(crate) fn filesystem() -> McpServer {
    let (resources, prompts) = capabilities("server-filesystem.initialize.json");
    server(
        "filesystem",
        "server-filesystem.tools.json",
        resources,
        prompts,
    )
}

pub(crate) fn github() -> McpServer {
    server("github", "github.tools.json", false, false)
}

pub(crate) fn all() -> Vec<McpServer> {
    vec![everything(), filesystem(), github()]
}

#[test]
fn fixtures_have_the_expected_tool_counts_and_capabilities() {
    let (e, f) = (everything(), filesystem());
    assert_eq!(
        (e.tools.len(), e.has_resources, e.has_prompts),
        (13, true, true)
    );
    assert_eq!(
        (f.tools.len(), f.has_resources, f.has_prompts),
        (14, false, false)
    );
    assert!(github().tools.len() >= 10);
}
