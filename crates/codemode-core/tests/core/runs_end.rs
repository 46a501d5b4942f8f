//! Runs that always end (issue 31, items 1 to 3): `wait({ runId, terminate: true })`, the
//! per-call deadline `toolCallTimeoutMs` and the bound on a run's life `maxRunSeconds`.
//!
//! Tools that "never answer" are futures pending forever; the test learns that a call started,
//! or was cancelled, from the tool itself (a channel), never from the clock. The only waits on
//! time are the configured limits themselves, kept at their minimum (1 s), and every assertion
//! is about a status, a code or a message.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::prelude::{HubOptions, McpHub, McpServerConfig};
use codemode_core::*;
use codemode_journal::{JournalStore, ReceiptState};
use serde_json::{Value, json};
use tokio::sync::{Mutex, mpsc};

use crate::support::{RewrittenRows, run_context, tool};

/// A failure bound for a step that would otherwise hang a broken build: never a
/// synchronization (every awaited thing happens on its own).
const FAILURE_BOUND: Duration = Duration::from_secs(60);

/// What the tools tell the test.
struct Signals {
    /// The cancellation token of a `never`/`never_write`/`signal` call fired (its nested call
    /// id).
    cancelled: Mutex<mpsc::UnboundedReceiver<String>>,
    /// A `signal` call started.
    signalled: Mutex<mpsc::UnboundedReceiver<()>>,
}

struct Tools {
    cancelled: mpsc::UnboundedSender<String>,
    signalled: mpsc::UnboundedSender<()>,
}

#[async_trait]
impl ToolExecutor for Tools {
    async fn execute(
        &self,
        catalog_id: &str,
        _input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        match catalog_id {
            "openclaw:core:never" | "openclaw:core:never_write" | "openclaw:core:signal" => {
                if catalog_id == "openclaw:core:signal" {
                    let _ = self.signalled.send(());
                }
                // Never answers. The host's token is watched from outside the call: a run that
                // ends drops the call's future too, so code after an await in it never runs.
                let token = context.cancellation.clone();
                let cancelled = self.cancelled.clone();
                let id = context.nested_call_id.clone();
                tokio::spawn(async move {
                    token.cancelled().await;
                    let _ = cancelled.send(id);
                });
                std::future::pending().await
            }
            // An approval that is always granted a moment later: a chain of them never ends.
            "openclaw:core:approval" => {
                tokio::time::sleep(Duration::from_millis(20)).await;
                Ok(json!({ "approved": true }))
            }
            other => Err(ToolError::new(format!("no such tool {other}"))),
        }
    }
}

fn end_tools() -> Vec<ToolDescriptor> {
    vec![
        tool(ToolOrigin::Core, "never", true),
        tool(ToolOrigin::Core, "never_write", false),
        tool(ToolOrigin::Core, "signal", true),
        tool(ToolOrigin::Core, "approval", true),
    ]
}

struct Host {
    code_mode: CodeMode,
    session: CodeModeSession,
    signals: Signals,
}

fn host_with(config: Value, journal: Option<Arc<dyn JournalStore>>) -> Host {
    let (cancelled, cancelled_rx) = mpsc::unbounded_channel();
    let (signalled, signalled_rx) = mpsc::unbounded_channel();
    let config = CodeModeConfig::from_json(&config).unwrap();
    let mut builder = CodeMode::builder(
        config,
        Arc::new(Tools {
            cancelled,
            signalled,
        }),
    );
    if let Some(store) = journal {
        builder = builder.journal(store);
    }
    let code_mode = builder.build();
    let session = activate(&code_mode, "s1");
    Host {
        code_mode,
        session,
        signals: Signals {
            cancelled: Mutex::new(cancelled_rx),
            signalled: Mutex::new(signalled_rx),
        },
    }
}

fn host(config: Value) -> Host {
    host_with(config, None)
}

fn activate(code_mode: &CodeMode, session: &str) -> CodeModeSession {
    let request = ActivationRequest::new(end_tools()).with_agent_run(run_context(session));
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };
    session
}

impl Host {
    async fn exec(&self, code: &str) -> Value {
        self.session
            .exec("call_1", &json!({ "code": code }))
            .await
            .to_json()
    }

    async fn wait(&self, input: Value) -> Value {
        self.session.wait(&input).await.to_json()
    }

    async fn terminate(&self, run_id: &Value) -> Value {
        self.wait(json!({ "runId": run_id, "terminate": true }))
            .await
    }

