//! A run's visible namespaces: the guest descriptor, the prompt text and the dispatch table.

use std::collections::{HashMap, HashSet};
use std::fmt;

use serde::Serialize;
use serde_json::Value;

use crate::NamespaceError;
use crate::error::echo;
use crate::scope::{NamespaceTool, PATH_SEPARATOR, SerializedScope};

/// One visible namespace as the sandbox should install it.
///
/// The core creates an empty object at `global_name` (and aliases it as
/// `namespaces.<global_name>`), sets each of `values` at
/// `[global_name, ...path]`, and installs each of `callables` at
/// `[global_name, ...path]` as a bridge function whose request carries
/// `[id, path_key(path), ...guest args]`. Paths are relative to the global,
/// never empty, and their segments are safe property names (no `__proto__`,
/// `constructor`, `prototype`, empty key or [`PATH_SEPARATOR`]).
///
/// Each value is plain JSON from the plugin, passed verbatim: keys inside it
/// are data, not paths (a `"__proto__"` key may appear), so the sandbox must
/// install it as own data properties, as `JSON.parse` does. A
/// member without callables arrives as ONE value (an object or array) at its
/// path; the objects that hold callables are created by the core on the way
/// to each callable path. Values and callables are in scope order.
#[derive(Debug, Clone, PartialEq, Serialize)]
#[non_exhaustive]
pub struct GuestNamespace {
    /// The namespace id; it crosses the bridge with each call.
    pub id: String,
    /// The guest global.
    pub global_name: String,
    /// JSON values at their paths.
    pub values: Vec<(Vec<String>, Value)>,
    /// Paths of callable members.
    pub callables: Vec<Vec<String>>,
}

/// Where a namespace call goes: the exact catalog id and the tool input.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct DispatchTarget {
    /// The exact catalog id to call through the host's tool executor.
    pub catalog_id: String,
    /// The tool's name (one of the namespace's required tools).
    pub tool_name: String,
    /// The tool input built by the callable's mapper.
    pub input: Value,
}

/// One callable of the dispatch table.
#[derive(Clone)]
struct Callable {
    catalog_id: String,
    tool: NamespaceTool,
}

/// The dispatch table of one namespace.
#[derive(Clone, Default)]
struct DispatchTable {
    /// Path key -> callable.
    callables: HashMap<String, Callable>,
    /// Path keys of serialized values.
    values: HashSet<String>,
    /// Path keys of the objects that hold callables (including `""`, the global itself).
    containers: HashSet<String>,
}

impl DispatchTable {
    /// Whether `key` names a value, the inside of a value, or a container object.
    fn holds_non_callable(&self, key: &str) -> bool {
        if self.values.contains(key) || self.containers.contains(key) {
            return true;
        }
        key.match_indices(PATH_SEPARATOR).any(|(at, _)| {
            key.get(..at)
                .is_some_and(|prefix| self.values.contains(prefix))
        })
    }
}

/// The namespaces visible in one run: what to install in the guest, what to
/// add to the `exec` description, and how to route each guest call.
///
/// Made by [`NamespaceRegistry::prepare_run`](crate::NamespaceRegistry::prepare_run);
/// cheap to clone and `Send + Sync`, so the core can keep it with a suspended run.
#[derive(Clone, Default)]
pub struct NamespaceRuntime {
    namespaces: Vec<GuestNamespace>,
    tables: Vec<DispatchTable>,
    prompt: Option<String>,
    hidden: Vec<crate::HiddenNamespace>,
}

impl NamespaceRuntime {
    /// The visible namespaces, in registration order.
    pub fn namespaces(&self) -> &[GuestNamespace] {
        &self.namespaces
    }

    /// The registered namespaces that are not visible in this run, with the reason, in
    /// registration order.
    pub fn hidden(&self) -> &[crate::HiddenNamespace] {
        &self.hidden
    }

