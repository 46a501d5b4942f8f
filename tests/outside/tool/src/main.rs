//! A crate of tools as another repository would write one: it depends on `codemode-host` alone,
//! describes its tools with `ToolDescriptor`s and runs them behind one `ToolExecutor`, and a host
//! that embeds code mode takes both. It compiles no engine, no catalog, no MCP client and no
//! async runtime; `cargo xtask ci` checks its `cargo tree` for them and runs it:
//!
//! ```text
//! cargo run --manifest-path tests/outside/Cargo.toml -p codemode-outside-tool
//! ```
//!
//! Without a runtime to drive it, `main` polls the executor's futures by hand (its tools never
//! wait), checks every answer, update and refusal, and exits non-zero when one is not what the
//! seam promises.
#![allow(clippy::print_stdout, reason = "an example prints what it shows")]

use std::future::Future;
use std::pin::pin;
use std::sync::{Arc, Mutex};
use std::task::{Context, Poll, Waker};

use codemode_host::serde_json::{Value, json};
use codemode_host::{
    AgentRunContext, CancellationToken, EventSink, NestedCallEvent, ToolCallContext,
    ToolDescriptor, ToolError, ToolExecutor, ToolOrigin, async_trait,
};

/// The catalog id of the word counter. A client's tools have ids `client:<owner>:<name>`
/// whatever the host calls its own source, so the crate can route on exact ids.
const COUNT_ID: &str = "client:words:count";
/// The catalog id of the word reverser.
const REVERSE_ID: &str = "client:words:reverse";

/// Two small tools over the words of a text.
struct WordTools;

impl WordTools {
    /// What the crate hands the host for its `ActivationRequest`.
    fn descriptors() -> Vec<ToolDescriptor> {
        let text_input = json!({
            "type": "object",
            "properties": { "text": { "type": "string" } },
            "required": ["text"],
        });
        vec![
            ToolDescriptor::new(
                ToolOrigin::Client("words".into()),
                "count",
                "Count the words of a text.",
            )
            .parameters(text_input.clone())
            .read_only(),
            ToolDescriptor::new(
                ToolOrigin::Client("words".into()),
                "reverse",
                "Reverse the order of the words of a text.",
            )
            .parameters(text_input)
            .read_only(),
        ]
    }
}

#[async_trait]
impl ToolExecutor for WordTools {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        cx: ToolCallContext,
    ) -> Result<Value, ToolError> {
        if cx.cancellation.is_cancelled() {
            return Err(ToolError::new("cancelled"));
        }
        let Some(text) = input["text"].as_str() else {
            return Err(ToolError::new("`text` must be a string"));
        };
        match catalog_id {
            COUNT_ID => {
                let words = text.split_whitespace().count();
                cx.update(json!({ "counted": words }))
                    .map_err(|error| ToolError::new(error.to_string()))?;
                Ok(json!({ "words": words }))
            }
            REVERSE_ID => {
                let reversed: Vec<&str> = text.split_whitespace().rev().collect();
                Ok(json!({ "text": reversed.join(" ") }))
            }
            other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
        }
    }
}

/// Keeps the events it is given, as a host's transcript would.
#[derive(Default)]
struct Transcript(Mutex<Vec<NestedCallEvent>>);

impl EventSink for Transcript {
    fn on_event(&self, event: NestedCallEvent) {
        self.0.lock().expect("no panic holds the lock").push(event);
    }
}

/// Runs a future that never waits to its end, with no runtime.
fn run_ready<T>(future: impl Future<Output = T>) -> Result<T, String> {
    match pin!(future).poll(&mut Context::from_waker(Waker::noop())) {
        Poll::Ready(value) => Ok(value),
        Poll::Pending => Err("a word tool waited, and nothing here can wake it".into()),
    }
}

/// One nested call of `catalog_id`, whose updates reach `transcript` as code mode's would.
fn call(
    tools: &dyn ToolExecutor,
    transcript: &Arc<Transcript>,
    catalog_id: &str,
    input: Value,
    cancellation: CancellationToken,
) -> Result<Result<Value, ToolError>, String> {
    let sink = Arc::clone(transcript);
    let id = catalog_id.to_owned();
    let cx = ToolCallContext::new(
        AgentRunContext::default(),
        "exec-1",
        "exec-1/1",
        cancellation,
    )
    .with_updates(Arc::new(move |update| {
        sink.on_event(NestedCallEvent::Update {
            parent_call_id: "exec-1".into(),
            nested_call_id: "exec-1/1".into(),
            catalog_id: id.clone(),
            update,
        });
    }));
    run_ready(tools.execute(catalog_id, input, cx))
}

fn check(what: &str, ok: bool) -> Result<(), String> {
    if ok {
        println!("ok: {what}");
        Ok(())
    } else {
        Err(format!("not as promised: {what}"))
    }
}

fn main() -> Result<(), String> {
    let descriptors = WordTools::descriptors();
    check(
        "two read-only tools, neither direct-only",
        descriptors.len() == 2 && descriptors.iter().all(|d| d.read_only && !d.direct_only),
    )?;
    // A shared executor is an executor: the host keeps one and wraps another.
    let tools: Arc<dyn ToolExecutor> = Arc::new(WordTools);
    let transcript = Arc::new(Transcript::default());
    let text = json!({ "text": "code mode hides the tools" });

    let counted = call(
        &*tools,
        &transcript,
        COUNT_ID,
        text.clone(),
        CancellationToken::new(),
    )?;
    check("count answers", counted == Ok(json!({ "words": 5 })))?;
    let reversed = call(
        &*tools,
        &transcript,
        REVERSE_ID,
        text.clone(),
        CancellationToken::new(),
    )?;
    check(
        "reverse answers",
        reversed == Ok(json!({ "text": "tools the hides mode code" })),
    )?;
    let events = transcript
        .0
        .lock()
        .map_err(|_| "a poisoned transcript")?
        .clone();
    check(
        "the count's progress reached the transcript, once",
        matches!(events.as_slice(), [NestedCallEvent::Update { catalog_id, update, .. }]
            if catalog_id == COUNT_ID && *update == json!({ "counted": 5 })),
    )?;

    let unknown = call(
        &*tools,
        &transcript,
        "client:words:shout",
        text.clone(),
        CancellationToken::new(),
    )?;
    check(
        "an unknown id is a plain tool error",
        unknown.is_err_and(|e| e.message == "Unknown tool id: client:words:shout"),
    )?;
    let bad = call(
        &*tools,
        &transcript,
        COUNT_ID,
        json!({ "text": 3 }),
        CancellationToken::new(),
    )?;
    check("a bad input is a plain tool error", bad.is_err())?;
    let cancelled = CancellationToken::new();
    cancelled.cancel();
    let refused = call(&*tools, &transcript, COUNT_ID, text, cancelled)?;
    check(
        "a cancelled call stops",
        refused.is_err_and(|e| e.to_string() == "cancelled"),
    )?;
    Ok(())
}
