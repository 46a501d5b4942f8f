//! The trusted, plain-data description of the guest's globals.

use std::sync::Arc;

use serde_json::Value;

/// A dotted guest path, e.g. `["tools", "call"]`, `["MCP", "github", "createIssue"]`.
pub type GuestPath = Vec<String>;

/// What a guest function installed at a path does when called. Every guest function returns a
/// `Promise`.
#[derive(Debug, Clone, PartialEq)]
pub enum Callable {
    /// Becomes a [`BridgeRequest`](crate::BridgeRequest) `{ method, args: bound_args ++ guest
    /// args }` answered by the [`BridgeHost`](crate::BridgeHost) asynchronously; counts toward
    /// [`Limits::max_pending_calls`](crate::Limits::max_pending_calls).
    Bridge {
        /// The method name the host dispatches on.
        method: String,
        /// Arguments prepended to the guest's own (e.g. the catalog id of a convenience function).
        bound_args: Vec<Value>,
    },
    /// Answered synchronously, inside the VM step, by [`BridgeHost::call_sync`](
    /// crate::BridgeHost::call_sync) with `{ method, args: bound_args ++ guest args }`: for cheap
    /// host lookups (a catalog search) that need no task. Does not count toward
    /// `max_pending_calls`.
    Sync {
        /// The method name the host dispatches on.
        method: String,
        /// Arguments prepended to the guest's own.
        bound_args: Vec<Value>,
    },
}

/// The JSON text of a value, made once and shared cheaply between runs (e.g. a catalog listing
/// built once per session) through [`GuestSetup::json_values`].
///
/// ```
/// use codemode_engine::JsonText;
/// let text = JsonText::new(&serde_json::json!({"id": "openclaw:core:echo"}));
/// assert_eq!(text.as_str(), r#"{"id":"openclaw:core:echo"}"#);
/// ```
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct JsonText(Arc<str>);

impl JsonText {
    /// The compact JSON text of `value`.
    pub fn new(value: &Value) -> Self {
        Self(value.to_string().into())
    }

    /// The JSON text.
    pub fn as_str(&self) -> &str {
        &self.0
    }
}

impl From<&Value> for JsonText {
    fn from(value: &Value) -> Self {
        Self::new(value)
    }
}

/// The guest's globals, as plain data. The sandbox knows nothing about catalogs, MCP or plugins.
///
/// Installation order: `values`, then `json_values`, then `callables`, then `aliases`, then
/// `freeze`. Intermediate
/// objects along a path are created as needed. Paths are trusted (they come from the host), but an
/// empty path or segment is ignored rather than trusted blindly.
///
/// ```
/// use codemode_engine::{Callable, GuestSetup};
///
/// let mut setup = GuestSetup::default();
/// setup.values.push((vec!["ALL_TOOLS".into()], serde_json::json!([{"id": "openclaw:core:echo"}])));
/// setup.callables.push((
///     vec!["tools".into(), "call".into()],
///     Callable::Bridge { method: "tools.call".into(), bound_args: vec![] },
/// ));
/// setup.callables.push((
///     vec!["tools".into(), "search".into()],
///     Callable::Sync { method: "tools.search".into(), bound_args: vec![] },
/// ));
/// setup.freeze = vec!["ALL_TOOLS".into(), "tools".into()];
/// ```
#[derive(Debug, Clone, Default)]
pub struct GuestSetup {
    /// JSON values installed at paths (built with `JSON.parse` semantics inside the VM).
    pub values: Vec<(GuestPath, Value)>,
    /// Like `values`, from JSON text made beforehand (no per-run serialization).
    pub json_values: Vec<(GuestPath, JsonText)>,
    /// Functions installed at paths.
    pub callables: Vec<(GuestPath, Callable)>,
    /// Roots (global names) to deep-freeze after installation; their global bindings also become
    /// read-only. Roots that were never installed are skipped.
    ///
    /// A frozen root that no alias touches (such as `ALL_TOOLS` or `tools`) is built on its
    /// first read instead (see [`PreparedSetup`](crate::PreparedSetup)), so a run that never
    /// reads it does not pay for it.
    pub freeze: Vec<String>,
    /// `(new path, existing path)`: makes the new path refer to the same object or function, so
    /// `namespaces.Issues === Issues`. Missing existing paths are skipped.
    pub aliases: Vec<(GuestPath, GuestPath)>,
}
