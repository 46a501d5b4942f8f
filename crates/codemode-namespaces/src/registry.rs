//! The host-owned registry of namespace registrations.

use std::collections::HashMap;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};

use crate::runtime::prompt_section;
use crate::scope::{panic_message, serialize_scope};
use crate::{NamespaceError, NamespaceRuntime, Registration, ScopeContext, ScopeLimits};

/// Where a catalog tool comes from, as far as namespace ownership cares: the catalog entry's
/// origin (`codemode_catalog::ToolOrigin`), mirrored here so that this crate needs no catalog.
///
/// Only [`ToolOwner::Plugin`] can own a namespace's required tool: an MCP server or a client
/// owner that happens to be named like a plugin never stands in for it.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum ToolOwner<'a> {
    /// A core tool of the host.
    Core,
    /// A tool of the bundled or installed plugin with this id.
    Plugin(&'a str),
    /// A tool of the MCP server with this name.
    McpServer(&'a str),
    /// A tool the client application provides, with its owner.
    Client(&'a str),
}

impl ToolOwner<'_> {
    /// Whether this is the plugin `plugin_id`'s own origin.
    pub fn is_plugin(&self, plugin_id: &str) -> bool {
        matches!(self, Self::Plugin(owner) if *owner == plugin_id)
    }
}

/// One tool of the run's catalog, as far as namespaces care.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct CatalogTool<'a> {
    /// The exact catalog id (e.g. `openclaw:github:github_list_issues`).
    pub id: &'a str,
    /// The tool name (e.g. `github_list_issues`).
    pub name: &'a str,
    /// Where the tool comes from; only the registering plugin's own tools make its
    /// namespaces visible.
    pub owner: ToolOwner<'a>,
}

impl<'a> CatalogTool<'a> {
    /// A core tool (change the owner with [`with_owner`](Self::with_owner)).
    pub const fn new(id: &'a str, name: &'a str) -> Self {
        Self {
            id,
            name,
            owner: ToolOwner::Core,
        }
    }

    /// Sets where the tool comes from.
    #[must_use]
    pub const fn with_owner(mut self, owner: ToolOwner<'a>) -> Self {
        self.owner = owner;
        self
    }
}

/// The owner segment of core tool ids: not a plugin, so no namespace can be registered for it.
const CORE_PLUGIN_ID: &str = "core";

/// A namespace that is registered but not visible in a run, and why: the diagnostic a host
/// logs or shows its plugin authors instead of a namespace silently missing.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HiddenNamespace {
    /// The namespace id.
    pub id: String,
    /// Its global name.
    pub global_name: String,
    /// The plugin that registered it.
    pub plugin_id: String,
    /// Why it is hidden.
    pub reason: HiddenReason,
}

/// Why a registered namespace is not visible in a run.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub enum HiddenReason {
    /// No tool of this name is in the run's catalog (the host did not offer it, or its policy
    /// denied it): the ordinary way a namespace is left out.
    MissingTool {
        /// The required tool name.
        tool: String,
    },
    /// A tool of this name is in the catalog, but not from the registering plugin: likely a
    /// mistake of the registration (a namespace over core, MCP or another plugin's tools).
    NotOwned {
        /// The required tool name.
        tool: String,
        /// Who offers the tool instead (`core`, `plugin x`, `MCP server x`, `client x`).
        owner: String,
    },
}

impl std::fmt::Display for HiddenNamespace {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let (id, plugin) = (&self.id, &self.plugin_id);
        match &self.reason {
            HiddenReason::MissingTool { tool } => write!(
                f,
                "code mode namespace `{id}` of plugin `{plugin}` is hidden: its required tool `{tool}` is not in this run's catalog."
            ),
            HiddenReason::NotOwned { tool, owner } => write!(
                f,
                "code mode namespace `{id}` of plugin `{plugin}` is hidden: its required tool `{tool}` comes from {owner}, not from plugin `{plugin}`; only a plugin's own tools make its namespaces visible."
            ),
        }
    }
}

fn describe_owner(owner: ToolOwner<'_>) -> String {
    match owner {
        ToolOwner::Core => "core".to_owned(),
        ToolOwner::Plugin(plugin) => format!("plugin `{plugin}`"),
        ToolOwner::McpServer(server) => format!("MCP server `{server}`"),
        ToolOwner::Client(client) => format!("client `{client}`"),
    }
}

/// A registration and the plugin that made it.
struct Registered {
    plugin_id: String,
    registration: Registration,
}

