//! Catalog construction, guest views, lookup and search (SPEC §5).

use codemode_catalog::{
    Catalog, CatalogBuilder, CatalogError, SearchLimits, Source, SourceCounts, ToolDescriptor,
    ToolOrigin,
};
use serde_json::{Value, json};

fn tool(origin: ToolOrigin, name: &str, description: &str) -> ToolDescriptor {
    ToolDescriptor {
        origin,
        name: name.to_owned(),
        label: None,
        description: description.to_owned(),
        parameters: None,
        direct_only: false,
        read_only: false,
    }
}

fn core(name: &str, description: &str) -> ToolDescriptor {
    tool(ToolOrigin::Core, name, description)
}

fn bundled(plugin: &str, name: &str, description: &str) -> ToolDescriptor {
    tool(
        ToolOrigin::BundledPlugin(plugin.to_owned()),
        name,
        description,
    )
}

fn external(plugin: &str, name: &str, description: &str) -> ToolDescriptor {
    tool(
        ToolOrigin::ExternalPlugin(plugin.to_owned()),
        name,
        description,
    )
}

fn mcp(server: &str, name: &str, description: &str) -> ToolDescriptor {
    tool(ToolOrigin::Mcp(server.to_owned()), name, description)
}

fn client(owner: &str, name: &str, description: &str) -> ToolDescriptor {
    tool(ToolOrigin::Client(owner.to_owned()), name, description)
}

/// A run's effective tools, deliberately given out of catalog order.
fn fixture() -> Vec<ToolDescriptor> {
    let mut read = core("read", "Read a local file from the workspace");
    read.read_only = true;
    read.parameters = Some(json!({
        "type": "object",
        "properties": {"path": {"type": "string"}},
        "required": ["path"]
    }));
    let mut web_search = core("web_search", "Search the web and return result snippets");
    web_search.label = Some("Web search".to_owned());
    web_search.read_only = true;
    let mut computer = core("computer", "Control the desktop; returns screenshots");
    computer.direct_only = true;
    vec![
        client(
            "app",
            "select_file",
            "Ask the user to pick a file in the client app",
        ),
        mcp(
            "github",
            "create_issue",
            "Create a GitHub issue in a repository",
        ),
        external("weather", "forecast", "Weather forecast for a city"),
        web_search,
        core("exec", "Run a shell command in the workspace"),
        bundled(
            "browser",
            "browser_request",
            "Load a web page in the managed browser",
        ),
        mcp("github", "search_issues", "Search GitHub issues"),
        core("message", "Send a message to a chat channel"),
        core(
            "tool_search",
            "Search the tool catalog (tool search control)",
        ),
        core("wait", "Wait for a suspended run"),
        computer,
        read,
        bundled("browser", "web_fetch", "Fetch a URL through the browser"),
        external("notes", "web_fetch", "Fetch a URL and save it as a note"),
        mcp("fs", "read_text_file", "Read a text file"),
        client("app", "search", "Search inside the client app"),
        client("app", "get-sum", "Add two numbers"),
    ]
}

/// One line per entry: `id | name | source | sourceName | readOnly`.
fn listing(catalog: &Catalog) -> String {
    catalog
        .entries()
        .iter()
        .map(|entry| {
            format!(
                "{} | {} | {} | {} | {}\n",
                entry.id,
                entry.name,
                entry.source,
                entry.source_name.as_deref().unwrap_or("-"),
                if entry.read_only {
                    "read-only"
                } else {
                    "writes"
                },
            )
        })
        .collect()
}

/// Search the fixture and render `score id` lines (or the error).
fn ranking(catalog: &Catalog, query: &str, limit: Option<Value>) -> String {
    match catalog.search_hits(query, limit.as_ref(), SearchLimits::default()) {
        Ok(hits) => hits
            .iter()
            .map(|hit| format!("{:>3} {}\n", hit.score, hit.entry.id))
            .collect(),
        Err(error) => format!("error: {error}\n"),
    }
}

