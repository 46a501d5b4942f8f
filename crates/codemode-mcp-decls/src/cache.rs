//! Generated declarations cached by a fingerprint of the servers' MCP entries.

use std::hash::{BuildHasher, Hasher};
use std::sync::Arc;

use serde_json::Value;

use crate::{DeclLimits, McpDecls, McpServer};

/// Caches [`McpDecls`] per set of servers, so repeated execs with the same MCP servers do not
/// regenerate their declarations.
///
/// The key is a 64-bit fingerprint of everything generation reads (server names, flags, tool
/// names, catalog ids, descriptions, schemas, in order), hashed with a per-cache random seed, so
/// servers cannot choose colliding metadata. Cloning the cache shares it.
///
/// ```
/// use codemode_mcp_decls::{DeclCache, McpServer};
/// use std::sync::Arc;
///
/// let cache = DeclCache::new(16);
/// let servers = vec![McpServer { name: "docs".into(), has_resources: true, ..Default::default() }];
/// let first = cache.get(&servers);
/// let again = cache.get(&servers);
/// assert!(Arc::ptr_eq(&first, &again));
/// ```
#[derive(Clone)]
pub struct DeclCache {
    cache: moka::sync::Cache<u64, Arc<McpDecls>>,
    seed: foldhash::fast::RandomState,
    limits: DeclLimits,
}

impl std::fmt::Debug for DeclCache {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("DeclCache")
            .field("entries", &self.cache.entry_count())
            .field("limits", &self.limits)
            .finish_non_exhaustive()
    }
}

impl DeclCache {
    /// A cache holding declarations for at most `capacity` distinct server sets, generated with
    /// the default [`DeclLimits`].
    pub fn new(capacity: u64) -> Self {
        Self::with_limits(capacity, DeclLimits::default())
    }

    /// Like [`DeclCache::new`], generating with `limits`.
    pub fn with_limits(capacity: u64, limits: DeclLimits) -> Self {
        Self {
            cache: moka::sync::Cache::new(capacity),
            seed: foldhash::fast::RandomState::default(),
            limits,
        }
    }

    /// The declarations for `servers`: cached, or generated and cached.
    pub fn get(&self, servers: &[McpServer]) -> Arc<McpDecls> {
        let key = self.fingerprint(servers);
        self.cache.get_with(key, || {
            Arc::new(McpDecls::generate_with(servers, &self.limits))
        })
    }

    fn fingerprint(&self, servers: &[McpServer]) -> u64 {
        let mut h = self.seed.build_hasher();
        h.write_usize(servers.len());
        for server in servers {
            write_str(&mut h, &server.name);
            h.write_u8(u8::from(server.has_resources) | (u8::from(server.has_prompts) << 1));
            h.write_usize(server.tools.len());
            for tool in &server.tools {
                write_str(&mut h, &tool.name);
                write_str(&mut h, &tool.catalog_id);
                write_str(&mut h, &tool.description);
                write_value(&mut h, &tool.input_schema);
                match &tool.output_schema {
                    None => h.write_u8(0),
                    Some(schema) => {
                        h.write_u8(1);
                        write_value(&mut h, schema);
                    }
                }
            }
        }
        h.finish()
    }
}

fn write_str(h: &mut impl Hasher, s: &str) {
    h.write_usize(s.len());
    h.write(s.as_bytes());
}

/// Feeds a JSON value into the hasher. Iterative (an explicit stack), so any nesting depth is
/// safe; serde_json's own parser already bounds depth for parsed values.
fn write_value(h: &mut impl Hasher, value: &Value) {
    let mut stack = vec![value];
    while let Some(value) = stack.pop() {
        match value {
            Value::Null => h.write_u8(0),
            Value::Bool(b) => h.write_u8(1 + u8::from(*b)),
            Value::Number(n) => {
                h.write_u8(3);
                if let Some(i) = n.as_i64() {
                    h.write_i64(i);
                } else if let Some(u) = n.as_u64() {
                    h.write_u64(u);
                } else {
                    h.write_u64(n.as_f64().unwrap_or(0.0).to_bits());
                }
            }
            Value::String(s) => {
                h.write_u8(4);
                write_str(h, s);
            }
            Value::Array(items) => {
                h.write_u8(5);
                h.write_usize(items.len());
                stack.extend(items.iter().rev());
            }
            Value::Object(map) => {
                h.write_u8(6);
                h.write_usize(map.len());
                // Keys are hashed now and values later in the same order: the stack is LIFO,
                // so push values reversed.
                for key in map.keys() {
                    write_str(h, key);
                }
                stack.extend(map.values().rev());
            }
        }
    }
}
