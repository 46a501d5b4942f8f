//! Building the run catalog and the guest's views of it.

use std::sync::OnceLock;

use serde::Serialize;
use serde_json::Value;

use crate::exact::ExactIndex;
use crate::search::{SearchIndex, query_terms};
use crate::{
    CatalogEntry, CatalogError, HostSource, SearchHit, SearchLimits, Source, ToolDescriptor,
    ToolOrigin,
};

/// `tracing` target of the catalog's debug events (under the workspace's `codemode` target).
const TRACING_TARGET: &str = "codemode::catalog";

/// Names of the host's tool-search control tools. They are never catalogued
/// when they come from an `openclaw` origin (core or plugin), whatever the
/// builder says: code mode replaces tool search for the run.
pub const TOOL_SEARCH_CONTROL_NAMES: [&str; 4] = [
    "tool_search_code",
    "tool_search",
    "tool_describe",
    "tool_call",
];

/// Names on the guest's `tools` object that a convenience function must not
/// shadow: the catalog helpers on `tools` (`search`, `describe`, `call`) and
/// names JavaScript itself reads or calls implicitly (`__proto__` would
/// replace the object's prototype; `then` would make `tools` a thenable that
/// `await`/`return` invokes; `toJSON`, `toString`, `valueOf` are called by
/// `JSON.stringify` and coercions; `constructor`, `prototype` are the
/// object-model names the MCP bindings avoid too). These are the "unsafe
/// names" a convenience function may not have, beyond the identifier pattern.
pub const RESERVED_CONVENIENCE_NAMES: [&str; 10] = [
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

/// Per-source entry counts for telemetry (`openclaw`, `mcp`, `client`).
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq, Serialize)]
pub struct SourceCounts {
    /// Core and plugin entries.
    pub openclaw: usize,
    /// MCP entries.
    pub mcp: usize,
    /// Client entries.
    pub client: usize,
}

impl SourceCounts {
    /// Entries of all sources.
    pub fn total(&self) -> usize {
        self.openclaw + self.mcp + self.client
    }

    fn count(&mut self, source: Source) {
        match source {
            Source::Openclaw => self.openclaw += 1,
            Source::Mcp => self.mcp += 1,
            Source::Client => self.client += 1,
        }
    }
}

/// Configures which descriptors are code mode's own control tools.
///
/// Always excluded from the catalog (and from [`Catalog::direct_only`]):
/// - the tool-search controls ([`TOOL_SEARCH_CONTROL_NAMES`]) from any
///   `openclaw` origin (core, bundled or external plugin). An MCP server or
///   client tool of the same name is an ordinary tool with its own id.
/// - a core tool named `wait`: code mode's `wait` must never be reachable
///   from guest code, and no host shell tool claims that name.
///
/// NOT excluded by default: a core tool named `exec`. The host's shell
/// `exec` is hidden from the model (which sees code mode's `exec` instead) and
/// catalogued as `openclaw:core:exec`, so guest code can still call it. If the host's tool list also carries code mode's own
/// `exec` (or any other tool core must keep out), name it with
/// [`CatalogBuilder::exclude`].
///
/// ```
/// use codemode_catalog::{CatalogBuilder, ToolDescriptor, ToolOrigin};
///
/// let tool = |origin: ToolOrigin, name: &str| ToolDescriptor {
///     origin, name: name.into(), label: None, description: String::new(),
///     parameters: None, direct_only: false, read_only: false,
/// };
/// let tools = vec![
///     tool(ToolOrigin::Core, "exec"),
///     tool(ToolOrigin::Core, "wait"),
///     tool(ToolOrigin::Core, "tool_search"),
///     tool(ToolOrigin::Client("app".into()), "code_mode_exec"),
/// ];
/// let catalog = CatalogBuilder::new()
///     .exclude(ToolOrigin::Client("app".into()), "code_mode_exec")
///     .build(tools);
/// let ids: Vec<&str> = catalog.entries().iter().map(|e| e.id.as_str()).collect();
/// assert_eq!(ids, ["openclaw:core:exec"]);
/// assert_eq!(catalog.excluded_controls().len(), 3);
/// ```
#[derive(Debug, Clone, Default)]
pub struct CatalogBuilder {
    excluded: Vec<(ToolOrigin, String)>,
    host_source: HostSource,
}

