//! Plugin-owned domain namespaces for code mode (globals such as `Issues` over a plugin's
//! tools): the registry a
//! trusted plugin loader fills, the per-run visibility check against the run
//! catalog, the serialization of each namespace's scope into a plain guest
//! descriptor, and the dispatch table that turns a guest call such as
//! `Issues.list({ state: "open" })` into an exact catalog id and tool input.
//!
//! This crate knows nothing about QuickJS, the catalog crate, MCP or tool
//! execution: plain data comes in ([`CatalogTool`] with its [`ToolOwner`],
//! [`ScopeContext`]), a
//! descriptor ([`GuestNamespace`]) and a [`DispatchTarget`] come out. The core
//! installs the descriptor in the sandbox, sends each call back through
//! [`NamespaceRuntime::dispatch`] and runs the target through the host's tool
//! executor, so namespace calls get the same policy, approvals, cancellation
//! and suspend/resume as `tools.call`. Host functions and objects never reach
//! the guest: a scope is made of JSON and [`NamespaceTool`] markers only.
//!
//! Only a plugin's own tools ([`ToolOwner::Plugin`]) make its namespaces
//! visible. Global names are checked against the workspace's one list of
//! reserved words and code-mode globals (`codemode-guest-names`, its only
//! workspace dependency) and against the guest VM's built-ins.
//!
//! No feature flags.
//!
//! ```
//! use codemode_namespaces::{
//!     CatalogTool, NamespaceRegistry, NamespaceRuntime, NamespaceTool, Registration,
//!     ScopeContext, ScopeValue, ToolOwner,
//! };
//! use serde_json::json;
//!
//! let registry = NamespaceRegistry::new();
//! registry.register_for_plugin(
//!     "github",
//!     Registration::new("github-issues", "Issues", |ctx| {
//!         Ok(ScopeValue::object([
//!             ("repository", ScopeValue::from(ctx.config.clone())),
//!             ("list", NamespaceTool::new("github_list_issues").into()),
//!             (
//!                 "update",
//!                 NamespaceTool::new("github_update_issue")
//!                     .with_mapper(|args| {
//!                         Ok(json!({ "number": args.first(), "patch": args.get(1) }))
//!                     })
//!                     .into(),
//!             ),
//!         ]))
//!     })
//!     .with_description("Helpers for GitHub issues in the current repository.")
//!     .with_required_tools(["github_list_issues", "github_update_issue"])
//!     .with_prompt("Use Issues.list(params) and Issues.update(number, patch)."),
//! )?;
//!
//! let catalog = [
//!     CatalogTool::new("openclaw:github:github_list_issues", "github_list_issues")
//!         .with_owner(ToolOwner::Plugin("github")),
//!     CatalogTool::new("openclaw:github:github_update_issue", "github_update_issue")
//!         .with_owner(ToolOwner::Plugin("github")),
//! ];
//! let ctx = ScopeContext { config: json!({ "owner": "octo" }), ..ScopeContext::default() };
//! let runtime = registry.prepare_run(catalog, &ctx)?;
//!
//! let issues = &runtime.namespaces()[0];
//! assert_eq!(issues.values, vec![(vec!["repository".to_owned()], json!({ "owner": "octo" }))]);
//! let update = &issues.callables[1];
//! let target = runtime.dispatch(
//!     &issues.id,
//!     &NamespaceRuntime::path_key(update),
//!     &[json!(7), json!({ "state": "closed" })],
//!     false,
//! )?;
//! assert_eq!(target.catalog_id, "openclaw:github:github_update_issue");
//! assert_eq!(target.input, json!({ "number": 7, "patch": { "state": "closed" } }));
//! # Ok::<(), codemode_namespaces::NamespaceError>(())
//! ```
#![forbid(unsafe_code)]

mod error;
mod registration;
mod registry;
mod runtime;
mod scope;

pub use error::NamespaceError;
pub use registration::{
    CODE_MODE_GLOBALS, CreateScope, JS_BUILTIN_GLOBALS, OBJECT_PROTOTYPE_MEMBERS,
    RESERVED_GLOBAL_PREFIX, Registration, check_global_name,
};
pub use registry::{CatalogTool, HiddenNamespace, HiddenReason, NamespaceRegistry, ToolOwner};
pub use runtime::{DispatchTarget, GuestNamespace, NamespaceRuntime};
pub use scope::{
    CancellationState, DEFAULT_MAX_SCOPE_DEPTH, DEFAULT_MAX_SCOPE_NODES, InputMapper,
    MAX_SCOPE_DEPTH_CEILING, NamespaceTool, PATH_SEPARATOR, ScopeContext, ScopeLimits, ScopeValue,
};