    pub(crate) fn hide(&mut self, hidden: crate::HiddenNamespace) {
        self.hidden.push(hidden);
    }

    /// Whether no namespace is visible in this run.
    pub fn is_empty(&self) -> bool {
        self.namespaces.is_empty()
    }

    /// The descriptions and prompts of the visible namespaces, for the `exec`
    /// description; `None` when no namespace is visible.
    pub fn prompt_text(&self) -> Option<String> {
        self.prompt.clone()
    }

    /// Joins path segments with [`PATH_SEPARATOR`] (`.`). Segments never
    /// contain the separator, so the key is unambiguous.
    ///
    /// ```
    /// use codemode_namespaces::NamespaceRuntime;
    ///
    /// let path = vec!["labels".to_owned(), "add".to_owned()];
    /// assert_eq!(NamespaceRuntime::path_key(&path), "labels.add");
    /// ```
    pub fn path_key(path: &[String]) -> String {
        let mut key = String::new();
        for (index, segment) in path.iter().enumerate() {
            if index > 0 {
                key.push(PATH_SEPARATOR);
            }
            key.push_str(segment);
        }
        key
    }

    /// Routes a guest call `(namespace_id, path key, args)` to a catalog tool.
    ///
    /// Everything here comes from guest code and is checked: the namespace
    /// must be visible in this run and the path must be a serialized callable
    /// (a forged id or path, or the path of a value, is refused). A
    /// restart-safe run refuses every namespace call. The arguments go
    /// through the callable's input mapper.
    ///
    /// ```
    /// use codemode_namespaces::{
    ///     CatalogTool, NamespaceRegistry, NamespaceTool, Registration, ScopeContext, ScopeValue,
    ///     ToolOwner,
    /// };
    /// use serde_json::json;
    ///
    /// let registry = NamespaceRegistry::new();
    /// registry.register_for_plugin(
    ///     "github",
    ///     Registration::new("github-issues", "Issues", |_| {
    ///         Ok(ScopeValue::object([("list", NamespaceTool::new("github_list_issues").into())]))
    ///     })
    ///     .with_required_tools(["github_list_issues"]),
    /// )?;
    /// let catalog = [CatalogTool::new("openclaw:github:github_list_issues", "github_list_issues")
    ///     .with_owner(ToolOwner::Plugin("github"))];
    /// let runtime = registry.prepare_run(catalog, &ScopeContext::default())?;
    ///
    /// let target = runtime.dispatch("github-issues", "list", &[json!({ "state": "open" })], false)?;
    /// assert_eq!(target.catalog_id, "openclaw:github:github_list_issues");
    /// assert_eq!(target.input, json!({ "state": "open" }));
    /// assert!(runtime.dispatch("github-issues", "delete", &[], false).is_err());
    /// assert!(runtime.dispatch("github-issues", "list", &[], true).is_err());
    /// # Ok::<(), codemode_namespaces::NamespaceError>(())
    /// ```
    pub fn dispatch(
        &self,
        namespace_id: &str,
        path: &str,
        args: &[Value],
        restart_safe: bool,
    ) -> Result<DispatchTarget, NamespaceError> {
        if restart_safe {
            return Err(NamespaceError::RestartSafe);
        }
        let Some((namespace, table)) = self
            .namespaces
            .iter()
            .zip(&self.tables)
            .find(|(namespace, _)| namespace.id == namespace_id)
        else {
            return Err(NamespaceError::UnknownNamespace {
                namespace: echo(namespace_id),
            });
        };
        let guest_path = || {
            if path.is_empty() {
                namespace.global_name.clone()
            } else {
                echo(&format!("{}{PATH_SEPARATOR}{path}", namespace.global_name))
            }
        };
        let Some(callable) = table.callables.get(path) else {
            return Err(if table.holds_non_callable(path) {
                NamespaceError::NotCallable {
                    namespace: namespace.id.clone(),
                    path: guest_path(),
                }
            } else {
                NamespaceError::UnknownPath {
                    namespace: namespace.id.clone(),
                    path: guest_path(),
                }
            });
        };
        let input =
            callable
                .tool
                .map_input(args)
                .map_err(|message| NamespaceError::InputMapping {
                    namespace: namespace.id.clone(),
                    path: guest_path(),
                    message,
                })?;
        Ok(DispatchTarget {
            catalog_id: callable.catalog_id.clone(),
            tool_name: callable.tool.tool_name().to_owned(),
            input,
        })
    }