impl CatalogBuilder {
    /// A builder with only the default exclusions.
    pub fn new() -> Self {
        Self::default()
    }

    /// Also exclude the tool `name` of `origin` (matched exactly).
    pub fn exclude(mut self, origin: ToolOrigin, name: impl Into<String>) -> Self {
        self.excluded.push((origin, name.into()));
        self
    }

    /// The first id segment of the host's own tools (core and plugins): `openclaw` unless set.
    ///
    /// ```
    /// use codemode_catalog::{CatalogBuilder, HostSource, ToolDescriptor, ToolOrigin};
    ///
    /// let catalog = CatalogBuilder::new()
    ///     .host_source(HostSource::new("myagent").unwrap())
    ///     .build([
    ///         ToolDescriptor::new(ToolOrigin::Core, "search", "Search the web"),
    ///         ToolDescriptor::new(ToolOrigin::Client("app".into()), "pick", "Pick a file"),
    ///     ]);
    /// assert_eq!(catalog.entries()[0].id, "myagent:core:search");
    /// assert_eq!(catalog.all_tools_json()[0]["source"], "myagent");
    /// assert_eq!(catalog.entries()[1].id, "client:app:pick");
    /// ```
    pub fn host_source(mut self, host_source: HostSource) -> Self {
        self.host_source = host_source;
        self
    }

    fn is_control(&self, tool: &ToolDescriptor) -> bool {
        let openclaw = tool.origin.source() == Source::Openclaw;
        (openclaw && TOOL_SEARCH_CONTROL_NAMES.contains(&tool.name.as_str()))
            || (tool.origin == ToolOrigin::Core && tool.name == "wait")
            || self
                .excluded
                .iter()
                .any(|(origin, name)| *origin == tool.origin && *name == tool.name)
    }

