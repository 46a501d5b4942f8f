//! A test gateway: a small agent host with core, plugin, client and direct-only tools, a deny
//! policy, REAL MCP servers over stdio, a scripted model driving `exec`/`wait`, and a trajectory
//! recorder. Everything a real host would own, minus the LLM.

use std::collections::BTreeMap;
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::{
    Activation, ActivationRequest, AgentRunContext, CodeMode, CodeModeConfig, CodeModeResult,
    CodeModeSession, EventSink, ManualClock, McpServerCapabilities, NestedCallEvent,
    ToolCallContext, ToolError, ToolExecutor,
};
use codemode_mcp::{HubOptions, McpHub, McpServerConfig};
use codemode_namespaces::{NamespaceRegistry, NamespaceTool, Registration, ScopeValue};
use serde_json::{Value, json};

/// The plugin that owns the issue tools and the `Issues` namespace.
pub const ISSUES_PLUGIN: &str = "issues-plugin";

/// Tools the gateway's policy denies: removed before activation.
pub const DENIED: &[&str] = &["secret_tool"];

fn tool(origin: ToolOrigin, name: &str, description: &str, read_only: bool) -> ToolDescriptor {
    ToolDescriptor {
        origin,
        name: name.into(),
        label: None,
        description: description.into(),
        parameters: Some(json!({ "type": "object" })),
        direct_only: false,
        read_only,
    }
}

/// A small set of ordinary tools (step 2) without MCP.
pub fn direct_tools() -> Vec<ToolDescriptor> {
    vec![
        tool(ToolOrigin::Core, "echo", "Return the input.", true),
        tool(ToolOrigin::Core, "add", "Add a and b.", true),
    ]
}

/// Core, plugin, client and direct-only tools (MCP tools come from the hub).
pub fn host_tools() -> Vec<ToolDescriptor> {
    let plugin = || ToolOrigin::BundledPlugin(ISSUES_PLUGIN.into());
    let mut computer = tool(
        ToolOrigin::Core,
        "computer",
        "Screenshots and clicks (images).",
        false,
    );
    computer.direct_only = true;
    let mut tools = direct_tools();
    tools.extend([
        tool(ToolOrigin::Core, "secret_tool", "Denied by policy.", true),
        computer,
        tool(
            plugin(),
            "issues_list",
            "List issues of the plugin's tracker.",
            true,
        ),
        tool(
            plugin(),
            "issues_update",
            "Update an issue: { number, patch }.",
            false,
        ),
        tool(
            ToolOrigin::Client("app".into()),
            "select_file",
            "Ask the user to pick a file.",
            true,
        ),
    ]);
    tools
}

/// Where the npm MCP servers are installed (`cargo xtask npm`).
pub fn npm_bin(name: &str) -> PathBuf {
    workspace_root()
        .join("tests/mcp-servers/node_modules/.bin")
        .join(name)
}

/// The workspace root.
pub fn workspace_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .parent()
        .map(Path::to_path_buf)
        .unwrap_or_default()
}

/// The repository's own rmcp test server: `CODEMODE_TEST_MCP_SERVER`, else the debug build of
/// `codemode-mcp`'s binary, built on demand into its own target folder when missing.
pub fn test_server_binary() -> Result<PathBuf, String> {
    if let Ok(path) = std::env::var("CODEMODE_TEST_MCP_SERVER") {
        return Ok(PathBuf::from(path));
    }
    let root = workspace_root();
    let target = std::env::var("CARGO_TARGET_DIR")
        .map(PathBuf::from)
        .unwrap_or_else(|_| root.join("target"));
    let built = target.join("debug/codemode-mcp-test-server");
    if built.exists() {
        return Ok(built);
    }
    let own_target = target.join("e2e-server");
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let status = std::process::Command::new(cargo)
        .args([
            "build",
            "--quiet",
            "-p",
            "codemode-mcp",
            "--bin",
            "codemode-mcp-test-server",
        ])
        .env("CARGO_TARGET_DIR", &own_target)
        .current_dir(&root)
        .status()
        .map_err(|e| format!("building the test MCP server: {e}"))?;
    if !status.success() {
        return Err("building the test MCP server failed".into());
    }
    Ok(own_target.join("debug/codemode-mcp-test-server"))
}

