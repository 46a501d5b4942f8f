//! Scope values a plugin's `create_scope` returns, the run context it receives,
//! and the serializer that turns a scope into guest values and callable paths.

use std::collections::HashSet;
use std::fmt;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

use serde_json::{Map, Value};

use crate::NamespaceError;
use crate::error::echo;

/// The character that joins path segments in a path key (see
/// [`NamespaceRuntime::path_key`](crate::NamespaceRuntime::path_key)). Scope
/// keys may not contain it.
pub const PATH_SEPARATOR: char = '.';

/// Default for [`ScopeLimits::max_depth`].
pub const DEFAULT_MAX_SCOPE_DEPTH: usize = 64;

/// Hard ceiling for [`ScopeLimits::max_depth`]: the serializer recurses once per
/// level, so the limit also bounds its stack use.
pub const MAX_SCOPE_DEPTH_CEILING: usize = 256;

/// Default for [`ScopeLimits::max_nodes`].
pub const DEFAULT_MAX_SCOPE_NODES: usize = 50_000;

/// Limits applied while serializing one namespace's scope.
///
/// They protect the host and the sandbox from a runaway `create_scope` (a
/// huge configuration copied in, or shared sub-objects that expand
/// exponentially); they say nothing about tool inputs or results, which the
/// core's bridge limits cover.
///
/// ```
/// use codemode_namespaces::{DEFAULT_MAX_SCOPE_NODES, ScopeLimits};
///
/// let limits = ScopeLimits::new().with_max_depth(8);
/// assert_eq!(limits.max_depth(), 8);
/// assert_eq!(limits.max_nodes(), DEFAULT_MAX_SCOPE_NODES);
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ScopeLimits {
    max_depth: usize,
    max_nodes: usize,
}

impl ScopeLimits {
    /// The default limits ([`DEFAULT_MAX_SCOPE_DEPTH`], [`DEFAULT_MAX_SCOPE_NODES`]).
    pub const fn new() -> Self {
        Self {
            max_depth: DEFAULT_MAX_SCOPE_DEPTH,
            max_nodes: DEFAULT_MAX_SCOPE_NODES,
        }
    }

    /// Sets the deepest nesting allowed. Every level counts: scope objects,
    /// arrays, [`ScopeValue::Shared`] indirections and the nesting inside JSON
    /// values. Clamped to `1..=`[`MAX_SCOPE_DEPTH_CEILING`].
    #[must_use]
    pub const fn with_max_depth(mut self, depth: usize) -> Self {
        self.max_depth = if depth == 0 {
            1
        } else if depth > MAX_SCOPE_DEPTH_CEILING {
            MAX_SCOPE_DEPTH_CEILING
        } else {
            depth
        };
        self
    }

    /// Sets the most values (scope nodes plus every JSON value inside them)
    /// one scope may hold after shared sub-objects are expanded. At least 1.
    #[must_use]
    pub const fn with_max_nodes(mut self, nodes: usize) -> Self {
        self.max_nodes = if nodes == 0 { 1 } else { nodes };
        self
    }

    /// The deepest nesting allowed.
    pub const fn max_depth(&self) -> usize {
        self.max_depth
    }

    /// The most values one scope may hold.
    pub const fn max_nodes(&self) -> usize {
        self.max_nodes
    }
}

impl Default for ScopeLimits {
    fn default() -> Self {
        Self::new()
    }
}

/// A run's cancellation flag, shared between the host and `create_scope`.
///
/// ```
/// use codemode_namespaces::CancellationState;
///
/// let state = CancellationState::new();
/// let seen_by_plugin = state.clone();
/// state.cancel();
/// assert!(seen_by_plugin.is_cancelled());
/// ```
#[derive(Debug, Clone, Default)]
pub struct CancellationState(Arc<AtomicBool>);

impl CancellationState {
    /// A fresh, not cancelled state.
    pub fn new() -> Self {
        Self::default()
    }

    /// Wraps a flag the host already shares with its run.
    pub fn from_flag(flag: Arc<AtomicBool>) -> Self {
        Self(flag)
    }

    /// Marks the run as cancelled.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the run was cancelled.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::SeqCst)
    }
}

/// What `create_scope` learns about the run it builds a scope for.
#[derive(Debug, Clone, Default)]
pub struct ScopeContext {
    /// The agent running the code.
    pub agent_id: Option<String>,
    /// The host's session key.
    pub session_key: Option<String>,
    /// The host's session id.
    pub session_id: Option<String>,
    /// The agent run id.
    pub run_id: Option<String>,
    /// The code-mode configuration (`tools.codeMode`) as JSON.
    pub config: Value,
    /// The run's cancellation state.
    pub cancellation: CancellationState,
}