    /// Waits until a `never` call reports its cancellation, and returns its nested call id.
    async fn cancelled_call(&self) -> String {
        let mut cancelled = self.signals.cancelled.lock().await;
        tokio::time::timeout(FAILURE_BOUND, cancelled.recv())
            .await
            .expect("the call's cancellation token fired")
            .expect("the tool host is alive")
    }

    /// `wait` until the run is no longer waiting (a run that keeps yielding or asking for
    /// approvals), and returns that result.
    async fn wait_until_ended(&self, run_id: &Value) -> Value {
        tokio::time::timeout(FAILURE_BOUND, async {
            loop {
                let result = self.wait(json!({ "runId": run_id })).await;
                if result["status"] != "waiting" {
                    return result;
                }
            }
        })
        .await
        .expect("the run ended")
    }
}

fn assert_terminated(result: &Value) {
    assert_eq!(result["status"], "failed", "{result:#}");
    assert_eq!(result["code"], "terminated", "{result:#}");
    assert_eq!(
        result["error"], "code mode run was terminated.",
        "{result:#}"
    );
}

fn assert_unknown(result: &Value) {
    assert_eq!(result["status"], "failed", "{result:#}");
    assert_eq!(result["code"], "invalid_input", "{result:#}");
    assert_eq!(result["reason"], "unknown", "{result:#}");
}

const SHORT_LEGS: &str = r#"{ "enabled": true, "timeoutMs": 500 }"#;

