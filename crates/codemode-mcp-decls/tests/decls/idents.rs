//! Table tests: names -> identifiers, collisions, reserved names.

use codemode_mcp_decls::{McpDecls, McpServer, McpTool};

fn tool(name: &str) -> McpTool {
    McpTool {
        name: name.to_owned(),
        catalog_id: format!("mcp:s:{name}"),
        ..Default::default()
    }
}

/// Tool names of one server -> their identifiers, in order.
fn check_tools(names: &[&str], expect: &[&str]) {
    let server = McpServer {
        name: "s".into(),
        tools: names.iter().map(|n| tool(n)).collect(),
        ..Default::default()
    };
    let decls = McpDecls::generate(&[server]);
    let idents: Vec<&str> = decls.servers()[0]
        .tools
        .iter()
        .map(|t| t.ident.as_str())
        .collect();
    assert_eq!(idents, expect, "tool names {names:?}");
    crate::ts::assert_all_valid(&decls);
}

/// Server names -> their identifiers, in order.
fn check_servers(names: &[&str], expect: &[&str]) {
    let servers: Vec<McpServer> = names
        .iter()
        .map(|n| McpServer {
            name: (*n).to_owned(),
            ..Default::default()
        })
        .collect();
    let decls = McpDecls::generate(&servers);
    let idents: Vec<&str> = decls.servers().iter().map(|s| s.ident.as_str()).collect();
    assert_eq!(idents, expect, "server names {names:?}");
    crate::ts::assert_all_valid(&decls);
}

#[test]
fn camel_case() {
    for (name, ident) in [
        ("create_issue", "createIssue"),
        ("get-sum", "getSum"),
        ("read_text_file", "readTextFile"),
        ("readTextFile", "readTextFile"),
        ("ReadFile", "readFile"),
        ("HTTPServer", "httpServer"),
        ("getURL", "getUrl"),
        ("API_KEY", "apiKey"),
        ("v2_api", "v2Api"),
        ("list.files", "listFiles"),
        ("  spaced  out  ", "spacedOut"),
        ("2fa_verify", "_2faVerify"),
        ("x", "x"),
        ("café_au_lait", "cafAuLait"),
        ("🎉party🎉", "party"),
        ("search-repos!?", "searchRepos"),
    ] {
        check_tools(&[name], &[ident]);
    }
}

#[test]
fn empty_and_symbol_only_names_fall_back() {
    check_tools(
        &["", "🎉", "!!!", "数据"],
        &["tool", "tool2", "tool3", "tool4"],
    );
    check_servers(&["", "🎉"], &["server", "server2"]);
}

#[test]
fn collisions_get_numbered_suffixes() {
    check_tools(
        &["get_sum", "get-sum", "getSum", "GET_SUM"],
        &["getSum", "getSum2", "getSum3", "getSum4"],
    );
    check_tools(&["a", "a", "a2"], &["a", "a2", "a22"]);
    check_servers(
        &["git-hub", "git_hub", "gitHub"],
        &["gitHub", "gitHub2", "gitHub3"],
    );
}

#[test]
fn reserved_tool_names_are_avoided() {
    check_tools(
        &[
            "constructor",
            "prototype",
            "__proto__",
            "$api",
            "resources",
            "prompts",
            "then",
        ],
        &[
            "constructor2",
            "prototype2",
            "proto",
            "api",
            "resources2",
            "prompts2",
            "then2",
        ],
    );
    // JavaScript reserved words cannot name a declared function.
    check_tools(
        &["delete", "new", "class", "await", "yield", "let"],
        &["delete2", "new2", "class2", "await2", "yield2", "let2"],
    );
}

/// The workspace's one reserved-word list (`codemode-guest-names`, checked there against the
/// ECMAScript specification) is the one the bindings avoid: every word gets a suffix, as a tool
/// and as a server name.
#[test]
fn every_shared_reserved_word_is_avoided() {
    use codemode_guest_names::{RESERVED_WORDS, RESTRICTED_BINDINGS, STRICT_MODE_RESERVED_WORDS};
    let words: Vec<&str> = RESERVED_WORDS
        .iter()
        .chain(STRICT_MODE_RESERVED_WORDS)
        .chain(RESTRICTED_BINDINGS)
        .copied()
        .collect();
    let suffixed: Vec<String> = words.iter().map(|word| format!("{word}2")).collect();
    let suffixed: Vec<&str> = suffixed.iter().map(String::as_str).collect();
    check_tools(&words, &suffixed);
    check_servers(&words, &suffixed);
}

#[test]
fn reserved_server_names_are_avoided() {
    check_servers(
        &[
            "tools",
            "namespaces",
            "text",
            "json",
            "index",
            "constructor",
            "default",
            "__openclaw_x",
        ],
        &[
            "tools2",
            "namespaces2",
            "text2",
            "json2",
            "index2",
            "constructor2",
            "default2",
            "openclawX",
        ],
    );
}

#[test]
fn long_names_are_cut() {
    let long = "very_long_name_".repeat(100);
    let server = McpServer {
        name: long.clone(),
        tools: vec![tool(&long), tool(&long)],
        ..Default::default()
    };
    let decls = McpDecls::generate(&[server]);
    let s = &decls.servers()[0];
    assert_eq!(s.ident.len(), codemode_mcp_decls::DEFAULT_MAX_IDENT_CHARS);
    assert_eq!(s.tools[1].ident, format!("{}2", s.tools[0].ident));
    assert!(s.tools[0].ident.starts_with("veryLongName"));
}

#[test]
fn bindings_resolve_to_exact_catalog_ids() {
    let server = McpServer {
        name: "everything".into(),
        tools: vec![tool("get-sum"), tool("get_sum")],
        ..Default::default()
    };
    let decls = McpDecls::generate(&[server]);
    assert_eq!(
        decls
            .binding("everything", "getSum")
            .map(|t| t.catalog_id.as_str()),
        Some("mcp:s:get-sum")
    );
    assert_eq!(
        decls
            .binding("everything", "getSum2")
            .map(|t| t.catalog_id.as_str()),
        Some("mcp:s:get_sum")
    );
    assert!(decls.binding("everything", "getSum3").is_none());
    assert!(decls.binding("nope", "getSum").is_none());
    assert!(decls.binding("everything", "__proto__").is_none());
}

#[test]
fn typescript_contextual_keywords_are_valid_names() {
    let words = [
        "type",
        "namespace",
        "module",
        "declare",
        "abstract",
        "as",
        "async",
        "get",
        "set",
        "of",
        "any",
        "never",
        "unknown",
        "string",
        "number",
        "symbol",
        "readonly",
        "keyof",
        "infer",
        "is",
        "asserts",
        "global",
        "require",
        "from",
        "accessor",
        "satisfies",
        "out",
        "override",
        "unique",
        "object",
        "boolean",
        "bigint",
        "undefined",
        "target",
        "meta",
        "using",
    ];
    let servers: Vec<McpServer> = words
        .iter()
        .map(|w| McpServer {
            name: (*w).to_owned(),
            tools: words.iter().map(|t| tool(t)).collect(),
            has_resources: true,
            has_prompts: true,
        })
        .collect();
    let decls = McpDecls::generate(&servers);
    crate::ts::assert_all_valid(&decls);
    let idents: Vec<&str> = decls.servers().iter().map(|s| s.ident.as_str()).collect();
    assert_eq!(idents, words);
}