    /// Build the run catalog from the run's effective tools (after the host's
    /// allow/deny policy).
    ///
    /// Control tools are dropped; direct-only tools go to
    /// [`Catalog::direct_only`]; the rest is sorted (class, then owner, then
    /// name; stable, so for two descriptors with the same origin and name the
    /// one given first wins) and de-duplicated by id, first wins, each
    /// dropped id reported by [`Catalog::duplicates`] and a debug event.
    pub fn build(&self, tools: impl IntoIterator<Item = ToolDescriptor>) -> Catalog {
        // Every string of a tool is read in ONE pass, in input order, while
        // it is hot: the catalog order visits the tools at random, and with
        // 10,000 tools their strings do not fit in cache. That pass writes
        // the ids one after the other into `ids`, small enough to stay in
        // cache; the ordered pass then only moves the descriptors and copies
        // ids and owners out of `ids`, so that the entries' strings are
        // allocated in catalog order (which searches scan).
        // Collected in place when `tools` is a `Vec` (no second buffer).
        let mut candidates: Vec<Option<ToolDescriptor>> = tools.into_iter().map(Some).collect();
        let mut by_id = ExactIndex::with_capacity(candidates.len());
        let mut by_name = ExactIndex::with_capacity(candidates.len());
        let mut sort_keys = Vec::with_capacity(candidates.len());
        let mut prepared = Vec::with_capacity(candidates.len());
        let mut ids = String::with_capacity(candidates.len() * TYPICAL_ID_BYTES);
        let mut direct_only = Vec::new();
        let mut excluded_controls = Vec::new();
        for (position, slot) in candidates.iter_mut().enumerate() {
            let Some(tool) = slot.as_ref() else {
                prepared.push(Prepared::default());
                continue;
            };
            if self.is_control(tool) {
                excluded_controls.push(catalog_id(&self.host_source, &tool.origin, &tool.name));
                *slot = None;
                prepared.push(Prepared::default());
            } else if tool.direct_only {
                direct_only.extend(slot.take());
                prepared.push(Prepared::default());
            } else {
                sort_keys.push(SortKey::new(tool, position));
                let id_start = ids.len();
                push_catalog_id(&mut ids, &self.host_source, &tool.origin, &tool.name);
                let id = ids.get(id_start..).unwrap_or_default();
                let owner_start = id_start + self.host_source.label(tool.origin.source()).len() + 1;
                prepared.push(Prepared {
                    id_start,
                    id_end: ids.len(),
                    owner_start,
                    owner_end: owner_start + tool.origin.owner().len(),
                    id_hash: by_id.hash(id),
                    name_hash: by_name.hash(&tool.name),
                    safe_name: is_safe_convenience_name(&tool.name),
                });
            }
        }
        direct_only.sort_by(catalog_order);
        excluded_controls.sort();
        if !excluded_controls.is_empty() {
            tracing::debug!(target: TRACING_TARGET, ids = ?excluded_controls, "control tools not catalogued");
        }

        let count = sort_keys.len();
        let order = catalog_positions(sort_keys, &candidates);
        let sorted = order.into_iter().filter_map(|position| {
            let tool = candidates.get_mut(position)?.take()?;
            Some((tool, prepared.get(position).copied()?))
        });

        // First wins: an id already held by an earlier entry (in catalog
        // order) is dropped and reported.
        let mut entries: Vec<CatalogEntry> = Vec::with_capacity(count);
        let mut shared_name = Vec::with_capacity(count);
        let mut safe_names = Vec::new();
        let mut duplicates = Vec::new();
        let mut source_counts = SourceCounts::default();
        for (tool, prepared) in sorted {
            let id = ids
                .get(prepared.id_start..prepared.id_end)
                .unwrap_or_default()
                .to_owned();
            let id_of = |position: usize| entries.get(position).map(|entry| entry.id.as_str());
            if by_id
                .insert_hashed(prepared.id_hash, &id, entries.len(), id_of)
                .is_err()
            {
                tracing::debug!(target: TRACING_TARGET, id = %id, "duplicate catalog id dropped (first wins)");
                duplicates.push(id);
                continue;
            }
            let position = entries.len();
            let entry = CatalogEntry {
                id,
                source: tool.origin.source(),
                source_name: tool
                    .origin
                    .source_name()
                    .is_some()
                    .then(|| ids.get(prepared.owner_start..prepared.owner_end))
                    .flatten()
                    .map(str::to_owned),
                name: tool.name,
                label: tool.label,
                description: tool.description,
                parameters: tool.parameters,
                read_only: tool.read_only,
                origin: tool.origin,
            };
            source_counts.count(entry.source);
            shared_name.push(false);
            if entry.is_guest_visible() {
                let name_of =
                    |position: usize| entries.get(position).map(|entry| entry.name.as_str());
                match by_name.insert_hashed(prepared.name_hash, &entry.name, position, name_of) {
                    Err(first) => {
                        for flag in [first, position] {
                            if let Some(flag) = shared_name.get_mut(flag) {
                                *flag = true;
                            }
                        }
                    }
                    Ok(()) if prepared.safe_name => safe_names.push(position),
                    Ok(()) => {}
                }
            }
            entries.push(entry);
        }
        // A name seen again later is shared: drop it from the safe names.
        let convenience = safe_names
            .into_iter()
            .filter(|&position| !shared_name.get(position).copied().unwrap_or(true))
            .collect();

        Catalog {
            entries,
            host_source: self.host_source.clone(),
            index: OnceLock::new(),
            by_id,
            by_name,
            shared_name,
            convenience,
            duplicates,
            direct_only,
            excluded_controls,
            source_counts,
        }
    }
}

