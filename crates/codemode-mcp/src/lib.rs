//! The MCP client adapter of code mode: it starts MCP servers as child
//! processes speaking MCP over stdio, lists their tools (every page),
//! resources and prompts, turns their tools into catalog
//! [`ToolDescriptor`](codemode_catalog::ToolDescriptor)s (`mcp:<server>:<tool>`,
//! `read_only` from the `readOnlyHint` annotation), and executes tool calls,
//! resource reads and prompt gets for the host's tool executor. Start
//! failures, crashes mid-call, timeouts and malformed responses become an
//! [`McpError`] naming the server; the other servers keep working. A server
//! that exited is restarted on its next use, with a backoff between repeated
//! restarts ([`HubOptions::restart_backoff`]); a server's
//! `notifications/tools/list_changed` makes the hub list its tools again
//! ([`McpHub::changes`] counts both). Its
//! `Display` is for the host and keeps every detail (the server's last stderr
//! lines, its command); what reaches guest code through [`McpHub::execute`]
//! is [`McpError::guest_message`]: the server's name and a short reason,
//! never stderr, host paths or rmcp's words (those go to the `codemode`
//! tracing target).
//!
//! This is the only crate of the workspace that knows rmcp; no rmcp type
//! appears in its API (results cross as `serde_json::Value`). It knows
//! nothing about the sandbox, the guest API, TypeScript declarations or how
//! the core dispatches calls: it only talks to servers. Everything a server
//! sends is untrusted and bounded (see the `MAX_*` and `DEFAULT_*` constants).
//!
//! Feature flags:
//! - `test-server` (default): builds the `codemode-mcp-test-server` binary,
//!   an rmcp stdio server for this crate's tests and the e2e plan. The
//!   library contains no server code; dependents turn the feature off
//!   (`default-features = false`) so they do not compile rmcp's server side.
//!
//! Runs on Tokio (process, time and io drivers).
#![forbid(unsafe_code)]

mod config;
mod error;
mod hub;
mod listing;
mod stderr;

pub use config::{
    DEFAULT_CALL_TIMEOUT, DEFAULT_MAX_LIST_PAGES, DEFAULT_MAX_RESTART_BACKOFF,
    DEFAULT_MAX_TOOLS_PER_SERVER, DEFAULT_RESTART_BACKOFF, DEFAULT_SHUTDOWN_TIMEOUT,
    DEFAULT_START_TIMEOUT, HubOptions, MAX_DESCRIPTION_BYTES, MAX_SCHEMA_DEPTH,
    MAX_TOOL_NAME_BYTES, McpServerConfig,
};
pub use error::McpError;
pub use hub::McpHub;
pub use listing::{ServerInfo, ToolInfo};
