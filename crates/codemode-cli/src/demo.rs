//! The embedded demo catalog of the `codemode` command: core tools `echo`, `add`, `sleep`, `fail`, and the
//! plugin `demo-issues` with `issues_list` / `issues_update` and the `Issues` namespace.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::{ToolCallContext, ToolError};
use codemode_namespaces::{NamespaceRegistry, NamespaceTool, Registration, ScopeValue};
use serde_json::{Value, json};

/// The plugin id that owns the issue tools and the `Issues` namespace.
pub(crate) const ISSUES_PLUGIN: &str = "demo-issues";

/// The longest `sleep` the demo accepts (10 minutes).
const MAX_SLEEP_MS: u64 = 600_000;

fn tool(
    origin: ToolOrigin,
    name: &str,
    description: &str,
    parameters: Value,
    read_only: bool,
) -> ToolDescriptor {
    ToolDescriptor {
        origin,
        name: name.to_owned(),
        label: None,
        description: description.to_owned(),
        parameters: Some(parameters),
        direct_only: false,
        read_only,
    }
}

/// The demo tools, in no particular order (the catalog orders them).
pub(crate) fn tools() -> Vec<ToolDescriptor> {
    let plugin = || ToolOrigin::BundledPlugin(ISSUES_PLUGIN.to_owned());
    vec![
        tool(
            ToolOrigin::Core,
            "echo",
            "Return the input unchanged.",
            json!({ "type": "object" }),
            true,
        ),
        tool(
            ToolOrigin::Core,
            "add",
            "Add two numbers: returns { sum }.",
            json!({ "type": "object", "properties": { "a": { "type": "number" }, "b": { "type": "number" } },
                    "required": ["a", "b"] }),
            true,
        ),
        tool(
            ToolOrigin::Core,
            "sleep",
            "Wait ms milliseconds, then return { slept: ms }.",
            json!({ "type": "object", "properties": { "ms": { "type": "integer", "minimum": 0 } }, "required": ["ms"] }),
            true,
        ),
        tool(
            ToolOrigin::Core,
            "fail",
            "Always fails with the given message.",
            json!({ "type": "object", "properties": { "message": { "type": "string" } } }),
            false,
        ),
        tool(
            plugin(),
            "issues_list",
            "List demo issues, optionally filtered by state (open or closed).",
            json!({ "type": "object", "properties": { "state": { "type": "string", "enum": ["open", "closed"] } } }),
            true,
        ),
        tool(
            plugin(),
            "issues_update",
            "Update a demo issue: { number, patch } where patch may set title, state or labels.",
            json!({ "type": "object", "properties": { "number": { "type": "integer" }, "patch": { "type": "object" } },
                    "required": ["number", "patch"] }),
            false,
        ),
    ]
}

/// Registers the `Issues` namespace of the `demo-issues` plugin.
pub(crate) fn register_namespaces(registry: &NamespaceRegistry) -> anyhow::Result<()> {
    let create_scope = Arc::new(|_ctx: &codemode_namespaces::ScopeContext| {
        Ok(ScopeValue::object([
            ("repository", ScopeValue::Json(json!("demo/issues"))),
            ("list", ScopeValue::Tool(NamespaceTool::new("issues_list"))),
            (
                "update",
                ScopeValue::Tool(NamespaceTool::new("issues_update").with_mapper(
                    |args: &[Value]| {
                        Ok(json!({
                            "number": args.first().cloned().unwrap_or(Value::Null),
                            "patch": args.get(1).cloned().unwrap_or_else(|| json!({})),
                        }))
                    },
                )),
            ),
        ]))
    });
    registry.register_for_plugin(
        ISSUES_PLUGIN,
        Registration {
            id: "demo-issues".into(),
            global_name: "Issues".into(),
            description: "Issues: helpers for the demo issue tracker.".into(),
            required_tool_names: vec!["issues_list".into(), "issues_update".into()],
            prompt: Some("Use Issues.list({ state }) and Issues.update(number, patch).".into()),
            create_scope,
        },
    )?;
    Ok(())
}