/// What [`CatalogBuilder::build`] derives from a catalogued tool's strings
/// in its input-order pass.
#[derive(Debug, Clone, Copy, Default)]
struct Prepared {
    /// The catalog id `<source>:<owner>:<name>` is `ids[id_start..id_end]`
    /// in the build's buffer of ids.
    id_start: usize,
    /// See `id_start`.
    id_end: usize,
    /// The owner (the entry's `sourceName` unless core) is
    /// `ids[owner_start..owner_end]`.
    owner_start: usize,
    /// See `owner_start`.
    owner_end: usize,
    /// [`ExactIndex::hash`] of the id.
    id_hash: u64,
    /// [`ExactIndex::hash`] of the name.
    name_hash: u64,
    /// [`is_safe_convenience_name`] of the name.
    safe_name: bool,
}

/// Bytes reserved per tool for the build's buffer of ids (it grows when
/// ids are longer).
const TYPICAL_ID_BYTES: usize = 32;

/// The run-scoped tool catalog: every effective tool of one agent run, under an exact id.
///
/// Holds every catalogued tool, MCP ones included, in catalog order: core,
/// bundled plugins, external plugins, MCP, client; within a class by owner
/// then name (byte order), so equivalent tool sets give identical ids and
/// order whatever the input order. The guest views ([`Catalog::guest_entries`],
/// [`Catalog::all_tools_json`], [`Catalog::lookup`], [`Catalog::search`])
/// leave MCP entries out; [`Catalog::get`] sees everything.
///
/// ```
/// use codemode_catalog::{Catalog, SearchLimits, ToolDescriptor, ToolOrigin};
///
/// let tool = |origin: ToolOrigin, name: &str, description: &str| ToolDescriptor {
///     origin, name: name.into(), label: None, description: description.into(),
///     parameters: None, direct_only: false, read_only: false,
/// };
/// let catalog = Catalog::build([
///     tool(ToolOrigin::Client("app".into()), "select_file", "Let the user pick a file"),
///     tool(ToolOrigin::Mcp("github".into()), "create_issue", "Open a GitHub issue"),
///     tool(ToolOrigin::Core, "read", "Read a local file"),
/// ]);
/// let ids: Vec<&str> = catalog.entries().iter().map(|e| e.id.as_str()).collect();
/// assert_eq!(ids, ["openclaw:core:read", "mcp:github:create_issue", "client:app:select_file"]);
///
/// // Guest views omit MCP.
/// assert_eq!(catalog.guest_entries().count(), 2);
/// assert!(catalog.lookup("mcp:github:create_issue").is_err());
/// assert!(catalog.get("mcp:github:create_issue").is_some());
///
/// let hits = catalog.search("file", None, SearchLimits::default()).unwrap();
/// assert_eq!(hits[0].id, "client:app:select_file");
/// ```
#[derive(Debug, Clone, Default)]
pub struct Catalog {
    entries: Vec<CatalogEntry>,
    /// The first id segment of the host's own tools.
    host_source: HostSource,
    /// The search index, built by the first search: a run that never
    /// searches (most runs) does not pay for lower-casing every entry's
    /// text, and the build stays within its budget.
    index: OnceLock<SearchIndex>,
    /// Entry position by id.
    by_id: ExactIndex,
    /// First guest-visible entry position by name.
    by_name: ExactIndex,
    /// Per entry: another guest-visible entry has the same name.
    shared_name: Vec<bool>,
    /// Positions of the entries that get a convenience function.
    convenience: Vec<usize>,
    duplicates: Vec<String>,
    direct_only: Vec<ToolDescriptor>,
    excluded_controls: Vec<String>,
    source_counts: SourceCounts,
}

impl Catalog {
    /// Build a catalog with the default control-tool exclusions; see
    /// [`CatalogBuilder`] for what is excluded and how to exclude more.
    pub fn build(tools: impl IntoIterator<Item = ToolDescriptor>) -> Self {
        CatalogBuilder::new().build(tools)
    }

    /// A builder, to name more control tools to exclude.
    pub fn builder() -> CatalogBuilder {
        CatalogBuilder::new()
    }

    /// The first id segment of the host's own tools (`openclaw` unless the builder set one).
    pub fn host_source(&self) -> &HostSource {
        &self.host_source
    }

