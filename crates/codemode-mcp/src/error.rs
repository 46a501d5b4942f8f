//! The one error type of this crate.

use std::time::Duration;

/// Everything that can go wrong with an MCP server: at start, or for one
/// request. Every variant names the server, so a host can report it and keep
/// using the other servers.
///
/// A tool that *ran* and reported failure (`isError: true`) is not an error
/// here: it is a normal result.
///
/// Two renderings: `Display` is for the host (logs, the CLI user) and keeps
/// every detail, including the server's last stderr lines, its command and
/// the MCP client library's own words. [`McpError::guest_message`] is for
/// guest code (what [`McpHub::execute`](crate::McpHub::execute) returns):
/// the server's name and a short reason, nothing about the host.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum McpError {
    /// The server's name cannot become part of a catalog id (`mcp:<server>:<tool>`).
    #[error("invalid MCP server name {server:?}: {reason}")]
    InvalidServerName {
        /// The server name from the config.
        server: String,
        /// Why it is refused.
        reason: &'static str,
    },
    /// The server process could not be spawned (missing command, not executable...).
    #[error("MCP server `{server}` could not be started: `{command}`: {source}")]
    Spawn {
        /// The server name.
        server: String,
        /// The command from the config.
        command: String,
        /// The operating system's error.
        #[source]
        source: std::io::Error,
    },
    /// The process started but the MCP handshake or the tool listing failed
    /// (the server exited, spoke something else than MCP, or refused us).
    #[error("MCP server `{server}` failed to start: {detail}{}", stderr_note(.stderr))]
    Handshake {
        /// The server name.
        server: String,
        /// What went wrong.
        detail: String,
        /// The last lines the server wrote on stderr, oldest first.
        stderr: Vec<String>,
    },
    /// The server did not finish its handshake and tool listing in time.
    #[error("MCP server `{server}` did not start within {timeout:?}{}", stderr_note(.stderr))]
    StartTimeout {
        /// The server name.
        server: String,
        /// The start timeout that ran out.
        timeout: Duration,
        /// The last lines the server wrote on stderr, oldest first.
        stderr: Vec<String>,
    },
    /// No running server has this name (it is not configured, or failed to start).
    #[error("unknown MCP server `{server}`")]
    UnknownServer {
        /// The requested server name.
        server: String,
    },
    /// The server did not announce this capability in its handshake.
    #[error("MCP server `{server}` offers no {feature}")]
    NotOffered {
        /// The server name.
        server: String,
        /// `resources` or `prompts`.
        feature: &'static str,
    },
    /// The caller's arguments cannot be sent (e.g. not a JSON object).
    #[error("invalid arguments for {operation} on MCP server `{server}`: {detail}")]
    InvalidArguments {
        /// The server name.
        server: String,
        /// The request, e.g. ``tools/call `echo` ``.
        operation: String,
        /// What is wrong.
        detail: String,
    },
    /// The server did not answer in time; the request was cancelled.
    #[error("MCP server `{server}` did not answer {operation} within {timeout:?}")]
    Timeout {
        /// The server name.
        server: String,
        /// The request.
        operation: String,
        /// The call timeout that ran out.
        timeout: Duration,
    },
    /// The server process exited or closed its connection (crash mid-call).
    /// It is restarted on its next use; the others are unaffected.
    #[error("MCP server `{server}` exited or closed its connection during {operation}{}", stderr_note(.stderr))]
    ServerExited {
        /// The server name.
        server: String,
        /// The request.
        operation: String,
        /// The last lines the server wrote on stderr, oldest first.
        stderr: Vec<String>,
    },
    /// The server exited and its next restart waits for the backoff
    /// ([`HubOptions::restart_backoff`](crate::HubOptions::restart_backoff)).
    #[error("MCP server `{server}` exited; it is restarted on a call in {}", human_duration(*.retry_in))]
    Restarting {
        /// The server name.
        server: String,
        /// How long until the next restart may be tried.
        retry_in: Duration,
    },
    /// The hub was shut down.
    #[error("MCP server `{server}` was shut down")]
    ShutDown {
        /// The server name.
        server: String,
    },
    /// The server answered with a JSON-RPC error (unknown tool, invalid
    /// params, resource not found...).
    #[error("MCP server `{server}` refused {operation}: {message} (code {code})")]
    Rejected {
        /// The server name.
        server: String,
        /// The request.
        operation: String,
        /// The JSON-RPC error code.
        code: i32,
        /// The server's message (shortened when very long).
        message: String,
    },
    /// The server's answer does not have the shape MCP requires.
    #[error("MCP server `{server}` sent a malformed response to {operation}: {detail}")]
    Malformed {
        /// The server name.
        server: String,
        /// The request.
        operation: String,
        /// What is wrong.
        detail: String,
    },
}

