//! Durable runs: a run journaled in a SQLite file survives the loss of its process's state (a
//! second `CodeMode` on the same file stands for the restarted process), never repeats a side
//! effect, replays recorded nondeterminism, and fails clearly when the program diverges.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::*;
use codemode_journal::JournalStore;
use serde_json::{Value, json};

use crate::support::{RewrittenRows, run_context, tool};

/// Side effects and reads, counted across "processes".
#[derive(Default)]
struct World {
    appended: Mutex<Vec<String>>,
    reads: AtomicU64,
    /// Calls of `hold` that started (it never settles by itself).
    holds: AtomicU64,
    /// `slow` answers only once this is set, when the first process has been lost: whether the
    /// first process's leg ends before `slow` answers never depends on timing.
    released: AtomicBool,
}

struct Tools {
    world: Arc<World>,
}

#[async_trait]
impl ToolExecutor for Tools {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        match catalog_id {
            "openclaw:core:append" => {
                let mut appended = self.world.appended.lock().unwrap();
                let line = input["line"].as_str().unwrap_or_default().to_owned();
                appended.push(line.clone());
                // Long lines come back (they then weigh in the journal); short ones do not.
                Ok(if line.len() > 1000 {
                    json!({ "lines": appended.len(), "line": line })
                } else {
                    json!({ "lines": appended.len() })
                })
            }
            "openclaw:core:read" => {
                let n = self.world.reads.fetch_add(1, Ordering::SeqCst) + 1;
                Ok(json!({ "reads": n }))
            }
            "openclaw:core:slow" => {
                let ms = input["ms"].as_u64().unwrap_or(300);
                if self.world.released.load(Ordering::SeqCst) {
                    return Ok(json!({ "slept": ms }));
                }
                context.cancellation.cancelled().await;
                Err(ToolError::new("cancelled"))
            }
            "openclaw:core:hold" => {
                self.world.holds.fetch_add(1, Ordering::SeqCst);
                std::future::pending().await
            }
            other => Err(ToolError::new(format!("no such tool {other}"))),
        }
    }
}

fn durable_tools() -> Vec<ToolDescriptor> {
    vec![
        tool(ToolOrigin::Core, "append", false),
        tool(ToolOrigin::Core, "read", true),
        tool(ToolOrigin::Core, "slow", true),
        tool(ToolOrigin::Core, "hold", false),
    ]
}

/// One "process": a `CodeMode` over the shared store and world, and its session.
struct Process {
    code_mode: CodeMode,
    session: CodeModeSession,
}

fn process(store: &Arc<dyn JournalStore>, world: &Arc<World>, config: CodeModeConfig) -> Process {
    let code_mode = CodeMode::builder(
        config,
        Arc::new(Tools {
            world: Arc::clone(world),
        }),
    )
    .journal(Arc::clone(store))
    .build();
    let request = ActivationRequest::new(durable_tools()).with_agent_run(run_context("s1"));
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };
    Process { code_mode, session }
}

/// Legs of the first process, which end at their deadline with `slow` pending: long enough for
/// a busy machine to reach `slow` (building the VM, committing the receipts before it), with
/// seconds to spare.
fn short_legs() -> CodeModeConfig {
    CodeModeConfig::enabled()
        .timeout(std::time::Duration::from_secs(3))
        .build()
        .expect("a valid config")
}