    /// Every entry, MCP included, in catalog order.
    pub fn entries(&self) -> &[CatalogEntry] {
        &self.entries
    }

    /// The guest-visible entries (no MCP), in catalog order.
    pub fn guest_entries(&self) -> impl Iterator<Item = &CatalogEntry> {
        self.entries.iter().filter(|entry| entry.is_guest_visible())
    }

    /// `ALL_TOOLS`: the compact JSON of every guest-visible entry, in order.
    pub fn all_tools_json(&self) -> Value {
        Value::Array(
            self.guest_entries()
                .map(CatalogEntry::compact_json)
                .collect(),
        )
    }

    /// The entry with exactly this id, whatever its source (MCP included):
    /// the host-side path used by `MCP.*` bindings and namespaces.
    pub fn get(&self, id: &str) -> Option<&CatalogEntry> {
        let position = self.by_id.find(id, |position| {
            self.entries.get(position).map(|entry| entry.id.as_str())
        })?;
        self.entries.get(position)
    }

    /// The guest's lookup (`tools.describe`, `tools.call`): a guest-visible
    /// entry by exact id, else by exact name.
    ///
    /// A miss (including an MCP id, a denied tool or a guessed id) is
    /// [`CatalogError::UnknownTool`], displayed `Unknown tool id: <x>`. A name
    /// shared by several guest-visible entries is
    /// [`CatalogError::AmbiguousName`] listing their ids, rather than a
    /// silent pick of one of them.
    ///
    /// ```
    /// use codemode_catalog::{Catalog, ToolDescriptor, ToolOrigin};
    ///
    /// let tool = |origin: ToolOrigin, name: &str| ToolDescriptor {
    ///     origin, name: name.into(), label: None, description: String::new(),
    ///     parameters: None, direct_only: false, read_only: false,
    /// };
    /// let catalog = Catalog::build([
    ///     tool(ToolOrigin::Core, "message"),
    ///     tool(ToolOrigin::BundledPlugin("a".into()), "fetch"),
    ///     tool(ToolOrigin::ExternalPlugin("b".into()), "fetch"),
    /// ]);
    /// assert_eq!(catalog.lookup("message").unwrap().id, "openclaw:core:message");
    /// assert_eq!(catalog.lookup("openclaw:b:fetch").unwrap().name, "fetch");
    /// assert_eq!(
    ///     catalog.lookup("openclaw:core:nope").unwrap_err().to_string(),
    ///     "Unknown tool id: openclaw:core:nope"
    /// );
    /// assert!(catalog.lookup("fetch").is_err());
    /// ```
    pub fn lookup(&self, id_or_name: &str) -> Result<&CatalogEntry, CatalogError> {
        if let Some(entry) = self
            .get(id_or_name)
            .filter(|entry| entry.is_guest_visible())
        {
            return Ok(entry);
        }
        let name_of = |position: usize| self.entries.get(position).map(|e| e.name.as_str());
        let Some(first) = self.by_name.find(id_or_name, name_of) else {
            return Err(CatalogError::UnknownTool(id_or_name.to_owned()));
        };
        if self.shared_name.get(first).copied().unwrap_or(false) {
            return Err(CatalogError::AmbiguousName {
                name: id_or_name.to_owned(),
                candidates: self
                    .guest_entries()
                    .filter(|entry| entry.name == id_or_name)
                    .map(|entry| entry.id.clone())
                    .collect(),
            });
        }
        self.entries
            .get(first)
            .ok_or_else(|| CatalogError::UnknownTool(id_or_name.to_owned()))
    }

