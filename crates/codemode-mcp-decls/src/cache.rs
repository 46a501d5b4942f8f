//! Generated declarations cached by a fingerprint of the servers' MCP entries.

use std::collections::HashMap;
use std::hash::{BuildHasher, Hasher};
use std::sync::{Arc, Mutex, PoisonError};

use serde_json::Value;

use crate::{DeclLimits, McpDecls, McpServer};

/// Caches [`McpDecls`] per set of servers, so repeated execs with the same MCP servers do not
/// regenerate their declarations.
///
/// The key ([`DeclKey`]) is a 64-bit fingerprint of everything generation reads (server names,
/// flags, tool names, catalog ids, descriptions, schemas, in order), hashed with a per-cache
/// random seed, so servers cannot choose colliding metadata. A schema's hash is remembered per
/// `Arc` (the cache keeps that `Arc` alive, so its address cannot be reused and its content
/// cannot change), so re-using the same `Arc`ed schemas across execs, as MCP clients do,
/// fingerprints without walking them again; at most [`DeclCache::MAX_REMEMBERED_SCHEMAS`] are
/// remembered. A caller can also compute the key once when its tool lists change
/// ([`DeclCache::key`]) and look up with [`DeclCache::get_keyed`], a constant-time hit.
/// Cloning the cache shares it.
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
    schema_hashes: Arc<Mutex<SchemaHashes>>,
}

/// Content hashes of schemas by `Arc` address, each entry keeping its `Arc` alive.
type SchemaHashes = HashMap<usize, (Arc<Value>, u64), foldhash::fast::RandomState>;

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
            schema_hashes: Arc::default(),
        }
    }

    /// Schemas whose content hash is remembered (see the type's docs); past this the memory is
    /// cleared and refilled.
    pub const MAX_REMEMBERED_SCHEMAS: usize = 4_096;

    /// The declarations for `servers`: cached, or generated and cached.
    pub fn get(&self, servers: &[McpServer]) -> Arc<McpDecls> {
        self.get_keyed(self.key(servers), servers)
    }

    /// Like [`DeclCache::get`] with a key computed earlier by [`DeclCache::key`] of this cache
    /// for these same `servers` (say, when their tool lists were last fetched). A key of other
    /// servers returns their declarations: the key is trusted, not checked.
    ///
    /// ```
    /// use codemode_mcp_decls::{DeclCache, McpServer};
    /// let cache = DeclCache::new(16);
    /// let servers = vec![McpServer { name: "docs".into(), ..Default::default() }];
    /// let key = cache.key(&servers); // once, when the tool lists change
    /// let decls = cache.get_keyed(key, &servers); // per exec
    /// assert_eq!(decls.servers()[0].ident, "docs");
    /// ```
    pub fn get_keyed(&self, key: DeclKey, servers: &[McpServer]) -> Arc<McpDecls> {
        self.cache.get_with(key.0, || {
            Arc::new(McpDecls::generate_with(servers, &self.limits))
        })
    }

    /// The fingerprint of `servers` under this cache's seed (see the type's docs).
    pub fn key(&self, servers: &[McpServer]) -> DeclKey {
        DeclKey(self.fingerprint(servers))
    }

    fn fingerprint(&self, servers: &[McpServer]) -> u64 {
        let mut hashes = self
            .schema_hashes
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        let mut schema_hash = |schema: &Arc<Value>| -> u64 {
            let address = Arc::as_ptr(schema) as usize;
            if let Some((_, hash)) = hashes.get(&address) {
                // The entry holds this `Arc`: same address means same allocation, same content.
                return *hash;
            }
            let mut h = self.seed.build_hasher();
            write_value(&mut h, schema);
            let hash = h.finish();
            if hashes.len() >= Self::MAX_REMEMBERED_SCHEMAS {
                hashes.clear();
            }
            hashes.insert(address, (Arc::clone(schema), hash));
            hash
        };
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
                h.write_u64(schema_hash(&tool.input_schema));
                match &tool.output_schema {
                    None => h.write_u8(0),
                    Some(schema) => {
                        h.write_u8(1);
                        h.write_u64(schema_hash(schema));
                    }
                }
            }
        }
        h.finish()
    }
}

/// A [`DeclCache`] fingerprint of a server set; only meaningful to the cache that made it.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct DeclKey(u64);

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
