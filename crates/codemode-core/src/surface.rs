//! The model-visible surface: `exec`, `wait`, the kept direct-only tools, their
//! descriptions and schemas, hook metadata and the final payload check.

use serde::Serialize;
use serde_json::Value;

use crate::input::{ExecSchema, WaitSchema};
use crate::{CodeModeConfig, Language};

/// Name of the code-mode `exec` control tool.
pub const EXEC_TOOL: &str = "exec";
/// Name of the code-mode `wait` control tool.
pub const WAIT_TOOL: &str = "wait";
/// `toolKind` of an exec call in hook metadata.
pub const CODE_MODE_EXEC_KIND: &str = "code_mode_exec";

/// A tool as the model sees it.
#[derive(Debug, Clone, PartialEq, Serialize)]
pub struct ModelTool {
    /// Tool name.
    pub name: String,
    /// Description shown to the model.
    pub description: String,
    /// JSON Schema of the input.
    pub parameters: Value,
}

/// Metadata for the host's hooks on an `exec` call, so policies can tell code cells from shell
/// exec calls that share the name.
#[derive(Debug, Clone, PartialEq, Eq, Serialize)]
#[serde(rename_all = "camelCase")]
pub struct HookMetadata {
    /// Always `"code_mode_exec"`.
    pub tool_kind: &'static str,
    /// The cell's language when the input names a valid one (default JavaScript).
    #[serde(skip_serializing_if = "Option::is_none")]
    pub tool_input_kind: Option<Language>,
}

impl HookMetadata {
    /// Hook metadata for a raw `exec` input.
    pub fn for_exec_input(input: &Value) -> HookMetadata {
        let tool_input_kind = match input.get("language") {
            None | Some(Value::Null) => Some(Language::Javascript),
            Some(value) => value.as_str().and_then(Language::parse),
        };
        HookMetadata {
            tool_kind: CODE_MODE_EXEC_KIND,
            tool_input_kind,
        }
    }
}

/// The final provider payload does not have the code-mode shape.
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PayloadError {
    /// `exec` or `wait` is missing or appears more than once.
    #[error("code mode payload must contain exactly one `{tool}` tool, found {count}.")]
    ControlToolCount {
        /// `exec` or `wait`.
        tool: &'static str,
        /// How many were found.
        count: usize,
    },
    /// A tool that is neither a control tool nor an approved direct-only tool.
    #[error("code mode payload exposes `{0}`, which is not an approved direct-only tool.")]
    UnapprovedTool(String),
}

/// Fails closed unless `payload` names exactly one `exec`, one `wait` and only `approved` others.
pub fn check_payload<'a>(
    payload: impl IntoIterator<Item = &'a str>,
    approved: &[String],
) -> Result<(), PayloadError> {
    let (mut exec, mut wait) = (0, 0);
    for name in payload {
        match name {
            EXEC_TOOL => exec += 1,
            WAIT_TOOL => wait += 1,
            other if approved.iter().any(|a| a == other) => {}
            other => return Err(PayloadError::UnapprovedTool(other.to_owned())),
        }
    }
    for (tool, count) in [(EXEC_TOOL, exec), (WAIT_TOOL, wait)] {
        if count != 1 {
            return Err(PayloadError::ControlToolCount { tool, count });
        }
    }
    Ok(())
}

/// What the `exec` description depends on.
pub(crate) struct DescriptionParts<'a> {
    pub(crate) config: &'a CodeModeConfig,
    /// The first id segment of the host's own tools.
    pub(crate) host_source: &'a str,
    pub(crate) mcp_servers: &'a [String],
    pub(crate) namespace_prompt: Option<&'a str>,
}

