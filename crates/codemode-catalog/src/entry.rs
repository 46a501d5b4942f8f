//! One catalogued tool and the JSON views the guest sees of it.

use std::fmt;

use serde::{Deserialize, Serialize};
use serde_json::{Map, Value};

use crate::ToolOrigin;

/// The `source` of a catalog entry, the first segment of its id.
///
/// There is no separate `plugin` source: plugin tools are `openclaw` with
/// `sourceName` set to the plugin id.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Source {
    /// Core and plugin tools of the host.
    Openclaw,
    /// Tools of an MCP server (hidden from the guest's `tools.*` views).
    Mcp,
    /// Tools provided by the client application for the run.
    Client,
}

impl Source {
    /// The wire spelling: `openclaw`, `mcp` or `client`.
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

/// One tool of the run catalog.
///
/// Built only by [`Catalog`](crate::Catalog); the fields are public for
/// reading. `id` is `<source>:<owner>:<name>` and unique within a catalog.
#[derive(Debug, Clone, PartialEq)]
pub struct CatalogEntry {
    /// Exact catalog id, e.g. `openclaw:core:message` or `mcp:github:create_issue`.
    pub id: String,
    /// The tool's name as the host registered it.
    pub name: String,
    /// Optional human-readable label.
    pub label: Option<String>,
    /// Description shown by search and describe.
    pub description: String,
    /// `openclaw`, `mcp` or `client`.
    pub source: Source,
    /// Plugin id, MCP server name or client owner; `None` for core tools.
    pub source_name: Option<String>,
    /// The tool's input JSON Schema, `None` when it declares none.
    pub parameters: Option<Value>,
    /// The tool only reads (restart-safe code mode may call it).
    pub read_only: bool,
    /// Where the tool comes from.
    pub origin: ToolOrigin,
}

impl CatalogEntry {
    /// Whether the entry belongs to the guest views (`ALL_TOOLS`,
    /// `tools.search/describe/call`): every entry except MCP ones.
    pub fn is_guest_visible(&self) -> bool {
        self.source != Source::Mcp
    }

    /// The compact entry of `ALL_TOOLS` and `tools.search`:
    /// `{id, name, label?, description, source, sourceName?}`.
    ///
    /// ```
    /// use codemode_catalog::{Catalog, ToolDescriptor, ToolOrigin};
    /// use serde_json::json;
    ///
    /// let catalog = Catalog::build([ToolDescriptor {
    ///     origin: ToolOrigin::BundledPlugin("browser".into()),
    ///     name: "browser_request".into(),
    ///     label: None,
    ///     description: "Fetch a page".into(),
    ///     parameters: None,
    ///     direct_only: false,
    ///     read_only: true,
    /// }]);
    /// let entry = catalog.get("openclaw:browser:browser_request").unwrap();
    /// assert_eq!(
    ///     entry.compact_json(),
    ///     json!({"id": "openclaw:browser:browser_request", "name": "browser_request",
    ///            "description": "Fetch a page", "source": "openclaw", "sourceName": "browser"})
    /// );
    /// ```
    pub fn compact_json(&self) -> Value {
        Value::Object(self.compact_map())
    }

    /// The `tools.describe` entry: the compact entry plus `parameters`
    /// (the JSON Schema, `{}` when the tool declares none).
    ///
    /// ```
    /// use codemode_catalog::{Catalog, ToolDescriptor, ToolOrigin};
    /// use serde_json::json;
    ///
    /// let catalog = Catalog::build([ToolDescriptor {
    ///     origin: ToolOrigin::Core,
    ///     name: "message".into(),
    ///     label: Some("Message".into()),
    ///     description: "Send a message".into(),
    ///     parameters: None,
    ///     direct_only: false,
    ///     read_only: false,
    /// }]);
    /// let described = catalog.lookup("message").unwrap().describe_json();
    /// assert_eq!(described["parameters"], json!({}));
    /// assert_eq!(described["label"], "Message");
    /// assert!(described.get("sourceName").is_none());
    /// ```
    pub fn describe_json(&self) -> Value {
        let mut map = self.compact_map();
        let parameters = self
            .parameters
            .clone()
            .unwrap_or_else(|| Value::Object(Map::new()));
        map.insert("parameters".to_owned(), parameters);
        Value::Object(map)
    }

    fn compact_map(&self) -> Map<String, Value> {
        let mut map = Map::new();
        map.insert("id".to_owned(), Value::String(self.id.clone()));
        map.insert("name".to_owned(), Value::String(self.name.clone()));
        if let Some(label) = &self.label {
            map.insert("label".to_owned(), Value::String(label.clone()));
        }
        map.insert(
            "description".to_owned(),
            Value::String(self.description.clone()),
        );
        map.insert(
            "source".to_owned(),
            Value::String(self.source.as_str().to_owned()),
        );
        if let Some(source_name) = &self.source_name {
            map.insert("sourceName".to_owned(), Value::String(source_name.clone()));
        }
        map
    }
}
