//! What the host tells code mode about one effective tool: [`ToolDescriptor`], its
//! [`ToolOrigin`], and the [`Source`] an origin belongs to.

use std::fmt;

use serde::{Deserialize, Serialize};

/// Where a tool comes from. Decides the catalog id's `<source>:<owner>` and
/// the catalog order (core, bundled plugins, external plugins, MCP, client).
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(tag = "kind", content = "owner", rename_all = "snake_case")]
pub enum ToolOrigin {
    /// A core tool of the host: id `openclaw:core:<name>`.
    Core,
    /// A tool of a plugin bundled with the host: id `openclaw:<plugin id>:<name>`.
    BundledPlugin(String),
    /// A tool of an externally installed plugin: id `openclaw:<plugin id>:<name>`.
    ExternalPlugin(String),
    /// A tool of an MCP server: id `mcp:<server name>:<name>`.
    Mcp(String),
    /// A tool provided by the client application for this run: id `client:<owner>:<name>`.
    Client(String),
}

/// One effective tool of a run, after the host applied its allow/deny policy.
#[derive(Debug, Clone, PartialEq, Serialize, Deserialize)]
pub struct ToolDescriptor {
    /// Where the tool comes from.
    pub origin: ToolOrigin,
    /// The tool's name as the host registered it (e.g. `web_search`).
    pub name: String,
    /// Optional human-readable label.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub label: Option<String>,
    /// Description shown to the guest by search and describe.
    #[serde(default)]
    pub description: String,
    /// JSON Schema of the tool's input; `None` when the tool declares none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub parameters: Option<serde_json::Value>,
    /// The tool's results cannot cross the JSON bridge (e.g. images): it
    /// stays visible to the model and is never catalogued.
    #[serde(default)]
    pub direct_only: bool,
    /// The tool only reads: restart-safe code mode may call it.
    #[serde(default)]
    pub read_only: bool,
}

impl ToolDescriptor {
    /// A catalogued tool without a schema or label, neither read-only nor direct-only; add
    /// those with the builder methods.
    ///
    /// ```
    /// use codemode_host::{ToolDescriptor, ToolOrigin};
    /// use serde_json::json;
    ///
    /// let search = ToolDescriptor::new(ToolOrigin::Core, "web_search", "Search the web")
    ///     .parameters(json!({ "type": "object", "properties": { "q": { "type": "string" } } }))
    ///     .label("Web search")
    ///     .read_only();
    /// assert!(search.read_only && !search.direct_only);
    /// assert_eq!(search.label.as_deref(), Some("Web search"));
    /// ```
    pub fn new(
        origin: ToolOrigin,
        name: impl Into<String>,
        description: impl Into<String>,
    ) -> Self {
        Self {
            origin,
            name: name.into(),
            label: None,
            description: description.into(),
            parameters: None,
            direct_only: false,
            read_only: false,
        }
    }

    /// Sets the JSON Schema of the tool's input.
    #[must_use]
    pub fn parameters(mut self, schema: serde_json::Value) -> Self {
        self.parameters = Some(schema);
        self
    }

    /// Sets the human-readable label.
    #[must_use]
    pub fn label(mut self, label: impl Into<String>) -> Self {
        self.label = Some(label.into());
        self
    }

    /// Marks the tool read-only: restart-safe code mode may call it.
    #[must_use]
    pub fn read_only(mut self) -> Self {
        self.read_only = true;
        self
    }

    /// Marks the tool direct-only: it stays visible to the model and is never catalogued
    /// (its results cannot cross the JSON bridge, e.g. images).
    #[must_use]
    pub fn direct_only(mut self) -> Self {
        self.direct_only = true;
        self
    }
}

impl ToolOrigin {
    /// The catalog source this origin belongs to (`openclaw` for core and
    /// plugin tools, `mcp`, `client`).
    ///
    /// ```
    /// use codemode_host::{Source, ToolOrigin};
    /// assert_eq!(ToolOrigin::BundledPlugin("browser".into()).source(), Source::Openclaw);
    /// assert_eq!(ToolOrigin::Mcp("github".into()).source(), Source::Mcp);
    /// ```
    pub fn source(&self) -> Source {
        match self {
            Self::Core | Self::BundledPlugin(_) | Self::ExternalPlugin(_) => Source::Openclaw,
            Self::Mcp(_) => Source::Mcp,
            Self::Client(_) => Source::Client,
        }
    }

    /// The `<owner>` segment of the catalog id: `core` for core tools, else
    /// the plugin id, MCP server name or client owner.
    pub fn owner(&self) -> &str {
        match self {
            Self::Core => CORE_OWNER,
            Self::BundledPlugin(owner)
            | Self::ExternalPlugin(owner)
            | Self::Mcp(owner)
            | Self::Client(owner) => owner,
        }
    }

    /// The owner reported as the entry's `sourceName`: `None` for core tools.
    pub fn source_name(&self) -> Option<&str> {
        match self {
            Self::Core => None,
            _ => Some(self.owner()),
        }
    }
}

/// The owner segment of core tool ids (`openclaw:core:<name>`).
pub const CORE_OWNER: &str = "core";

/// The source a tool's origin belongs to, the first segment of its catalog id.
///
/// There is no separate `plugin` source: plugin tools are the host's own, told apart by their
/// owner (the plugin id). The host's source is spelled `openclaw` unless the host names its own
/// (`codemode-catalog`'s `HostSource`).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Core and plugin tools of the host (`openclaw` unless the host spells its source otherwise).
    Openclaw,
    /// Tools of an MCP server (hidden from the guest's `tools.*` views).
    Mcp,
    /// Tools provided by the client application for the run.
    Client,
}

impl Source {
    /// The default wire spelling: `openclaw`, `mcp` or `client` (a host may spell its own
    /// source differently).
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Openclaw => "openclaw",
            Self::Mcp => "mcp",
            Self::Client => "client",
        }
    }
}

impl fmt::Display for Source {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}