fn check_search(query: &str, limit: Option<Value>, expect: &str) {
    let catalog = Catalog::build(fixture());
    assert_eq!(ranking(&catalog, query, limit), expect, "query {query:?}");
}

fn check_lookup(id_or_name: &str, expect: &str) {
    let catalog = Catalog::build(fixture());
    let actual = match catalog.lookup(id_or_name) {
        Ok(entry) => entry.id.clone(),
        Err(error) => format!("error: {error}"),
    };
    assert_eq!(actual, expect, "lookup {id_or_name:?}");
}

#[test]
fn catalog_listing() {
    let catalog = Catalog::build(fixture());
    insta::assert_snapshot!(listing(&catalog));
}

#[test]
fn all_tools_json_is_compact_and_has_no_mcp() {
    let catalog = Catalog::build(fixture());
    let all_tools = catalog.all_tools_json();
    // Sorted keys whatever serde_json's `preserve_order` feature says.
    insta::with_settings!({ sort_maps => true }, { insta::assert_json_snapshot!(all_tools) });
    let entries = all_tools.as_array().map(Vec::as_slice).unwrap_or_default();
    assert!(entries.iter().all(|entry| entry["source"] != "mcp"));
    assert!(
        entries
            .iter()
            .all(|entry| entry.get("parameters").is_none())
    );
}

#[test]
fn describe_adds_parameters() {
    let catalog = Catalog::build(fixture());
    let described: Vec<Value> = ["read", "openclaw:browser:browser_request"]
        .iter()
        .map(|id| catalog.lookup(id).map(|entry| entry.describe_json()))
        .collect::<Result<_, _>>()
        .unwrap();
    insta::with_settings!({ sort_maps => true }, { insta::assert_json_snapshot!(described) });
    assert_eq!(described[1]["parameters"], json!({}));
}

#[test]
fn control_tools_and_direct_only_tools_are_not_catalogued() {
    let catalog = Catalog::build(fixture());
    for gone in [
        "openclaw:core:tool_search",
        "openclaw:core:wait",
        "openclaw:core:computer",
    ] {
        assert!(catalog.get(gone).is_none(), "{gone} catalogued");
    }
    assert_eq!(
        catalog.excluded_controls(),
        ["openclaw:core:tool_search", "openclaw:core:wait"]
    );
    let direct: Vec<&str> = catalog
        .direct_only()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    assert_eq!(direct, ["computer"]);
    // The host's shell `exec` is an ordinary catalogued tool (SPEC §4).
    assert_eq!(
        catalog.lookup("exec").map(|e| e.id.as_str()),
        Ok("openclaw:core:exec")
    );
    assert!(catalog.convenience_names().any(|(name, _)| name == "exec"));
}

#[test]
fn every_tool_search_control_is_excluded_from_every_openclaw_origin() {
    let mut tools = Vec::new();
    for name in codemode_catalog::TOOL_SEARCH_CONTROL_NAMES {
        tools.push(core(name, ""));
        tools.push(bundled("p", name, ""));
        tools.push(external("q", name, ""));
        let mut direct = core(name, "");
        direct.direct_only = true;
        tools.push(direct);
        // Same names from an MCP server or a client are ordinary tools.
        tools.push(mcp("srv", name, ""));
        tools.push(client("app", name, ""));
    }
    let catalog = Catalog::build(tools);
    assert!(catalog.direct_only().is_empty());
    assert_eq!(catalog.excluded_controls().len(), 16);
    assert_eq!(
        catalog.source_counts(),
        SourceCounts {
            openclaw: 0,
            mcp: 4,
            client: 4
        }
    );
}

#[test]
fn builder_excludes_named_control_tools() {
    let catalog = CatalogBuilder::new()
        .exclude(ToolOrigin::Core, "exec")
        .build(fixture());
    assert!(catalog.get("openclaw:core:exec").is_none());
    assert!(
        catalog
            .excluded_controls()
            .contains(&"openclaw:core:exec".to_owned())
    );
    // Only the exact origin is excluded.
    let catalog = Catalog::builder()
        .exclude(ToolOrigin::BundledPlugin("x".to_owned()), "exec")
        .build(fixture());
    assert!(catalog.get("openclaw:core:exec").is_some());
}