/// The MCP servers of the plan: two from npm and the repository's own.
pub fn mcp_servers(files_root: &Path) -> Result<BTreeMap<String, McpServerConfig>, String> {
    let mut servers = BTreeMap::new();
    let everything = npm_bin("mcp-server-everything");
    let filesystem = npm_bin("mcp-server-filesystem");
    for bin in [&everything, &filesystem] {
        if !bin.exists() {
            return Err(format!(
                "{} is missing: run `cargo xtask npm`",
                bin.display()
            ));
        }
    }
    let config = |command: &Path, args: Vec<String>| McpServerConfig {
        command: command.display().to_string(),
        args,
        env: BTreeMap::new(),
    };
    servers.insert("everything".into(), config(&everything, vec![]));
    servers.insert(
        "filesystem".into(),
        config(&filesystem, vec![files_root.display().to_string()]),
    );
    servers.insert("testsrv".into(), config(&test_server_binary()?, vec![]));
    Ok(servers)
}

/// The recorded trajectory: control calls, their results and nested call events, in order.
#[derive(Default)]
pub struct Trajectory {
    lines: Mutex<Vec<Value>>,
}

impl Trajectory {
    fn push(&self, line: Value) {
        if let Ok(mut lines) = self.lines.lock() {
            lines.push(line);
        }
    }

    /// The trajectory as JSON lines.
    pub fn export_jsonl(&self) -> String {
        let lines = self.lines.lock().map(|l| l.clone()).unwrap_or_default();
        lines.iter().map(|line| format!("{line}\n")).collect()
    }
}

impl EventSink for Trajectory {
    fn on_event(&self, event: NestedCallEvent) {
        let mut line = serde_json::to_value(&event).unwrap_or(Value::Null);
        if let Some(object) = line.as_object_mut() {
            object.insert("type".into(), json!("nested_call"));
        }
        self.push(line);
    }
}

/// The gateway's tool path: local tools plus the MCP hub.
struct GatewayExecutor {
    hub: Option<McpHub>,
    issues: Mutex<Vec<Value>>,
}

#[async_trait]
impl ToolExecutor for GatewayExecutor {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        _context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        if catalog_id.starts_with("mcp:") || catalog_id.starts_with("mcp-capability:") {
            let hub = self
                .hub
                .as_ref()
                .ok_or_else(|| ToolError::new("no MCP servers"))?;
            return match hub.execute(catalog_id, input).await {
                Some(result) => result.map_err(|e| ToolError::new(e.to_string())),
                None => Err(ToolError::new(format!(
                    "the gateway has no tool {catalog_id}"
                ))),
            };
        }
        self.local(catalog_id, input)
    }
}

impl GatewayExecutor {
    fn local(&self, catalog_id: &str, input: Value) -> Result<Value, ToolError> {
        match catalog_id {
            "openclaw:core:echo" | "client:app:select_file" => Ok(input),
            "openclaw:core:add" => {
                let n = |k: &str| {
                    input
                        .get(k)
                        .and_then(Value::as_f64)
                        .ok_or_else(|| ToolError::new(format!("{k} must be a number")))
                };
                Ok(json!({ "sum": n("a")? + n("b")? }))
            }
            "openclaw:issues-plugin:issues_list" => Ok(Value::Array(
                self.issues.lock().map(|i| i.clone()).unwrap_or_default(),
            )),
            "openclaw:issues-plugin:issues_update" => {
                let number = input
                    .get("number")
                    .and_then(Value::as_u64)
                    .ok_or_else(|| ToolError::new("number required"))?;
                let mut issues = self
                    .issues
                    .lock()
                    .map_err(|_| ToolError::new("store poisoned"))?;
                let issue = issues
                    .iter_mut()
                    .find(|i| i["number"] == number)
                    .ok_or_else(|| ToolError::new("no such issue"))?;
                if let (Some(object), Some(patch)) = (
                    issue.as_object_mut(),
                    input.get("patch").and_then(Value::as_object),
                ) {
                    object.extend(patch.clone());
                }
                Ok(issue.clone())
            }
            other => Err(ToolError::new(format!("the gateway has no tool {other}"))),
        }
    }
}

