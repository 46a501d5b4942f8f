//! MCP tool metadata -> what code-mode guest code sees of MCP: the `MCP.<server>.<tool>`
//! binding table, call preparation (one object argument, schema `default`s, required keys), the
//! `MCP.<server>.$api()` responses, and the read-only virtual declaration files behind
//! `API.list` / `API.read` (`mcp/index.d.ts`, `mcp/<server>.d.ts`).
//!
//! Plain data in, plain data out. This crate knows nothing about QuickJS, rmcp, MCP transports,
//! the catalog or the executor: the core hands it [`McpServer`]s and installs what it returns.
//! It does no I/O; the files are never written to disk. Identifiers avoid the workspace's one
//! list of JavaScript reserved words and code-mode globals (`codemode-guest-names`). No feature
//! flags.
//!
//! Property order: a declaration lists an object's required properties first, in the order of
//! the schema's `required` array, then its optional properties sorted by name. The author's order
//! of `properties` is not kept: schemas arrive as `serde_json::Value`, already parsed, and this
//! workspace does not turn on serde_json's `preserve_order` (feature unification would make every
//! JSON object of the process an `IndexMap`, about 80 bytes per value, and guests send huge
//! objects). The output is the same whichever crate parsed the schema, and deterministic.
//!
//! ```
//! use codemode_mcp_decls::{McpDecls, McpServer, McpTool};
//! use serde_json::json;
//!
//! let github = McpServer {
//!     name: "github".into(),
//!     tools: vec![McpTool {
//!         name: "create_issue".into(),
//!         catalog_id: "mcp:github:create_issue".into(),
//!         description: "Create a GitHub issue.".into(),
//!         input_schema: json!({"type": "object",
//!             "properties": {"owner": {"type": "string"}, "title": {"type": "string"}},
//!             "required": ["owner", "title"]}).into(),
//!         output_schema: None,
//!     }],
//!     has_resources: false,
//!     has_prompts: false,
//! };
//! let decls = McpDecls::generate(&[github]);
//! let tool = decls.binding("github", "createIssue").expect("bound");
//! assert_eq!(tool.catalog_id, "mcp:github:create_issue");
//! assert!(decls.read("mcp/github.d.ts")?.contains("function createIssue(input: {"));
//! # Ok::<(), codemode_mcp_decls::DeclError>(())
//! ```
#![forbid(unsafe_code)]

mod cache;
mod decls;
mod error;
mod files;
mod ident;
mod jsdoc;
mod limits;
mod schema;

pub use cache::{DeclCache, DeclKey};
pub use decls::{McpDecls, ServerBinding, ToolBinding};
pub use error::DeclError;
pub use files::{FileInfo, VirtualFile};
pub use limits::{
    DEFAULT_MAX_DOC_CHARS, DEFAULT_MAX_IDENT_CHARS, DEFAULT_MAX_INDEX_TOOL_NAMES,
    DEFAULT_MAX_LITERAL_CHARS, DEFAULT_MAX_OBJECT_PROPERTIES, DEFAULT_MAX_PARAM_DOC_CHARS,
    DEFAULT_MAX_SCHEMA_DEPTH, DEFAULT_MAX_TYPE_NODES, DEFAULT_MAX_UNION_MEMBERS, DeclLimits,
};

use std::sync::Arc;

use serde::{Deserialize, Serialize};

/// One MCP server visible to a run, as the catalog knows it.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpServer {
    /// The server's configured name (`github`, `chrome-devtools`); its identifier is derived.
    pub name: String,
    /// The server's tools that are in the run's catalog, in the server's order.
    pub tools: Vec<McpTool>,
    /// The server offers resources: `MCP.<server>.resources.list/read` are declared.
    pub has_resources: bool,
    /// The server offers prompts: `MCP.<server>.prompts.list/get` are declared.
    pub has_prompts: bool,
}

/// One MCP tool, as listed by the server's `tools/list` and registered in the catalog.
#[derive(Debug, Clone, PartialEq, Default, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct McpTool {
    /// The tool's MCP name (`create_issue`); its identifier is derived.
    pub name: String,
    /// The exact catalog id every call resolves to (`mcp:<server>:<tool>`).
    pub catalog_id: String,
    /// The tool's description (may be empty, long, or hostile).
    pub description: String,
    /// The tool's JSON Schema for its arguments (`inputSchema`); any JSON value is accepted.
    /// Shared, not copied: generation keeps a reference (for `$api` and call preparation), so
    /// per-exec generation costs no schema copies (rmcp hands out `Arc`ed schemas too).
    pub input_schema: Arc<serde_json::Value>,
    /// The tool's JSON Schema for `structuredContent` (`outputSchema`), if it declares one.
    pub output_schema: Option<Arc<serde_json::Value>>,
}