#[test]
fn source_counts_include_mcp() {
    let catalog = Catalog::build(fixture());
    let counts = catalog.source_counts();
    assert_eq!(
        counts,
        SourceCounts {
            openclaw: 8,
            mcp: 3,
            client: 3
        }
    );
    assert_eq!(counts.total(), catalog.len());
    assert_eq!(
        serde_json::to_value(counts).unwrap(),
        json!({"openclaw": 8, "mcp": 3, "client": 3})
    );
    assert_eq!(catalog.guest_entries().count(), 11);
    assert!(
        catalog
            .guest_entries()
            .all(|entry| entry.source != Source::Mcp)
    );
}

#[test]
fn ids_follow_the_spec_examples() {
    let catalog = Catalog::build([
        core("message", ""),
        bundled("browser", "browser_request", ""),
        mcp("github", "create_issue", ""),
        client("app", "select_file", ""),
    ]);
    let ids: Vec<&str> = catalog.entries().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "openclaw:core:message",
            "openclaw:browser:browser_request",
            "mcp:github:create_issue",
            "client:app:select_file",
        ]
    );
    let source_names: Vec<Option<&str>> = catalog
        .entries()
        .iter()
        .map(|e| e.source_name.as_deref())
        .collect();
    assert_eq!(
        source_names,
        [None, Some("browser"), Some("github"), Some("app")]
    );
}

#[test]
fn duplicates_first_wins_and_are_reported() {
    let catalog = Catalog::build([
        external("core", "message", "external plugin that calls itself core"),
        core("message", "the real core tool"),
        bundled("p", "t", "bundled wins over external"),
        external("p", "t", "external loses"),
        core("x", "first given"),
        core("x", "second given"),
        // `mcp:a:b:c` from two different (owner, name) splits.
        mcp("a:b", "c", "owner a:b"),
        mcp("a", "b:c", "owner a"),
    ]);
    let described: Vec<(&str, &str)> = catalog
        .entries()
        .iter()
        .map(|e| (e.id.as_str(), e.description.as_str()))
        .collect();
    assert_eq!(
        described,
        [
            ("openclaw:core:message", "the real core tool"),
            ("openclaw:core:x", "first given"),
            ("openclaw:p:t", "bundled wins over external"),
            ("mcp:a:b:c", "owner a"),
        ]
    );
    assert_eq!(
        catalog.duplicates(),
        // In catalog order of the dropped descriptors: the external plugin
        // owned "core" sorts before the external plugin "p".
        [
            "openclaw:core:x",
            "openclaw:core:message",
            "openclaw:p:t",
            "mcp:a:b:c"
        ]
    );
}

#[test]
fn convenience_names() {
    let catalog = Catalog::build(fixture());
    insta::assert_debug_snapshot!(catalog.convenience_names().collect::<Vec<_>>());
}

#[test]
fn unsafe_and_reserved_names_get_no_convenience_function() {
    let names = [
        "ok_name",
        "$dollar",
        "_under",
        "Camel9",
        "9starts_with_digit",
        "has-dash",
        "has.dot",
        "has space",
        "",
        "ünïcode",
        "search",
        "describe",
        "call",
        "__proto__",
        "constructor",
        "prototype",
        "then",
        "toJSON",
        "toString",
        "valueOf",
    ];
    let catalog = Catalog::build(names.iter().map(|name| core(name, "")));
    let installed: Vec<&str> = catalog.convenience_names().map(|(name, _)| name).collect();
    assert_eq!(installed, ["$dollar", "Camel9", "_under", "ok_name"]);
    // Every tool stays callable by id and by its (unique) name.
    for name in names {
        assert_eq!(catalog.lookup(name).map(|e| e.name.as_str()), Ok(name));
    }
}

