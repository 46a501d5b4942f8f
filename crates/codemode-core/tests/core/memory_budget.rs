//! The host memory budget: calls that find no room wait in turn across sessions, bounded by
//! their deadline, and fail with `runtime_unavailable`.

use std::sync::Arc;
use std::time::Duration;

use async_trait::async_trait;
use codemode_catalog::ToolOrigin;
use codemode_core::*;
use serde_json::{Value, json};
use tokio::sync::Semaphore;

use crate::support::{run_context, tool};

/// `hold` answers once a permit is given; `started` counts the calls that reached it.
struct Gate {
    permits: Arc<Semaphore>,
    started: Arc<Semaphore>,
}

#[async_trait]
impl ToolExecutor for Gate {
    async fn execute(
        &self,
        _id: &str,
        _input: Value,
        _context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        self.started.add_permits(1);
        let permit = self
            .permits
            .acquire()
            .await
            .map_err(|_| ToolError::new("closed"))?;
        permit.forget();
        Ok(json!(1))
    }
}

const VM_LIMIT: u64 = 16 << 20;

fn code_mode(gate: Gate, timeout: Duration) -> CodeMode {
    let config = CodeModeConfig::enabled()
        .memory_limit_bytes(VM_LIMIT)
        .timeout(timeout)
        .build()
        .expect("config");
    // Room for one running VM.
    CodeMode::builder(config, Arc::new(gate))
        .max_memory(VM_LIMIT)
        .build()
}

/// Waits until `count` calls wait for room in the memory budget (a bounded poll of the count,
/// not a guess of how long queueing takes).
async fn until_waiting(code_mode: &CodeMode, count: usize) {
    let give_up = std::time::Instant::now() + Duration::from_secs(60);
    while code_mode.calls_waiting_for_memory() < count {
        assert!(
            std::time::Instant::now() < give_up,
            "{} calls wait, not {count}",
            code_mode.calls_waiting_for_memory()
        );
        tokio::time::sleep(Duration::from_millis(5)).await;
    }
}

fn session(code_mode: &CodeMode, name: &str) -> CodeModeSession {
    code_mode
        .activate(
            ActivationRequest::new(vec![tool(ToolOrigin::Core, "hold", true)])
                .with_agent_run(run_context(name)),
        )
        .expect("activates")
        .into_active()
        .expect("active")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_that_floods_calls_does_not_make_another_wait_behind_them() {
    let permits = Arc::new(Semaphore::new(0));
    let started = Arc::new(Semaphore::new(0));
    let code_mode = code_mode(
        Gate {
            permits: Arc::clone(&permits),
            started: Arc::clone(&started),
        },
        Duration::from_secs(60),
    );
    let greedy = session(&code_mode, "greedy");
    let other = session(&code_mode, "other");
    // The greedy session's first call runs (and holds the room); five more wait.
    let mut flood = Vec::new();
    for n in 0..6 {
        let greedy = greedy.clone();
        flood.push(tokio::spawn(async move {
            greedy
                .exec(
                    &format!("call_{n}"),
                    &json!({ "code": "return await tools.hold({})" }),
                )
                .await
                .to_json()
        }));
        if n == 0 {
            started
                .acquire()
                .await
                .expect("the first call runs")
                .forget();
        }
    }
    // The five greedy calls are queued before the other session asks (no race on the order).
    until_waiting(&code_mode, 5).await;
    let asked = {
        let other = other.clone();
        tokio::spawn(async move {
            other
                .exec("call_other", &json!({ "code": "return 2" }))
                .await
                .to_json()
        })
    };
    until_waiting(&code_mode, 6).await;
    // Two of the greedy calls finish; the other session's call is served next in turn, while
    // greedy calls still wait.
    permits.add_permits(1);
    started
        .acquire()
        .await
        .expect("a second greedy call runs")
        .forget();
    permits.add_permits(1);
    let done = tokio::time::timeout(Duration::from_secs(30), asked)
        .await
        .expect("the other session's call is served before the greedy backlog")
        .expect("task");
    assert_eq!(done["value"], 2, "{done:#}");
    let finished = flood.iter().filter(|task| task.is_finished()).count();
    assert!(finished <= 2, "{finished} greedy calls finished first");
    permits.add_permits(64);
    for task in flood {
        let result = task.await.expect("task");
        assert_eq!(result["status"], "completed", "{result:#}");
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_call_that_finds_no_room_until_its_deadline_fails_as_runtime_unavailable() {
    let permits = Arc::new(Semaphore::new(0));
    let started = Arc::new(Semaphore::new(0));
    let code_mode = code_mode(
        Gate {
            permits: Arc::clone(&permits),
            started: Arc::clone(&started),
        },
        Duration::from_millis(300),
    );
    let first = session(&code_mode, "first");
    let second = session(&code_mode, "second");
    // The first session's run parks with `hold` pending; its `wait` then holds the room while
    // the run waits on host work (up to maxWaitMs, far past the 300 ms deadline of a call).
    let parked = first
        .exec("call_1", &json!({ "code": "return await tools.hold({})" }))
        .await
        .to_json();
    assert_eq!(parked["status"], "waiting", "{parked:#}");
    let run_id = parked["runId"].as_str().expect("a runId").to_owned();
    let holding = {
        let first = first.clone();
        tokio::spawn(async move { first.wait(&json!({ "runId": run_id })).await.to_json() })
    };
    // Until that wait holds the room a call may still run; from then on one waits for room
    // until its deadline and fails.
    let mut refused = Value::Null;
    for attempt in 0..200 {
        let answer = second
            .exec(&format!("call_{attempt}"), &json!({ "code": "return 1" }))
            .await
            .to_json();
        if answer["status"] == "failed" {
            refused = answer;
            break;
        }
    }
    assert_eq!(refused["code"], "runtime_unavailable", "{refused:#}");
    // A `wait` on a run this process does not have is refused at once, room or not.
    let unknown = second
        .wait(&json!({ "runId": "cm_00000000000000000000000000000000" }))
        .await
        .to_json();
    assert_eq!(unknown["reason"], "unknown", "{unknown:#}");
    assert!(
        refused["error"]
            .as_str()
            .is_some_and(|e| e.contains("memory budget")),
        "{refused:#}"
    );
    permits.add_permits(1);
    let _ = holding.await.expect("task");
    // Room again: the next call runs.
    let ok = second
        .exec("call_3", &json!({ "code": "return 1" }))
        .await
        .to_json();
    assert_eq!(ok["value"], 1, "{ok:#}");
}
