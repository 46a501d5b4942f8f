//! The embedding API as a host uses it: typed `wait` failures, restart recovery through a
//! recovery store with fresh nested ids, update payloads, the host's own source name and the
//! symmetric inputs and accessors. Tools settle only when the test says so (a gate), and every
//! wait for "the executor started" is a channel receive, never a sleep.

use std::collections::{HashMap, HashSet};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use codemode_core::prelude::*;
use codemode_core::{MAX_UPDATE_BYTES, ManualClock, MemoryRecoveryStore, RecoveryStore};
use serde_json::{Value, json};
use tokio::sync::{mpsc, oneshot};

/// Read-only `lookup` (echo) and `gate` (settles when opened, announcing that it started),
/// side-effecting `write`, and `progress`, which sends one small and one oversized update.
struct Host {
    opened: Mutex<HashMap<String, bool>>,
    waiting: Mutex<HashMap<String, oneshot::Sender<()>>>,
    started: mpsc::UnboundedSender<String>,
    seen: Mutex<Vec<String>>,
}

impl Host {
    fn new() -> (Arc<Host>, mpsc::UnboundedReceiver<String>) {
        let (started, receiver) = mpsc::unbounded_channel();
        let host = Host {
            opened: Mutex::default(),
            waiting: Mutex::default(),
            started,
            seen: Mutex::default(),
        };
        (Arc::new(host), receiver)
    }

    fn open(&self, name: &str) {
        self.opened.lock().unwrap().insert(name.to_owned(), true);
        if let Some(sender) = self.waiting.lock().unwrap().remove(name) {
            let _ = sender.send(());
        }
    }
}

#[async_trait]
impl ToolExecutor for Host {
    async fn execute(
        &self,
        id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        self.seen.lock().unwrap().push(id.to_owned());
        let name = id.rsplit(':').next().unwrap_or_default();
        match name {
            "lookup" => Ok(json!({ "hits": [input["q"].clone()] })),
            "write" => Ok(json!({ "written": true })),
            "progress" => {
                context.update(json!({ "step": 1 })).unwrap();
                let big = Value::String("x".repeat(MAX_UPDATE_BYTES));
                let refused = context.update(big).unwrap_err().to_string();
                Ok(json!({ "refused": refused }))
            }
            "gate" => {
                let gate = input["name"].as_str().unwrap_or_default().to_owned();
                let (sender, receiver) = oneshot::channel();
                {
                    let opened = self.opened.lock().unwrap();
                    if opened.get(&gate).copied().unwrap_or(false) {
                        return Ok(json!({ "gate": gate }));
                    }
                    self.waiting.lock().unwrap().insert(gate.clone(), sender);
                }
                let _ = self.started.send(gate.clone());
                tokio::select! {
                    _ = receiver => Ok(json!({ "gate": gate })),
                    () = context.cancellation.cancelled() => Err(ToolError::new("cancelled")),
                }
            }
            other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
        }
    }
}

#[derive(Default)]
struct Events(Mutex<Vec<NestedCallEvent>>);

impl EventSink for Events {
    fn on_event(&self, event: NestedCallEvent) {
        self.0.lock().unwrap().push(event);
    }
}

impl Events {
    fn json(&self) -> Vec<Value> {
        let events = self.0.lock().unwrap();
        events
            .iter()
            .map(|e| serde_json::to_value(e).unwrap())
            .collect()
    }
}

fn tools() -> Vec<ToolDescriptor> {
    let object = json!({ "type": "object" });
    vec![
        ToolDescriptor::new(ToolOrigin::Core, "lookup", "Look something up.")
            .parameters(object.clone())
            .read_only(),
        ToolDescriptor::new(ToolOrigin::Core, "gate", "Wait for a gate.").read_only(),
        ToolDescriptor::new(ToolOrigin::Core, "write", "Write something."),
        ToolDescriptor::new(ToolOrigin::Core, "progress", "Report progress.").read_only(),
        ToolDescriptor::new(ToolOrigin::Client("app".into()), "pick", "Pick a file.").read_only(),
    ]
}