#[test]
fn mcp_names_do_not_make_a_guest_name_ambiguous() {
    let catalog = Catalog::build([core("read_text_file", ""), mcp("fs", "read_text_file", "")]);
    assert_eq!(
        catalog.convenience_names().collect::<Vec<_>>(),
        [("read_text_file", "openclaw:core:read_text_file")]
    );
    assert_eq!(
        catalog.lookup("read_text_file").map(|e| e.id.as_str()),
        Ok("openclaw:core:read_text_file")
    );
}

#[test]
fn lookup() {
    check_lookup("openclaw:core:read", "openclaw:core:read");
    check_lookup("read", "openclaw:core:read");
    check_lookup("select_file", "client:app:select_file");
    check_lookup("client:app:get-sum", "client:app:get-sum");
    check_lookup("get-sum", "client:app:get-sum");
    check_lookup("Read", "error: Unknown tool id: Read");
    check_lookup("", "error: Unknown tool id: ");
    check_lookup(" read", "error: Unknown tool id:  read");
    // MCP entries are not in the guest view, by id or by name.
    check_lookup(
        "mcp:github:create_issue",
        "error: Unknown tool id: mcp:github:create_issue",
    );
    check_lookup("create_issue", "error: Unknown tool id: create_issue");
    // Denied / control / direct-only tools are not in the catalog at all.
    check_lookup(
        "openclaw:core:tool_search",
        "error: Unknown tool id: openclaw:core:tool_search",
    );
    check_lookup("wait", "error: Unknown tool id: wait");
    check_lookup("computer", "error: Unknown tool id: computer");
    check_lookup(
        "openclaw:core:denied",
        "error: Unknown tool id: openclaw:core:denied",
    );
    check_lookup(
        "web_fetch",
        "error: Ambiguous tool name: web_fetch matches openclaw:browser:web_fetch, \
         openclaw:notes:web_fetch; use the exact id.",
    );
}

#[test]
fn ambiguous_name_error_lists_a_bounded_number_of_ids() {
    let catalog = Catalog::build((0..40).map(|i| external(&format!("p{i:02}"), "same", "")));
    let error = catalog.lookup("same").unwrap_err();
    assert!(
        matches!(&error, CatalogError::AmbiguousName { candidates, .. } if candidates.len() == 40)
    );
    assert_eq!(
        error.to_string(),
        "Ambiguous tool name: same matches openclaw:p00:same, openclaw:p01:same, \
         openclaw:p02:same, openclaw:p03:same, openclaw:p04:same and 35 more; use the exact id."
    );
}

#[test]
fn search_scoring() {
    // exact name 20 + name contains 8 + id contains 6 + description 2.
    check_search("read", None, " 36 openclaw:core:read\n");
    check_search(
        "Web SEARCH",
        None,
        concat!(
            " 40 openclaw:core:web_search\n", // 2 x (8 name + 6 id + 4 label + 2 description)
            " 36 client:app:search\n",        // "search": 20 + 8 + 6 + 2
            " 14 openclaw:browser:web_fetch\n", // ties broken by id ascending
            " 14 openclaw:notes:web_fetch\n",
            "  2 openclaw:browser:browser_request\n",
        ),
    );
    check_search(
        "file",
        Some(json!(2)),
        " 16 client:app:select_file\n  2 openclaw:core:read\n",
    );
    check_search("openclaw:core:exec", None, " 26 openclaw:core:exec\n");
    // MCP entries never show up in the guest's search.
    check_search("github", None, "");
    check_search("nothing-matches-this", None, "");
}

#[test]
fn empty_query_scores_everything_one() {
    let all_by_id = concat!(
        "  1 client:app:get-sum\n",
        "  1 client:app:search\n",
        "  1 client:app:select_file\n",
        "  1 openclaw:browser:browser_request\n",
        "  1 openclaw:browser:web_fetch\n",
        "  1 openclaw:core:exec\n",
        "  1 openclaw:core:message\n",
        "  1 openclaw:core:read\n",
    );
    check_search("", None, all_by_id);
    check_search("  !!  ", None, all_by_id);
    check_search("", Some(Value::Null), all_by_id);
    check_search(
        "",
        Some(json!(2)),
        "  1 client:app:get-sum\n  1 client:app:search\n",
    );
    let catalog = Catalog::build(fixture());
    let every = catalog
        .search("", Some(&json!(1000)), SearchLimits::default())
        .unwrap();
    assert_eq!(every.len(), 11);
}

