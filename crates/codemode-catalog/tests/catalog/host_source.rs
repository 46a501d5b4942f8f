//! The host's own source name: ids, entries and lookups follow it; bad names are refused.

use codemode_catalog::{
    CatalogBuilder, CatalogError, HostSource, MAX_HOST_SOURCE_BYTES, Source, ToolDescriptor,
    ToolOrigin,
};

fn catalog(host: &str) -> codemode_catalog::Catalog {
    CatalogBuilder::new()
        .host_source(HostSource::new(host).unwrap())
        .build([
            ToolDescriptor::new(ToolOrigin::Core, "search", "Search the web").read_only(),
            ToolDescriptor::new(
                ToolOrigin::BundledPlugin("gh".into()),
                "issues",
                "List issues",
            ),
            ToolDescriptor::new(ToolOrigin::Mcp("docs".into()), "read", "Read a doc"),
            ToolDescriptor::new(ToolOrigin::Client("app".into()), "pick", "Pick a file"),
            ToolDescriptor::new(ToolOrigin::Core, "tool_search", "control, never catalogued"),
        ])
}

#[test]
fn ids_entries_and_lookups_follow_the_host_source() {
    let catalog = catalog("myagent");
    let ids: Vec<&str> = catalog.entries().iter().map(|e| e.id.as_str()).collect();
    assert_eq!(
        ids,
        [
            "myagent:core:search",
            "myagent:gh:issues",
            "mcp:docs:read",
            "client:app:pick"
        ]
    );
    let all_tools = catalog.all_tools_json();
    let sources: Vec<&str> = all_tools
        .as_array()
        .unwrap()
        .iter()
        .map(|entry| entry["source"].as_str().unwrap())
        .collect();
    assert_eq!(sources, ["myagent", "myagent", "client"]);
    assert_eq!(all_tools[1]["sourceName"], "gh");
    assert_eq!(catalog.lookup("search").unwrap().id, "myagent:core:search");
    assert!(catalog.lookup("openclaw:core:search").is_err());
    assert_eq!(catalog.entries()[0].source, Source::Openclaw);
    assert_eq!(catalog.entries()[0].source_label(), "myagent");
    assert_eq!(catalog.excluded_controls(), ["myagent:core:tool_search"]);
    assert_eq!(catalog.host_source().as_str(), "myagent");
    // The default stays the original product's.
    let default = CatalogBuilder::new().build([ToolDescriptor::new(ToolOrigin::Core, "x", "")]);
    assert_eq!(default.entries()[0].id, "openclaw:core:x");
}

#[test]
fn bad_source_names_are_refused_with_a_reason() {
    let long = "a".repeat(MAX_HOST_SOURCE_BYTES + 1);
    let huge = "b".repeat(1 << 20);
    for (name, reason) in [
        ("", "it is empty."),
        (
            "my:agent",
            "only ASCII letters, digits, `_` and `-` are allowed.",
        ),
        (
            "my agent",
            "only ASCII letters, digits, `_` and `-` are allowed.",
        ),
        (
            "agént",
            "only ASCII letters, digits, `_` and `-` are allowed.",
        ),
        ("9agent", "it must start with an ASCII letter."),
        ("-agent", "it must start with an ASCII letter."),
        ("mcp", "it is the name of another catalog source."),
        ("Client", "it is the name of another catalog source."),
        (
            "mcp-capability",
            "it is the name of another catalog source.",
        ),
        (long.as_str(), "it is longer than 32 bytes."),
        (huge.as_str(), "it is longer than 32 bytes."),
    ] {
        match HostSource::new(name) {
            Err(CatalogError::InvalidSourceName {
                name: shown,
                reason: got,
            }) => {
                assert_eq!(got, reason, "{name:.40}");
                assert!(shown.len() <= MAX_HOST_SOURCE_BYTES + 8 + 4, "bounded");
            }
            other => panic!("{name:.40}: {other:?}"),
        }
    }
    for good in ["myagent", "my_agent-2", "A"] {
        assert_eq!(HostSource::new(good).unwrap().as_str(), good);
    }
}
