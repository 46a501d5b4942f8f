//! Bench row of issue 4: declarations for a server with 200 tools, uncached (goal < 2 ms) and
//! cached (goal < 10 µs), plus the keyed lookup that skips fingerprinting.

use codemode_mcp_decls::{DeclCache, McpDecls, McpServer, McpTool};
use divan::black_box;
use serde_json::json;

fn main() {
    divan::main();
}

/// A GitHub-like server: 200 tools, each with a description, 4-7 documented properties, an
/// enum, a default, an array and a nested object.
fn server_with_200_tools() -> Vec<McpServer> {
    let tools = (0..200)
        .map(|i| McpTool {
            name: format!("do_thing_{i}"),
            catalog_id: format!("mcp:github:do_thing_{i}"),
            description: format!(
                "Does thing number {i} in a GitHub repository. Returns the updated resource; \
                 fails when the caller lacks permission."
            ),
            input_schema: json!({
                "type": "object",
                "properties": {
                    "owner": {"type": "string", "description": "Repository owner"},
                    "repo": {"type": "string", "description": "Repository name"},
                    "state": {"type": "string", "enum": ["open", "closed", "all"], "default": "open"},
                    "labels": {"type": "array", "items": {"type": "string"}, "description": "Labels"},
                    "page": {"type": "integer", "minimum": 1, "default": 1},
                    "author": {"type": "object", "properties": {"name": {"type": "string"},
                        "email": {"type": "string"}}, "required": ["name"]},
                },
                "required": ["owner", "repo"],
            })
            .into(),
            output_schema: (i % 4 == 0).then(|| {
                json!({"type": "object", "properties": {"number": {"type": "integer"},
                    "url": {"type": "string"}}, "required": ["number"]})
                .into()
            }),
        })
        .collect();
    vec![McpServer {
        name: "github".into(),
        tools,
        has_resources: true,
        has_prompts: false,
    }]
}

#[divan::bench(sample_count = 30, sample_size = 5)]
fn declarations_200_tools_uncached(bencher: divan::Bencher<'_, '_>) {
    let servers = server_with_200_tools();
    bencher.bench_local(|| McpDecls::generate(black_box(&servers)));
}

/// A cache hit through `DeclCache::get`: fingerprints the servers (schema hashes remembered per
/// `Arc`), then looks up.
#[divan::bench(sample_count = 50, sample_size = 50)]
fn declarations_200_tools_cached(bencher: divan::Bencher<'_, '_>) {
    let servers = server_with_200_tools();
    let cache = DeclCache::new(16);
    let _warm = cache.get(&servers);
    bencher.bench_local(|| cache.get(black_box(&servers)));
}

/// A cache hit with a key the caller kept from `DeclCache::key`.
#[divan::bench(sample_count = 50, sample_size = 200)]
fn declarations_200_tools_cached_keyed(bencher: divan::Bencher<'_, '_>) {
    let servers = server_with_200_tools();
    let cache = DeclCache::new(16);
    let key = cache.key(&servers);
    let _warm = cache.get_keyed(key, &servers);
    bencher.bench_local(|| cache.get_keyed(black_box(key), black_box(&servers)));
}