/// Maps the guest's argument list to the input object of the underlying tool.
///
/// Runs on the host with guest-supplied arguments: it must not trust them
/// (an `Err` or a panic becomes [`NamespaceError::InputMapping`]).
pub type InputMapper = Arc<dyn Fn(&[Value]) -> Result<Value, String> + Send + Sync>;

/// A scope member the guest can call: it runs the catalog tool `tool_name`
/// (which must be one of the namespace's required tools) through the host's
/// normal tool path.
///
/// ```
/// use codemode_namespaces::NamespaceTool;
/// use serde_json::json;
///
/// let update = NamespaceTool::new("github_update_issue").with_mapper(|args| {
///     Ok(json!({ "number": args.first().cloned(), "patch": args.get(1).cloned() }))
/// });
/// let input = update.map_input(&[json!(7), json!({ "state": "closed" })]).unwrap();
/// assert_eq!(input, json!({ "number": 7, "patch": { "state": "closed" } }));
///
/// // Without a mapper: the first argument, or `{}` when it is missing or null.
/// let list = NamespaceTool::new("github_list_issues");
/// assert_eq!(list.map_input(&[]).unwrap(), json!({}));
/// ```
#[derive(Clone)]
pub struct NamespaceTool {
    tool_name: String,
    mapper: Option<InputMapper>,
}

impl NamespaceTool {
    /// A callable that passes the first guest argument (or `{}`) to `tool_name`.
    pub fn new(tool_name: impl Into<String>) -> Self {
        Self {
            tool_name: tool_name.into(),
            mapper: None,
        }
    }

    /// Uses `mapper` to build the tool input from the guest's arguments.
    #[must_use]
    pub fn with_mapper(
        mut self,
        mapper: impl Fn(&[Value]) -> Result<Value, String> + Send + Sync + 'static,
    ) -> Self {
        self.mapper = Some(Arc::new(mapper));
        self
    }

    /// The catalog tool name this callable targets.
    pub fn tool_name(&self) -> &str {
        &self.tool_name
    }

    /// Builds the tool input from guest arguments. Without a mapper: the first
    /// argument, or `{}` when there is none or it is `null` (an omitted
    /// argument crosses the JSON bridge as `null`). A panicking mapper yields
    /// an `Err` rather than unwinding into the host.
    pub fn map_input(&self, args: &[Value]) -> Result<Value, String> {
        let Some(mapper) = &self.mapper else {
            return Ok(match args.first() {
                None | Some(Value::Null) => Value::Object(Map::new()),
                Some(first) => first.clone(),
            });
        };
        catch_unwind(AssertUnwindSafe(|| mapper(args)))
            .unwrap_or_else(|panic| Err(panic_message(panic.as_ref(), "the input mapper")))
    }
}

impl fmt::Debug for NamespaceTool {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("NamespaceTool")
            .field("tool_name", &self.tool_name)
            .field("mapper", &self.mapper.as_ref().map(|_| "<fn>"))
            .finish()
    }
}

/// The text of a caught panic, for an error message.
pub(crate) fn panic_message(panic: &(dyn std::any::Any + Send), what: &str) -> String {
    let detail = panic
        .downcast_ref::<&str>()
        .map(|s| (*s).to_owned())
        .or_else(|| panic.downcast_ref::<String>().cloned());
    match detail {
        Some(detail) => format!("{what} panicked: {detail}"),
        None => format!("{what} panicked"),
    }
}

