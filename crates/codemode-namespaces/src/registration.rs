//! What a trusted plugin loader registers, and the checks a registration must pass.

use std::fmt;
use std::sync::Arc;

use crate::{NamespaceError, ScopeContext, ScopeValue};

/// Builds a namespace's scope for one run.
///
/// Called once per run for each visible namespace, before guest code starts.
/// It runs on the host with the run's [`ScopeContext`]; an `Err` (or a panic)
/// fails the run's preparation with [`NamespaceError::CreateScope`].
pub type CreateScope = Arc<dyn Fn(&ScopeContext) -> Result<ScopeValue, String> + Send + Sync>;

/// A namespace a trusted plugin loader offers to guest code: a global (`Issues`) whose
/// functions call the plugin's own tools.
///
/// ```
/// use codemode_namespaces::{NamespaceTool, Registration, ScopeValue};
///
/// let registration = Registration::new("github-issues", "Issues", |ctx| {
///     Ok(ScopeValue::object([
///         ("repository", ScopeValue::from(ctx.config.clone())),
///         ("list", NamespaceTool::new("github_list_issues").into()),
///     ]))
/// })
/// .with_description("Helpers for GitHub issues in the current repository.")
/// .with_required_tools(["github_list_issues"])
/// .with_prompt("Use Issues.list(params).");
/// assert_eq!(registration.global_name, "Issues");
/// ```
#[derive(Clone)]
pub struct Registration {
    /// Stable namespace id; it crosses the bridge with every call. Trimmed; must not be blank.
    pub id: String,
    /// The guest global (also `namespaces.<global_name>`): a plain ASCII JavaScript
    /// identifier that is not reserved (see [`check_global_name`]).
    pub global_name: String,
    /// One line for the `exec` description when the namespace is visible.
    pub description: String,
    /// Tools that must all be in the run catalog, owned by the registering plugin,
    /// for the namespace to be visible; also the only tools its callables may target.
    /// Trimmed, blanks dropped, duplicates removed; at least one must remain.
    pub required_tool_names: Vec<String>,
    /// Optional usage notes appended after the description in the `exec` description.
    pub prompt: Option<String>,
    /// Builds the scope for a run.
    pub create_scope: CreateScope,
}

impl Registration {
    /// A registration with the given id, global name and scope builder; no
    /// description, prompt or required tools yet (add at least one tool with
    /// [`with_required_tools`](Self::with_required_tools) before registering).
    pub fn new(
        id: impl Into<String>,
        global_name: impl Into<String>,
        create_scope: impl Fn(&ScopeContext) -> Result<ScopeValue, String> + Send + Sync + 'static,
    ) -> Self {
        Self {
            id: id.into(),
            global_name: global_name.into(),
            description: String::new(),
            required_tool_names: Vec::new(),
            prompt: None,
            create_scope: Arc::new(create_scope),
        }
    }

    /// Sets the description.
    #[must_use]
    pub fn with_description(mut self, description: impl Into<String>) -> Self {
        self.description = description.into();
        self
    }

    /// Adds required tool names.
    #[must_use]
    pub fn with_required_tools<I, S>(mut self, names: I) -> Self
    where
        I: IntoIterator<Item = S>,
        S: Into<String>,
    {
        self.required_tool_names
            .extend(names.into_iter().map(Into::into));
        self
    }

    /// Sets the prompt.
    #[must_use]
    pub fn with_prompt(mut self, prompt: impl Into<String>) -> Self {
        self.prompt = Some(prompt.into());
        self
    }

    /// Trims the id and the tool names, drops blank and duplicate tool names
    /// (first occurrence wins), and checks the id, global name and tool list.
    /// Uniqueness against other registrations is the registry's job.
    pub(crate) fn normalized(mut self, plugin_id: &str) -> Result<Self, NamespaceError> {
        let id = self.id.trim();
        if id.is_empty() {
            return Err(NamespaceError::EmptyId {
                plugin_id: plugin_id.to_owned(),
            });
        }
        self.id = id.to_owned();
        check_global_name(&self.global_name)?;
        let mut names: Vec<String> = Vec::with_capacity(self.required_tool_names.len());
        for name in &self.required_tool_names {
            let name = name.trim();
            if !name.is_empty() && !names.iter().any(|seen| seen == name) {
                names.push(name.to_owned());
            }
        }
        if names.is_empty() {
            return Err(NamespaceError::NoRequiredTools { id: self.id });
        }
        self.required_tool_names = names;
        Ok(self)
    }
}