async fn sqlite_store() -> (Arc<dyn JournalStore>, std::path::PathBuf) {
    let dir = std::env::temp_dir().join(format!(
        "codemode-durable-{}-{}",
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

async fn exec(process: &Process, code: &str) -> Value {
    process
        .session
        .exec("call_1", &json!({ "code": code }))
        .await
        .to_json()
}

async fn wait(process: &Process, run_id: &str) -> Value {
    process
        .session
        .wait(&json!({ "runId": run_id }))
        .await
        .to_json()
}

/// The first process parks the run and then loses it (its VMs and host work dropped, as a
/// killed process would), leaving only the journal; from now on `slow` answers.
fn lose(process: Process, world: &World) {
    process.code_mode.shutdown();
    drop(process);
    world.released.store(true, Ordering::SeqCst);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_restarted_host_replays_the_journal_and_the_side_effect_happens_once() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    let code = r#"
        const stamp = Date.now();
        const coin = Math.random();
        text('before');
        const a = await tools.append({ line: 'one' });
        const slow = await tools.slow({ ms: 1500 });
        text('after');
        return { a, slow, stamp, coin, again: Date.now() >= stamp };
    "#;
    let waiting = exec(&first, code).await;
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    assert_eq!(
        waiting["output"],
        json!([{ "type": "text", "text": "before" }])
    );
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    lose(first, &world);

    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let done = wait(&second, &run_id).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    // The side effect happened exactly once; the read-only slow call, started but never
    // settled when the first process went away, ran again.
    assert_eq!(*world.appended.lock().unwrap(), vec!["one".to_owned()]);
    assert_eq!(done["value"]["a"], json!({ "lines": 1 }));
    assert_eq!(done["value"]["slow"], json!({ "slept": 1500 }));
    // Output already delivered is not delivered twice.
    assert_eq!(done["output"], json!([{ "type": "text", "text": "after" }]));
    // The journal is gone once the run completed.
    assert_eq!(store.count(i64::MAX / 2).await.unwrap(), 0);
    let gone = wait(&second, &run_id).await;
    assert_eq!(gone["error"], "code mode run is unavailable or expired.");
    assert_eq!(gone["reason"], "unknown", "{gone:#}");
    let never = wait(&second, "cm_00000000000000000000000000000000").await;
    assert_eq!(never["reason"], "unknown", "{never:#}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn recorded_clock_and_random_are_seen_again_by_the_replay() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    // The values read before the park are returned after the replay: equal only if the
    // replay saw the recorded ones.
    let code = r#"
        const before = [Date.now(), new Date().getTime(), Math.random(), performance.now()];
        json(before);
        await tools.append({ line: String(before[2]) });
        await tools.slow({ ms: 1200 });
        return before;
    "#;
    let waiting = exec(&first, code).await;
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let seen = waiting["output"][0]["value"].clone();
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    lose(first, &world);
    tokio::time::sleep(Duration::from_millis(20)).await;
    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let done = wait(&second, &run_id).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], seen);
    assert_eq!(world.appended.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_side_effect_interrupted_mid_call_is_an_unknown_outcome_and_reads_run_again() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    let code = r#"
        const first = await tools.read({});
        const [held, read] = await Promise.allSettled([tools.hold({}), tools.read({})]);
        return { first, held: held.status === 'rejected' ? held.reason.message : held.value, read: read.value };
    "#;
    let waiting = exec(&first, code).await;
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    // `hold` started (its receipt is `started`) and never settled.
    assert_eq!(world.holds.load(Ordering::SeqCst), 1);
    lose(first, &world);

    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let done = wait(&second, &run_id).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"]["held"], messages::OUTCOME_UNKNOWN);
    // The side-effecting call was not run again.
    assert_eq!(world.holds.load(Ordering::SeqCst), 1);
    // The first read answered from its receipt; the second one, which had settled before the
    // loss too, likewise.
    assert_eq!(done["value"]["first"], json!({ "reads": 1 }));
    assert_eq!(done["value"]["read"], json!({ "reads": 2 }));
    assert_eq!(world.reads.load(Ordering::SeqCst), 2);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn control_flow_on_an_unrecorded_source_fails_the_replay_as_diverged() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    // The program's second call depends on what the first answered.
    let code = r#"
        const { reads } = await tools.read({});
        await tools.append({ line: 'x' + reads });
        await tools.slow({ ms: 1200 });
        return reads;
    "#;
    let waiting = exec(&first, code).await;
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    lose(first, &world);
    // A journal whose first answer disagrees with what the program then did (as a stored row
    // edited or written by another version would): the second call's input no longer matches.
    let loaded = store
        .load(&run_id, 0)
        .await
        .unwrap()
        .expect("the journal is there");
    let read = loaded
        .receipts
        .iter()
        .find(|receipt| receipt.catalog_id == "openclaw:core:read")
        .unwrap()
        .clone();
    let mut batch = codemode_journal::Batch::default();
    batch.receipts.push(codemode_journal::Receipt {
        state: codemode_journal::ReceiptState::Ok(json!({ "reads": 41 })),
        ..read
    });
    store.append(&run_id, loaded.epoch, &batch).await.unwrap();

    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let failed = wait(&second, &run_id).await;
    assert_eq!(failed["status"], "failed", "{failed:#}");
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with(messages::DIVERGED), "{error}");
    assert!(error.contains("call 1 of tools.call"), "{error}");
    // Nothing was appended by the diverged replay.
    assert_eq!(*world.appended.lock().unwrap(), vec!["x1".to_owned()]);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_unrecorded_source_the_guest_branches_on_diverges() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    // `results` is session state, not journaled: a replay in another session state sees
    // another value and takes another branch.
    let code = r#"
        let flag = null;
        try { flag = await results.load('flag'); } catch { flag = null; }
        if (flag === undefined || flag === null) {
          await tools.append({ line: 'first' });
        } else {
          await tools.read({});
        }
        await tools.slow({ ms: 1200 });
        return 'done';
    "#;
    let waiting = exec(&first, code).await;
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    lose(first, &world);
    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let saved = exec(&second, "await results.save('flag', true); return 1").await;
    assert_eq!(saved["status"], "completed", "{saved:#}");
    let failed = wait(&second, &run_id).await;
    assert_eq!(failed["status"], "failed", "{failed:#}");
    let error = failed["error"].as_str().unwrap();
    assert!(error.starts_with(messages::DIVERGED), "{error}");
    assert_eq!(world.reads.load(Ordering::SeqCst), 0);
    assert_eq!(world.appended.lock().unwrap().len(), 1);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn yields_and_timers_replay_in_their_recorded_order() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    let code = r#"
        const order = [];
        setTimeout(() => order.push('t50'), 50);
        setTimeout(() => order.push('t10'), 10);
        await yield_control();
        await new Promise((resolve) => setTimeout(resolve, 80));
        await tools.append({ line: order.join(',') });
        await tools.slow({ ms: 1200 });
        return order;
    "#;
    let yielded = exec(&first, code).await;
    assert_eq!(yielded["reason"], "yield", "{yielded:#}");
    let run_id = yielded["runId"].as_str().unwrap().to_owned();
    let waiting = first
        .session
        .wait(&json!({ "runId": run_id, "timeoutMs": 1000 }))
        .await
        .to_json();
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    lose(first, &world);
    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let done = wait(&second, &run_id).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], json!(["t10", "t50"]));
    assert_eq!(*world.appended.lock().unwrap(), vec!["t10,t50".to_owned()]);
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_parked_in_a_yield_is_resumed_by_the_wait_that_replays_it() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    let code = "await tools.append({ line: 'before' }); await yield_control(); \
                await tools.append({ line: 'after' }); return Date.now() > 0";
    let yielded = exec(&first, code).await;
    assert_eq!(yielded["reason"], "yield", "{yielded:#}");
    let run_id = yielded["runId"].as_str().unwrap().to_owned();
    lose(first, &world);
    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    // One `wait`, as with the live VM: the replay reaches the yield the run parked in and goes on.
    let done = wait(&second, &run_id).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], json!(true));
    assert_eq!(
        *world.appended.lock().unwrap(),
        vec!["before".to_owned(), "after".to_owned()]
    );
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_is_scoped_expires_and_counts_against_the_snapshot_bound() {
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    let waiting = exec(
        &first,
        "await tools.append({ line: 'a' }); await tools.slow({ ms: 1500 }); return 1",
    )
    .await;
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    lose(first, &world);
    // Another session cannot resume it from the journal.
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        Arc::new(Tools {
            world: Arc::clone(&world),
        }),
    )
    .journal(Arc::clone(&store))
    .build();
    let Ok(Activation::Active(other)) = code_mode
        .activate(ActivationRequest::new(durable_tools()).with_agent_run(run_context("s2")))
    else {
        panic!("no session")
    };
    let refused = other.wait(&json!({ "runId": run_id })).await.to_json();
    assert_eq!(
        refused["error"],
        "code mode run belongs to a different session."
    );
    // The same machine-readable reason as without a journal store.
    assert_eq!(refused["reason"], "other_session", "{refused:#}");
    // A journal past its TTL is gone.
    assert_eq!(store.delete_expired(i64::MAX / 2).await.unwrap(), 1);
    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let gone = wait(&second, &run_id).await;
    assert_eq!(gone["error"], "code mode run is unavailable or expired.");
    assert_eq!(gone["reason"], "unknown", "{gone:#}");
    let never = wait(&second, "cm_00000000000000000000000000000000").await;
    assert_eq!(never["reason"], "unknown", "{never:#}");

    // The journal counts against maxSnapshotBytes: a run whose receipts are larger than the
    // bound cannot park.
    let bounded = CodeModeConfig::enabled()
        .timeout(std::time::Duration::from_secs(3))
        .max_snapshot_bytes(2 << 20)
        .build()
        .unwrap();
    // `slow` pends again: these runs must park.
    world.released.store(false, Ordering::SeqCst);
    let third = process(&store, &world, bounded);
    let cell = |size: usize| {
        format!(
            "for (let i = 0; i < 3; i++) await tools.append({{ line: 'x'.repeat({size}) }}); \
             await tools.slow({{ ms: 8000 }}); return 1"
        )
    };
    let small = exec(&third, &cell(10)).await;
    assert_eq!(small["status"], "waiting", "{small:#}");
    let big = exec(&third, &cell(800_000)).await;
    assert_eq!(big["code"], "snapshot_limit_exceeded", "{big:#}");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_journal_whose_scope_is_missing_fails_closed() {
    let (sqlite, dir) = sqlite_store().await;
    // Every run written with no scope at all, as a row whose scope columns someone set to NULL
    // reads back.
    let store: Arc<dyn JournalStore> = Arc::new(RewrittenRows(sqlite, |record| {
        record.scope = codemode_journal::Scope::default();
    }));
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    let waiting = exec(
        &first,
        "await tools.append({ line: 'a' }); await tools.slow({ ms: 1500 }); return 1",
    )
    .await;
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().unwrap().to_owned();
    lose(first, &world);
    // Neither another session nor the run's own can resume a journal that names no scope.
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        Arc::new(Tools {
            world: Arc::clone(&world),
        }),
    )
    .journal(Arc::clone(&store))
    .build();
    for session in ["s2", "s1"] {
        let Ok(Activation::Active(other)) = code_mode
            .activate(ActivationRequest::new(durable_tools()).with_agent_run(run_context(session)))
        else {
            panic!("no session")
        };
        let refused = other.wait(&json!({ "runId": run_id })).await.to_json();
        assert_eq!(refused["status"], "failed", "{refused:#}");
        assert_eq!(
            refused["error"], "code mode run belongs to a different session.",
            "{refused:#}"
        );
    }
    assert_eq!(world.appended.lock().unwrap().len(), 1, "nothing ran again");
    let _ = std::fs::remove_dir_all(dir);
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_that_yielded_before_anything_was_recorded_is_resumed_by_one_wait() {
    for (code, awaited) in [
        ("await yield_control(); return 41 + 1", true),
        ("yield_control(); return 42", false),
    ] {
        let (store, dir) = sqlite_store().await;
        let world = Arc::new(World::default());
        let first = process(&store, &world, short_legs());
        let yielded = exec(&first, code).await;
        assert_eq!(yielded["reason"], "yield", "{yielded:#}");
        let run_id = yielded["runId"].as_str().unwrap().to_owned();
        lose(first, &world);
        let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
        // The journal has no event: the replay still goes past the yield the run parked in.
        let done = wait(&second, &run_id).await;
        assert_eq!(
            done["status"], "completed",
            "{code} (awaited: {awaited}): {done:#}"
        );
        assert_eq!(done["value"], 42, "{done:#}");
        let _ = std::fs::remove_dir_all(dir);
    }
    // Only that yield: the next one stops the run again, as it would live.
    let (store, dir) = sqlite_store().await;
    let world = Arc::new(World::default());
    let first = process(&store, &world, short_legs());
    let yielded = exec(
        &first,
        "await yield_control(); await yield_control(); return 1",
    )
    .await;
    let run_id = yielded["runId"].as_str().unwrap().to_owned();
    lose(first, &world);
    let second = process(&store, &world, CodeModeConfig::enabled().build().unwrap());
    let again = wait(&second, &run_id).await;
    assert_eq!(again["status"], "waiting", "{again:#}");
    assert_eq!(again["reason"], "yield", "{again:#}");
    let done = wait(&second, &run_id).await;
    assert_eq!(done["status"], "completed", "{done:#}");
    let _ = std::fs::remove_dir_all(dir);
}