/// What `create_scope` may return: plain JSON data, arrays, nested objects,
/// shared sub-objects and [`NamespaceTool`] markers.
///
/// No variant can hold a host function or host object, so "raw host
/// functions in the scope" cannot be written at all: the only callable member
/// is a [`NamespaceTool`], which names a catalog tool. Cycles cannot be built
/// either: a [`Shared`](ScopeValue::Shared) value is immutable once wrapped in
/// its `Arc`, so it cannot come to contain itself. JSON values are JSON-safe
/// by construction (`serde_json` has no NaN, functions or cycles; `f64`
/// conversions turn NaN and infinities into `null`).
///
/// ```
/// use std::sync::Arc;
/// use codemode_namespaces::{NamespaceTool, ScopeValue};
/// use serde_json::json;
///
/// let defaults = Arc::new(ScopeValue::from(json!({ "per_page": 50 })));
/// let scope = ScopeValue::object([
///     ("repository", ScopeValue::from("octo/repo")),
///     ("list", NamespaceTool::new("github_list_issues").into()),
///     ("defaults", ScopeValue::Shared(Arc::clone(&defaults))),
///     ("labels", ScopeValue::object([("defaults", ScopeValue::Shared(defaults))])),
/// ]);
/// assert!(matches!(scope, ScopeValue::Object(_)));
/// ```
///
/// A raw function is not a scope value:
///
/// ```compile_fail
/// use codemode_namespaces::ScopeValue;
///
/// let scope = ScopeValue::object([("list", ScopeValue::from(|| 42))]);
/// ```
///
/// ```compile_fail
/// use codemode_namespaces::ScopeValue;
///
/// let list = |_: &[serde_json::Value]| Ok::<_, String>(serde_json::json!([]));
/// let scope = ScopeValue::object([("list", list.into())]);
/// ```
#[derive(Clone)]
pub enum ScopeValue {
    /// A JSON value, copied verbatim into the guest.
    Json(Value),
    /// An array; its items may not contain [`NamespaceTool`] markers.
    Array(Vec<ScopeValue>),
    /// An object with keys in order; keys must be safe path segments and unique.
    Object(Vec<(String, ScopeValue)>),
    /// A sub-value referenced from several places; it is serialized at each place.
    Shared(Arc<ScopeValue>),
    /// A callable member.
    Tool(NamespaceTool),
}

impl ScopeValue {
    /// An object from `(key, value)` pairs, in order.
    pub fn object<I, K>(entries: I) -> Self
    where
        I: IntoIterator<Item = (K, ScopeValue)>,
        K: Into<String>,
    {
        Self::Object(
            entries
                .into_iter()
                .map(|(key, value)| (key.into(), value))
                .collect(),
        )
    }

    /// An array from values, in order.
    pub fn array(items: impl IntoIterator<Item = ScopeValue>) -> Self {
        Self::Array(items.into_iter().collect())
    }

    /// A callable member targeting `tool_name` with the default input mapping.
    pub fn tool(tool_name: impl Into<String>) -> Self {
        Self::Tool(NamespaceTool::new(tool_name))
    }

    /// A short name for the kind of value, for error messages.
    fn kind(&self) -> &'static str {
        match self {
            Self::Json(value) => json_kind(value),
            Self::Array(_) => "array",
            Self::Object(_) => "object",
            Self::Shared(inner) => inner.kind(),
            Self::Tool(_) => "namespace tool",
        }
    }
}

fn json_kind(value: &Value) -> &'static str {
    match value {
        Value::Null => "null",
        Value::Bool(_) => "boolean",
        Value::Number(_) => "number",
        Value::String(_) => "string",
        Value::Array(_) => "array",
        Value::Object(_) => "object",
    }
}

impl fmt::Debug for ScopeValue {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Self::Json(value) => f.debug_tuple("Json").field(value).finish(),
            Self::Array(items) => f.debug_tuple("Array").field(items).finish(),
            Self::Object(entries) => f.debug_tuple("Object").field(entries).finish(),
            Self::Shared(inner) => f.debug_tuple("Shared").field(inner).finish(),
            Self::Tool(tool) => f.debug_tuple("Tool").field(tool).finish(),
        }
    }
}

impl From<Value> for ScopeValue {
    fn from(value: Value) -> Self {
        Self::Json(value)
    }
}

impl From<NamespaceTool> for ScopeValue {
    fn from(tool: NamespaceTool) -> Self {
        Self::Tool(tool)
    }
}

impl From<Arc<ScopeValue>> for ScopeValue {
    fn from(shared: Arc<ScopeValue>) -> Self {
        Self::Shared(shared)
    }
}

impl From<&str> for ScopeValue {
    fn from(text: &str) -> Self {
        Self::Json(Value::from(text))
    }
}

impl From<String> for ScopeValue {
    fn from(text: String) -> Self {
        Self::Json(Value::from(text))
    }
}

impl From<bool> for ScopeValue {
    fn from(flag: bool) -> Self {
        Self::Json(Value::from(flag))
    }
}

impl From<i64> for ScopeValue {
    fn from(number: i64) -> Self {
        Self::Json(Value::from(number))
    }
}