    /// Adds a visible namespace. `catalog_ids` maps each required tool name to
    /// its exact catalog id (every callable's tool is a required tool).
    pub(crate) fn push(
        &mut self,
        id: &str,
        global_name: &str,
        scope: SerializedScope,
        catalog_ids: &HashMap<&str, &str>,
    ) {
        let mut table = DispatchTable::default();
        let mut callables = Vec::with_capacity(scope.callables.len());
        for (path, tool) in scope.callables {
            // `serialize_scope` only emits callables whose tool is required,
            // and every required tool was resolved before serialization.
            let Some(catalog_id) = catalog_ids.get(tool.tool_name()) else {
                continue;
            };
            for end in 0..path.len() {
                table
                    .containers
                    .insert(Self::path_key(path.get(..end).unwrap_or_default()));
            }
            table.callables.insert(
                Self::path_key(&path),
                Callable {
                    catalog_id: (*catalog_id).to_owned(),
                    tool,
                },
            );
            callables.push(path);
        }
        for (path, _) in &scope.values {
            table.values.insert(Self::path_key(path));
        }
        self.namespaces.push(GuestNamespace {
            id: id.to_owned(),
            global_name: global_name.to_owned(),
            values: scope.values,
            callables,
        });
        self.tables.push(table);
    }

    /// Sets the prompt text.
    pub(crate) fn set_prompt(&mut self, prompt: Option<String>) {
        self.prompt = prompt;
    }
}

impl fmt::Debug for NamespaceRuntime {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceRuntime")
            .field("namespaces", &self.namespaces)
            .field("prompt", &self.prompt)
            .field("hidden", &self.hidden)
            .finish_non_exhaustive()
    }
}

/// The `exec`-description section for the visible namespaces.
pub(crate) fn prompt_section<'a>(
    visible: impl IntoIterator<Item = (&'a str, &'a str, Option<&'a str>)>,
) -> Option<String> {
    let mut text = String::from(
        "Plugin namespaces (each is a global and also `namespaces.<name>`; its functions return promises):",
    );
    let mut any = false;
    for (global_name, description, prompt) in visible {
        any = true;
        text.push_str("\n- ");
        text.push_str(global_name);
        let description = description.trim();
        if !description.is_empty() {
            text.push_str(": ");
            text.push_str(description);
        }
        if let Some(prompt) = prompt.map(str::trim).filter(|prompt| !prompt.is_empty()) {
            for line in prompt.lines() {
                text.push_str("\n  ");
                text.push_str(line.trim_end());
            }
        }
    }
    any.then_some(text)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn prompt_section_is_none_without_namespaces_and_skips_blank_parts() {
        assert_eq!(prompt_section([]), None);
        let text = prompt_section([("Issues", "  ", Some(" \n "))]).expect("one namespace");
        assert!(text.ends_with("\n- Issues"), "{text}");
    }

    #[test]
    fn non_callables_include_values_their_insides_and_containers() {
        let mut table = DispatchTable::default();
        table.values.insert("config".into());
        table.containers.insert("labels".into());
        assert!(table.holds_non_callable("config"));
        assert!(table.holds_non_callable("config.deep.er"));
        assert!(table.holds_non_callable("labels"));
        assert!(!table.holds_non_callable("labels.remove"));
        assert!(!table.holds_non_callable("configx"));
        assert!(!table.holds_non_callable(".config"));
    }
}
