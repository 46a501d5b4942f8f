//! The crate's error type.

/// What went wrong preparing an MCP call, answering `$api`, or reading the virtual files.
///
/// Messages are written for the guest program (they become JavaScript `Error` messages) and
/// quote untrusted names only cut to a short length.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum DeclError {
    /// A call's catalog id belongs to no MCP tool of these declarations.
    #[error("unknown MCP tool catalog id \"{catalog_id}\"")]
    UnknownCatalogId {
        /// The catalog id asked for (cut).
        catalog_id: String,
    },
    /// `MCP.<server>` names no visible server.
    #[error("unknown MCP server \"{server}\"; visible servers: {available}")]
    UnknownServer {
        /// The server identifier asked for (cut).
        server: String,
        /// The visible server identifiers, comma-separated (bounded).
        available: String,
    },
    /// `MCP.<server>.$api(toolName)` names no tool of that server.
    #[error("MCP server \"{server}\" has no tool \"{tool}\"; its tools: {available}")]
    UnknownTool {
        /// The server identifier.
        server: String,
        /// The tool name asked for (cut).
        tool: String,
        /// The server's tool identifiers, comma-separated (bounded).
        available: String,
    },
    /// The call did not get exactly one argument.
    #[error("{call} takes exactly one object argument ({call}({{ ... }})), got {got} arguments")]
    ArgumentCount {
        /// The guest-visible call path (`MCP.github.createIssue`).
        call: String,
        /// How many arguments it got.
        got: usize,
    },
    /// The call's argument is not a plain object.
    #[error("{call} takes one object argument ({call}({{ ... }})), got {got}")]
    NotAnObject {
        /// The guest-visible call path (`MCP.github.createIssue`).
        call: String,
        /// The JSON type it got instead ("a string", "an array", ...).
        got: &'static str,
    },
    /// Keys the tool's schema requires are missing (after defaults were filled in).
    #[error("Missing required MCP namespace argument(s): {}", missing_list(.names, *.more))]
    MissingRequired {
        /// The missing keys, in the schema's `required` order (at most
        /// [`MAX_LISTED_NAMES`](crate::DeclError::MAX_LISTED_NAMES), each cut).
        names: Vec<String>,
        /// How many more keys are missing beyond `names`.
        more: usize,
    },
    /// A virtual file path is malformed (empty, absolute, `.`/`..` segments, ...).
    #[error("invalid virtual file path \"{path}\": {reason}")]
    InvalidPath {
        /// The path asked for (cut).
        path: String,
        /// Why it is rejected.
        reason: &'static str,
    },
    /// A well-formed virtual file path that names no file.
    #[error("no virtual file \"{path}\"; API.list(\"mcp\") lists the available files")]
    UnknownPath {
        /// The path asked for (cut).
        path: String,
    },
}

impl DeclError {
    /// Names listed in one error message (missing keys, available tools); the rest are counted.
    pub const MAX_LISTED_NAMES: usize = 20;
}

fn missing_list(names: &[String], more: usize) -> String {
    let mut list = names.join(", ");
    if more > 0 {
        list.push_str(&format!(" and {more} more"));
    }
    list
}

/// A bounded, comma-separated list of names for an error message.
pub(crate) fn name_list<'a>(names: impl ExactSizeIterator<Item = &'a str>) -> String {
    let total = names.len();
    let listed: Vec<String> = names
        .take(DeclError::MAX_LISTED_NAMES)
        .map(quoted)
        .collect();
    let more = total.saturating_sub(listed.len());
    if listed.is_empty() {
        return "(none)".to_owned();
    }
    missing_list(&listed, more)
}

/// Characters of an untrusted string quoted in an error message.
pub(crate) const MAX_QUOTED_CHARS: usize = 120;

/// Cuts an untrusted string for quoting in an error message.
pub(crate) fn quoted(text: &str) -> String {
    crate::jsdoc::truncate_chars(text, MAX_QUOTED_CHARS)
}
