//! A small test host: tools of every origin, an executor that behaves like a real host (one
//! call denied by policy, one held for "approval"), and an event recorder.

use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::*;
use codemode_journal::JournalStore;
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
            // More than 2 s past the 400 ms legs of the tests that expect a run parked on an
            // approval: the leg parks first however busy the machine is.
            approval_delay: Duration::from_millis(2500),
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
    harness_built(config, tools, None)
}

/// [`harness_with`], with the TTL of its suspended runs measured on `clock`.
pub(crate) fn harness_on_clock(
    config: CodeModeConfig,
    tools: Vec<ToolDescriptor>,
    clock: ManualClock,
) -> Harness {
    harness_built(config, tools, Some(clock))
}

fn harness_built(
    config: CodeModeConfig,
    tools: Vec<ToolDescriptor>,
    snapshot_clock: Option<ManualClock>,
) -> Harness {
    let executor = TestExecutor::new();
    let events = Arc::new(Recorder::default());
    let mut builder = CodeMode::builder(config, executor.clone()).events(events.clone());
    if let Some(clock) = snapshot_clock {
        builder = builder.snapshot_clock(clock);
    }
    let code_mode = builder.build();
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

/// A journal store that writes each new run's row as `.1` rewrites it (what a row damaged, or
/// written by another host, reads back as); everything else goes to the store inside.
#[derive(Debug)]
pub(crate) struct RewrittenRows(
    pub(crate) Arc<dyn JournalStore>,
    pub(crate) fn(&mut codemode_journal::RunRecord),
);

#[async_trait]
impl JournalStore for RewrittenRows {
    async fn create(
        &self,
        record: &codemode_journal::RunRecord,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<(), codemode_journal::JournalError> {
        let mut record = record.clone();
        (self.1)(&mut record);
        self.0.create(&record, host, now_ms, held_until_ms).await
    }
    async fn append(
        &self,
        run_id: &str,
        epoch: u64,
        batch: &codemode_journal::Batch,
    ) -> Result<(), codemode_journal::JournalError> {
        self.0.append(run_id, epoch, batch).await
    }
    async fn load(
        &self,
        run_id: &str,
        now_ms: i64,
    ) -> Result<Option<codemode_journal::Journal>, codemode_journal::JournalError> {
        self.0.load(run_id, now_ms).await
    }
    async fn claim(
        &self,
        run_id: &str,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<codemode_journal::Claim, codemode_journal::JournalError> {
        self.0.claim(run_id, host, now_ms, held_until_ms).await
    }
    async fn release(
        &self,
        run_id: &str,
        epoch: u64,
        expires_at_ms: i64,
    ) -> Result<(), codemode_journal::JournalError> {
        self.0.release(run_id, epoch, expires_at_ms).await
    }
    async fn delete(
        &self,
        run_id: &str,
        epoch: Option<u64>,
    ) -> Result<(), codemode_journal::JournalError> {
        self.0.delete(run_id, epoch).await
    }
    async fn delete_session(&self, session: &str) -> Result<u64, codemode_journal::JournalError> {
        self.0.delete_session(session).await
    }
    async fn delete_agent_run(
        &self,
        agent_run_id: &str,
    ) -> Result<u64, codemode_journal::JournalError> {
        self.0.delete_agent_run(agent_run_id).await
    }
    async fn delete_expired(&self, now_ms: i64) -> Result<u64, codemode_journal::JournalError> {
        self.0.delete_expired(now_ms).await
    }
    async fn count(&self, now_ms: i64) -> Result<u64, codemode_journal::JournalError> {
        self.0.count(now_ms).await
    }
    async fn save_transport_session(
        &self,
        session_id: &str,
        state: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), codemode_journal::JournalError> {
        self.0
            .save_transport_session(session_id, state, now_ms, expires_at_ms)
            .await
    }
    async fn load_transport_session(
        &self,
        session_id: &str,
        now_ms: i64,
    ) -> Result<Option<String>, codemode_journal::JournalError> {
        self.0.load_transport_session(session_id, now_ms).await
    }
    async fn delete_transport_session(
        &self,
        session_id: &str,
    ) -> Result<(), codemode_journal::JournalError> {
        self.0.delete_transport_session(session_id).await
    }
}