impl fmt::Debug for Registration {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Registration")
            .field("id", &self.id)
            .field("global_name", &self.global_name)
            .field("description", &self.description)
            .field("required_tool_names", &self.required_tool_names)
            .field("prompt", &self.prompt)
            .finish_non_exhaustive()
    }
}

/// Globals that code mode itself installs in the guest (`ALL_TOOLS`, `tools`, `MCP`, ...); the
/// workspace's one list,
/// from `codemode-guest-names`.
pub const CODE_MODE_GLOBALS: &[&str] = codemode_guest_names::CODE_MODE_GLOBALS;

/// Prefix of code mode's internal bridge globals; compared ASCII-case-insensitively.
pub const RESERVED_GLOBAL_PREFIX: &str = codemode_guest_names::INTERNAL_GLOBAL_PREFIX;

/// The members every object inherits from `Object.prototype`, the global object included: a
/// namespace global of one of these names would shadow it for the whole program (`toString`,
/// `valueOf`, `__proto__` would even change how the global object itself behaves).
pub const OBJECT_PROTOTYPE_MEMBERS: &[&str] = &[
    "__defineGetter__",
    "__defineSetter__",
    "__lookupGetter__",
    "__lookupSetter__",
    "__proto__",
    "constructor",
    "hasOwnProperty",
    "isPrototypeOf",
    "propertyIsEnumerable",
    "toLocaleString",
    "toString",
    "valueOf",
];

/// Globals of the JavaScript language, of QuickJS, of the sandbox (`atob`, `btoa`,
/// `DOMException`, `performance`), and of common hosts, which a namespace must not shadow (a
/// guest program would stop working as expected). `codemode-core`'s tests check that every own
/// property of the guest VM's global object is rejected by [`check_global_name`], so a global
/// the VM gains cannot be missed here.
pub const JS_BUILTIN_GLOBALS: &[&str] = &[
    // Value properties and functions of the global object.
    "globalThis",
    "Infinity",
    "NaN",
    "undefined",
    // `eval` is a reserved word here (a restricted binding), rejected before this list is read.
    "isFinite",
    "isNaN",
    "parseFloat",
    "parseInt",
    "decodeURI",
    "decodeURIComponent",
    "encodeURI",
    "encodeURIComponent",
    "escape",
    "unescape",
    // Constructors and namespaces.
    "AggregateError",
    "Array",
    "ArrayBuffer",
    "AsyncDisposableStack",
    "Atomics",
    "BigInt",
    "BigInt64Array",
    "BigUint64Array",
    "Boolean",
    "DataView",
    "Date",
    "DisposableStack",
    "Error",
    "EvalError",
    "FinalizationRegistry",
    "Float16Array",
    "Float32Array",
    "Float64Array",
    "Function",
    "Int8Array",
    "Int16Array",
    "Int32Array",
    "InternalError",
    "Intl",
    "Iterator",
    "JSON",
    "Map",
    "Math",
    "Number",
    "Object",
    "Promise",
    "Proxy",
    "RangeError",
    "ReferenceError",
    "Reflect",
    "RegExp",
    "Set",
    "SharedArrayBuffer",
    "String",
    "SuppressedError",
    "Symbol",
    "SyntaxError",
    "TypeError",
    "Uint8Array",
    "Uint8ClampedArray",
    "Uint16Array",
    "Uint32Array",
    "URIError",
    "WeakMap",
    "WeakRef",
    "WeakSet",
    "WebAssembly",
    // Web platform globals the sandbox provides.
    "DOMException",
    "atob",
    "btoa",
    "TextEncoder",
    "TextDecoder",
    // Host globals a guest program may expect, or that module checks look for.
    "console",
    "print",
    "queueMicrotask",
    "setTimeout",
    "clearTimeout",
    "setInterval",
    "clearInterval",
    "structuredClone",
    "performance",
    "require",
    "module",
    "exports",
    "process",
    "global",
    "window",
    "self",
];

