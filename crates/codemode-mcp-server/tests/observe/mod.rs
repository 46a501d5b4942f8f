//! What an operator and a client can watch: progress notifications of `exec` and `wait`
//! (`progress.rs`) and the metrics endpoint (`metrics.rs`). No test waits on a timer: every
//! timeout below is a failure bound only, and every ordering is one the server guarantees.

mod metrics;
mod progress;

use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::{
    ActivationRequest, AgentRunContext, CodeMode, CodeModeConfig, ToolCallContext, ToolError,
    ToolExecutor,
};
use codemode_mcp_server::CodeModeServer;
use rmcp::model::{
    CallToolRequest, CallToolRequestParams, CallToolResult, ClientRequest,
    ProgressNotificationParam, ProgressToken, ServerResult,
};
use rmcp::service::{NotificationContext, PeerRequestOptions, RunningService};
use rmcp::{ClientHandler, RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

/// Failure bound for anything awaited in these tests.
pub(crate) const BOUND: Duration = Duration::from_secs(60);

/// The host tools: `add` answers at once; `report` sends two updates, then answers; `gate`
/// answers when the test opens its gate; `flood` sends `count` updates of about 200 bytes and
/// says so on `flooded` before it answers.
pub(crate) struct Tools {
    pub(crate) gate: Arc<Notify>,
    pub(crate) flooded: mpsc::UnboundedSender<u64>,
}

#[async_trait::async_trait]
impl ToolExecutor for Tools {
    async fn execute(
        &self,
        id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        match id {
            "openclaw:core:add" => {
                let a = input["a"].as_f64().unwrap_or_default();
                let b = input["b"].as_f64().unwrap_or_default();
                Ok(json!({ "sum": a + b }))
            }
            "openclaw:core:report" => {
                for step in 1..=2 {
                    context
                        .update(json!({ "step": step }))
                        .map_err(|e| ToolError::new(e.to_string()))?;
                }
                Ok(json!({ "reported": 2 }))
            }
            "openclaw:core:gate" => {
                self.gate.notified().await;
                Ok(json!({ "opened": true }))
            }
            "openclaw:core:flood" => {
                let count = input["count"].as_u64().unwrap_or(1);
                for n in 0..count {
                    let _ = context.update(json!({ "n": n, "pad": "x".repeat(180) }));
                }
                let _ = self.flooded.send(count);
                Ok(json!({ "sent": count }))
            }
            other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
        }
    }
}

fn descriptor(name: &str) -> ToolDescriptor {
    ToolDescriptor {
        origin: ToolOrigin::Core,
        name: name.into(),
        label: None,
        description: format!("The {name} tool."),
        parameters: Some(json!({ "type": "object" })),
        direct_only: false,
        read_only: true,
    }
}

pub(crate) struct Fixture {
    pub(crate) server: CodeModeServer,
    pub(crate) gate: Arc<Notify>,
    pub(crate) flooded: mpsc::UnboundedReceiver<u64>,
}

pub(crate) fn fixture() -> Fixture {
    let gate = Arc::new(Notify::new());
    let (flooded_tx, flooded) = mpsc::unbounded_channel();
    let tools = Tools {
        gate: Arc::clone(&gate),
        flooded: flooded_tx,
    };
    let code_mode =
        CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), Arc::new(tools)).build();
    let server = CodeModeServer::new(
        code_mode,
        Arc::new(|run: AgentRunContext| {
            let tools = ["add", "report", "gate", "flood"].map(descriptor).to_vec();
            ActivationRequest::new(tools).with_agent_run(run)
        }),
    );
    Fixture {
        server,
        gate,
        flooded,
    }
}

/// A client that keeps every progress notification it gets, in order.
#[derive(Clone, Default)]
pub(crate) struct Watcher {
    seen: Arc<Mutex<Vec<ProgressNotificationParam>>>,
    arrived: Arc<Notify>,
}

impl ClientHandler for Watcher {
    async fn on_progress(
        &self,
        params: ProgressNotificationParam,
        _context: NotificationContext<RoleClient>,
    ) {
        self.seen.lock().unwrap().push(params);
        self.arrived.notify_waiters();
    }
}

impl Watcher {
    /// The notifications of `token` once its last one (`result`) has come: (progress value,
    /// message as JSON).
    pub(crate) async fn until_result(&self, token: &ProgressToken) -> Vec<(f64, Value)> {
        tokio::time::timeout(BOUND, async {
            loop {
                let arrived = self.arrived.notified();
                let mine = self.of(token);
                let whole = mine
                    .iter()
                    .enumerate()
                    .all(|(i, (p, _))| *p == (i + 1) as f64);
                if whole && mine.last().is_some_and(|(_, m)| m["event"] == "result") {
                    return mine;
                }
                arrived.await;
            }
        })
        .await
        .expect("the last progress notification comes")
    }

    /// The notifications of `token` so far, by their progress value: the order the server
    /// sent them in (rmcp's client may hand them to the handler in another).
    pub(crate) fn of(&self, token: &ProgressToken) -> Vec<(f64, Value)> {
        let mut seen: Vec<(f64, Value)> = self
            .seen
            .lock()
            .unwrap()
            .iter()
            .filter(|p| &p.progress_token == token)
            .map(|p| {
                let message = p.message.as_deref().unwrap_or("null");
                (
                    p.progress,
                    serde_json::from_str(message).expect("a JSON message"),
                )
            })
            .collect();
        seen.sort_by(|a, b| a.0.total_cmp(&b.0));
        seen
    }

    /// Waits until a notification of `token` satisfies `found`.
    pub(crate) async fn until(&self, token: &ProgressToken, found: impl Fn(&Value) -> bool) {
        tokio::time::timeout(BOUND, async {
            loop {
                let arrived = self.arrived.notified();
                if self.of(token).iter().any(|(_, m)| found(m)) {
                    return;
                }
                arrived.await;
            }
        })
        .await
        .expect("the notification comes");
    }
}

pub(crate) type Client = RunningService<RoleClient, Watcher>;

/// Connects a watching rmcp client to a fresh session over an in-memory pipe.
pub(crate) async fn connect(server: &CodeModeServer, watcher: Watcher) -> Client {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let server = server.clone();
    tokio::spawn(async move {
        let _ = server.serve_io(server_read, server_write).await;
    });
    let (client_read, client_write) = tokio::io::split(client_io);
    tokio::time::timeout(BOUND, watcher.serve((client_read, client_write)))
        .await
        .expect("bound")
        .expect("initialize")
}

/// Calls `tool`: its result and the progress token rmcp's client gave the request (it gives
/// every request one).
pub(crate) async fn call(
    client: &Client,
    tool: &str,
    arguments: Value,
) -> (CallToolResult, ProgressToken) {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    let request = ClientRequest::CallToolRequest(CallToolRequest::new(request));
    let handle = client
        .send_cancellable_request(request, PeerRequestOptions::no_options())
        .await
        .expect("sent");
    let token = handle.progress_token.clone();
    let answer = tokio::time::timeout(BOUND, handle.await_response())
        .await
        .expect("bound")
        .expect("tools/call");
    match answer {
        ServerResult::CallToolResult(result) => (result, token),
        other => panic!("{other:?}"),
    }
}

pub(crate) fn structured(result: &CallToolResult) -> Value {
    result
        .structured_content
        .clone()
        .expect("structuredContent")
}