/// A running test gateway.
pub struct Gateway {
    code_mode: CodeMode,
    executor: Arc<GatewayExecutor>,
    /// Every control call, result and nested call event.
    pub trajectory: Arc<Trajectory>,
    calls: Mutex<u64>,
}

impl Gateway {
    /// Starts a gateway with this `tools.codeMode` value, and the MCP servers when given.
    pub async fn start(
        code_mode: Value,
        mcp: Option<BTreeMap<String, McpServerConfig>>,
    ) -> Result<Gateway, String> {
        Self::start_built(code_mode, mcp, None).await
    }

    /// Starts a gateway without MCP servers whose suspended runs' TTL passes on `clock`.
    pub async fn start_on_clock(code_mode: Value, clock: ManualClock) -> Result<Gateway, String> {
        Self::start_built(code_mode, None, Some(clock)).await
    }

    async fn start_built(
        code_mode: Value,
        mcp: Option<BTreeMap<String, McpServerConfig>>,
        snapshot_clock: Option<ManualClock>,
    ) -> Result<Gateway, String> {
        let config = CodeModeConfig::from_json(&code_mode).map_err(|e| e.to_string())?;
        let hub = match mcp {
            Some(servers) => {
                let (hub, errors) = McpHub::start(servers, HubOptions::default()).await;
                if let Some(error) = errors.first() {
                    return Err(format!("an MCP server failed to start: {error}"));
                }
                Some(hub)
            }
            None => None,
        };
        let registry = Arc::new(NamespaceRegistry::new());
        let create_scope = Arc::new(|_: &codemode_namespaces::ScopeContext| {
            Ok(ScopeValue::object([
                ("list", ScopeValue::Tool(NamespaceTool::new("issues_list"))),
                (
                    "update",
                    ScopeValue::Tool(NamespaceTool::new("issues_update").with_mapper(|args: &[Value]| {
                        Ok(json!({ "number": args.first().cloned().unwrap_or(Value::Null), "patch": args.get(1).cloned().unwrap_or(json!({})) }))
                    })),
                ),
            ]))
        });
        registry
            .register_for_plugin(
                ISSUES_PLUGIN,
                Registration {
                    id: "issues".into(),
                    global_name: "Issues".into(),
                    description: "Issues: the plugin's issue tracker.".into(),
                    required_tool_names: vec!["issues_list".into(), "issues_update".into()],
                    prompt: Some("Use Issues.list() and Issues.update(number, patch).".into()),
                    create_scope,
                },
            )
            .map_err(|e| e.to_string())?;
        let executor = Arc::new(GatewayExecutor {
            hub,
            issues: Mutex::new(vec![
                json!({ "number": 1, "title": "First", "state": "open" }),
            ]),
        });
        let trajectory = Arc::new(Trajectory::default());
        let mut builder = CodeMode::builder(config, executor.clone())
            .events(trajectory.clone())
            .namespaces(registry);
        if let Some(clock) = snapshot_clock {
            builder = builder.snapshot_clock(clock);
        }
        let code_mode = builder.build();
        Ok(Gateway {
            code_mode,
            executor,
            trajectory,
            calls: Mutex::new(0),
        })
    }

    /// The code-mode handle (for state checks).
    pub fn code_mode(&self) -> &CodeMode {
        &self.code_mode
    }

