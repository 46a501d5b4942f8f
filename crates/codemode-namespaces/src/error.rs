//! The crate's one error type.

/// Everything that can go wrong while registering a namespace, preparing a
/// run's namespaces, or dispatching a guest call.
///
/// Messages name the namespace and the offending path or name so a plugin
/// author (registration and scope errors) or the model (dispatch errors, which
/// the core surfaces as catchable guest errors) can act on them. Values that
/// came from guest code are shortened before they are echoed.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum NamespaceError {
    /// `register_for_plugin` was called with an empty or blank plugin id.
    #[error("code mode namespace registration needs a non-empty plugin id.")]
    EmptyPluginId,

    /// `register_for_plugin` was called with the plugin id `core`, the owner of the host's
    /// core tools: core tools never make a namespace visible, so the namespace could never
    /// appear.
    #[error(
        "code mode namespace `{id}` cannot be registered for plugin `core`: core tools never make a namespace visible (only a plugin's own tools do); register it for the plugin whose tools it uses."
    )]
    CorePluginId {
        /// The namespace id.
        id: String,
    },

    /// The registration's `id` is empty or blank.
    #[error("code mode namespace registration from plugin `{plugin_id}` has an empty id.")]
    EmptyId {
        /// The registering plugin.
        plugin_id: String,
    },

    /// Another registration already uses this namespace id.
    #[error(
        "code mode namespace id `{id}` is already registered by plugin `{owner}`; clear it before registering it again."
    )]
    DuplicateId {
        /// The namespace id.
        id: String,
        /// The plugin that owns the existing registration.
        owner: String,
    },

    /// The `global_name` is not a plain JavaScript identifier.
    #[error(
        "code mode namespace global name `{global_name}` is not a JavaScript identifier: {reason}."
    )]
    InvalidGlobalName {
        /// The rejected global name.
        global_name: String,
        /// What is wrong with it.
        reason: &'static str,
    },

    /// The `global_name` collides with a code-mode or JavaScript built-in global.
    #[error("code mode namespace global name `{global_name}` is reserved: {reason}.")]
    ReservedGlobalName {
        /// The rejected global name.
        global_name: String,
        /// Which reserved set it belongs to.
        reason: &'static str,
    },

    /// Another registration already uses this `global_name`.
    #[error(
        "code mode namespace `{id}`: global name `{global_name}` is already used by namespace `{other_id}`."
    )]
    DuplicateGlobalName {
        /// The namespace id being registered.
        id: String,
        /// The contested global name.
        global_name: String,
        /// The registration that already holds it.
        other_id: String,
    },

    /// `required_tool_names` is empty after trimming and dropping blanks.
    #[error(
        "code mode namespace `{id}` must name at least one required tool (blank names do not count)."
    )]
    NoRequiredTools {
        /// The namespace id.
        id: String,
    },

    /// The plugin's `create_scope` returned an error or panicked.
    #[error("code mode namespace `{namespace}` could not create its scope: {message}")]
    CreateScope {
        /// The namespace id.
        namespace: String,
        /// The plugin's message (or the panic message).
        message: String,
    },

    /// `create_scope` returned something other than an object.
    #[error("code mode namespace `{namespace}`: the scope must be an object, found {found}.")]
    ScopeNotObject {
        /// The namespace id.
        namespace: String,
        /// What was found instead (`"array"`, `"string"`, ...).
        found: &'static str,
    },

    /// A scope key is not safe as a property path segment.
    #[error("code mode namespace `{namespace}`: unsafe key {segment:?} at `{path}`: {reason}.")]
    UnsafeSegment {
        /// The namespace id.
        namespace: String,
        /// The guest path of the object holding the key.
        path: String,
        /// The rejected key (shortened).
        segment: String,
        /// Why it is rejected.
        reason: &'static str,
    },

    /// A scope object lists the same key twice.
    #[error("code mode namespace `{namespace}`: duplicate key at `{path}`.")]
    DuplicateKey {
        /// The namespace id.
        namespace: String,
        /// The guest path of the duplicated member.
        path: String,
    },

    /// A namespace-tool marker targets a tool that is not in `required_tool_names`.
    #[error(
        "code mode namespace `{namespace}`: `{path}` targets tool `{tool}`, which is not one of the namespace's required tools."
    )]
    UndeclaredTool {
        /// The namespace id.
        namespace: String,
        /// The guest path of the marker.
        path: String,
        /// The undeclared tool name (shortened).
        tool: String,
    },

    /// A namespace-tool marker sits inside an array; callables must be object members.
    #[error(
        "code mode namespace `{namespace}`: the namespace tool at `{path}` is inside an array; put callables in objects."
    )]
    ToolInArray {
        /// The namespace id.
        namespace: String,
        /// The guest path of the marker.
        path: String,
    },

    /// The scope nests deeper than [`ScopeLimits::max_depth`](crate::ScopeLimits::max_depth).
    #[error(
        "code mode namespace `{namespace}`: the scope nests deeper than {limit} levels at `{path}`."
    )]
    ScopeTooDeep {
        /// The namespace id.
        namespace: String,
        /// The path where the limit was crossed.
        path: String,
        /// The depth limit.
        limit: usize,
    },

    /// The serialized scope has more nodes than [`ScopeLimits::max_nodes`](crate::ScopeLimits::max_nodes).
    #[error(
        "code mode namespace `{namespace}`: the scope has more than {limit} values once shared objects are expanded."
    )]
    ScopeTooLarge {
        /// The namespace id.
        namespace: String,
        /// The node limit.
        limit: usize,
    },

    /// Dispatch: no visible namespace has this id in the current run.
    #[error("unknown code mode namespace `{namespace}`.")]
    UnknownNamespace {
        /// The requested id (shortened).
        namespace: String,
    },

    /// Dispatch: the path is not a serialized member of the namespace.
    #[error("code mode namespace `{namespace}` has no function at `{path}`.")]
    UnknownPath {
        /// The namespace id (shortened).
        namespace: String,
        /// The requested path (shortened).
        path: String,
    },

    /// Dispatch: the path names a value or an object, not a function.
    #[error("code mode namespace `{namespace}`: `{path}` is not a function.")]
    NotCallable {
        /// The namespace id.
        namespace: String,
        /// The requested path (shortened).
        path: String,
    },

    /// Dispatch: the run is restart-safe and namespace calls may have side effects.
    #[error("restart-safe code mode cannot call plugin namespaces.")]
    RestartSafe,

    /// Dispatch: the callable's input mapper rejected the guest arguments (or panicked).
    #[error("code mode namespace `{namespace}`: invalid arguments for `{path}`: {message}")]
    InputMapping {
        /// The namespace id.
        namespace: String,
        /// The called path.
        path: String,
        /// The mapper's message.
        message: String,
    },
}

/// The longest excerpt of a caller-supplied string echoed in an error.
const ECHO_LIMIT: usize = 120;

/// Shortens a string that may come from guest code before it goes into an error message.
pub(crate) fn echo(text: &str) -> String {
    if text.len() <= ECHO_LIMIT {
        return text.to_owned();
    }
    let mut end = ECHO_LIMIT;
    while !text.is_char_boundary(end) {
        end -= 1;
    }
    format!("{}…", &text[..end])
}

#[cfg(test)]
mod tests {
    use super::echo;

    #[test]
    fn echo_shortens_on_a_char_boundary() {
        assert_eq!(echo("short"), "short");
        let long = "é".repeat(100);
        let shortened = echo(&long);
        assert!(shortened.ends_with('…'));
        assert!(shortened.len() <= super::ECHO_LIMIT + '…'.len_utf8());
    }
}
