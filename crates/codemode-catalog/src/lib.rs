//! Run-scoped tool catalog for code mode: the hidden tool list guest code searches and calls.
//!
//! One job: turn the run's effective tools ([`ToolDescriptor`]s of
//! `codemode-host`, after the host's allow/deny policy) into the hidden catalog the guest program
//! searches, describes and calls: exact ids `<source>:<owner>:<tool-name>`,
//! a deterministic order, first-wins de-duplication, the guest views without
//! MCP entries (`ALL_TOOLS`, `tools.search/describe/call`), safe convenience
//! names, search scoring and limits, and per-source counts for telemetry.
//! Control tools are left out and direct-only tools are handed back to stay
//! model-visible. It also owns the id shape of the one kind of nested call
//! that is not a catalog entry, MCP resources and prompts ([`McpCapability`]),
//! so that no id of that kind can ever equal a catalog id.
//!
//! It knows nothing about QuickJS, TypeScript, the MCP protocol, plugin
//! namespaces, async runtimes or how a tool is executed: it is plain data in,
//! plain data out, and calls nothing. Its only side effect is `tracing` debug
//! events (target `codemode::catalog`) naming dropped ids, never inputs.
//!
//! Feature flags: none.
//!
//! ```
//! use codemode_catalog::{Catalog, SearchLimits, ToolDescriptor, ToolOrigin};
//!
//! let tool = |origin: ToolOrigin, name: &str, description: &str| ToolDescriptor {
//!     origin, name: name.into(), label: None, description: description.into(),
//!     parameters: None, direct_only: false, read_only: false,
//! };
//! let catalog = Catalog::build([
//!     tool(ToolOrigin::Core, "message", "Send a message to a channel"),
//!     tool(ToolOrigin::BundledPlugin("browser".into()), "browser_request", "Load a web page"),
//!     tool(ToolOrigin::Core, "tool_search", "Tool search control (never catalogued)"),
//! ]);
//! assert_eq!(catalog.len(), 2);
//! let hits = catalog.search("web page", None, SearchLimits::default()).unwrap();
//! assert_eq!(hits[0].id, "openclaw:browser:browser_request");
//! assert_eq!(catalog.lookup("message").unwrap().id, "openclaw:core:message");
//! ```
#![forbid(unsafe_code)]

mod capability;
mod catalog;
mod entry;
mod error;
mod exact;
mod search;

pub use capability::{MCP_CAPABILITY_SOURCE, McpCapability};
pub use catalog::{
    Catalog, CatalogBuilder, RESERVED_CONVENIENCE_NAMES, SourceCounts, TOOL_SEARCH_CONTROL_NAMES,
};
// What the host hands over about its tools lives in `codemode-host`, the seam hosts implement;
// re-exported so that the catalog's API names it where it always did.
pub use codemode_host::{CORE_OWNER, Source, ToolDescriptor, ToolOrigin};
pub use entry::{CatalogEntry, DEFAULT_HOST_SOURCE, HostSource, MAX_HOST_SOURCE_BYTES};
pub use error::CatalogError;
pub use search::{
    DEFAULT_MAX_QUERY_TERMS, DEFAULT_MAX_SEARCH_LIMIT, DEFAULT_SEARCH_LIMIT,
    MAX_SEARCH_LIMIT_CEILING, SearchHit, SearchLimits,
};