/// What is wrong with a global name.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum GlobalNameProblem {
    Invalid(&'static str),
    Reserved(&'static str),
}

/// Checks that `name` can be a namespace global: a plain ASCII JavaScript
/// identifier (`[A-Za-z_$][A-Za-z0-9_$]*`, deliberately stricter than the
/// language's Unicode identifiers), not a reserved word (the list of
/// `codemode-guest-names`: ECMAScript's reserved words, the strict-mode ones,
/// `arguments` and `eval`), not a code-mode global ([`CODE_MODE_GLOBALS`],
/// anything starting [`RESERVED_GLOBAL_PREFIX`]), not a built-in global
/// ([`JS_BUILTIN_GLOBALS`]) and not a member of `Object.prototype`
/// ([`OBJECT_PROTOTYPE_MEMBERS`]).
///
/// ```
/// use codemode_namespaces::check_global_name;
///
/// assert!(check_global_name("Issues").is_ok());
/// assert!(check_global_name("tools").is_err());
/// assert!(check_global_name("Promise").is_err());
/// assert!(check_global_name("my-issues").is_err());
/// ```
pub fn check_global_name(name: &str) -> Result<(), NamespaceError> {
    let global_name = || crate::error::echo(name);
    match global_name_problem(name) {
        None => Ok(()),
        Some(GlobalNameProblem::Invalid(reason)) => Err(NamespaceError::InvalidGlobalName {
            global_name: global_name(),
            reason,
        }),
        Some(GlobalNameProblem::Reserved(reason)) => Err(NamespaceError::ReservedGlobalName {
            global_name: global_name(),
            reason,
        }),
    }
}

fn global_name_problem(name: &str) -> Option<GlobalNameProblem> {
    use GlobalNameProblem::{Invalid, Reserved};
    let mut chars = name.chars();
    let Some(first) = chars.next() else {
        return Some(Invalid("it is empty"));
    };
    if !(first.is_ascii_alphabetic() || first == '_' || first == '$') {
        return Some(Invalid("it must start with an ASCII letter, `_` or `$`"));
    }
    if !chars.all(|c| c.is_ascii_alphanumeric() || c == '_' || c == '$') {
        return Some(Invalid(
            "it may only contain ASCII letters, digits, `_` and `$`",
        ));
    }
    // The workspace's one reserved-word list: ECMAScript's reserved words, the strict-mode ones
    // and the restricted bindings `arguments` and `eval`.
    if codemode_guest_names::is_reserved_word(name) {
        return Some(Invalid("it is a JavaScript reserved word"));
    }
    if CODE_MODE_GLOBALS.contains(&name) {
        return Some(Reserved("code mode installs a global with this name"));
    }
    if codemode_guest_names::has_internal_prefix(name) {
        return Some(Reserved(
            "the `__openclaw` prefix is reserved for code mode's internal bridge",
        ));
    }
    if JS_BUILTIN_GLOBALS.contains(&name) {
        return Some(Reserved("it is a JavaScript built-in global"));
    }
    if OBJECT_PROTOTYPE_MEMBERS.contains(&name) {
        return Some(Reserved(
            "every object, the global object included, inherits it from Object.prototype",
        ));
    }
    None
}

#[cfg(test)]
mod tests {
    use super::*;

    fn registration(id: &str, tools: &[&str]) -> Registration {
        Registration::new(id, "Issues", |_| Ok(ScopeValue::object::<_, String>([])))
            .with_required_tools(tools.iter().copied())
    }

    #[test]
    fn normalization_trims_and_deduplicates_keeping_first_order() {
        let normalized = registration(" issues\t", &[" b ", "a", "b", "", " a", "c"])
            .normalized("plugin")
            .expect("valid");
        assert_eq!(normalized.id, "issues");
        assert_eq!(normalized.required_tool_names, ["b", "a", "c"]);
    }

    #[test]
    fn normalization_reports_the_first_problem() {
        assert_eq!(
            registration("", &[]).normalized("plugin").map(|_| ()),
            Err(NamespaceError::EmptyId {
                plugin_id: "plugin".into()
            })
        );
        assert_eq!(
            registration("issues", &[" ", ""])
                .normalized("plugin")
                .map(|_| ()),
            Err(NamespaceError::NoRequiredTools {
                id: "issues".into()
            })
        );
    }

    #[test]
    fn reserved_lists_hold_only_valid_identifiers() {
        // Otherwise the reserved check could never fire for them.
        for name in CODE_MODE_GLOBALS
            .iter()
            .chain(JS_BUILTIN_GLOBALS)
            .chain(OBJECT_PROTOTYPE_MEMBERS)
        {
            assert!(
                !matches!(
                    global_name_problem(name),
                    Some(GlobalNameProblem::Invalid(_)) | None
                ),
                "{name}"
            );
        }
    }

    #[test]
    fn long_rejected_names_are_echoed_shortened() {
        let name = format!("bad-{}", "x".repeat(10_000));
        let message = check_global_name(&name).expect_err("invalid").to_string();
        assert!(message.len() < 300, "{}", message.len());
    }
}