#[test]
fn search_limit_errors() {
    for limit in [
        json!(0),
        json!(-1),
        json!(1.5),
        json!("3"),
        json!(false),
        json!({}),
    ] {
        check_search(
            "read",
            Some(limit),
            "error: limit must be a positive integer.\n",
        );
    }
}

#[test]
fn search_limit_is_clamped_to_max_search_limit() {
    let catalog = Catalog::build((0..100).map(|i| core(&format!("tool_{i:03}"), "")));
    let limits = SearchLimits::new(3, 10);
    let count = |limit: Option<Value>| {
        catalog
            .search("tool", limit.as_ref(), limits)
            .map(|hits| hits.len())
    };
    assert_eq!(count(None), Ok(3));
    assert_eq!(count(Some(json!(7))), Ok(7));
    assert_eq!(count(Some(json!(11))), Ok(10));
    assert_eq!(count(Some(json!(1e9))), Ok(10));
}

#[test]
fn search_rejects_a_query_with_too_many_terms() {
    let catalog = Catalog::build(fixture());
    let limits = SearchLimits::default().with_max_query_terms(3);
    assert_eq!(
        catalog.search("a b c", None, limits).map(|hits| hits.len()),
        Ok(8)
    );
    assert_eq!(
        catalog
            .search("a b c d", None, limits)
            .unwrap_err()
            .to_string(),
        "search query has too many terms (4; at most 3)."
    );
    let huge = "word ".repeat(100_000);
    assert!(matches!(
        catalog.search(&huge, None, SearchLimits::default()),
        Err(CatalogError::TooManyQueryTerms {
            terms: 100_000,
            max: 64
        })
    ));
}

#[test]
fn search_rankings() {
    let catalog = Catalog::build(fixture());
    let queries = [
        "read local file",
        "web",
        "fetch url",
        "openclaw:browser",
        "client app",
        "sum",
        "weather forecast city",
        "CRÈME brûlée",
        "exec shell",
        "a",
    ];
    let report: String = queries
        .iter()
        .map(|query| format!("## {query}\n{}", ranking(&catalog, query, Some(json!(50)))))
        .collect();
    insta::assert_snapshot!(report);
}

#[test]
fn hostile_descriptors_do_not_panic() {
    let huge = "x".repeat(1 << 20);
    let tools = vec![
        core("", ""),
        core(&huge, &huge),
        core("\u{0}\u{feff}\u{202e}", "nul, BOM and bidi override"),
        core("İstanbul", "dotted capital I lower-cases to two chars"),
        bundled("", "empty plugin id", ""),
        external(":", ":", ":"),
        client("app", "🦀", "emoji"),
        mcp("", "", ""),
    ];
    let catalog = Catalog::build(tools);
    assert_eq!(catalog.len(), 8);
    assert!(catalog.lookup("").is_ok());
    assert!(catalog.get("openclaw::::").is_some());
    assert!(catalog.get("mcp::").is_some());
    let hits = catalog
        .search("i̇stanbul", None, SearchLimits::default())
        .unwrap();
    assert_eq!(hits.first().map(|e| e.name.as_str()), Some("İstanbul"));
    let hits = catalog
        .search(&huge, None, SearchLimits::default())
        .unwrap();
    assert_eq!(hits.first().map(|e| e.name.len()), Some(1 << 20));
    assert_eq!(catalog.all_tools_json().as_array().map(Vec::len), Some(7));
}

