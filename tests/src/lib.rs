//! Workspace-level end-to-end tests (SPEC §13): a test gateway with a scripted model, core,
//! plugin, client and direct-only tools, and REAL MCP servers over stdio
//! (`@modelcontextprotocol/server-everything`, `@modelcontextprotocol/server-filesystem` and the
//! repository's own rmcp test server). `cargo xtask e2e` runs [`plan::run_plan`] step by step;
//! `cargo test -p codemode-tests` runs it too.
#![forbid(unsafe_code)]

pub mod gateway;
pub mod plan;