impl From<f64> for ScopeValue {
    /// NaN and infinities become `null`, as in `JSON.stringify`.
    fn from(number: f64) -> Self {
        Self::Json(Value::from(number))
    }
}

/// A scope after serialization: what the guest sees and what it may call.
#[derive(Debug, Clone, Default)]
pub(crate) struct SerializedScope {
    /// Tool-free members, each as one JSON value at its path.
    pub(crate) values: Vec<(Vec<String>, Value)>,
    /// Callable members at their paths.
    pub(crate) callables: Vec<(Vec<String>, NamespaceTool)>,
}

/// Why a key cannot be a path segment, if it cannot.
pub(crate) fn segment_problem(key: &str) -> Option<&'static str> {
    if key.is_empty() {
        Some("keys must not be empty")
    } else if matches!(key, "__proto__" | "constructor" | "prototype") {
        Some("it could reach or replace a JavaScript prototype")
    } else if key.contains(PATH_SEPARATOR) {
        Some("keys must not contain the path separator `.`")
    } else {
        None
    }
}

/// Serializes a namespace's scope into plain guest data and callable markers. The root must be an object (a
/// scope object or a JSON object); each root member becomes either one JSON
/// value or, for an object holding callables, its members in turn.
pub(crate) fn serialize_scope(
    namespace: &str,
    global_name: &str,
    required_tool_names: &[String],
    limits: ScopeLimits,
    root: &ScopeValue,
) -> Result<SerializedScope, NamespaceError> {
    let mut walk = ScopeWalk {
        namespace,
        global_name,
        required_tool_names,
        limits,
        nodes: 0,
        out: SerializedScope::default(),
    };
    let mut path = Vec::new();
    let mut root = root;
    let mut depth = 0;
    loop {
        walk.enter(&path, depth)?;
        match root {
            ScopeValue::Shared(inner) => {
                root = inner;
                depth += 1;
            }
            ScopeValue::Object(entries) => {
                let members = entries
                    .iter()
                    .map(|(key, value)| (key.as_str(), Member::Scope(value)));
                walk.object(&mut path, members, depth, false, true)?;
                return Ok(walk.out);
            }
            ScopeValue::Json(Value::Object(map)) => {
                let members = map
                    .iter()
                    .map(|(key, value)| (key.as_str(), Member::Json(value)));
                walk.object(&mut path, members, depth, false, true)?;
                return Ok(walk.out);
            }
            other => {
                return Err(NamespaceError::ScopeNotObject {
                    namespace: namespace.to_owned(),
                    found: other.kind(),
                });
            }
        }
    }
}

/// A member of an object being serialized: a scope value, or a JSON value
/// that is a member of a JSON object used as the scope root.
#[derive(Clone, Copy)]
enum Member<'v> {
    Scope(&'v ScopeValue),
    Json(&'v Value),
}

struct ScopeWalk<'a> {
    namespace: &'a str,
    global_name: &'a str,
    required_tool_names: &'a [String],
    limits: ScopeLimits,
    nodes: usize,
    out: SerializedScope,
}