fn short_legs() -> Value {
    serde_json::from_str(SHORT_LEGS).unwrap()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_ends_a_parked_run_cancels_its_calls_and_keeps_its_telemetry() {
    let host = host(short_legs());
    let first = host
        .exec("text('started'); await tools.never({}); return 'unreachable'")
        .await;
    assert_eq!(first["status"], "waiting", "{first:#}");
    assert_eq!(first["output"][0]["text"], "started");
    let run_id = first["runId"].clone();

    let ended = host.terminate(&run_id).await;
    assert_terminated(&ended);
    assert_eq!(ended["telemetry"]["callCount"], 1, "{ended:#}");
    // The host's token of the in-flight call fired.
    assert_eq!(host.cancelled_call().await, "call_1/1");
    assert_eq!(host.code_mode.suspended_runs(), 0);

    // The run is gone: a wait, or a second terminate, finds nothing.
    assert_unknown(&host.wait(json!({ "runId": run_id })).await);
    assert_unknown(&host.terminate(&run_id).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_refuses_what_it_cannot_end_with_stable_codes() {
    let host = host(short_legs());
    // Unknown, malformed and empty ids.
    assert_unknown(
        &host
            .terminate(&json!("cm_00000000-0000-0000-0000-000000000000"))
            .await,
    );
    assert_unknown(&host.terminate(&json!("not-a-run")).await);
    let empty = host.terminate(&json!("")).await;
    assert_eq!(
        empty["error"], "runId must be a non-empty string.",
        "{empty:#}"
    );
    // `terminate` must be a boolean; `false` is a plain wait.
    let first = host.exec("await yield_control(); return 2").await;
    assert_eq!(first["status"], "waiting", "{first:#}");
    let run_id = first["runId"].clone();
    let odd = host
        .wait(json!({ "runId": run_id, "terminate": "yes" }))
        .await;
    assert_eq!(odd["code"], "invalid_input", "{odd:#}");
    assert_eq!(odd["error"], "terminate must be a boolean.");

    // Another session of the same code mode may not end this session's run.
    let other = activate(&host.code_mode, "s2");
    let refused = other
        .wait(&json!({ "runId": run_id, "terminate": true }))
        .await
        .to_json();
    assert_eq!(refused["code"], "invalid_input", "{refused:#}");
    assert_eq!(refused["reason"], "other_session", "{refused:#}");

    // The run is untouched: it completes, and a completed run cannot be terminated.
    let done = host
        .wait(json!({ "runId": run_id, "terminate": false }))
        .await;
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], 2);
    assert_unknown(&host.terminate(&run_id).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_ends_a_run_another_wait_is_driving_keeping_that_wait_s_output() {
    let host = host(json!({ "enabled": true, "timeoutMs": 500, "maxWaitMs": 600000 }));
    let first = host
        .exec("await yield_control(); text('resumed'); await tools.signal({}); return 1")
        .await;
    assert_eq!(first["status"], "waiting", "{first:#}");
    let run_id = first["runId"].clone();
    let driving = tokio::spawn({
        let session = host.session.clone();
        let run_id = run_id.clone();
        async move { session.wait(&json!({ "runId": run_id })).await.to_json() }
    });
    // The driving wait resumed the run and the guest made its call: the wait idles on it.
    tokio::time::timeout(FAILURE_BOUND, host.signals.signalled.lock().await.recv())
        .await
        .expect("the call started");
    assert_terminated(&host.terminate(&run_id).await);
    let driven = tokio::time::timeout(FAILURE_BOUND, driving)
        .await
        .expect("the driving wait ended")
        .unwrap();
    assert_terminated(&driven);
    assert_eq!(driven["output"][0]["text"], "resumed", "{driven:#}");
    assert_eq!(host.cancelled_call().await, "call_1/1");
    assert_unknown(&host.wait(json!({ "runId": run_id })).await);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_journaled_run_writes_its_end_and_no_replay_restarts_it() {
    let (store, dir) = sqlite_store().await;
    let host = host_with(short_legs(), Some(Arc::clone(&store)));
    let first = host.exec("await tools.never_write({}); return 1").await;
    assert_eq!(first["status"], "waiting", "{first:#}");
    let run_id = first["runId"].clone();
    assert_eq!(store.count(0).await.unwrap(), 1);
    assert_terminated(&host.terminate(&run_id).await);
    host.cancelled_call().await;
    // The journal is gone: another process sharing the store finds nothing to replay.
    assert_eq!(store.count(0).await.unwrap(), 0);
    let restarted = host_with(short_legs(), Some(Arc::clone(&store)));
    assert_unknown(&restarted.wait(json!({ "runId": run_id })).await);

    // A run whose VM this process lost (a restart) is ended from its journal alone.
    let parked = restarted
        .exec("await tools.never_write({}); return 1")
        .await;
    assert_eq!(parked["status"], "waiting", "{parked:#}");
    let lost = parked["runId"].clone();
    restarted.code_mode.shutdown();
    let third = host_with(short_legs(), Some(Arc::clone(&store)));
    assert_terminated(&third.terminate(&lost).await);
    assert_eq!(store.count(0).await.unwrap(), 0);
    assert_unknown(&third.wait(json!({ "runId": lost })).await);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn terminate_ends_a_journaled_run_a_wait_of_this_process_is_replaying() {
    let (store, dir) = sqlite_store().await;
    let mut config = short_legs();
    config["maxWaitMs"] = json!(600_000);
    let host = host_with(config.clone(), Some(Arc::clone(&store)));
    let first = host
        .exec("text('started'); await tools.signal({}); return 1")
        .await;
    assert_eq!(first["status"], "waiting", "{first:#}");
    let run_id = first["runId"].clone();
    // The process is lost: only the journal is left.
    host.code_mode.shutdown();
    let restarted = host_with(config, Some(Arc::clone(&store)));
    let replaying = tokio::spawn({
        let session = restarted.session.clone();
        let run_id = run_id.clone();
        async move { session.wait(&json!({ "runId": run_id })).await.to_json() }
    });
    // The replay made the read-only call again, live, and its `wait` idles on it.
    tokio::time::timeout(
        FAILURE_BOUND,
        restarted.signals.signalled.lock().await.recv(),
    )
    .await
    .expect("the replayed call started");
    assert_terminated(&restarted.terminate(&run_id).await);
    let replayed = tokio::time::timeout(FAILURE_BOUND, replaying)
        .await
        .expect("the replaying wait ended")
        .unwrap();
    assert_terminated(&replayed);
    assert_eq!(restarted.cancelled_call().await, "call_1/1");
    // Its end is written: nothing is left to replay.
    assert_eq!(store.count(0).await.unwrap(), 0);
    assert_unknown(&restarted.wait(json!({ "runId": run_id })).await);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_terminated_run_is_never_recovered() {
    let store = MemoryRecoveryStore::new();
    let input = json!({ "code": "await tools.never({}); return 1", "restartSafe": true });
    let before = host(short_legs());
    let parked = before
        .session
        .exec_recoverable("call_1", &input, &store)
        .await;
    let run_id = parked.run_id().expect("parked").to_owned();
    assert_eq!(store.len(), 1);
    // The host restarts: the run is lost, only its recovery record is left. Terminating it
    // forgets the record instead of running the cell again.
    before.code_mode.shutdown();
    let after = host(short_legs());
    let ended = after
        .session
        .wait_or_recover(&json!({ "runId": run_id, "terminate": true }), &store)
        .await;
    assert_eq!(ended.wait_failure(), Some(WaitFailure::Unknown));
    assert!(store.is_empty());
    assert_eq!(after.code_mode.suspended_runs(), 0);
}

#[test]
fn tool_call_timeout_and_max_run_seconds_default_and_clamp() {
    let parse = |key: &str, value: Value| {
        CodeModeConfig::from_json(&json!({ "enabled": true, key: value }))
            .map(|config| (config.tool_call_timeout_ms(), config.max_run_seconds()))
    };
    let defaults = CodeModeConfig::enabled().build().unwrap();
    assert_eq!(
        defaults.tool_call_timeout_ms(),
        DEFAULT_TOOL_CALL_TIMEOUT_MS
    );
    assert_eq!(DEFAULT_TOOL_CALL_TIMEOUT_MS, 300_000);
    assert_eq!(defaults.max_run_seconds(), DEFAULT_MAX_RUN_SECONDS);
    assert_eq!(DEFAULT_MAX_RUN_SECONDS, 3_600);
    assert_eq!(parse("toolCallTimeoutMs", json!(5)), Ok((1_000, 3_600)));
    assert_eq!(
        parse("toolCallTimeoutMs", json!(1e12)),
        Ok((86_400_000, 3_600))
    );
    assert_eq!(parse("maxRunSeconds", json!(10)), Ok((300_000, 10)));
    assert_eq!(
        parse("maxRunSeconds", json!(u64::MAX)),
        Ok((300_000, 604_800))
    );
    for (key, bad) in [
        ("toolCallTimeoutMs", json!(0)),
        ("toolCallTimeoutMs", json!(-1)),
        ("toolCallTimeoutMs", json!("5m")),
        ("maxRunSeconds", json!(0)),
        ("maxRunSeconds", json!(1.5)),
        ("maxRunSeconds", Value::Null),
    ] {
        assert_eq!(
            parse(key, bad).unwrap_err().to_string(),
            format!("tools.codeMode.{key} must be a positive integer.")
        );
    }
    let built = CodeModeConfig::enabled()
        .tool_call_timeout(Duration::from_millis(1500))
        .max_run(Duration::from_millis(1500))
        .build()
        .unwrap();
    assert_eq!(
        (built.tool_call_timeout_ms(), built.max_run_seconds()),
        (1_500, 2)
    );
    assert_eq!(
        CodeModeConfig::enabled().max_run(Duration::ZERO).build(),
        Err(ConfigError::NotPositiveInteger("maxRunSeconds"))
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_tool_that_never_answers_rejects_at_tool_call_timeout_and_the_run_completes() {
    // The call's deadline is seconds past the leg's, so the leg parks first on any machine.
    let host = host(json!({ "enabled": true, "timeoutMs": 500, "toolCallTimeoutMs": 3000 }));
    let code = "try { await tools.never({}); return 'answered' } catch (e) { return e.message }";
    let first = host.exec(code).await;
    // Parked on the call first (its leg is shorter than the call's deadline)...
    assert_eq!(first["status"], "waiting", "{first:#}");
    // ...but the call can no longer keep the run parked: it rejects, the guest catches it.
    let done = host.wait_until_ended(&first["runId"]).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(
        done["value"],
        messages::tool_call_timed_out("openclaw:core:never", 3000)
    );
    // Cancelled at the host.
    assert_eq!(host.cancelled_call().await, "call_1/1");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journaled_side_effecting_call_past_its_deadline_is_recorded_outcome_unknown() {
    let (store, dir) = sqlite_store().await;
    // The leg's deadline (10 s) is far beyond the call's: the call rejects inside the first leg,
    // never at a leg's edge, where the outcome would depend on the machine's speed.
    let config = json!({ "enabled": true, "timeoutMs": 10_000, "toolCallTimeoutMs": 1000 });
    let host = host_with(config.clone(), Some(Arc::clone(&store)));
    let code = "let seen; try { await tools.never_write({}) } catch (e) { seen = e.message } \
                await yield_control(); return seen";
    let parked = host.exec(code).await;
    assert_eq!(parked["reason"], "yield", "{parked:#}");
    let run_id = parked["runId"].as_str().unwrap().to_owned();
    let journal = store.load(&run_id, 0).await.unwrap().expect("journaled");
    let states: Vec<&ReceiptState> = journal.receipts.iter().map(|r| &r.state).collect();
    assert_eq!(states, vec![&ReceiptState::Unknown], "{journal:?}");

    // The live guest saw the deadline; a replay (the process lost) sees the outcome as unknown
    // and never runs the call again.
    host.code_mode.shutdown();
    let restarted = host_with(config, Some(Arc::clone(&store)));
    let done = restarted.wait(json!({ "runId": run_id })).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], messages::OUTCOME_UNKNOWN);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_keeps_yielding_ends_at_max_run_seconds() {
    let host = host(json!({ "enabled": true, "maxRunSeconds": 1 }));
    let first = host.exec("for (;;) { await yield_control(); }").await;
    assert_eq!(first["reason"], "yield", "{first:#}");
    let ended = host.wait_until_ended(&first["runId"]).await;
    assert_eq!(ended["status"], "failed", "{ended:#}");
    assert_eq!(ended["code"], "run_lifetime_exceeded", "{ended:#}");
    assert_eq!(
        ended["error"],
        "code mode run exceeded its lifetime of 1 s (maxRunSeconds)."
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_waiting_on_an_endless_chain_of_approvals_ends_at_max_run_seconds() {
    let host = host(json!({ "enabled": true, "timeoutMs": 500, "maxRunSeconds": 1 }));
    let first = host
        .exec("for (let i = 0; ; i++) { await tools.approval({ i }); }")
        .await;
    let ended = if first["status"] == "waiting" {
        host.wait_until_ended(&first["runId"]).await
    } else {
        first
    };
    assert_eq!(ended["code"], "run_lifetime_exceeded", "{ended:#}");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_whose_life_ends_while_parked_is_dropped_and_says_so() {
    // The life ends seconds after the first leg, so that leg parks first on any machine.
    let host = host(json!({ "enabled": true, "timeoutMs": 500, "maxRunSeconds": 3 }));
    let first = host.exec("await tools.never({}); return 1").await;
    assert_eq!(first["status"], "waiting", "{first:#}");
    // Nobody calls `wait`: the run expires parked at the end of its life, its call cancelled.
    assert_eq!(host.cancelled_call().await, "call_1/1");
    assert_eq!(host.code_mode.suspended_runs(), 0);
    let late = host.wait(json!({ "runId": first["runId"] })).await;
    assert_eq!(late["status"], "failed", "{late:#}");
    assert_eq!(late["code"], "run_lifetime_exceeded", "{late:#}");
    // Terminating it now says the same.
    let late = host.terminate(&first["runId"]).await;
    assert_eq!(late["code"], "run_lifetime_exceeded", "{late:#}");
}

/// A journaled run's life counts from its first `exec` on every host: the journal keeps when it
/// started (here, through SQLite, an hour ago), so a replay on a host that never saw the run
/// does not start its life again.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_replayed_run_keeps_the_life_it_started_with() {
    let (sqlite, dir) = sqlite_store().await;
    // New runs' rows say they started an hour ago: the row a host that started the run long
    // before would have written.
    let store: Arc<dyn JournalStore> = Arc::new(RewrittenRows(sqlite, |record| {
        record.started_at_ms = record.started_at_ms.map(|start| start - 3_600_000);
    }));
    // The first host holds the life it gave the run (an hour from its exec).
    let first = host_with(short_legs(), Some(Arc::clone(&store)));
    let parked = first.exec("await tools.never_write({}); return 1").await;
    assert_eq!(parked["status"], "waiting", "{parked:#}");
    let run_id = parked["runId"].clone();
    // The process goes away with the run parked; a new one replays it from the journal, whose
    // start is an hour old: the run's life (maxRunSeconds 3600) is over.
    first.code_mode.shutdown();
    let restarted = host_with(short_legs(), Some(Arc::clone(&store)));
    let ended = restarted.wait(json!({ "runId": run_id })).await;
    assert_eq!(ended["status"], "failed", "{ended:#}");
    assert_eq!(ended["code"], "run_lifetime_exceeded", "{ended:#}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn guest_code_still_computing_at_the_end_of_its_life_is_stopped() {
    // The leg's own budget (60 s) is far beyond the run's life (1 s).
    let host = host(json!({ "enabled": true, "timeoutMs": 60000, "maxRunSeconds": 1 }));
    let ended = host.exec("text('spinning'); for (;;) {}").await;
    assert_eq!(ended["code"], "run_lifetime_exceeded", "{ended:#}");
    assert_eq!(ended["output"][0]["text"], "spinning", "{ended:#}");
}

async fn sqlite_store() -> (Arc<dyn JournalStore>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "codemode-runs-end-{}-{}",
        std::process::id(),
        codemode_sandbox::RunId::new()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let path = dir.join("state.db");
    let store = codemode_journal::open(&format!("sqlite:{}", path.display()))
        .await
        .unwrap();
    (store, dir)
}

/// The npm MCP server of `tests/mcp-servers/cancel-reporter.mjs` (the official TypeScript SDK),
/// which reports every call it sees cancelled to `socket`; fails with instructions when the
/// npm packages are missing.
fn cancel_reporter(socket: &std::path::Path) -> McpServerConfig {
    let workspace = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("../..");
    let servers = workspace.join("tests/mcp-servers");
    assert!(
        servers
            .join("node_modules/@modelcontextprotocol/sdk")
            .exists(),
        "run `npm ci --prefix tests/mcp-servers` at the workspace root"
    );
    McpServerConfig::new("node").with_args([
        servers.join("cancel-reporter.mjs").display().to_string(),
        socket.display().to_string(),
    ])
}

/// Ending a run (terminate) and a call's deadline (`toolCallTimeoutMs`) both reach a real MCP
/// upstream as `notifications/cancelled`: the npm server itself says it saw each call cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn mcp_calls_of_an_ended_run_are_cancelled_at_the_npm_server() {
    use tokio::io::AsyncBufReadExt as _;

    let dir = std::env::temp_dir().join(format!(
        "codemode-cancel-{}-{}",
        std::process::id(),
        codemode_sandbox::RunId::new()
    ));
    std::fs::create_dir_all(&dir).unwrap();
    let socket = dir.join("cancelled.sock");
    let reports = tokio::net::UnixListener::bind(&socket).unwrap();
    let next_report = || async {
        let (stream, _) = tokio::time::timeout(FAILURE_BOUND, reports.accept())
            .await
            .expect("the server reported a cancellation")
            .unwrap();
        let mut line = String::new();
        tokio::io::BufReader::new(stream)
            .read_line(&mut line)
            .await
            .unwrap();
        line
    };
    let servers =
        std::collections::BTreeMap::from([("reporter".to_owned(), cancel_reporter(&socket))]);
    let (hub, failures) = McpHub::start(servers, HubOptions::default()).await;
    assert!(failures.is_empty(), "{failures:?}");
    let (cancelled, _) = mpsc::unbounded_channel();
    let (signalled, _) = mpsc::unbounded_channel();
    let executor = WithMcp::new(
        hub.clone(),
        Tools {
            cancelled,
            signalled,
        },
    );
    // The call's deadline is seconds past the leg's, so the first leg parks on any machine.
    let config = CodeModeConfig::from_json(
        &json!({ "enabled": true, "timeoutMs": 500, "toolCallTimeoutMs": 3000 }),
    )
    .unwrap();
    let code_mode = CodeMode::builder(config, Arc::new(executor)).build();
    let request = ActivationRequest::new(Vec::new())
        .with_mcp(&hub)
        .with_agent_run(run_context("s1"));
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };

    // Terminated while the MCP call is in flight.
    let parked = session
        .exec(
            "call_1",
            &json!({ "code": "await MCP.reporter.hang({}); return 1" }),
        )
        .await
        .to_json();
    assert_eq!(parked["status"], "waiting", "{parked:#}");
    let ended = session
        .wait(&json!({ "runId": parked["runId"], "terminate": true }))
        .await
        .to_json();
    assert_terminated(&ended);
    assert!(next_report().await.starts_with("cancelled "));

    // Past its deadline: cancelled upstream too, and the guest catches the rejection.
    let code = "try { await MCP.reporter.hang({}) } catch (e) { return e.message }";
    let mut result = session
        .exec("call_2", &json!({ "code": code }))
        .await
        .to_json();
    while result["status"] == "waiting" {
        result = session
            .wait(&json!({ "runId": result["runId"] }))
            .await
            .to_json();
    }
    assert_eq!(
        result["value"],
        messages::tool_call_timed_out("mcp:reporter:hang", 3000),
        "{result:#}"
    );
    assert!(next_report().await.starts_with("cancelled "));
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(dir);
}
