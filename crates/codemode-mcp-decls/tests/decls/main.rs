//! Integration tests of codemode-mcp-decls (one binary: fixtures, tables, hostile inputs,
//! properties).

mod cache;
mod calls;
mod fixtures;
mod hostile;
mod idents;
mod paths;
mod props;
mod snapshots;
mod ts;