pub(crate) fn exec_description(parts: &DescriptionParts<'_>) -> String {
    let seconds = parts.config.timeout_ms() as f64 / 1000.0;
    let languages: Vec<&str> = parts
        .config
        .languages()
        .iter()
        .map(|l| l.as_str())
        .collect();
    let mut text = format!(
        "Run a short JavaScript or TypeScript program that orchestrates the hidden tools. \
The code is the body of an async function: use `await` freely and `return` the final value \
(no return gives null). There are no modules: `import`, `require` and dynamic import are refused, \
and there is no filesystem, network or environment access. \
Find tools with `await tools.search(query, {{ limit }})`, read a tool's JSON Schema with \
`await tools.describe(id)`, and call it with `await tools.call(id, input)` (tools with simple \
unambiguous names are also `tools.<name>(input)`); `ALL_TOOLS` lists every tool compactly. \
Tool ids are `{host}:core:<name>` and `{host}:<plugin>:<name>` for the host's tools and \
`client:<owner>:<name>` for the client's. \
Calls may run in parallel with `Promise.all` over many items: at most {pending} run at once and up to {queued} more wait their turn in order. A run finishes only when every call it started has settled. `console.log/info/warn/error/debug` and `text(value)` and `json(value)` add output items. \
Each exec or wait call may run for {seconds} s; when tool calls are still pending the result is \
`waiting` with a runId: call `wait` with it to continue. `language` takes only \"javascript\" \
(default) or \"typescript\"; accepted here: {}. \
Timers work (`setTimeout`, `setInterval`, `queueMicrotask`) and count as pending work; \
`TextEncoder`, `TextDecoder`, `structuredClone`, `atob` and `btoa` exist. \
`await results.save(key, value)`, `results.load(key)`, `results.list()` keep values across cells \
of this session (up to {saved} entries): save a large result there and return a summary. \
A returned value too large for the output limit comes back cut, with `truncated`.",
        languages.join(", "),
        host = parts.host_source,
        pending = parts.config.max_pending_tool_calls(),
        queued = parts.config.max_queued_tool_calls(),
        saved = parts.config.max_saved_results(),
    );
    if !parts.mcp_servers.is_empty() {
        text.push_str(&format!(
            "\n\nMCP servers ({}) are callable only as `await MCP.<server>.<tool>({{ ...input }})` with \
one object argument, never through tools.call. Read their TypeScript declarations with \
`await API.list(\"mcp\")` and `await API.read(\"mcp/<server>.d.ts\")`, or inline with \
`await MCP.<server>.$api(toolName?, {{ schema: true }})`.",
            parts.mcp_servers.join(", ")
        ));
    }
    if let Some(prompt) = parts.namespace_prompt.filter(|p| !p.is_empty()) {
        text.push_str("\n\n");
        text.push_str(prompt);
    }
    text
}

/// The JSON Schema of a type, inlined, without `$schema`/`title` noise that providers reject.
fn inline_schema<T: schemars::JsonSchema>() -> Value {
    let generator = schemars::generate::SchemaSettings::draft07()
        .with(|settings| settings.inline_subschemas = true)
        .into_generator();
    let mut schema =
        serde_json::to_value(generator.into_root_schema_for::<T>()).unwrap_or(Value::Null);
    if let Some(object) = schema.as_object_mut() {
        object.remove("$schema");
        object.remove("title");
        // The type's doc comment is for maintainers; the tool description speaks to the model.
        object.remove("description");
        object.insert("additionalProperties".into(), Value::Bool(false));
    }
    schema
}

pub(crate) fn exec_tool(description: String) -> ModelTool {
    ModelTool {
        name: EXEC_TOOL.into(),
        description,
        parameters: inline_schema::<ExecSchema>(),
    }
}

pub(crate) fn wait_tool(config: &CodeModeConfig) -> ModelTool {
    let description = format!(
        "Continue a code-mode run that returned `waiting`: pass its runId. While the run only \
awaits tool calls, the call waits for them (up to timeoutMs, or the configured maximum) instead of \
returning at once, and returns as soon as the run completes, fails, yields or prints. Returns the \
same result shape as exec (completed, failed, or waiting again with what is still pending). \
Pass `terminate: true` to end a run you no longer need (it waits on a tool that will not answer, \
does the wrong work, or the task changed): its pending tool calls are cancelled and the result is \
`failed` with code `terminated`, with the output and telemetry so far. A run also ends on its own \
{max_run} s after its first exec (code `run_lifetime_exceeded`), and a tool call that has not \
answered within {tool_call} s rejects inside the program with a catchable error.",
        max_run = config.max_run_seconds(),
        tool_call = config.tool_call_timeout_ms() as f64 / 1000.0,
    );
    ModelTool {
        name: WAIT_TOOL.into(),
        description,
        parameters: inline_schema::<WaitSchema>(),
    }
}