impl McpError {
    /// The name of the server this error is about.
    ///
    /// ```
    /// let error = codemode_mcp::McpError::UnknownServer { server: "github".into() };
    /// assert_eq!(error.server(), "github");
    /// assert_eq!(error.to_string(), "unknown MCP server `github`");
    /// ```
    pub fn server(&self) -> &str {
        match self {
            Self::InvalidServerName { server, .. }
            | Self::Spawn { server, .. }
            | Self::Handshake { server, .. }
            | Self::StartTimeout { server, .. }
            | Self::UnknownServer { server }
            | Self::NotOffered { server, .. }
            | Self::InvalidArguments { server, .. }
            | Self::Timeout { server, .. }
            | Self::ServerExited { server, .. }
            | Self::Restarting { server, .. }
            | Self::ShutDown { server }
            | Self::Rejected { server, .. }
            | Self::Malformed { server, .. } => server,
        }
    }
}

impl McpError {
    /// The message shown to guest code: the server's name and a short
    /// reason. It never contains the server's stderr, its command or any
    /// host path, nor the MCP client library's type or error names; only a
    /// server's own answer to the request (a JSON-RPC error message,
    /// [`McpError::Rejected`]) is passed on, as a tool result would be.
    ///
    /// ```
    /// use codemode_mcp::McpError;
    ///
    /// let crashed = McpError::ServerExited {
    ///     server: "everything".into(),
    ///     operation: "tools/call `echo`".into(),
    ///     stderr: vec!["Error: ENOENT /home/me/.npm/_npx/server.js".into()],
    /// };
    /// assert!(crashed.to_string().contains("/home/me"), "the host sees everything");
    /// assert_eq!(
    ///     crashed.guest_message(),
    ///     "MCP server `everything` is not running (it exited)"
    /// );
    /// let slow = McpError::Timeout {
    ///     server: "x".into(),
    ///     operation: "tools/call `echo`".into(),
    ///     timeout: std::time::Duration::from_secs(30),
    /// };
    /// assert_eq!(slow.guest_message(), "MCP server `x` did not answer within 30 s");
    /// ```
    pub fn guest_message(&self) -> String {
        match self {
            Self::InvalidServerName { server, reason } => {
                format!("invalid MCP server name {server:?}: {reason}")
            }
            Self::Spawn { server, .. } | Self::Handshake { server, .. } => {
                format!("MCP server `{server}` is not running (it failed to start)")
            }
            Self::StartTimeout {
                server, timeout, ..
            } => format!(
                "MCP server `{server}` is not running (it did not start within {})",
                human_duration(*timeout)
            ),
            Self::UnknownServer { server } => format!("unknown MCP server `{server}`"),
            Self::NotOffered { server, feature } => {
                format!("MCP server `{server}` offers no {feature}")
            }
            Self::InvalidArguments { server, detail, .. } => {
                format!("invalid arguments for MCP server `{server}`: {detail}")
            }
            Self::Timeout {
                server, timeout, ..
            } => format!(
                "MCP server `{server}` did not answer within {}",
                human_duration(*timeout)
            ),
            Self::ServerExited { server, .. } => {
                format!("MCP server `{server}` is not running (it exited)")
            }
            Self::Restarting { server, retry_in } => format!(
                "MCP server `{server}` is not running (it exited; it is restarted on a call in {})",
                human_duration(*retry_in)
            ),
            Self::ShutDown { server } => {
                format!("MCP server `{server}` is not running (it was shut down)")
            }
            Self::Rejected {
                server,
                code,
                message,
                ..
            } => format!("MCP server `{server}` refused the request: {message} (code {code})"),
            Self::Malformed { server, .. } => {
                format!("MCP server `{server}` sent a malformed answer")
            }
        }
    }
}

/// `30 s`, `1.5 s`, `300 ms`: a timeout as a person would write it.
fn human_duration(duration: Duration) -> String {
    let millis = duration.as_millis();
    if millis < 1000 {
        format!("{millis} ms")
    } else if millis.is_multiple_of(1000) {
        format!("{} s", millis / 1000)
    } else {
        format!("{} s", duration.as_secs_f64())
    }
}

fn stderr_note(stderr: &[String]) -> String {
    if stderr.is_empty() {
        String::new()
    } else {
        format!("; its stderr ended with: {}", stderr.join(" | "))
    }
}
