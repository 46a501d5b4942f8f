//! Snapshots of the declaration files for the real servers, and their parse check.

use codemode_mcp_decls::McpDecls;

use crate::fixtures;
use crate::ts::assert_all_valid;

#[test]
fn declaration_files_of_the_fixture_servers() {
    let decls = McpDecls::generate(&fixtures::all());
    assert_all_valid(&decls);
    let paths: Vec<&str> = decls.files().iter().map(|f| f.path.as_str()).collect();
    assert_eq!(
        paths,
        [
            "mcp/index.d.ts",
            "mcp/everything.d.ts",
            "mcp/filesystem.d.ts",
            "mcp/github.d.ts"
        ]
    );
    for file in decls.files() {
        let name = file.path.trim_start_matches("mcp/").replace(".d.ts", "");
        insta::assert_snapshot!(format!("file_{name}"), file.text);
    }
}

#[test]
fn list_rows_of_the_fixture_servers() {
    let decls = McpDecls::generate(&fixtures::all());
    let rows = decls.list(Some("mcp")).expect("mcp lists");
    for row in &rows {
        let text = decls.read(&row.path).expect("listed files read");
        assert_eq!(row.bytes, text.len());
    }
    insta::assert_json_snapshot!("list_mcp", rows);
}

#[test]
fn api_responses() {
    let decls = McpDecls::generate(&fixtures::all());
    let one = decls
        .api("filesystem", Some("list_directory_with_sizes"), true)
        .expect("MCP name is accepted");
    insta::assert_json_snapshot!("api_filesystem_one_tool_with_schema", one);
    let by_ident = decls
        .api("filesystem", Some("listDirectoryWithSizes"), true)
        .expect("identifier is accepted");
    assert_eq!(one, by_ident);

    let all = decls.api("everything", None, false).expect("server api");
    let tools = all["tools"].as_array().expect("tools array");
    assert_eq!(tools.len(), 13);
    assert!(tools.iter().all(|t| t.get("inputSchema").is_none()));
    assert_eq!(
        all["header"].as_str(),
        decls.read("mcp/everything.d.ts").ok().map(|t| {
            // The whole-server header is the file minus its leading comment.
            &t[t.find("declare namespace").unwrap_or(0)..]
        })
    );
    assert_eq!(all["resources"], true);
    assert_eq!(all["prompts"], true);
}

#[test]
fn the_seed_example_shape() {
    // SPEC §9 / the product page: MCP.github.createIssue with owner, repo, title, body?.
    let decls = McpDecls::generate(&[fixtures::github()]);
    let text = decls.read("mcp/github.d.ts").expect("github file");
    assert!(text.contains("declare namespace MCP.github {"));
    assert!(text.contains(
        "function $api(toolName?: string, options?: { schema?: boolean }): Promise<McpApiHeader>;"
    ));
    // Required properties in `required` order, then the optional ones sorted by name.
    assert!(text.contains("  function createIssue(input: {\n    owner: string;\n    repo: string;\n    title: string;\n    assignees?: string[];\n    body?: string;\n"));
    assert!(text.contains("   * @param owner Repository owner\n"));
}