/// Namespace registrations, keyed by namespace id and owned by plugin id.
///
/// A host owns one (tests make their own, so nothing leaks between cases);
/// [`NamespaceRegistry::global`] is a process-wide instance for hosts that
/// want one. All methods take `&self` and are safe to call from any thread.
///
/// ```
/// use codemode_namespaces::{
///     CatalogTool, NamespaceRegistry, NamespaceTool, Registration, ScopeContext, ScopeValue,
///     ToolOwner,
/// };
///
/// let registry = NamespaceRegistry::new();
/// registry.register_for_plugin(
///     "github",
///     Registration::new("github-issues", "Issues", |_| {
///         Ok(ScopeValue::object([("list", NamespaceTool::new("github_list_issues").into())]))
///     })
///     .with_description("Helpers for GitHub issues.")
///     .with_required_tools(["github_list_issues"]),
/// )?;
///
/// // Visible only when the plugin's own tool is in the run catalog.
/// let owned = CatalogTool::new("openclaw:github:github_list_issues", "github_list_issues")
///     .with_owner(ToolOwner::Plugin("github"));
/// let runtime = registry.prepare_run([owned], &ScopeContext::default())?;
/// assert_eq!(runtime.namespaces()[0].global_name, "Issues");
/// assert!(runtime.prompt_text().unwrap().contains("Helpers for GitHub issues."));
///
/// let impostor = CatalogTool::new("openclaw:other:github_list_issues", "github_list_issues")
///     .with_owner(ToolOwner::Plugin("other"));
/// assert!(registry.prepare_run([impostor], &ScopeContext::default())?.is_empty());
///
/// // An MCP server named like the plugin is not the plugin.
/// let server = CatalogTool::new("mcp:github:github_list_issues", "github_list_issues")
///     .with_owner(ToolOwner::McpServer("github"));
/// assert!(registry.prepare_run([server], &ScopeContext::default())?.is_empty());
///
/// // Plugin rollback.
/// registry.clear_for_plugin("github");
/// assert!(registry.is_empty());
/// # Ok::<(), codemode_namespaces::NamespaceError>(())
/// ```
pub struct NamespaceRegistry {
    entries: Mutex<Vec<Arc<Registered>>>,
    limits: ScopeLimits,
}

static GLOBAL: NamespaceRegistry = NamespaceRegistry::new();

impl NamespaceRegistry {
    /// An empty registry with the default [`ScopeLimits`].
    pub const fn new() -> Self {
        Self {
            entries: Mutex::new(Vec::new()),
            limits: ScopeLimits::new(),
        }
    }

