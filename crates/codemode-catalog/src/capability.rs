//! The ids of MCP resources and prompts: a kind of nested call of their own, never catalog
//! entries.

use std::fmt;

/// The first segment of every [`McpCapability`] id. No catalog id starts with it (catalog
/// sources are `openclaw`, `mcp` and `client`), so an MCP tool named `resources/list` keeps
/// its catalog id `mcp:<server>:resources/list` and can never be taken for a capability call.
pub const MCP_CAPABILITY_SOURCE: &str = "mcp-capability";

/// One of the four MCP server operations besides tools that code mode exposes as
/// `MCP.<server>.resources.list/read` and `MCP.<server>.prompts.list/get`.
///
/// They are a separate kind of nested call, not catalog entries: they are not in the host's
/// effective tool list (the host allows them per server with its capability flags), they have
/// no JSON Schema, and they are never in `ALL_TOOLS` or `tools.*`. They reach the host's
/// executor as `mcp-capability:<server>:<method>` ([`McpCapability::id`]), and they only read
/// ([`McpCapability::read_only`]), so the same restart-safe check as tools lets them through.
///
/// ```
/// use codemode_catalog::McpCapability;
///
/// let id = McpCapability::ResourcesRead.id("docs");
/// assert_eq!(id, "mcp-capability:docs:resources/read");
/// assert_eq!(McpCapability::parse_id(&id), Some(("docs", McpCapability::ResourcesRead)));
/// // A tool that merely has the name of a capability is a tool.
/// assert_eq!(McpCapability::parse_id("mcp:docs:resources/read"), None);
/// ```
// Not `#[non_exhaustive]`: executors match on it, and a fifth operation is a contract change
// they must handle, not a silent fallthrough.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum McpCapability {
    /// `resources/list`: `{}` in, `{ resources: [...] }` out.
    ResourcesList,
    /// `resources/read`: `{ uri }` in, `{ contents: [...] }` out.
    ResourcesRead,
    /// `prompts/list`: `{}` in, `{ prompts: [...] }` out.
    PromptsList,
    /// `prompts/get`: `{ name, arguments? }` in, `{ description?, messages: [...] }` out.
    PromptsGet,
}

impl McpCapability {
    /// Every capability, resources first.
    pub const ALL: [McpCapability; 4] = [
        Self::ResourcesList,
        Self::ResourcesRead,
        Self::PromptsList,
        Self::PromptsGet,
    ];

    /// The MCP method name: `resources/list`, `resources/read`, `prompts/list`, `prompts/get`.
    pub fn method(self) -> &'static str {
        match self {
            Self::ResourcesList => "resources/list",
            Self::ResourcesRead => "resources/read",
            Self::PromptsList => "prompts/list",
            Self::PromptsGet => "prompts/get",
        }
    }

    /// The capability of this MCP method name, if it is one of the four.
    pub fn from_method(method: &str) -> Option<Self> {
        Self::ALL
            .into_iter()
            .find(|capability| capability.method() == method)
    }

    /// Whether it is one of the resource operations (else a prompt operation).
    pub fn is_resources(self) -> bool {
        matches!(self, Self::ResourcesList | Self::ResourcesRead)
    }

    /// Always `true`: listing and reading resources and prompts have no side effects, so a
    /// restart-safe run may make these calls (the same rule as a read-only tool).
    pub fn read_only(self) -> bool {
        true
    }

    /// The id a call of this capability on `server` carries to the host's executor:
    /// `mcp-capability:<server>:<method>`.
    pub fn id(self, server: &str) -> String {
        format!("{MCP_CAPABILITY_SOURCE}:{server}:{}", self.method())
    }

    /// `(server, capability)` of an id made by [`McpCapability::id`]; `None` for any other
    /// id, catalog ids included. The method follows the last `:`, so a server name may itself
    /// hold a `:`.
    pub fn parse_id(id: &str) -> Option<(&str, Self)> {
        let rest = id
            .strip_prefix(MCP_CAPABILITY_SOURCE)
            .and_then(|rest| rest.strip_prefix(':'))?;
        let (server, method) = rest.rsplit_once(':')?;
        let capability = Self::from_method(method)?;
        (!server.is_empty()).then_some((server, capability))
    }
}

impl fmt::Display for McpCapability {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.method())
    }
}