    /// `tools.search(query, {limit})` over the guest view (no MCP entries), best match first.
    ///
    /// The query is lower-cased and split on `[^a-z0-9_./:-]+`. Per term an
    /// entry scores +20 when the term is its whole name or id, +8 when its
    /// name contains the term, +6 for the id, +4 for the label, +2 for the
    /// description (all lower-cased; the points add up). A query with no
    /// terms (empty, or only separators) scores every entry 1. Entries
    /// scoring 0 are dropped; the rest are sorted by score descending, then
    /// id ascending (byte order), and cut to the limit of
    /// [`SearchLimits::resolve`].
    ///
    /// The first search of a catalog also builds its search index (the
    /// lower-cased text of every guest-visible entry), which the build
    /// leaves out: a few milliseconds for 10,000 tools, paid once.
    ///
    /// ```
    /// use codemode_catalog::{Catalog, SearchLimits, ToolDescriptor, ToolOrigin};
    /// use serde_json::json;
    ///
    /// let tool = |name: &str, description: &str| ToolDescriptor {
    ///     origin: ToolOrigin::Core, name: name.into(), label: None,
    ///     description: description.into(), parameters: None,
    ///     direct_only: false, read_only: true,
    /// };
    /// let catalog = Catalog::build([
    ///     tool("web_search", "Search the web"),
    ///     tool("web_fetch", "Fetch a URL"),
    ///     tool("read", "Read a file"),
    /// ]);
    /// let found = catalog.search("web search", Some(&json!(1)), SearchLimits::default()).unwrap();
    /// assert_eq!(found.len(), 1);
    /// assert_eq!(found[0].name, "web_search");
    /// let err = catalog.search("web", Some(&json!(-1)), SearchLimits::default()).unwrap_err();
    /// assert_eq!(err.to_string(), "limit must be a positive integer.");
    /// ```
    pub fn search(
        &self,
        query: &str,
        limit: Option<&Value>,
        limits: SearchLimits,
    ) -> Result<Vec<&CatalogEntry>, CatalogError> {
        Ok(self
            .search_hits(query, limit, limits)?
            .into_iter()
            .map(|hit| hit.entry)
            .collect())
    }

    /// [`Catalog::search`] with each result's score.
    pub fn search_hits(
        &self,
        query: &str,
        limit: Option<&Value>,
        limits: SearchLimits,
    ) -> Result<Vec<SearchHit<'_>>, CatalogError> {
        let limit = limits.resolve(limit)?;
        let lowered = query.to_lowercase();
        let terms = query_terms(&lowered);
        if terms.len() > limits.max_query_terms() {
            return Err(CatalogError::TooManyQueryTerms {
                terms: terms.len(),
                max: limits.max_query_terms(),
            });
        }
        let mut hits: Vec<SearchHit<'_>> = self
            .search_index()
            .scores(&terms)
            .into_iter()
            .filter_map(|(position, score)| {
                let entry = self.entries.get(position)?;
                Some(SearchHit { entry, score })
            })
            .collect();
        let ranking = |a: &SearchHit<'_>, b: &SearchHit<'_>| {
            b.score
                .cmp(&a.score)
                .then_with(|| a.entry.id.cmp(&b.entry.id))
        };
        if hits.len() > limit {
            // Partition the best `limit` hits to the front, then sort only those.
            hits.select_nth_unstable_by(limit, ranking);
            hits.truncate(limit);
        }
        hits.sort_unstable_by(ranking);
        Ok(hits)
    }

    /// `(name, id)` of every convenience function `tools.<name>(input)` to
    /// install, in catalog order.
    ///
    /// A guest-visible entry gets one when its name matches
    /// `^[A-Za-z_$][A-Za-z0-9_$]*$`, no other guest-visible entry has the
    /// same name, and the name is not in [`RESERVED_CONVENIENCE_NAMES`].
    ///
    /// ```
    /// use codemode_catalog::{Catalog, ToolDescriptor, ToolOrigin};
    ///
    /// let tool = |origin: ToolOrigin, name: &str| ToolDescriptor {
    ///     origin, name: name.into(), label: None, description: String::new(),
    ///     parameters: None, direct_only: false, read_only: false,
    /// };
    /// let catalog = Catalog::build([
    ///     tool(ToolOrigin::Core, "web_search"),
    ///     tool(ToolOrigin::Core, "get-sum"),    // not an identifier
    ///     tool(ToolOrigin::Core, "search"),     // would shadow tools.search
    ///     tool(ToolOrigin::BundledPlugin("a".into()), "fetch"),
    ///     tool(ToolOrigin::Client("app".into()), "fetch"), // ambiguous
    /// ]);
    /// let names: Vec<(&str, &str)> = catalog.convenience_names().collect();
    /// assert_eq!(names, [("web_search", "openclaw:core:web_search")]);
    /// ```
    pub fn convenience_names(&self) -> impl ExactSizeIterator<Item = (&str, &str)> {
        self.convenience.iter().map(|&position| {
            self.entries
                .get(position)
                .map_or(("", ""), |entry| (entry.name.as_str(), entry.id.as_str()))
        })
    }

    /// The search index, built on first use.
    fn search_index(&self) -> &SearchIndex {
        self.index.get_or_init(|| SearchIndex::build(&self.entries))
    }

    /// Entry counts per source, MCP included, for telemetry.
    pub fn source_counts(&self) -> SourceCounts {
        self.source_counts
    }

    /// Ids dropped because an earlier entry (in catalog order) had the same
    /// id; one item per dropped descriptor.
    pub fn duplicates(&self) -> &[String] {
        &self.duplicates
    }

    /// The direct-only tools, which stay visible to the model and are never
    /// catalogued, in catalog order (not de-duplicated).
    ///
    /// Handed back as given, whatever their names: one named like a code-mode
    /// control tool (`exec`, or a `wait` that is not core's) is here too, and
    /// `codemode-core` refuses to activate with it rather than show the model
    /// two tools of one name. A core `wait` is a control tool and never here.
    pub fn direct_only(&self) -> &[ToolDescriptor] {
        &self.direct_only
    }

    /// Ids (`<source>:<owner>:<name>`) of the control tools that were left
    /// out, sorted.
    pub fn excluded_controls(&self) -> &[String] {
        &self.excluded_controls
    }

    /// Number of entries, MCP included.
    pub fn len(&self) -> usize {
        self.entries.len()
    }

    /// Whether the catalog has no entries at all.
    pub fn is_empty(&self) -> bool {
        self.entries.is_empty()
    }
}