/// The in-memory state behind the demo tools.
pub(crate) struct DemoTools {
    issues: Mutex<Vec<Value>>,
}

impl DemoTools {
    pub(crate) fn new() -> Self {
        DemoTools {
            issues: Mutex::new(vec![
                json!({ "number": 1, "title": "Crash on empty config", "state": "open", "labels": ["bug"] }),
                json!({ "number": 2, "title": "Document the wait tool", "state": "open", "labels": ["docs"] }),
                json!({ "number": 3, "title": "Speed up catalog search", "state": "closed", "labels": ["perf"] }),
            ]),
        }
    }

    /// Runs a demo tool by its exact catalog id; `None` when the id is not a demo tool.
    pub(crate) async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: &ToolCallContext,
    ) -> Option<Result<Value, ToolError>> {
        let result = match catalog_id {
            "openclaw:core:echo" => Ok(input),
            "openclaw:core:add" => add(&input),
            "openclaw:core:sleep" => sleep(&input, context).await,
            "openclaw:core:fail" => Err(ToolError::new(
                input
                    .get("message")
                    .and_then(Value::as_str)
                    .unwrap_or("the fail tool failed"),
            )),
            "openclaw:demo-issues:issues_list" => self.list(&input),
            "openclaw:demo-issues:issues_update" => self.update(&input),
            _ => return None,
        };
        Some(result)
    }

    fn list(&self, input: &Value) -> Result<Value, ToolError> {
        let state = input.get("state").and_then(Value::as_str);
        let issues = self
            .issues
            .lock()
            .map_err(|_| ToolError::new("issue store unavailable"))?;
        Ok(Value::Array(
            issues
                .iter()
                .filter(|issue| state.is_none_or(|s| issue["state"] == s))
                .cloned()
                .collect(),
        ))
    }

    fn update(&self, input: &Value) -> Result<Value, ToolError> {
        let number = input
            .get("number")
            .and_then(Value::as_u64)
            .ok_or_else(|| ToolError::new("number must be an issue number"))?;
        let patch = input
            .get("patch")
            .and_then(Value::as_object)
            .ok_or_else(|| ToolError::new("patch must be an object"))?;
        let mut issues = self
            .issues
            .lock()
            .map_err(|_| ToolError::new("issue store unavailable"))?;
        let issue = issues
            .iter_mut()
            .find(|issue| issue["number"] == number)
            .ok_or_else(|| ToolError::new(format!("issue {number} not found")))?;
        for key in ["title", "state", "labels"] {
            if let (Some(value), Some(fields)) = (patch.get(key), issue.as_object_mut()) {
                fields.insert(key.to_owned(), value.clone());
            }
        }
        Ok(issue.clone())
    }
}

fn add(input: &Value) -> Result<Value, ToolError> {
    let number = |key: &str| {
        input
            .get(key)
            .and_then(Value::as_f64)
            .ok_or_else(|| ToolError::new(format!("{key} must be a number")))
    };
    let sum = number("a")? + number("b")?;
    Ok(json!({ "sum": sum }))
}

async fn sleep(input: &Value, context: &ToolCallContext) -> Result<Value, ToolError> {
    let ms = input
        .get("ms")
        .and_then(Value::as_u64)
        .ok_or_else(|| ToolError::new("ms must be a non-negative integer"))?;
    if ms > MAX_SLEEP_MS {
        return Err(ToolError::new(format!("ms must be at most {MAX_SLEEP_MS}")));
    }
    // Progress for the host's event sink (and, under `codemode serve`, the MCP client's
    // progress notifications): what the call is about to do.
    let _ = context.update(json!({ "sleepingMs": ms }));
    tokio::select! {
        () = tokio::time::sleep(Duration::from_millis(ms)) => Ok(json!({ "slept": ms })),
        () = context.cancellation.cancelled() => Err(ToolError::new("sleep cancelled")),
    }
}