#[test]
fn empty_catalog() {
    let catalog = Catalog::build([]);
    assert!(catalog.is_empty());
    assert_eq!(catalog.all_tools_json(), json!([]));
    assert_eq!(
        catalog.search("", None, SearchLimits::default()),
        Ok(vec![])
    );
    assert_eq!(
        catalog.lookup("x"),
        Err(CatalogError::UnknownTool("x".to_owned()))
    );
    assert_eq!(catalog.source_counts(), SourceCounts::default());
}

#[test]
fn catalog_can_be_shared_across_threads() {
    fn assert_send_sync<T: Send + Sync + 'static>(_: &T) {}
    let catalog = Catalog::build(fixture());
    assert_send_sync(&catalog);
    let shared = std::sync::Arc::new(catalog);
    let worker = {
        let shared = std::sync::Arc::clone(&shared);
        std::thread::spawn(move || shared.lookup("read").map(|entry| entry.id.clone()))
    };
    assert_eq!(
        worker.join().ok(),
        Some(Ok("openclaw:core:read".to_owned()))
    );
}

// MCP resources and prompts are their own kind of nested call: their ids can never be catalog
// ids, so an MCP tool named like a capability stays a tool.
#[test]
fn mcp_capability_ids_never_equal_catalog_ids() {
    use codemode_catalog::{MCP_CAPABILITY_SOURCE, McpCapability};
    let names: Vec<&str> = McpCapability::ALL.iter().map(|c| c.method()).collect();
    assert_eq!(
        names,
        [
            "resources/list",
            "resources/read",
            "prompts/list",
            "prompts/get"
        ]
    );
    let catalog = Catalog::build(
        names
            .iter()
            .map(|name| tool(ToolOrigin::Mcp("docs".into()), name, "")),
    );
    for (capability, entry) in McpCapability::ALL.into_iter().zip(catalog.entries()) {
        let id = capability.id("docs");
        assert_eq!(id, format!("mcp-capability:docs:{}", capability.method()));
        assert!(id.starts_with(&format!("{MCP_CAPABILITY_SOURCE}:")));
        assert!(catalog.get(&id).is_none(), "{id}");
        assert_eq!(entry.id, format!("mcp:docs:{}", entry.name));
        assert_eq!(McpCapability::parse_id(&entry.id), None, "{}", entry.id);
        assert_eq!(McpCapability::parse_id(&id), Some(("docs", capability)));
        assert!(capability.read_only());
        assert_eq!(
            McpCapability::from_method(capability.method()),
            Some(capability)
        );
    }
    // Server names may hold a `:`; anything else is not a capability id.
    assert_eq!(
        McpCapability::parse_id("mcp-capability:a:b:prompts/get"),
        Some(("a:b", McpCapability::PromptsGet))
    );
    for other in [
        "mcp-capability::prompts/get",
        "mcp-capability:docs:tools/call",
        "mcp-capability:docs",
        "mcp-capabilitydocs:prompts/get",
        "openclaw:core:resources/list",
    ] {
        assert_eq!(McpCapability::parse_id(other), None, "{other}");
    }
}

// Direct-only tools come back as given, control names included, so that core can refuse to
// activate with one (a core `wait` is a control tool and is dropped).
#[test]
fn direct_only_tools_named_like_control_tools_are_handed_back() {
    let direct = |origin: ToolOrigin, name: &str| ToolDescriptor {
        direct_only: true,
        ..tool(origin, name, "")
    };
    let catalog = Catalog::build([
        direct(ToolOrigin::Core, "exec"),
        direct(ToolOrigin::Core, "wait"),
        direct(ToolOrigin::Client("app".into()), "wait"),
    ]);
    let names: Vec<(&ToolOrigin, &str)> = catalog
        .direct_only()
        .iter()
        .map(|tool| (&tool.origin, tool.name.as_str()))
        .collect();
    assert_eq!(
        names,
        [
            (&ToolOrigin::Core, "exec"),
            (&ToolOrigin::Client("app".into()), "wait")
        ]
    );
    assert_eq!(catalog.excluded_controls(), ["openclaw:core:wait"]);
}
