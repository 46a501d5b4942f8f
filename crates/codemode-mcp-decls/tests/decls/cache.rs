//! The declaration cache: hits for the same servers, misses when anything generation reads changes.

use std::sync::Arc;

use codemode_mcp_decls::{DeclCache, DeclLimits, McpServer};
use serde_json::json;

use crate::fixtures;

#[test]
fn same_servers_hit_changed_servers_miss() {
    let cache = DeclCache::new(8);
    let servers = fixtures::all();
    let first = cache.get(&servers);
    assert!(
        Arc::ptr_eq(&first, &cache.get(&fixtures::all())),
        "equal content, new allocations: hit"
    );

    // A change deep inside one schema is a different key.
    let mut changed = fixtures::all();
    let schema = Arc::make_mut(&mut changed[2].tools[0].input_schema);
    schema["properties"]["owner"]["type"] = json!("number");
    let second = cache.get(&changed);
    assert!(!Arc::ptr_eq(&first, &second));
    assert!(
        second
            .read("mcp/github.d.ts")
            .expect("file")
            .contains("    owner: number;\n")
    );

    // Order matters: it decides identifiers and file order.
    let mut reordered = fixtures::all();
    reordered.reverse();
    assert!(!Arc::ptr_eq(&first, &cache.get(&reordered)));
    // So do the capability flags.
    let mut flags = fixtures::all();
    flags[1].has_prompts = true;
    assert!(!Arc::ptr_eq(&first, &cache.get(&flags)));
}

#[test]
fn keyed_lookups_skip_fingerprinting() {
    let cache = DeclCache::new(8);
    let servers = vec![McpServer {
        name: "docs".into(),
        has_resources: true,
        ..Default::default()
    }];
    let key = cache.key(&servers);
    assert_eq!(key, cache.key(&servers));
    let keyed = cache.get_keyed(key, &servers);
    assert!(Arc::ptr_eq(&keyed, &cache.get(&servers)));
    // Keys are per cache (random seed): another cache's key means nothing here.
    let other = DeclCache::new(8);
    assert_ne!(other.key(&servers), key);
}

#[test]
fn the_cache_generates_with_its_limits() {
    let cache = DeclCache::with_limits(4, DeclLimits::default().max_doc_chars(10));
    let decls = cache.get(&[fixtures::everything()]);
    let text = decls.read("mcp/everything.d.ts").expect("file");
    assert!(text.contains("   * Echoes bac…\n"), "{text}");
}

#[test]
fn remembered_schema_hashes_follow_content_changes() {
    let cache = DeclCache::new(8);
    let mut servers = fixtures::all();
    let first = cache.get(&servers);
    // The cache now shares these `Arc`s: `make_mut` must copy, giving a new, unremembered schema.
    let schema = Arc::make_mut(&mut servers[0].tools[0].input_schema);
    schema["properties"]["message"]["type"] = json!("boolean");
    let second = cache.get(&servers);
    assert!(!Arc::ptr_eq(&first, &second));
    assert!(
        second
            .read("mcp/everything.d.ts")
            .expect("file")
            .contains("    message: boolean;\n")
    );
    // Unchanged `Arc`s and the changed one are both remembered now: the next lookup hits.
    assert!(Arc::ptr_eq(&second, &cache.get(&servers)));
    // Many distinct schemas: the memory is bounded and results stay right.
    for i in 0..(DeclCache::MAX_REMEMBERED_SCHEMAS / 40 + 2) {
        let mut many = fixtures::all();
        for server in &mut many {
            for tool in &mut server.tools {
                Arc::make_mut(&mut tool.input_schema)["x-round"] = json!(i);
            }
        }
        let decls = cache.get(&many);
        assert_eq!(decls.servers().len(), 3);
    }
    assert!(Arc::ptr_eq(&cache.get(&servers), &cache.get(&servers)));
}