/// `<source>:<owner>:<name>`, the host's own tools under `host`.
pub(crate) fn catalog_id(host: &HostSource, origin: &ToolOrigin, name: &str) -> String {
    let source = host.label(origin.source());
    let owner = origin.owner();
    let mut id = String::with_capacity(source.len() + owner.len() + name.len() + 2);
    push_catalog_id(&mut id, host, origin, name);
    id
}

/// Append `<source>:<owner>:<name>` to `buffer`, the host's own tools under `host`.
fn push_catalog_id(buffer: &mut String, host: &HostSource, origin: &ToolOrigin, name: &str) {
    buffer.push_str(host.label(origin.source()));
    buffer.push(':');
    buffer.push_str(origin.owner());
    buffer.push(':');
    buffer.push_str(name);
}

/// Positions of `candidates` in catalog order: class, owner, name (byte
/// order), then input position, so that among equal keys the first given
/// comes first.
///
/// Sorting 10,000 string pairs through pointers is the slowest step of a
/// build, so the sort runs on flat integer keys (48 bytes each): the class
/// and owner in one [`PrefixKey`], the name in another. Those keys order
/// strings consistently with their full comparison and tell short strings
/// apart exactly; only runs that hold a longer string under one prefix are
/// then re-sorted by the full strings.
fn catalog_positions(mut keys: Vec<SortKey>, candidates: &[Option<ToolDescriptor>]) -> Vec<usize> {
    keys.sort_unstable();
    let full_key = |position: usize| {
        candidates
            .get(position)
            .and_then(Option::as_ref)
            .map(|tool| (tool.origin.owner(), tool.name.as_str()))
    };
    // A run shares class and owner key and, when the owner key is exact,
    // the name key too: inside it the prefix order may be wrong only if a
    // key is inexact.
    let same_run =
        |a: &SortKey, b: &SortKey| a.owner == b.owner && (!a.owner.is_exact() || a.name == b.name);
    for run in keys.chunk_by_mut(same_run) {
        let inexact = run
            .first()
            .is_some_and(|first| !first.owner.is_exact() || !first.name.is_exact());
        if run.len() > 1 && inexact {
            run.sort_unstable_by(|a, b| {
                full_key(a.position)
                    .cmp(&full_key(b.position))
                    .then(a.position.cmp(&b.position))
            });
        }
    }
    keys.into_iter().map(|key| key.position).collect()
}

