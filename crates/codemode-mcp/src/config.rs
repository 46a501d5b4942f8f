//! How to start one MCP server, and the hub's limits.

use std::collections::BTreeMap;
use std::time::Duration;

use serde::{Deserialize, Serialize};

/// How to start one MCP server over child-process stdio: the value of one
/// entry of the `codemode` config file's `mcpServers` object.
///
/// ```
/// let config: codemode_mcp::McpServerConfig = serde_json::from_str(
///     r#"{ "command": "npx", "args": ["-y", "@modelcontextprotocol/server-everything"] }"#,
/// )?;
/// assert_eq!(config.command, "npx");
/// assert!(config.env.is_empty());
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase", deny_unknown_fields)]
pub struct McpServerConfig {
    /// The program to run (looked up on `PATH` when it has no slash).
    pub command: String,
    /// Its arguments.
    #[serde(default)]
    pub args: Vec<String>,
    /// Environment variables added to the hub's own environment for this server.
    #[serde(default)]
    pub env: BTreeMap<String, String>,
}

impl McpServerConfig {
    /// A config running `command` with no arguments and no extra environment.
    pub fn new(command: impl Into<String>) -> Self {
        Self {
            command: command.into(),
            args: Vec::new(),
            env: BTreeMap::new(),
        }
    }

    /// Adds arguments.
    #[must_use]
    pub fn with_args<I, S>(mut self, args: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.args.extend(args.into_iter().map(Into::into));
        self
    }

    /// Adds one environment variable.
    #[must_use]
    pub fn with_env(mut self, name: impl Into<String>, value: impl Into<String>) -> Self {
        self.env.insert(name.into(), value.into());
        self
    }
}

/// Default for [`HubOptions::start_timeout`]: 30 s. Generous because a
/// server started through `npx` may first download its package.
pub const DEFAULT_START_TIMEOUT: Duration = Duration::from_secs(30);

/// Default for [`HubOptions::call_timeout`]: 60 s.
pub const DEFAULT_CALL_TIMEOUT: Duration = Duration::from_secs(60);

/// Default for [`HubOptions::shutdown_timeout`]: 10 s.
pub const DEFAULT_SHUTDOWN_TIMEOUT: Duration = Duration::from_secs(10);

/// Default for [`HubOptions::restart_backoff`]: 1 s.
pub const DEFAULT_RESTART_BACKOFF: Duration = Duration::from_secs(1);

/// Default for [`HubOptions::max_restart_backoff`]: 60 s.
pub const DEFAULT_MAX_RESTART_BACKOFF: Duration = Duration::from_secs(60);

/// Default for [`HubOptions::max_tools_per_server`]: 1024.
pub const DEFAULT_MAX_TOOLS_PER_SERVER: usize = 1024;

/// Default for [`HubOptions::max_list_pages`]: 64.
pub const DEFAULT_MAX_LIST_PAGES: usize = 64;

/// Longest tool name accepted, in bytes (the MCP spec suggests 1 to 128 characters).
pub const MAX_TOOL_NAME_BYTES: usize = 128;

/// Longest tool description kept, in bytes; longer ones are cut at a
/// character boundary and end with `…`.
pub const MAX_DESCRIPTION_BYTES: usize = 8 * 1024;

/// Deepest JSON nesting accepted in a tool's input or output schema; a tool
/// with a deeper schema is skipped (with a warning in [`crate::ServerInfo::warnings`]).
pub const MAX_SCHEMA_DEPTH: usize = 64;

/// Limits and timeouts of an [`McpHub`](crate::McpHub).
///
/// Every limit covers one untrusted input from a server; none of them limits
/// the *size* of one message, which rmcp's stdio transport caps at 16 MiB per
/// line.
///
/// ```
/// use std::time::Duration;
/// let options = codemode_mcp::HubOptions::default().with_call_timeout(Duration::from_secs(5));
/// assert_eq!(options.call_timeout, Duration::from_secs(5));
/// assert_eq!(options.start_timeout, codemode_mcp::DEFAULT_START_TIMEOUT);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct HubOptions {
    /// Time one server gets to spawn, finish the MCP handshake and list its
    /// tools (all pages). Servers start concurrently, each with this budget.
    pub start_timeout: Duration,
    /// Time one request (tool call, resource read, prompt get, list) gets
    /// before it fails with [`McpError::Timeout`](crate::McpError::Timeout);
    /// the request is then cancelled on the server. It does not cover start.
    pub call_timeout: Duration,
    /// Time [`McpHub::shutdown`](crate::McpHub::shutdown) waits for every
    /// server to exit after its stdin is closed (rmcp then sends `SIGTERM`,
    /// then kills). Children left over are killed when their handle drops.
    pub shutdown_timeout: Duration,
    /// Most tools kept per server; the rest are dropped with a warning.
    pub max_tools_per_server: usize,
    /// Most pages followed for one list (tools, resources, prompts); a
    /// server whose `nextCursor` never ends gets truncated with a warning.
    pub max_list_pages: usize,
    /// A server that exited is restarted on its next use. The first restart is immediate;
    /// each further restart within [`HubOptions::max_restart_backoff`] of the previous one
    /// waits twice as long as the one before, starting from this (calls in the meantime fail
    /// with [`McpError::Restarting`](crate::McpError::Restarting)).
    pub restart_backoff: Duration,
    /// The longest wait between two restarts of one server; a server quiet for this long
    /// starts over with an immediate restart.
    pub max_restart_backoff: Duration,
}

impl Default for HubOptions {
    fn default() -> Self {
        Self {
            start_timeout: DEFAULT_START_TIMEOUT,
            call_timeout: DEFAULT_CALL_TIMEOUT,
            shutdown_timeout: DEFAULT_SHUTDOWN_TIMEOUT,
            max_tools_per_server: DEFAULT_MAX_TOOLS_PER_SERVER,
            max_list_pages: DEFAULT_MAX_LIST_PAGES,
            restart_backoff: DEFAULT_RESTART_BACKOFF,
            max_restart_backoff: DEFAULT_MAX_RESTART_BACKOFF,
        }
    }
}

impl HubOptions {
    /// Sets [`HubOptions::start_timeout`].
    #[must_use]
    pub fn with_start_timeout(mut self, timeout: Duration) -> Self {
        self.start_timeout = timeout;
        self
    }

    /// Sets [`HubOptions::call_timeout`].
    #[must_use]
    pub fn with_call_timeout(mut self, timeout: Duration) -> Self {
        self.call_timeout = timeout;
        self
    }

    /// Sets [`HubOptions::shutdown_timeout`].
    #[must_use]
    pub fn with_shutdown_timeout(mut self, timeout: Duration) -> Self {
        self.shutdown_timeout = timeout;
        self
    }

    /// Sets [`HubOptions::max_tools_per_server`].
    #[must_use]
    pub fn with_max_tools_per_server(mut self, max: usize) -> Self {
        self.max_tools_per_server = max;
        self
    }

    /// Sets [`HubOptions::max_list_pages`].
    #[must_use]
    pub fn with_max_list_pages(mut self, max: usize) -> Self {
        self.max_list_pages = max;
        self
    }

    /// Sets [`HubOptions::restart_backoff`] and [`HubOptions::max_restart_backoff`].
    #[must_use]
    pub fn with_restart_backoff(mut self, first: Duration, max: Duration) -> Self {
        self.restart_backoff = first;
        self.max_restart_backoff = max.max(first);
        self
    }
}
