//! Catalog build for 100 / 1,000 / 10,000 tools and `search` over 10,000
//! tools (issue 2). Goals on the 2-core reference machine, release build:
//! a 10,000-tool build under 10 ms, one search under 1 ms.
//!
//! The search index is built by a catalog's first search, not by the build:
//! `first_search_10000_tools` shows what that first search costs.

use codemode_catalog::{Catalog, SearchLimits, ToolDescriptor, ToolOrigin};
use divan::{Bencher, black_box};
use serde_json::json;

fn main() {
    divan::main();
}

const VERBS: [&str; 8] = [
    "read", "write", "list", "search", "create", "update", "delete", "fetch",
];
const NOUNS: [&str; 8] = [
    "file", "issue", "message", "page", "event", "note", "record", "image",
];

/// `count` effective tools spread like a large real run: core, bundled and
/// external plugins, MCP servers and client tools, in a scrambled order.
fn tools(count: usize) -> Vec<ToolDescriptor> {
    let mut tools: Vec<ToolDescriptor> = (0..count)
        .map(|i| {
            let owner = format!("owner{}", i % 97);
            let origin = match i % 10 {
                0 => ToolOrigin::Core,
                1..=3 => ToolOrigin::BundledPlugin(owner),
                4 | 5 => ToolOrigin::ExternalPlugin(owner),
                6..=8 => ToolOrigin::Mcp(owner),
                _ => ToolOrigin::Client(owner),
            };
            let verb = VERBS[i % VERBS.len()];
            let noun = NOUNS[(i / VERBS.len()) % NOUNS.len()];
            ToolDescriptor {
                origin,
                name: format!("{verb}_{noun}_{i}"),
                label: (i % 3 == 0).then(|| format!("{verb} {noun}")),
                description: format!(
                    "{verb} a {noun} in the workspace; returns the {noun} as JSON. Tool number {i}."
                ),
                parameters: Some(json!({
                    "type": "object",
                    "properties": {"path": {"type": "string"}},
                })),
                direct_only: i % 500 == 0,
                read_only: verb == "read" || verb == "list",
            }
        })
        .collect();
    // A fixed scramble so the build really sorts.
    let len = tools.len();
    for i in 0..len {
        tools.swap(i, (i * 7919 + 13) % len);
    }
    tools
}

/// Build the catalog from the run's tools (clone of the input not timed).
#[divan::bench(args = [100, 1_000, 10_000], sample_count = 30, sample_size = 1)]
fn build(bencher: Bencher<'_, '_>, count: usize) {
    let input = tools(count);
    bencher
        .with_inputs(|| input.clone())
        .bench_values(Catalog::build);
}

/// One `tools.search` over a 10,000-tool catalog.
#[divan::bench(args = ["read file", "search issue owner42", ""], sample_count = 20, sample_size = 10)]
fn search_10000_tools(bencher: Bencher<'_, '_>, query: &str) {
    let catalog = Catalog::build(tools(10_000));
    let limits = SearchLimits::default();
    bencher.bench(|| {
        catalog
            .search(black_box(query), None, limits)
            .map(|hits| hits.len())
    });
}

/// The first `tools.search` of a fresh 10,000-tool catalog, which builds
/// the search index (the build itself is not timed).
#[divan::bench(sample_count = 20, sample_size = 1)]
fn first_search_10000_tools(bencher: Bencher<'_, '_>) {
    let input = tools(10_000);
    let limits = SearchLimits::default();
    bencher
        .with_inputs(|| Catalog::build(input.clone()))
        .bench_local_refs(|catalog| {
            catalog
                .search(black_box("read file"), None, limits)
                .map(|hits| hits.len())
        });
}
