//! `wait` idles while the guest is blocked on host work (`maxWaitMs`), and returns as soon as
//! the run completes or produces output. Tools here settle only when the test says so: no
//! assertion depends on timing (elapsed-time checks are lower bounds the code guarantees).

use std::collections::HashMap;
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::*;
use serde_json::{Value, json};
use tokio::sync::oneshot;

/// `gate_<name>` settles with `{ gate: name }` when the test opens it; `never` never settles.
#[derive(Default)]
struct Gates {
    waiting: Mutex<HashMap<String, oneshot::Sender<()>>>,
    opened: Mutex<HashMap<String, bool>>,
}

impl Gates {
    fn open(&self, name: &str) {
        self.opened.lock().unwrap().insert(name.to_owned(), true);
        if let Some(sender) = self.waiting.lock().unwrap().remove(name) {
            let _ = sender.send(());
        }
    }
}

#[async_trait]
impl ToolExecutor for Gates {
    async fn execute(
        &self,
        id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        match id {
            "openclaw:core:gate" => {
                let name = input["name"].as_str().unwrap_or_default().to_owned();
                let (sender, receiver) = oneshot::channel();
                {
                    let opened = self.opened.lock().unwrap();
                    if opened.get(&name).copied().unwrap_or(false) {
                        return Ok(json!({ "gate": name }));
                    }
                    self.waiting.lock().unwrap().insert(name.clone(), sender);
                }
                tokio::select! {
                    _ = receiver => Ok(json!({ "gate": name })),
                    () = context.cancellation.cancelled() => Err(ToolError::new("cancelled")),
                }
            }
            "openclaw:core:never" => {
                context.cancellation.cancelled().await;
                Err(ToolError::new("cancelled"))
            }
            other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
        }
    }
}

fn tool(name: &str) -> ToolDescriptor {
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

fn session(config: Value) -> (CodeModeSession, Arc<Gates>) {
    let gates = Arc::new(Gates::default());
    let config = CodeModeConfig::from_json(&config).unwrap();
    let code_mode = CodeMode::builder(config, gates.clone()).build();
    let request =
        ActivationRequest::new(vec![tool("gate"), tool("never")]).with_agent_run(AgentRunContext {
            session_id: Some("s".into()),
            agent_run_id: Some("r".into()),
            ..AgentRunContext::default()
        });
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };
    (session, gates)
}

#[test]
fn max_wait_ms_defaults_and_clamps() {
    let parse = |value: Value| {
        CodeModeConfig::from_json(&json!({ "enabled": true, "maxWaitMs": value }))
            .map(|config| config.max_wait_ms())
    };
    assert_eq!(
        CodeModeConfig::enabled().build().unwrap().max_wait_ms(),
        DEFAULT_MAX_WAIT_MS
    );
    assert_eq!(DEFAULT_MAX_WAIT_MS, 60_000);
    assert_eq!(parse(json!(5)), Ok(1_000));
    assert_eq!(parse(json!(30_000)), Ok(30_000));
    assert_eq!(parse(json!(10_000_000)), Ok(600_000));
    assert_eq!(
        parse(json!("soon")).unwrap_err().to_string(),
        "tools.codeMode.maxWaitMs must be a positive integer."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_idles_until_the_run_completes() {
    // The first leg (a VM built, the call made) takes about a millisecond: 500 ms legs leave
    // room for a machine busy with other tests.
    let (session, gates) =
        session(json!({ "enabled": true, "timeoutMs": 500, "maxWaitMs": 600000 }));
    let first = session
        .exec(
            "c1",
            &json!({ "code": "return (await tools.gate({ name: 'a' })).gate" }),
        )
        .await
        .to_json();
    assert_eq!(first["status"], "waiting", "{first:#}");
    let run_id = first["runId"].clone();
    // However late the gate opens within maxWaitMs, this one wait sees the completion.
    let wait = tokio::spawn({
        let session = session.clone();
        async move { session.wait(&json!({ "runId": run_id })).await.to_json() }
    });
    gates.open("a");
    let done = wait.await.unwrap();
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], "a");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_returns_at_max_wait_ms_with_what_it_still_waits_for() {
    let (session, _gates) =
        session(json!({ "enabled": true, "timeoutMs": 500, "maxWaitMs": 2000 }));
    let first = session
        .exec("c1", &json!({ "code": "return await tools.never({})" }))
        .await
        .to_json();
    assert_eq!(first["status"], "waiting", "{first:#}");
    let started = Instant::now();
    let again = session
        .wait(&json!({ "runId": first["runId"] }))
        .await
        .to_json();
    assert_eq!(again["status"], "waiting", "{again:#}");
    assert_eq!(again["reason"], "pending_tools");
    assert_eq!(
        again["pendingToolCalls"][0]["toolId"], "openclaw:core:never",
        "{again:#}"
    );
    // It idled in 500 ms legs until one more would pass 2000 ms: never a single leg.
    assert!(
        started.elapsed() >= Duration::from_millis(1500),
        "{:?}",
        started.elapsed()
    );

    // `timeoutMs` in the input asks for less: one leg of at most that.
    let short = session
        .wait(&json!({ "runId": first["runId"], "timeoutMs": 100 }))
        .await
        .to_json();
    assert_eq!(short["status"], "waiting", "{short:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_returns_when_the_guest_prints() {
    let (session, gates) =
        session(json!({ "enabled": true, "timeoutMs": 500, "maxWaitMs": 600000 }));
    let code = "const held = tools.never({}); await tools.gate({ name: 'b' }); text('progress'); return await held";
    let first = session.exec("c1", &json!({ "code": code })).await.to_json();
    assert_eq!(first["status"], "waiting", "{first:#}");
    let wait = tokio::spawn({
        let session = session.clone();
        let run_id = first["runId"].clone();
        async move { session.wait(&json!({ "runId": run_id })).await.to_json() }
    });
    gates.open("b");
    let progress = wait.await.unwrap();
    assert_eq!(progress["status"], "waiting", "{progress:#}");
    assert_eq!(progress["output"][0]["text"], "progress", "{progress:#}");
}
