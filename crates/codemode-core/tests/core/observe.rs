//! `CodeModeSession::observed`: a call's observer sees the nested calls and output of the leg
//! it drives, with a journal too, and a replayed run shows no output again.

use std::sync::{Arc, Mutex};

use async_trait::async_trait;
use codemode_catalog::ToolOrigin;
use codemode_core::*;
use codemode_journal::JournalStore;
use serde_json::{Value, json};

use crate::support::{run_context, tool};

/// Answers `append` and `read` at once.
struct Tools;

#[async_trait]
impl ToolExecutor for Tools {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        _context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        Ok(json!({ "id": catalog_id, "input": input }))
    }
}

/// What an observer saw, each as a short line.
#[derive(Default)]
struct Seen(Mutex<Vec<String>>);

impl CallObserver for Seen {
    fn on_event(&self, event: &NestedCallEvent) {
        let line = match event {
            NestedCallEvent::Start { catalog_id, .. } => format!("start {catalog_id}"),
            NestedCallEvent::Update { catalog_id, .. } => format!("update {catalog_id}"),
            NestedCallEvent::End { catalog_id, .. } => format!("end {catalog_id}"),
        };
        self.0.lock().unwrap().push(line);
    }

    fn on_output(&self, items: &[OutputItem]) {
        for item in items {
            let line = match item {
                OutputItem::Text { text } => format!("text {text}"),
                OutputItem::Json { value } => format!("json {value}"),
            };
            self.0.lock().unwrap().push(line);
        }
    }
}

impl Seen {
    fn lines(&self) -> Vec<String> {
        self.0.lock().unwrap().clone()
    }
}

/// A "process": a `CodeMode` over the shared journal store, and its session.
fn process(store: &Arc<dyn JournalStore>) -> (CodeMode, CodeModeSession) {
    let code_mode = CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), Arc::new(Tools))
        .journal(Arc::clone(store))
        .build();
    let tools = vec![
        tool(ToolOrigin::Core, "append", false),
        tool(ToolOrigin::Core, "read", true),
    ];
    let request = ActivationRequest::new(tools).with_agent_run(run_context("s1"));
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };
    (code_mode, session)
}

const CELL: &str = "text('before'); await tools.append({ line: 'a' }); await yield_control(); \
    text('after'); await tools.read({}); return 1";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journaled_run_is_observed_leg_by_leg() {
    let store: Arc<dyn JournalStore> = Arc::new(codemode_journal::MemoryJournal::new());
    let (_code_mode, session) = process(&store);
    let exec_seen = Arc::new(Seen::default());
    let waiting = session
        .observed(exec_seen.clone())
        .exec("call_1", &json!({ "code": CELL }))
        .await
        .to_json();
    assert_eq!(waiting["reason"], "yield", "{waiting:#}");
    let mut lines = exec_seen.lines();
    lines.sort();
    assert_eq!(
        lines,
        [
            "end openclaw:core:append",
            "start openclaw:core:append",
            "text before"
        ]
    );
    // The live VM, in this process: the wait sees its own leg only.
    let wait_seen = Arc::new(Seen::default());
    let run_id = waiting["runId"].as_str().unwrap();
    let done = session
        .observed(wait_seen.clone())
        .wait(&json!({ "runId": run_id }))
        .await
        .to_json();
    assert_eq!(done["value"], 1, "{done:#}");
    let mut lines = wait_seen.lines();
    lines.sort();
    assert_eq!(
        lines,
        [
            "end openclaw:core:read",
            "start openclaw:core:read",
            "text after"
        ]
    );
    // The handle without an observer, and the first call's observer, saw nothing more.
    assert_eq!(exec_seen.lines().len(), 3);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_run_shows_its_live_calls_and_no_output_again() {
    let store: Arc<dyn JournalStore> = Arc::new(codemode_journal::MemoryJournal::new());
    let (first, session) = process(&store);
    let waiting = session
        .exec("call_1", &json!({ "code": CELL }))
        .await
        .to_json();
    assert_eq!(waiting["reason"], "yield", "{waiting:#}");
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    // The process is lost: only the journal is left.
    first.shutdown();
    drop((first, session));
    let (_second, session) = process(&store);
    let seen = Arc::new(Seen::default());
    let done = session
        .observed(seen.clone())
        .wait(&json!({ "runId": run_id }))
        .await
        .to_json();
    assert_eq!(done["value"], 1, "{done:#}");
    assert_eq!(done["output"], json!([{ "type": "text", "text": "after" }]));
    // The recorded `append` is answered from the journal (no event); the live `read` is seen.
    assert_eq!(
        seen.lines(),
        ["start openclaw:core:read", "end openclaw:core:read"]
    );
}
