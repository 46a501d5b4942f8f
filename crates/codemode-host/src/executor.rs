//! The host's one path for nested calls: [`ToolExecutor`], and the [`ToolError`] it fails with.

use std::fmt;
use std::sync::Arc;

use async_trait::async_trait;
use serde_json::Value;

use crate::ToolCallContext;

/// A failed nested call. Its message reaches the guest as a plain catchable `Error`.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ToolError {
    /// Plain text for the guest: no host stack, no paths.
    pub message: String,
}

impl ToolError {
    /// A tool error with this message.
    pub fn new(message: impl Into<String>) -> Self {
        ToolError {
            message: message.into(),
        }
    }
}

impl fmt::Display for ToolError {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.message)
    }
}

impl std::error::Error for ToolError {}

/// The host's normal tool path. Policy, approvals and `before_tool_call` hooks live behind it;
/// an approval that takes hours is simply a call that has not finished yet (the run parks).
///
/// `catalog_id` is an exact catalog id (`openclaw:core:echo`, `mcp:github:create_issue`), or, for
/// the one kind of nested call that is not a catalog entry, MCP resources and prompts, a
/// capability id `mcp-capability:<server>:resources/list`, `…:resources/read` (`{ uri }`),
/// `…:prompts/list` or `…:prompts/get` (`{ name, arguments? }`); `codemode-catalog`'s
/// `McpCapability` parses them. The two shapes never overlap: an MCP tool named
/// `resources/list` arrives as `mcp:<server>:resources/list` and is a tool call. Capability
/// calls are offered only for the servers the host flagged when it activated code mode
/// (`ActivationRequest::mcp_capabilities` in `codemode-core`) that also have a visible tool,
/// count as read-only for `restartSafe`, and go through this executor like every other call, so
/// host policy sees them. Route on the id's kind and the exact id, never on a tool's name.
///
/// The returned value is what the guest sees: the `details` of a host tool, the full MCP result
/// (`{content, structuredContent?, isError?}`) of an MCP tool.
#[async_trait]
pub trait ToolExecutor: Send + Sync + 'static {
    /// Runs one nested call.
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError>;
}

/// A shared executor is an executor, so one can be kept by the host and also wrapped (in
/// `codemode-core`'s `WithMcp`, for example).
#[async_trait]
impl<T: ToolExecutor + ?Sized> ToolExecutor for Arc<T> {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        (**self).execute(catalog_id, input, context).await
    }
}
