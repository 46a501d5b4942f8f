//! The seam between code mode and the host that embeds it: what a host implements
//! ([`ToolExecutor`] runs nested calls, [`EventSink`] observes them) and what it hands over
//! ([`ToolDescriptor`]s, one per effective tool, and the [`AgentRunContext`] of a run), with the
//! small types those carry. A crate that only provides tools depends on this crate alone.
//!
//! It must not know the rest of code mode: no engine (QuickJS lives in `codemode-sandbox`), no
//! catalog ids, ordering or search (`codemode-catalog`), no MCP protocol (`codemode-mcp`), no
//! journal, and no async runtime: a [`ToolCallContext`] carries tokio-util's
//! [`CancellationToken`], which needs none, and the traits are `async_trait` traits any
//! executor can drive. Its dependencies are serde, serde_json, async-trait and tokio-util, and a
//! tidy test keeps them to those four.
//!
//! Everything here is the API a host implements against, so it changes only with semver:
//! `codemode-core` and `codemode-catalog` re-export these items at their old paths, and
//! `codemode_core::host` is this crate. The three third-party names a tool crate needs are
//! re-exported on purpose: the [`async_trait`](macro@async_trait) attribute,
//! [`CancellationToken`] and [`serde_json`] (the values crossing the seam are its `Value`s).
//!
//! Feature flags: none.
//!
//! ```
//! use codemode_host::serde_json::{Value, json};
//! use codemode_host::{ToolCallContext, ToolError, ToolExecutor, async_trait};
//!
//! /// Adds the two numbers of its input.
//! struct Adder;
//!
//! #[async_trait]
//! impl ToolExecutor for Adder {
//!     async fn execute(
//!         &self,
//!         id: &str,
//!         input: Value,
//!         _cx: ToolCallContext,
//!     ) -> Result<Value, ToolError> {
//!         match id {
//!             "myagent:core:add" => {
//!                 let (Some(a), Some(b)) = (input["a"].as_i64(), input["b"].as_i64()) else {
//!                     return Err(ToolError::new("add takes two integers, a and b"));
//!                 };
//!                 Ok(json!({ "sum": a + b }))
//!             }
//!             other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
//!         }
//!     }
//! }
//! ```
#![forbid(unsafe_code)]

mod context;
mod descriptor;
mod events;
mod executor;

pub use async_trait::async_trait;
pub use context::{AgentRunContext, MAX_UPDATE_BYTES, ToolCallContext, UpdateError, UpdateSink};
pub use descriptor::{CORE_OWNER, Source, ToolDescriptor, ToolOrigin};
pub use events::{EventSink, NestedCallEvent, NestedCallOutcome, NoEvents};
pub use executor::{ToolError, ToolExecutor};
pub use serde_json;
pub use tokio_util::sync::CancellationToken;
