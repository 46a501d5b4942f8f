//! One catalogued tool and the JSON views the guest sees of it.

use std::fmt;

use serde_json::{Map, Value};

use crate::{CatalogError, Source, ToolOrigin};

/// The default spelling of the host's own source ([`Source::Openclaw`]), as in the original
/// product's ids `openclaw:<owner>:<name>`.
pub const DEFAULT_HOST_SOURCE: &str = "openclaw";

/// Longest accepted [`HostSource`] name, in bytes.
pub const MAX_HOST_SOURCE_BYTES: usize = 32;

/// How a host spells its own catalog source, the first segment of the ids of its core and
/// plugin tools (`myagent:core:search`) and the `source` of their `ALL_TOOLS` entries.
/// `openclaw` by default.
///
/// A name is 1 to [`MAX_HOST_SOURCE_BYTES`] ASCII letters, digits, `_` or `-`, starting with a
/// letter, and is none of the other sources (`mcp`, `client`, `mcp-capability`, in any case):
/// a `:` would make ids ambiguous, and another source's name would let host tools pass for
/// MCP or client tools.
///
/// ```
/// use codemode_catalog::{HostSource, Source};
/// assert_eq!(HostSource::default().as_str(), "openclaw");
/// let mine = HostSource::new("myagent")?;
/// assert_eq!(mine.label(Source::Openclaw), "myagent");
/// assert_eq!(mine.label(Source::Mcp), "mcp");
/// assert_eq!(
///     HostSource::new("my:agent").unwrap_err().to_string(),
///     "invalid catalog source name \"my:agent\": only ASCII letters, digits, `_` and `-` are allowed."
/// );
/// assert!(HostSource::new("").is_err());
/// assert!(HostSource::new("MCP").is_err());
/// # Ok::<(), codemode_catalog::CatalogError>(())
/// ```
#[derive(Debug, Clone, PartialEq, Eq, Hash)]
pub struct HostSource(std::sync::Arc<str>);

impl HostSource {
    /// Checks and wraps a host source name.
    pub fn new(name: &str) -> Result<Self, CatalogError> {
        let refuse = |reason: &'static str| CatalogError::InvalidSourceName {
            // Hostile names may be huge: the error keeps a bounded prefix.
            name: name.chars().take(MAX_HOST_SOURCE_BYTES + 8).collect(),
            reason,
        };
        let Some(first) = name.chars().next() else {
            return Err(refuse("it is empty."));
        };
        if name.len() > MAX_HOST_SOURCE_BYTES {
            return Err(refuse("it is longer than 32 bytes."));
        }
        if name.contains(':') {
            return Err(refuse(
                "only ASCII letters, digits, `_` and `-` are allowed.",
            ));
        }
        if !first.is_ascii_alphabetic() {
            return Err(refuse("it must start with an ASCII letter."));
        }
        if !name
            .chars()
            .all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '-')
        {
            return Err(refuse(
                "only ASCII letters, digits, `_` and `-` are allowed.",
            ));
        }
        let reserved = [
            Source::Mcp.as_str(),
            Source::Client.as_str(),
            crate::MCP_CAPABILITY_SOURCE,
        ];
        if reserved
            .iter()
            .any(|other| other.eq_ignore_ascii_case(name))
        {
            return Err(refuse("it is the name of another catalog source."));
        }
        Ok(Self(name.into()))
    }

    /// The name.
    pub fn as_str(&self) -> &str {
        &self.0
    }

    /// How `source` is spelled in ids and entries: this name for the host's own source, the
    /// fixed names for the others.
    pub fn label(&self, source: Source) -> &str {
        match source {
            Source::Openclaw => &self.0,
            other => other.as_str(),
        }
    }
}

impl Default for HostSource {
    fn default() -> Self {
        Self(DEFAULT_HOST_SOURCE.into())
    }
}

impl fmt::Display for HostSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(&self.0)
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
    /// The `source` as the guest sees it: the first segment of the id (the host's own
    /// source name for core and plugin tools, else `mcp` or `client`).
    pub fn source_label(&self) -> &str {
        self.id.split(':').next().unwrap_or_default()
    }

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
            Value::String(self.source_label().to_owned()),
        );
        if let Some(source_name) = &self.source_name {
            map.insert("sourceName".to_owned(), Value::String(source_name.clone()));
        }
        map
    }
}