/// A candidate's place in the catalog order, as flat integers; see
/// [`catalog_positions`]. Field order is comparison order.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct SortKey {
    /// The origin's class rank, then its owner.
    owner: PrefixKey<1>,
    name: PrefixKey<0>,
    position: usize,
}

impl SortKey {
    fn new(tool: &ToolDescriptor, position: usize) -> Self {
        Self {
            owner: PrefixKey::new([class_rank(&tool.origin)], tool.origin.owner()),
            name: PrefixKey::new([], &tool.name),
            position,
        }
    }
}

/// `HEAD` tag bytes, then the first `15 - HEAD` bytes of a string
/// zero-padded, then its length capped at `16 - HEAD`, as one big-endian
/// integer.
///
/// For equal tags, `PrefixKey::new(t, a) < PrefixKey::new(t, b)` implies
/// `a < b`; equal keys mean equal strings when [`PrefixKey::is_exact`]
/// (length up to `15 - HEAD`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
struct PrefixKey<const HEAD: usize>(u128);

/// Bytes of a [`PrefixKey`]: tag, string prefix, capped length.
const PREFIX_KEY_BYTES: usize = 16;

impl<const HEAD: usize> PrefixKey<HEAD> {
    /// Bytes of the string kept in the key.
    const PREFIX: usize = PREFIX_KEY_BYTES - 1 - HEAD;

    fn new(head: [u8; HEAD], text: &str) -> Self {
        let mut bytes = [0u8; PREFIX_KEY_BYTES];
        let (tag, rest) = bytes.split_at_mut(HEAD);
        tag.copy_from_slice(&head);
        let (prefix, len) = rest.split_at_mut(Self::PREFIX);
        for (slot, byte) in prefix.iter_mut().zip(text.bytes()) {
            *slot = byte;
        }
        for slot in len {
            *slot = u8::try_from(text.len().min(Self::PREFIX + 1)).unwrap_or(u8::MAX);
        }
        Self(u128::from_be_bytes(bytes))
    }

    /// The capped length of the string.
    fn capped_len(self) -> usize {
        usize::try_from(self.0 & 0xFF).unwrap_or(usize::MAX)
    }

    fn is_exact(self) -> bool {
        self.capped_len() <= Self::PREFIX
    }
}

fn catalog_order(a: &ToolDescriptor, b: &ToolDescriptor) -> std::cmp::Ordering {
    class_rank(&a.origin)
        .cmp(&class_rank(&b.origin))
        .then_with(|| a.origin.owner().cmp(b.origin.owner()))
        .then_with(|| a.name.cmp(&b.name))
}

/// Rank of an origin's class in the catalog order: core, bundled plugins, external plugins,
/// MCP, client.
fn class_rank(origin: &ToolOrigin) -> u8 {
    match origin {
        ToolOrigin::Core => 0,
        ToolOrigin::BundledPlugin(_) => 1,
        ToolOrigin::ExternalPlugin(_) => 2,
        ToolOrigin::Mcp(_) => 3,
        ToolOrigin::Client(_) => 4,
    }
}

/// `^[A-Za-z_$][A-Za-z0-9_$]*$` and not reserved.
fn is_safe_convenience_name(name: &str) -> bool {
    let word = |byte: u8| byte.is_ascii_alphanumeric() || byte == b'_' || byte == b'$';
    match name.as_bytes().split_first() {
        Some((first, rest)) => {
            word(*first)
                && !first.is_ascii_digit()
                && rest.iter().all(|&byte| word(byte))
                && !RESERVED_CONVENIENCE_NAMES.contains(&name)
        }
        None => false,
    }
}
