//! A complete embedding of code mode in a Rust agent host, as `docs/embedding.md` walks
//! through it: three tools of the host's own, an event sink, two sessions, a run that
//! suspends on an approval and resumes with `wait`, a restart-safe run recovered after a
//! simulated host restart, a plugin namespace, and an MCP server through `McpHub`.
//!
//! It is a crate outside the workspace (`tests/outside/host`), depending on codemode-core by
//! path with nothing else to copy, as any other repository would:
//!
//! ```text
//! cargo run --manifest-path tests/outside/Cargo.toml -p codemode-outside-host -- [MCP server command]
//! ```
//!
//! The MCP server defaults to `$CODEMODE_TEST_MCP_SERVER`; `cargo xtask ci` passes the
//! repository's own test server (`cargo build -p codemode-mcp --bin codemode-mcp-test-server`).
//! Without one, the MCP part is skipped. Exits non-zero when any step does not give the result
//! the guide promises.
#![allow(clippy::print_stdout, reason = "an example prints what it shows")]

use std::collections::BTreeMap;
use std::error::Error;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_core::prelude::*;
use codemode_core::{MemoryRecoveryStore, TYPESCRIPT_NOT_COMPILED_IN};
use serde_json::{Value, json};
use tokio::sync::{Notify, mpsc};

type Result<T> = std::result::Result<T, Box<dyn Error>>;

// ---------------------------------------------------------------------------------------------
// 1. The host's own tools, behind one `ToolExecutor`.

/// The host's tools: notes in memory, a save that waits for a human's approval, and a plugin
/// tool that lists notes.
#[derive(Default)]
struct NoteTools {
    notes: Mutex<Vec<String>>,
    approvals: Notify,
}

impl NoteTools {
    fn descriptors() -> Vec<ToolDescriptor> {
        vec![
            ToolDescriptor::new(ToolOrigin::Core, "search_notes", "Search the user's notes.")
                .parameters(json!({
                    "type": "object",
                    "properties": { "query": { "type": "string" } },
                    "required": ["query"]
                }))
                .read_only(),
            ToolDescriptor::new(
                ToolOrigin::Core,
                "save_note",
                "Save a note (needs approval).",
            )
            .parameters(json!({
                "type": "object",
                "properties": { "text": { "type": "string" } },
                "required": ["text"]
            }))
            .label("Save note"),
            ToolDescriptor::new(
                ToolOrigin::BundledPlugin("notes".into()),
                "list_notes",
                "List every note.",
            )
            .read_only(),
        ]
    }
}