impl ScopeWalk<'_> {
    /// The guest-visible path, `Global.a.b`, for messages.
    fn display_path(&self, path: &[String]) -> String {
        let mut text = self.global_name.to_owned();
        for segment in path {
            text.push(PATH_SEPARATOR);
            text.push_str(segment);
        }
        echo(&text)
    }

    /// Counts one node at `depth` against the limits.
    fn enter(&mut self, path: &[String], depth: usize) -> Result<(), NamespaceError> {
        self.nodes += 1;
        if self.nodes > self.limits.max_nodes() {
            return Err(NamespaceError::ScopeTooLarge {
                namespace: self.namespace.to_owned(),
                limit: self.limits.max_nodes(),
            });
        }
        if depth > self.limits.max_depth() {
            return Err(NamespaceError::ScopeTooDeep {
                namespace: self.namespace.to_owned(),
                path: self.display_path(path),
                limit: self.limits.max_depth(),
            });
        }
        Ok(())
    }

    /// Walks a member. Returns its JSON form when it holds no callables; when
    /// it does, its values and callables have been emitted and `None` is returned.
    fn member(
        &mut self,
        path: &mut Vec<String>,
        member: Member<'_>,
        depth: usize,
        in_array: bool,
    ) -> Result<Option<Value>, NamespaceError> {
        self.enter(path, depth)?;
        let value = match member {
            Member::Json(value) => {
                self.measure_json(path, value, depth)?;
                return Ok(Some(value.clone()));
            }
            Member::Scope(value) => value,
        };
        match value {
            ScopeValue::Json(json) => {
                self.measure_json(path, json, depth)?;
                Ok(Some(json.clone()))
            }
            ScopeValue::Shared(inner) => {
                self.member(path, Member::Scope(inner), depth + 1, in_array)
            }
            ScopeValue::Tool(tool) => {
                if !self
                    .required_tool_names
                    .iter()
                    .any(|name| name == tool.tool_name())
                {
                    return Err(NamespaceError::UndeclaredTool {
                        namespace: self.namespace.to_owned(),
                        path: self.display_path(path),
                        tool: echo(tool.tool_name()),
                    });
                }
                if in_array {
                    return Err(NamespaceError::ToolInArray {
                        namespace: self.namespace.to_owned(),
                        path: self.display_path(path),
                    });
                }
                self.out.callables.push((path.clone(), tool.clone()));
                Ok(None)
            }
            ScopeValue::Array(items) => {
                let mut json = Vec::with_capacity(items.len());
                for (index, item) in items.iter().enumerate() {
                    path.push(index.to_string());
                    // Callables inside arrays are refused in the `Tool` arm; keep this total anyway.
                    let Some(item) = self.member(path, Member::Scope(item), depth + 1, true)?
                    else {
                        return Err(NamespaceError::ToolInArray {
                            namespace: self.namespace.to_owned(),
                            path: self.display_path(path),
                        });
                    };
                    path.pop();
                    json.push(item);
                }
                Ok(Some(Value::Array(json)))
            }
            ScopeValue::Object(entries) => {
                let members = entries
                    .iter()
                    .map(|(key, value)| (key.as_str(), Member::Scope(value)));
                self.object(path, members, depth, in_array, false)
            }
        }
    }

    /// Walks an object's members. A callable-free non-root object comes back
    /// as one JSON object; otherwise each callable-free member is emitted as
    /// a value at its own path and `None` is returned.
    fn object<'v>(
        &mut self,
        path: &mut Vec<String>,
        members: impl Iterator<Item = (&'v str, Member<'v>)>,
        depth: usize,
        in_array: bool,
        is_root: bool,
    ) -> Result<Option<Value>, NamespaceError> {
        let mut seen: HashSet<&str> = HashSet::new();
        // Each member's JSON form (if callable-free) and where its values
        // would go in `out.values`, so the output keeps the scope's order.
        let mut walked: Vec<(&str, Option<Value>, usize)> = Vec::new();
        for (key, member) in members {
            if let Some(reason) = segment_problem(key) {
                return Err(NamespaceError::UnsafeSegment {
                    namespace: self.namespace.to_owned(),
                    path: self.display_path(path),
                    segment: echo(key),
                    reason,
                });
            }
            path.push(key.to_owned());
            if !seen.insert(key) {
                return Err(NamespaceError::DuplicateKey {
                    namespace: self.namespace.to_owned(),
                    path: self.display_path(path),
                });
            }
            let mark = self.out.values.len();
            let walked_member = self.member(path, member, depth + 1, in_array)?;
            path.pop();
            walked.push((key, walked_member, mark));
        }
        if !is_root && walked.iter().all(|(_, value, _)| value.is_some()) {
            let map = walked
                .into_iter()
                .filter_map(|(key, value, _)| value.map(|value| (key.to_owned(), value)))
                .collect();
            return Ok(Some(Value::Object(map)));
        }
        // Insert from the back so earlier marks stay valid.
        for (key, value, mark) in walked.into_iter().rev() {
            if let Some(value) = value {
                let mut member_path = path.clone();
                member_path.push(key.to_owned());
                self.out.values.insert(mark, (member_path, value));
            }
        }
        Ok(None)
    }

    /// Counts the nodes inside a JSON value (the value itself was counted by
    /// the caller at `depth`) and checks its nesting.
    fn measure_json(
        &mut self,
        path: &[String],
        value: &Value,
        depth: usize,
    ) -> Result<(), NamespaceError> {
        match value {
            Value::Array(items) => {
                for item in items {
                    self.enter(path, depth + 1)?;
                    self.measure_json(path, item, depth + 1)?;
                }
            }
            Value::Object(map) => {
                for item in map.values() {
                    self.enter(path, depth + 1)?;
                    self.measure_json(path, item, depth + 1)?;
                }
            }
            Value::Null | Value::Bool(_) | Value::Number(_) | Value::String(_) => {}
        }
        Ok(())
    }
}
