//! The glue to `codemode-mcp` (feature `mcp`): an activation request filled from an
//! [`McpHub`], and [`WithMcp`], the executor that sends MCP ids to the hub and every other id
//! to the host's own executor, stopping a call when its run is cancelled.
//!
//! Core depends on the hub, not the other way round: `codemode-mcp` sits below core (no lower
//! crate depends on `codemode-core`) and its API has no rmcp type, so this module knows no
//! more of MCP than a `serde_json::Value` and a server name.

use async_trait::async_trait;
use codemode_mcp::McpHub;
use serde_json::Value;

use crate::activation::{ActivationRequest, McpServerCapabilities};
use codemode_host::{ToolCallContext, ToolError, ToolExecutor};

/// What a guest sees when its run is cancelled while an MCP call is in flight.
const CANCELLED: &str = "the MCP call was cancelled with its code mode run.";

impl ActivationRequest {
    /// Adds the hub's MCP tools (`mcp:<server>:<tool>`) to the request and, for each server,
    /// its resource and prompt capabilities ([`ActivationRequest::mcp_capabilities`]), as the
    /// hub knows them now: a server's `tools/list_changed` shows in the next activation. Do
    /// not add `hub.descriptors()` yourself as well.
    ///
    /// ```
    /// use codemode_core::prelude::*;
    /// let hub = McpHub::default(); // no servers: nothing is added
    /// let request = ActivationRequest::new(vec![ToolDescriptor::new(ToolOrigin::Core, "read", "Read")])
    ///     .with_mcp(&hub);
    /// assert_eq!(request.tools.len(), 1);
    /// assert!(request.mcp_capabilities.is_empty());
    /// ```
    pub fn with_mcp(mut self, hub: &McpHub) -> Self {
        self.tools.extend(hub.descriptors());
        for server in hub.servers() {
            self.mcp_capabilities.insert(
                server.name,
                McpServerCapabilities {
                    resources: server.has_resources,
                    prompts: server.has_prompts,
                },
            );
        }
        self
    }
}

/// A [`ToolExecutor`] for a host with MCP servers: ids of the hub's kind (`mcp:<server>:<tool>`,
/// `mcp-capability:<server>:<method>`, see [`McpHub::owns`]) go to the hub, every other id to
/// the host's executor `E`. An MCP call ends early with a catchable guest error when the
/// run's [`ToolCallContext::cancellation`] fires (the run was cancelled, dropped or expired);
/// the hub's errors reach the guest as the hub words them (server and reason, never stderr
/// or paths).
///
/// ```
/// # use std::sync::Arc;
/// use codemode_core::prelude::*;
/// struct MyTools;
/// #[async_trait]
/// impl ToolExecutor for MyTools {
///     async fn execute(&self, id: &str, input: serde_json::Value, _cx: ToolCallContext)
///         -> Result<serde_json::Value, ToolError> {
///         match id {
///             "openclaw:core:echo" => Ok(input),
///             other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
///         }
///     }
/// }
/// let hub = McpHub::default();
/// let executor = Arc::new(WithMcp::new(hub.clone(), MyTools));
/// let code_mode = CodeMode::builder(CodeModeConfig::enabled().build()?, executor).build();
/// # Ok::<(), ConfigError>(())
/// ```
#[derive(Debug)]
pub struct WithMcp<E> {
    hub: McpHub,
    host: E,
}

impl<E: ToolExecutor> WithMcp<E> {
    /// The hub first, then `host`.
    pub fn new(hub: McpHub, host: E) -> Self {
        WithMcp { hub, host }
    }

    /// The hub (cheap to clone; shut it down with [`McpHub::shutdown`] when the host stops).
    pub fn hub(&self) -> &McpHub {
        &self.hub
    }

    /// The host's own executor.
    pub fn host(&self) -> &E {
        &self.host
    }
}

#[async_trait]
impl<E: ToolExecutor> ToolExecutor for WithMcp<E> {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        if !self.hub.owns(catalog_id) {
            return self.host.execute(catalog_id, input, context).await;
        }
        let call = self.hub.execute(catalog_id, input);
        tokio::select! {
            result = call => match result {
                Some(result) => result.map_err(ToolError::new),
                None => Err(ToolError::new(format!("Unknown tool id: {catalog_id}"))),
            },
            () = context.cancellation.cancelled() => Err(ToolError::new(CANCELLED)),
        }
    }
}
