//! A small test host: tools of every origin, an executor that behaves like a real host (one
//! call denied by policy, one held for "approval"), and an event recorder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::*;
use serde_json::{Value, json};

pub(crate) fn tool(origin: ToolOrigin, name: &str, read_only: bool) -> ToolDescriptor {
    ToolDescriptor {
        origin,
        name: name.into(),
        label: None,
        description: format!("The {name} tool."),
        parameters: Some(json!({ "type": "object" })),
        direct_only: false,
        read_only,
    }
}

/// The effective tools of the standard test run.
pub(crate) fn tools() -> Vec<ToolDescriptor> {
    let mut computer = tool(ToolOrigin::Core, "computer", false);
    computer.direct_only = true;
    let mut create_issue = tool(ToolOrigin::Mcp("github".into()), "create_issue", false);
    create_issue.parameters = Some(json!({
        "type": "object",
        "properties": { "title": { "type": "string" }, "labels": { "type": "array", "items": { "type": "string" }, "default": [] } },
        "required": ["title"]
    }));
    vec![
        tool(ToolOrigin::Core, "echo", true),
        tool(ToolOrigin::Core, "add", true),
        tool(ToolOrigin::Core, "exec", false),
        tool(ToolOrigin::Core, "approve_me", false),
        tool(ToolOrigin::Core, "denied_at_call", false),
        tool(ToolOrigin::Core, "panics", true),
        tool(ToolOrigin::Core, "deep", true),
        tool(ToolOrigin::Core, "tool_search", true),
        computer,
        tool(
            ToolOrigin::BundledPlugin("browser".into()),
            "browser_request",
            true,
        ),
        tool(ToolOrigin::Client("app".into()), "select_file", true),
        create_issue,
    ]
}

/// What the executor saw.
#[derive(Default)]
pub(crate) struct Seen {
    pub(crate) calls: Vec<(String, Value, String)>,
}

pub(crate) struct TestExecutor {
    pub(crate) seen: Mutex<Seen>,
    pub(crate) approval_delay: Duration,
}

impl TestExecutor {
    pub(crate) fn new() -> Arc<Self> {
        Arc::new(TestExecutor {
            seen: Mutex::new(Seen::default()),
            approval_delay: Duration::from_millis(1000),
        })
    }

    pub(crate) fn calls(&self) -> Vec<String> {
        self.seen
            .lock()
            .unwrap()
            .calls
            .iter()
            .map(|(id, _, _)| id.clone())
            .collect()
    }
}

#[async_trait]
impl ToolExecutor for TestExecutor {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        self.seen.lock().unwrap().calls.push((
            catalog_id.into(),
            input.clone(),
            context.nested_call_id.clone(),
        ));
        match catalog_id {
            "openclaw:core:echo"
            | "openclaw:browser:browser_request"
            | "client:app:select_file" => Ok(input),
            "openclaw:core:add" => Ok(
                json!({ "sum": input["a"].as_f64().unwrap_or(0.0) + input["b"].as_f64().unwrap_or(0.0) }),
            ),
            "openclaw:core:exec" => Ok(json!({ "shell": input["command"] })),
            "openclaw:core:approve_me" | "openclaw:core-like:approve_me" => {
                context
                    .update(json!({ "status": "awaiting approval" }))
                    .unwrap();
                tokio::select! {
                    () = tokio::time::sleep(self.approval_delay) => Ok(json!({ "approved": true })),
                    () = context.cancellation.cancelled() => Err(ToolError::new("cancelled")),
                }
            }
            "openclaw:core:denied_at_call" => {
                Err(ToolError::new("denied by policy: denied_at_call"))
            }
            "openclaw:core:panics" => panic!("executor bug"),
            "openclaw:core:deep" => {
                let mut value = Value::Null;
                for _ in 0..100_000 {
                    value = Value::Array(vec![value]);
                }
                Ok(value)
            }
            "mcp:github:create_issue" => Ok(
                json!({ "content": [{ "type": "text", "text": format!("created {}", input["title"]) }], "structuredContent": input }),
            ),
            other => Err(ToolError::new(format!("no such tool {other}"))),
        }
    }
}

#[derive(Default)]
pub(crate) struct Recorder {
    pub(crate) events: Mutex<Vec<NestedCallEvent>>,
}

impl EventSink for Recorder {
    fn on_event(&self, event: NestedCallEvent) {
        self.events.lock().unwrap().push(event);
    }
}

pub(crate) struct Harness {
    pub(crate) code_mode: CodeMode,
    pub(crate) session: CodeModeSession,
    pub(crate) executor: Arc<TestExecutor>,
    pub(crate) events: Arc<Recorder>,
}

pub(crate) fn run_context(session: &str) -> AgentRunContext {
    AgentRunContext {
        agent_id: Some("agent".into()),
        agent_run_id: Some("run-1".into()),
        session_id: Some(session.into()),
        session_key: Some(format!("key-{session}")),
        ..AgentRunContext::default()
    }
}

pub(crate) fn harness_with(config: CodeModeConfig, tools: Vec<ToolDescriptor>) -> Harness {
    let executor = TestExecutor::new();
    let events = Arc::new(Recorder::default());
    let code_mode = CodeMode::builder(config, executor.clone())
        .events(events.clone())
        .build();
    let mut request = ActivationRequest::new(tools).with_agent_run(run_context("s1"));
    request
        .mcp_capabilities
        .insert("github".into(), McpServerCapabilities::default());
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };
    Harness {
        code_mode,
        session,
        executor,
        events,
    }
}

pub(crate) fn harness() -> Harness {
    harness_with(CodeModeConfig::enabled().build().unwrap(), tools())
}

impl Harness {
    pub(crate) async fn js(&self, code: &str) -> Value {
        self.session
            .exec("call_1", &json!({ "code": code }))
            .await
            .to_json()
    }

    pub(crate) async fn value(&self, code: &str) -> Value {
        let result = self.js(code).await;
        assert_eq!(result["status"], "completed", "{result:#}");
        result["value"].clone()
    }

    pub(crate) async fn error(&self, code: &str) -> (String, Value) {
        let result = self.js(code).await;
        assert_eq!(result["status"], "failed", "{result:#}");
        (
            result["error"].as_str().unwrap_or_default().to_owned(),
            result["code"].clone(),
        )
    }
}