    /// The process-wide registry, for hosts that want one.
    pub fn global() -> &'static NamespaceRegistry {
        &GLOBAL
    }

    /// Uses `limits` when serializing scopes.
    #[must_use]
    pub const fn with_limits(mut self, limits: ScopeLimits) -> Self {
        self.limits = limits;
        self
    }

    /// The limits used when serializing scopes.
    pub const fn limits(&self) -> ScopeLimits {
        self.limits
    }

    fn lock(&self) -> MutexGuard<'_, Vec<Arc<Registered>>> {
        // The list is only ever pushed to or filtered, so a panic elsewhere
        // cannot leave it half-updated: recover from poisoning.
        self.entries.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// Registers a namespace for `plugin_id` after checking it: a non-blank
    /// id and plugin id (and not `core`, whose tools never make a namespace
    /// visible), a valid and unreserved global name (see
    /// [`check_global_name`](crate::check_global_name)), at least one required
    /// tool once names are trimmed and deduplicated, and no other registration
    /// with the same id or global name.
    pub fn register_for_plugin(
        &self,
        plugin_id: &str,
        registration: Registration,
    ) -> Result<(), NamespaceError> {
        if plugin_id.trim().is_empty() {
            return Err(NamespaceError::EmptyPluginId);
        }
        let registration = registration.normalized(plugin_id)?;
        if plugin_id == CORE_PLUGIN_ID {
            return Err(NamespaceError::CorePluginId {
                id: registration.id,
            });
        }
        let mut entries = self.lock();
        for existing in entries.iter() {
            if existing.registration.id == registration.id {
                return Err(NamespaceError::DuplicateId {
                    id: registration.id,
                    owner: existing.plugin_id.clone(),
                });
            }
            if existing.registration.global_name == registration.global_name {
                return Err(NamespaceError::DuplicateGlobalName {
                    id: registration.id,
                    global_name: registration.global_name,
                    other_id: existing.registration.id.clone(),
                });
            }
        }
        entries.push(Arc::new(Registered {
            plugin_id: plugin_id.to_owned(),
            registration,
        }));
        Ok(())
    }

    /// Removes every registration of `plugin_id` (on disable, uninstall or a
    /// failed load) and returns how many were removed.
    pub fn clear_for_plugin(&self, plugin_id: &str) -> usize {
        let mut entries = self.lock();
        let before = entries.len();
        entries.retain(|entry| entry.plugin_id != plugin_id);
        before - entries.len()
    }

    /// Removes every registration (for tests that share a registry).
    pub fn clear_all(&self) {
        self.lock().clear();
    }

    /// The namespace ids registered by `plugin_id`, in registration order.
    pub fn ids_for_plugin(&self, plugin_id: &str) -> Vec<String> {
        self.lock()
            .iter()
            .filter(|entry| entry.plugin_id == plugin_id)
            .map(|entry| entry.registration.id.clone())
            .collect()
    }

    /// How many registrations there are.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether there are no registrations.
    pub fn is_empty(&self) -> bool {
        self.lock().is_empty()
    }

    /// Prepares a run's namespaces from its catalog.
    ///
    /// A registration is visible when every required tool is in `catalog`
    /// with the registering plugin's own origin (`owner ==
    /// ToolOwner::Plugin(plugin_id)`; core, MCP and client tools never count,
    /// whatever their owner is called); if several such tools share a name,
    /// the first in catalog order is used. Each registration that is not visible
    /// is listed, with the reason, by [`NamespaceRuntime::hidden`]. For each visible
    /// registration, in registration order, `create_scope(ctx)` is called
    /// (without holding the registry lock) and its scope serialized. Any
    /// failure there fails the whole preparation, before guest code runs.
    pub fn prepare_run<'a>(
        &self,
        catalog: impl IntoIterator<Item = CatalogTool<'a>>,
        ctx: &ScopeContext,
    ) -> Result<NamespaceRuntime, NamespaceError> {
        let catalog: Vec<CatalogTool<'a>> = catalog.into_iter().collect();
        let entries: Vec<Arc<Registered>> = self.lock().clone();
        let mut runtime = NamespaceRuntime::default();
        let mut visible: Vec<Arc<Registered>> = Vec::new();
        for entry in entries {
            let catalog_ids = match resolve_required_tools(&entry, &catalog) {
                Ok(ids) => ids,
                Err(reason) => {
                    runtime.hide(HiddenNamespace {
                        id: entry.registration.id.clone(),
                        global_name: entry.registration.global_name.clone(),
                        plugin_id: entry.plugin_id.clone(),
                        reason,
                    });
                    continue;
                }
            };
            let registration = &entry.registration;
            let scope = catch_unwind(AssertUnwindSafe(|| (registration.create_scope)(ctx)))
                .unwrap_or_else(|panic| Err(panic_message(panic.as_ref(), "create_scope")))
                .map_err(|message| NamespaceError::CreateScope {
                    namespace: registration.id.clone(),
                    message,
                })?;
            let serialized = serialize_scope(
                &registration.id,
                &registration.global_name,
                &registration.required_tool_names,
                self.limits,
                &scope,
            )?;
            runtime.push(
                &registration.id,
                &registration.global_name,
                serialized,
                &catalog_ids,
            );
            visible.push(entry);
        }
        runtime.set_prompt(prompt_section(visible.iter().map(|entry| {
            let registration = &entry.registration;
            (
                registration.global_name.as_str(),
                registration.description.as_str(),
                registration.prompt.as_deref(),
            )
        })));
        Ok(runtime)
    }
}

impl Default for NamespaceRegistry {
    fn default() -> Self {
        Self::new()
    }
}

impl std::fmt::Debug for NamespaceRegistry {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        let entries = self.lock();
        f.debug_struct("NamespaceRegistry")
            .field(
                "namespaces",
                &entries
                    .iter()
                    .map(|entry| (&entry.plugin_id, &entry.registration))
                    .collect::<Vec<_>>(),
            )
            .field("limits", &self.limits)
            .finish()
    }
}

/// Maps each required tool name to the exact catalog id of the tool of that
/// name from the registering plugin's own origin; the reason the namespace is
/// hidden when one is missing.
fn resolve_required_tools<'c>(
    entry: &Registered,
    catalog: &[CatalogTool<'c>],
) -> Result<HashMap<&'c str, &'c str>, HiddenReason> {
    let mut ids = HashMap::new();
    for name in &entry.registration.required_tool_names {
        let owned = catalog
            .iter()
            .find(|tool| tool.name == name && tool.owner.is_plugin(&entry.plugin_id));
        let Some(tool) = owned else {
            let tool = name.clone();
            return Err(match catalog.iter().find(|other| other.name == name) {
                Some(other) => HiddenReason::NotOwned {
                    tool,
                    owner: describe_owner(other.owner),
                },
                None => HiddenReason::MissingTool { tool },
            });
        };
        ids.insert(tool.name, tool.id);
    }
    Ok(ids)
}