fn agent_run(session: &str, run: &str) -> AgentRunContext {
    AgentRunContext {
        agent_run_id: Some(run.into()),
        session_id: Some(session.into()),
        ..AgentRunContext::default()
    }
}

fn code_mode(host: &Arc<Host>, events: &Arc<Events>, config: CodeModeConfig) -> CodeMode {
    CodeMode::builder(config, host.clone())
        .events(events.clone())
        .build()
}

fn fast() -> CodeModeConfig {
    CodeModeConfig::enabled()
        .timeout(Duration::from_millis(300))
        .max_wait(Duration::from_secs(600))
        .build()
        .unwrap()
}

fn session(code_mode: &CodeMode, session: &str, run: &str) -> CodeModeSession {
    code_mode
        .activate(ActivationRequest::new(tools()).with_agent_run(agent_run(session, run)))
        .unwrap()
        .into_active()
        .expect("code mode is active")
}

fn wait(run_id: &str) -> Value {
    json!({ "runId": run_id })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_failures_carry_a_machine_readable_reason() {
    let (host, mut started) = Host::new();
    let events = Arc::new(Events::default());
    let code_mode = code_mode(&host, &events, fast());
    let mine = session(&code_mode, "s1", "r1");

    let parked = mine
        .exec(
            "c1",
            &json!({ "code": "await yield_control(); return (await tools.gate({ name: 'a' })).gate" }),
        )
        .await;
    let run_id = parked.run_id().expect("parked at the yield").to_owned();

    let check = |result: CodeModeResult, reason: &str, message: &str| {
        let json = result.to_json();
        assert_eq!(json["status"], "failed", "{json:#}");
        assert_eq!(json["code"], "invalid_input", "{json:#}");
        assert_eq!(json["reason"], reason, "{json:#}");
        assert_eq!(json["error"], message, "{json:#}");
        assert_eq!(result.wait_failure().unwrap().message(), message);
    };
    let unavailable = "code mode run is unavailable or expired.";
    check(
        mine.wait(&wait("cm_00000000-0000-4000-8000-000000000000"))
            .await,
        "unknown",
        unavailable,
    );
    check(
        mine.wait(&wait("not-a-run-id")).await,
        "unknown",
        unavailable,
    );
    let other_session = session(&code_mode, "s2", "r1");
    check(
        other_session.wait(&wait(&run_id)).await,
        "other_session",
        "code mode run belongs to a different session.",
    );
    let other_run = session(&code_mode, "s1", "r2");
    check(
        other_run.wait(&wait(&run_id)).await,
        "other_agent_run",
        "code mode run belongs to a different agent run.",
    );

    // A first wait resumes the run, which then blocks on gate `a`; the executor says so.
    let first = tokio::spawn({
        let mine = mine.clone();
        let run_id = run_id.clone();
        async move { mine.wait(&wait(&run_id)).await }
    });
    assert_eq!(started.recv().await.as_deref(), Some("a"));
    check(
        mine.wait(&wait(&run_id)).await,
        "already_resuming",
        "code mode run is already being resumed.",
    );
    host.open("a");
    let done = first.await.unwrap();
    assert_eq!(done.value(), Some(&json!("a")));
    // Finished: the id is unknown from now on, not expired.
    check(mine.wait(&wait(&run_id)).await, "unknown", unavailable);

    // Other failures carry no reason.
    let invalid = mine.wait(&json!({})).await.to_json();
    assert_eq!(invalid["status"], "failed");
    assert!(invalid.get("reason").is_none(), "{invalid:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_after_the_snapshot_ttl_says_expired() {
    let (host, _started) = Host::new();
    let events = Arc::new(Events::default());
    let ttl = Duration::from_secs(60);
    let config = CodeModeConfig::enabled().snapshot_ttl(ttl).build().unwrap();
    // The TTL passes on a clock the test moves, not by sleeping past it.
    let clock = ManualClock::new();
    let code_mode = CodeMode::builder(config, host.clone())
        .events(events.clone())
        .snapshot_clock(clock.clone())
        .build();
    let mine = session(&code_mode, "s1", "r1");
    let parked = mine
        .exec("c1", &json!({ "code": "await yield_control(); return 1" }))
        .await;
    let run_id = parked.run_id().unwrap().to_owned();
    // A second run parks a second before the first one's TTL ends.
    clock.advance(ttl - Duration::from_secs(1));
    let later = mine
        .exec("c2", &json!({ "code": "await yield_control(); return 2" }))
        .await;
    let later_id = later.run_id().unwrap().to_owned();
    // At the first run's TTL: it has expired, the second has not.
    clock.advance(Duration::from_secs(1));
    let expired = mine.wait(&wait(&run_id)).await;
    assert_eq!(expired.wait_failure(), Some(WaitFailure::Expired));
    assert_eq!(expired.to_json()["reason"], "expired");
    let resumed = mine.wait(&wait(&later_id)).await.to_json();
    assert_eq!(resumed["value"], 2, "{resumed:#}");
}

fn nested_start_ids(events: &Events) -> Vec<String> {
    events
        .json()
        .into_iter()
        .filter(|event| event["event"] == "start")
        .map(|event| event["nestedCallId"].as_str().unwrap().to_owned())
        .collect()
}

const RESTART_SAFE: &str = "const hit = await tools.lookup({ q: 'x' }); const g = await tools.gate({ name: 'a' }); return [hit.hits[0], g.gate]";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recover_gives_nested_calls_fresh_ids() {
    let (host, _started) = Host::new();
    let events = Arc::new(Events::default());
    let input = json!({ "code": RESTART_SAFE, "restartSafe": true });
    let before = session(&code_mode(&host, &events, fast()), "s1", "r1");
    let parked = before.exec("c4", &input).await;
    assert_eq!(parked.status(), "waiting", "{:#}", parked.to_json());
    host.open("a");
    // The host restarts: a new CodeMode, the parked run is gone, the input is re-run.
    drop(before);
    let after = session(&code_mode(&host, &events, fast()), "s1", "r1");
    let recovered = after.recover("c4", &input).await;
    assert_eq!(recovered.value(), Some(&json!(["x", "a"])));
    let ids = nested_start_ids(&events);
    assert_eq!(ids.len(), 4, "{ids:?}");
    assert_eq!(ids[..2], ["c4/1", "c4/2"]);
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "a nested call id repeats: {ids:?}");
    for id in &ids[2..] {
        assert!(id.starts_with("c4/recovered-"), "{id}");
    }
    assert_eq!(
        ids[2].rsplit_once('/').unwrap().0,
        ids[3].rsplit_once('/').unwrap().0,
        "one recovery, one prefix"
    );
    // A second recovery gets another prefix.
    let again = after.recover("c4", &input).await;
    assert_eq!(again.status(), "completed");
    let ids = nested_start_ids(&events);
    let unique: HashSet<&String> = ids.iter().collect();
    assert_eq!(unique.len(), ids.len(), "{ids:?}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_or_recover_reruns_the_kept_restart_safe_input() {
    let (host, mut started) = Host::new();
    let events = Arc::new(Events::default());
    let store = MemoryRecoveryStore::new();
    let input = json!({ "code": RESTART_SAFE, "restartSafe": true });

    let before = session(&code_mode(&host, &events, fast()), "s1", "r1");
    let parked = before.exec_recoverable("c1", &input, &store).await;
    let run_id = parked.run_id().unwrap().to_owned();
    assert_eq!(store.len(), 1);
    assert_eq!(store.load(&run_id).unwrap().call_id, "c1");
    assert_eq!(started.recv().await.as_deref(), Some("a"));
    // Not restart-safe: nothing is kept.
    let side_effects = before
        .exec_recoverable(
            "c2",
            &json!({ "code": "await tools.write({}); await yield_control(); return 1" }),
            &store,
        )
        .await;
    assert_eq!(side_effects.status(), "waiting");
    assert_eq!(store.len(), 1);

    // Restart. Another agent run cannot use the record.
    drop(before);
    let restarted = code_mode(&host, &events, fast());
    let stranger = session(&restarted, "s1", "r9");
    let refused = stranger.wait_or_recover(&wait(&run_id), &store).await;
    assert_eq!(refused.wait_failure(), Some(WaitFailure::Unknown));
    assert_eq!(store.len(), 1);

    // The same agent run recovers it: the gate is still closed, so it parks under a new id.
    let after = session(&restarted, "s1", "r1");
    let recovered = after.wait_or_recover(&wait(&run_id), &store).await;
    let new_id = recovered.run_id().expect("parked again").to_owned();
    assert_ne!(new_id, run_id);
    assert!(recovered.replay_safe());
    assert!(store.load(&run_id).is_none());
    assert_eq!(store.load(&new_id).unwrap().call_id, "c1");
    assert_eq!(started.recv().await.as_deref(), Some("a"));

    // The recovered run is an ordinary parked run: wait_or_recover just waits for it, and
    // forgets the record once it completes.
    host.open("a");
    let done = after.wait_or_recover(&wait(&new_id), &store).await;
    assert_eq!(done.value(), Some(&json!(["x", "a"])));
    assert!(store.is_empty());
}

#[tokio::test]
async fn updates_reach_the_event_sink_with_their_payload_and_oversized_ones_are_refused() {
    let (host, _started) = Host::new();
    let events = Arc::new(Events::default());
    let mine = session(&code_mode(&host, &events, fast()), "s1", "r1");
    let result = mine
        .exec("c1", &json!({ "code": "return await tools.progress({})" }))
        .await;
    assert_eq!(
        result.value(),
        Some(&json!({
            "refused": format!("a nested call update is larger than {MAX_UPDATE_BYTES} bytes of JSON; it was not sent.")
        }))
    );
    let updates: Vec<Value> = events
        .json()
        .into_iter()
        .filter(|event| event["event"] == "update")
        .collect();
    assert_eq!(updates.len(), 1, "{updates:?}");
    assert_eq!(updates[0]["update"], json!({ "step": 1 }));
    assert_eq!(updates[0]["catalogId"], "openclaw:core:progress");
}

#[tokio::test]
async fn the_host_source_name_reaches_ids_all_tools_the_description_and_the_declarations() {
    let (host, _started) = Host::new();
    let code_mode = CodeMode::builder(fast(), host.clone())
        .source_name("myagent")
        .unwrap()
        .build();
    let mine = session(&code_mode, "s1", "r1");
    let ids: Vec<&str> = mine
        .catalog()
        .entries()
        .iter()
        .map(|e| e.id.as_str())
        .collect();
    assert!(ids.contains(&"myagent:core:lookup"), "{ids:?}");
    assert!(ids.contains(&"client:app:pick"), "{ids:?}");
    let exec = &mine.model_tools()[0];
    assert!(
        exec.description
            .contains("`myagent:core:<name>` and `myagent:<plugin>:<name>`"),
        "{}",
        exec.description
    );
    assert!(!exec.description.contains("openclaw"));
    let seen = mine
        .exec(
            "c1",
            &json!({ "code": r#"
                const sources = [...new Set(ALL_TOOLS.map((t) => t.source))];
                const hit = (await tools.search("look up"))[0].id;
                const called = await tools.call("myagent:core:lookup", { q: 1 });
                const dts = await API.read("guest/globals.d.ts");
                const listed = (await API.list("guest"))[0].bytes;
                return { sources, hit, called, dts: dts.includes('source: "myagent" | "client"'), sameBytes: listed === dts.length };
            "# }),
        )
        .await;
    assert_eq!(
        seen.value(),
        Some(&json!({
            "sources": ["myagent", "client"],
            "hit": "myagent:core:lookup",
            "called": { "hits": [1] },
            "dts": true,
            "sameBytes": true,
        }))
    );
    assert_eq!(
        host.seen.lock().unwrap().as_slice(),
        ["myagent:core:lookup"]
    );
    assert!(
        codemode_core::guest_declarations::text("myagent")
            .contains(r#"source: "myagent" | "client""#)
    );
    assert!(codemode_core::guest_declarations::TEXT.contains(r#"source: "openclaw" | "client""#));

    // The default is the original product's.
    let default = session(&CodeMode::builder(fast(), host.clone()).build(), "s1", "r1");
    assert_eq!(default.catalog().entries()[0].id, "openclaw:core:gate");
    assert!(
        default.model_tools()[0]
            .description
            .contains("`openclaw:core:<name>`")
    );

    // Bad names: a clear error, never a panic.
    for (name, message) in [
        ("", "invalid catalog source name \"\": it is empty."),
        (
            "my:agent",
            "invalid catalog source name \"my:agent\": only ASCII letters, digits, `_` and `-` are allowed.",
        ),
        (
            "mcp",
            "invalid catalog source name \"mcp\": it is the name of another catalog source.",
        ),
    ] {
        let error = CodeMode::builder(fast(), host.clone())
            .source_name(name)
            .unwrap_err();
        assert_eq!(error.to_string(), message);
    }
}

#[tokio::test]
async fn inputs_and_results_are_symmetric() {
    let (host, _started) = Host::new();
    let events = Arc::new(Events::default());
    let mine = session(&code_mode(&host, &events, fast()), "s1", "r1");
    let parked = mine
        .exec_input(
            "c1",
            &ExecInput::javascript("await yield_control(); return 7"),
        )
        .await;
    assert_eq!(parked.value(), None);
    let done = mine
        .wait_input(&WaitInput::new(parked.run_id().unwrap()))
        .await;
    assert_eq!(done.value(), Some(&json!(7)));
    assert_eq!(done.to_json()["value"], 7);
    let disabled = CodeMode::builder(CodeModeConfig::builder().build().unwrap(), host.clone())
        .build()
        .activate(ActivationRequest::new(tools()))
        .unwrap();
    assert!(!disabled.is_active());
    assert!(disabled.into_active().is_none());
    assert!(format!("{mine:?}").contains("CodeModeSession"));
}

#[tokio::test]
async fn a_namespace_over_tools_its_plugin_does_not_own_is_reported_at_activation() {
    let (host, _started) = Host::new();
    let registry = Arc::new(NamespaceRegistry::new());
    let lookup = || {
        Registration::new("lookups", "Lookups", |_| {
            Ok(ScopeValue::object([(
                "get",
                NamespaceTool::new("lookup").into(),
            )]))
        })
        .with_required_tools(["lookup"])
    };
    // At registration: `core` is not a plugin.
    assert_eq!(
        registry.register_for_plugin("core", lookup()),
        Err(NamespaceError::CorePluginId {
            id: "lookups".into()
        })
    );
    // At activation: plugin `search` does not own the core tool `lookup`.
    registry.register_for_plugin("search", lookup()).unwrap();
    let code_mode = CodeMode::builder(fast(), host.clone())
        .namespaces(registry)
        .build();
    let mine = session(&code_mode, "s1", "r1");
    let hidden = mine.hidden_namespaces();
    assert_eq!(hidden.len(), 1);
    assert_eq!(
        hidden[0].reason,
        HiddenReason::NotOwned {
            tool: "lookup".into(),
            owner: "core".into()
        }
    );
    let missing = mine
        .exec("c1", &json!({ "code": "return typeof Lookups" }))
        .await;
    assert_eq!(missing.value(), Some(&json!("undefined")));
}

#[cfg(feature = "mcp")]
#[tokio::test]
async fn with_mcp_sends_mcp_ids_to_the_hub_and_the_rest_to_the_host() {
    let (host, _started) = Host::new();
    let executor = WithMcp::new(McpHub::default(), host.clone());
    let context = || {
        ToolCallContext::new(
            AgentRunContext::default(),
            "c1",
            "c1/1",
            CancellationToken::new(),
        )
    };
    let hit = executor
        .execute("openclaw:core:lookup", json!({ "q": 1 }), context())
        .await;
    assert_eq!(hit, Ok(json!({ "hits": [1] })));
    for id in ["mcp:docs:read", "mcp-capability:docs:resources/list"] {
        let refused = executor.execute(id, json!({}), context()).await;
        assert_eq!(
            refused,
            Err(ToolError::new("unknown MCP server `docs`")),
            "{id}"
        );
    }
    // Only the host's calls reached the host.
    assert_eq!(
        host.seen.lock().unwrap().as_slice(),
        ["openclaw:core:lookup"]
    );
    let request = ActivationRequest::new(tools()).with_mcp(executor.hub());
    assert_eq!(request.tools.len(), tools().len());
}