    /// Prepares an agent turn: applies the deny policy, adds the MCP tools, activates code mode.
    pub fn turn(
        &self,
        tools: Vec<ToolDescriptor>,
        with_mcp: bool,
        session_id: &str,
    ) -> Result<Turn, String> {
        let mut effective: Vec<ToolDescriptor> = tools
            .into_iter()
            .filter(|t| !DENIED.contains(&t.name.as_str()))
            .collect();
        let mut request = ActivationRequest::default();
        if let (true, Some(hub)) = (with_mcp, &self.executor.hub) {
            effective.extend(hub.descriptors());
            for server in hub.servers() {
                request.mcp_capabilities.insert(
                    server.name.clone(),
                    McpServerCapabilities {
                        resources: server.has_resources,
                        prompts: server.has_prompts,
                    },
                );
            }
        }
        request.tools = effective;
        request.agent_run = AgentRunContext {
            agent_id: Some("e2e-agent".into()),
            agent_run_id: Some(format!("run-{session_id}")),
            session_id: Some(session_id.into()),
            session_key: Some(format!("agent:e2e:{session_id}")),
            sender: Some("tester".into()),
            channel: Some("e2e".into()),
        };
        match self
            .code_mode
            .activate(request)
            .map_err(|e| e.to_string())?
        {
            Activation::Unchanged(tools) => Ok(Turn {
                visible: tools.iter().map(|t| t.name.clone()).collect(),
                session: None,
            }),
            Activation::Active(session) => Ok(Turn {
                visible: session
                    .model_tools()
                    .iter()
                    .map(|t| t.name.clone())
                    .collect(),
                session: Some(session),
            }),
        }
    }

    /// Lets the scripted model drive a turn: every tool call it emits is dispatched and recorded.
    pub async fn drive(
        &self,
        turn: &Turn,
        model: &mut ScriptedModel,
    ) -> Result<Vec<CodeModeResult>, String> {
        let session = turn
            .session
            .as_ref()
            .ok_or("code mode is not active in this turn")?;
        let mut results: Vec<CodeModeResult> = Vec::new();
        while let Some((name, input)) = model.next_call(results.last()) {
            let call_id = {
                let mut calls = self.calls.lock().map_err(|_| "poisoned")?;
                *calls += 1;
                format!("call_{calls}")
            };
            self.trajectory.push(
                json!({ "type": "tool_call", "callId": call_id, "name": name, "input": input }),
            );
            let result = match name.as_str() {
                "exec" => session.exec(&call_id, &input).await,
                "wait" => session.wait(&input).await,
                other => return Err(format!("the model called an unknown tool {other}")),
            };
            self.trajectory.push(json!({ "type": "tool_result", "callId": call_id, "name": name, "result": result.to_json() }));
            results.push(result);
        }
        Ok(results)
    }
}

/// What one turn exposes.
pub struct Turn {
    /// The model-visible tool names.
    pub visible: Vec<String>,
    /// The code-mode session, when code mode is active.
    pub session: Option<CodeModeSession>,
}

/// A model that emits scripted tool calls: one `exec`, then `wait` while the result is waiting
/// (up to a bound).
pub struct ScriptedModel {
    cells: std::collections::VecDeque<Value>,
    waits_left: u32,
}

impl ScriptedModel {
    /// A model that will run these exec inputs, one after another, waiting each to its end.
    pub fn new(cells: impl IntoIterator<Item = Value>) -> Self {
        ScriptedModel {
            cells: cells.into_iter().collect(),
            waits_left: 50,
        }
    }

    /// A model running one JavaScript cell, waiting it to its end.
    pub fn js(code: &str) -> Self {
        ScriptedModel::new([json!({ "code": code })])
    }

    /// A model running one JavaScript cell that never calls `wait`.
    pub fn js_no_wait(code: &str) -> Self {
        ScriptedModel {
            waits_left: 0,
            ..ScriptedModel::js(code)
        }
    }

    fn next_call(&mut self, last: Option<&CodeModeResult>) -> Option<(String, Value)> {
        if let Some(CodeModeResult::Waiting { run_id, .. }) = last
            && self.waits_left > 0
        {
            self.waits_left -= 1;
            return Some(("wait".into(), json!({ "runId": run_id })));
        }
        self.cells.pop_front().map(|input| ("exec".into(), input))
    }
}