#[async_trait]
impl ToolExecutor for NoteTools {
    async fn execute(
        &self,
        id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> std::result::Result<Value, ToolError> {
        match id {
            "myagent:core:search_notes" => {
                let query = input["query"].as_str().unwrap_or_default().to_lowercase();
                // Progress reaches the event sink with its payload (bounded; see update()).
                context
                    .update(json!({ "searching": query }))
                    .map_err(|e| ToolError::new(e.to_string()))?;
                let notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
                let hits: Vec<&String> = notes
                    .iter()
                    .filter(|note| note.to_lowercase().contains(&query))
                    .collect();
                Ok(json!({ "hits": hits }))
            }
            "myagent:core:save_note" => {
                // An approval that takes a while is just a call that has not finished: the run
                // parks, and `wait` picks it up. Cancelling the run cancels the approval.
                tokio::select! {
                    () = self.approvals.notified() => {}
                    () = context.cancellation.cancelled() => {
                        return Err(ToolError::new("cancelled before approval"));
                    }
                }
                let text = input["text"].as_str().unwrap_or_default().to_owned();
                let mut notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
                notes.push(text);
                Ok(json!({ "saved": notes.len() }))
            }
            "myagent:notes:list_notes" => {
                let notes = self.notes.lock().unwrap_or_else(|e| e.into_inner());
                Ok(json!({ "notes": *notes }))
            }
            other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
        }
    }
}

// ---------------------------------------------------------------------------------------------
// 2. An event sink: nested calls for the transcript, under their parent `exec`.

struct Transcript(mpsc::UnboundedSender<NestedCallEvent>);

impl EventSink for Transcript {
    fn on_event(&self, event: NestedCallEvent) {
        let _ = self.0.send(event);
    }
}

fn print_events(events: &mut mpsc::UnboundedReceiver<NestedCallEvent>) -> Vec<Value> {
    let mut seen = Vec::new();
    while let Ok(event) = events.try_recv() {
        let event = serde_json::to_value(&event).unwrap_or(Value::Null);
        println!("    event: {event}");
        seen.push(event);
    }
    seen
}

// ---------------------------------------------------------------------------------------------
// 3. A plugin namespace over the plugin's own tool.

fn namespaces() -> Result<Arc<NamespaceRegistry>> {
    let registry = Arc::new(NamespaceRegistry::new());
    registry.register_for_plugin(
        "notes",
        Registration::new("notes", "Notes", |_| {
            Ok(ScopeValue::object([(
                "all",
                NamespaceTool::new("list_notes").into(),
            )]))
        })
        .with_description("The user's notes.")
        .with_required_tools(["list_notes"])
        .with_prompt("Use `await Notes.all()` for every note."),
    )?;
    Ok(registry)
}

fn check(what: &str, ok: bool, result: &CodeModeResult) -> Result<()> {
    println!("  {what}: {}", result.to_json());
    if ok {
        Ok(())
    } else {
        Err(format!("{what}: unexpected result").into())
    }
}

fn agent_run(session: &str) -> AgentRunContext {
    AgentRunContext {
        agent_id: Some("example-agent".into()),
        agent_run_id: Some("run-1".into()),
        session_id: Some(session.into()),
        ..AgentRunContext::default()
    }
}

#[tokio::main]
async fn main() -> Result<()> {
    // -----------------------------------------------------------------------------------------
    // MCP: one real server through the hub (optional in this example).
    let server = std::env::args()
        .nth(1)
        .or_else(|| std::env::var("CODEMODE_TEST_MCP_SERVER").ok());
    let hub = match &server {
        Some(command) => {
            let servers = BTreeMap::from([("testsrv".to_owned(), McpServerConfig::new(command))]);
            let (hub, failures) = McpHub::start(servers, HubOptions::default()).await;
            if let Some(failure) = failures.first() {
                return Err(format!("the MCP server did not start: {failure}").into());
            }
            hub
        }
        None => {
            println!("(no MCP server given: the MCP steps are skipped)");
            McpHub::default()
        }
    };

    // -----------------------------------------------------------------------------------------
    // Code mode: the config (validated, clamped), the executor (MCP first, then the host's
    // tools), the event sink, the namespaces and the host's own source name.
    let config = CodeModeConfig::enabled()
        .timeout(Duration::from_millis(500))
        .snapshot_ttl(Duration::from_secs(300))
        .build()?;
    let tools = Arc::new(NoteTools::default());
    let (sink, mut events) = mpsc::unbounded_channel();
    let build = |tools: Arc<NoteTools>| -> Result<CodeMode> {
        Ok(
            CodeMode::builder(config.clone(), Arc::new(WithMcp::new(hub.clone(), tools)))
                .events(Arc::new(Transcript(sink.clone())))
                .namespaces(namespaces()?)
                .source_name("myagent")?
                .build(),
        )
    };
    let code_mode = build(Arc::clone(&tools))?;
    let activate = |code_mode: &CodeMode, session: &str| -> Result<CodeModeSession> {
        let request = ActivationRequest::new(NoteTools::descriptors())
            .with_agent_run(agent_run(session))
            .with_mcp(&hub);
        code_mode
            .activate(request)?
            .into_active()
            .ok_or_else(|| "code mode did not activate".into())
    };
    let first = activate(&code_mode, "session-1")?;
    let names: Vec<&str> = first
        .model_tools()
        .iter()
        .map(|t| t.name.as_str())
        .collect();
    println!("model-visible tools: {names:?}");
    println!("catalog: {} tools", first.catalog().len());

    // -----------------------------------------------------------------------------------------
    println!("\n1. a run that suspends on an approval, then wait");
    let exec = first
        .exec(
            "call-1",
            &json!({ "code": "const r = await tools.save_note({ text: 'Buy milk' }); text('saved'); return r" }),
        )
        .await;
    check("exec", exec.status() == "waiting", &exec)?;
    print_events(&mut events);
    let run_id = exec.run_id().unwrap_or_default().to_owned();

    println!("\n2. a second session cannot resume the first one's run");
    let second = activate(&code_mode, "session-2")?;
    let refused = second.wait(&json!({ "runId": run_id })).await;
    check(
        "wait from session-2",
        refused.wait_failure() == Some(WaitFailure::OtherSession),
        &refused,
    )?;

    tools.approvals.notify_one();
    let done = first.wait_input(&WaitInput::new(&run_id)).await;
    check(
        "wait after approval",
        done.value() == Some(&json!({ "saved": 1 })),
        &done,
    )?;
    print_events(&mut events);

    println!("\n3. search with progress updates, the plugin namespace and the catalog");
    let searched = first
        .exec(
            "call-2",
            &json!({ "code": "const found = await tools.search_notes({ query: 'milk' }); \
                     const all = await Notes.all(); \
                     return { found: found.hits, all: all.notes, ids: ALL_TOOLS.map((t) => t.id) }" }),
        )
        .await;
    check(
        "exec",
        searched
            .value()
            .is_some_and(|v| v["found"] == json!(["Buy milk"])),
        &searched,
    )?;
    let updates: Vec<Value> = print_events(&mut events)
        .into_iter()
        .filter(|e| e["event"] == "update")
        .collect();
    if updates.first().map(|e| &e["update"]) != Some(&json!({ "searching": "milk" })) {
        return Err("the update payload did not reach the sink".into());
    }

    println!("\n4. restartSafe, a host restart and recovery");
    let store = MemoryRecoveryStore::new();
    let parked = first
        .exec_recoverable(
            "call-3",
            &json!({ "restartSafe": true, "code": "const hits = await tools.search_notes({ query: 'buy' }); \
                     await yield_control('checkpoint'); return hits.hits.length" }),
            &store,
        )
        .await;
    check(
        "restart-safe exec",
        parked.status() == "waiting" && parked.replay_safe(),
        &parked,
    )?;
    let lost_run = parked.run_id().unwrap_or_default().to_owned();
    print_events(&mut events);
    // The host restarts: every parked run is gone, only the recovery store survives.
    drop((first, second, code_mode));
    let code_mode = build(Arc::clone(&tools))?;
    let first = activate(&code_mode, "session-1")?;
    let plain = first.wait(&json!({ "runId": lost_run })).await;
    check(
        "plain wait after the restart",
        plain.wait_failure() == Some(WaitFailure::Unknown),
        &plain,
    )?;
    let recovered = first
        .wait_or_recover(&json!({ "runId": lost_run }), &store)
        .await;
    // The recovered run starts again, parks at its yield under a new runId; wait finishes it.
    let recovered = match recovered.run_id() {
        Some(new_run) => {
            first
                .wait_or_recover(&json!({ "runId": new_run }), &store)
                .await
        }
        None => recovered,
    };
    check(
        "wait_or_recover",
        recovered.value() == Some(&json!(1)) && store.is_empty(),
        &recovered,
    )?;
    let recovered_ids: Vec<Value> = print_events(&mut events)
        .into_iter()
        .map(|e| e["nestedCallId"].clone())
        .collect();
    if !recovered_ids.iter().all(|id| {
        id.as_str()
            .is_some_and(|id| id.starts_with("call-3/recovered-"))
    }) {
        return Err("recovered nested calls must have fresh ids".into());
    }

    if server.is_some() {
        println!("\n5. MCP: a tool, a resource, and a call stopped by cancelling its run");
        let mcp = first
            .exec(
                "call-4",
                &json!({ "code": "const echo = await MCP.testsrv.echo({ text: 'hi' }); \
                         const resources = await MCP.testsrv.resources.list(); \
                         return { echo: echo.structuredContent, resources: resources.resources.map((r) => r.uri) }" }),
            )
            .await;
        check(
            "MCP exec",
            mcp.value()
                .is_some_and(|v| v["resources"] == json!(["test://greeting"])),
            &mcp,
        )?;
        print_events(&mut events);
        let slow = first
            .exec(
                "call-5",
                &json!({ "code": "return await MCP.testsrv.slowForever({})" }),
            )
            .await;
        check(
            "a call that never answers",
            slow.status() == "waiting",
            &slow,
        )?;
        print_events(&mut events);
        let cancelled = first.cancel(slow.run_id().unwrap_or_default());
        println!("  cancel: {cancelled}");
        // The MCP call ends as soon as its run is cancelled: its end event arrives.
        let end = tokio::time::timeout(Duration::from_secs(10), async {
            while let Some(event) = events.recv().await {
                let event = serde_json::to_value(&event).unwrap_or(Value::Null);
                println!("    event: {event}");
                if event["event"] == "end" && event["parentCallId"] == "call-5" {
                    return Some(event);
                }
            }
            None
        })
        .await;
        if !matches!(end, Ok(Some(_))) {
            return Err("the cancelled MCP call did not end".into());
        }
    }

    // -----------------------------------------------------------------------------------------
    println!("\n6. TypeScript needs the `typescript` feature, which this host leaves out");
    let typescript = first
        .exec(
            "call-6",
            &json!({ "code": "const n: number = 1; return n", "language": "typescript" }),
        )
        .await;
    check(
        "a TypeScript cell",
        typescript.status() == "failed"
            && typescript.to_json()["error"] == json!(TYPESCRIPT_NOT_COMPILED_IN),
        &typescript,
    )?;

    drop((first, code_mode));
    hub.shutdown().await;
    println!("\nall steps gave the expected results");
    Ok(())
}
