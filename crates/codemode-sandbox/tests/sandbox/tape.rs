//! A run's tape (what a journal records and replays) is asked the same questions, and its answers
//! reach the guest the same way, whether the VM lives on a VM thread or in a worker process.

use std::sync::{Arc, Mutex};

use codemode_sandbox::{
    BridgeHost, BridgeRequest, LegEnd, ReadingKind, RequestId, Tape, async_trait,
};
use serde_json::Value;

use crate::support::{
    TestHost, TestLimits, deadline, limits, process_limits, render, runtime, setup,
};

/// A tape that answers every reading with a value of its own, fires the first three timers in
/// reverse order (asking which are pending) whenever one is due, and writes down every question.
#[derive(Debug, Default)]
struct ScriptedTape {
    questions: Mutex<Vec<String>>,
    clock: Mutex<f64>,
    abort: Option<String>,
}

impl ScriptedTape {
    fn questions(&self) -> Vec<String> {
        self.questions.lock().unwrap().clone()
    }

    fn note(&self, question: String) {
        self.questions.lock().unwrap().push(question);
    }
}

impl Tape for ScriptedTape {
    fn reading(&self, kind: ReadingKind, live: f64) -> f64 {
        assert!(live.is_finite());
        self.note(format!("reading {kind:?}"));
        match kind {
            ReadingKind::Clock => {
                let mut clock = self.clock.lock().unwrap();
                *clock += 1.0;
                1e12 + *clock
            }
            ReadingKind::Random => 0.25,
            _ => 7.0,
        }
    }

    fn settling(&self, id: RequestId) {
        self.note(format!("settling {}", id.0));
    }

    fn next_timer(&self, due: Option<u64>, registered: &dyn Fn(u64) -> bool) -> Option<u64> {
        let due = due?;
        let chosen = (1..=3).rev().find(|id| registered(*id)).or(Some(due));
        self.note(format!("timer {chosen:?}"));
        chosen
    }

    fn abort(&self) -> Option<String> {
        self.abort.clone()
    }
}

/// The test host, with a tape.
struct TapedHost {
    inner: Arc<TestHost>,
    tape: Arc<ScriptedTape>,
}

#[async_trait]
impl BridgeHost for TapedHost {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        self.inner.call(request).await
    }

    fn call_sync(&self, request: BridgeRequest) -> Result<Value, String> {
        self.inner.call_sync(request)
    }

    fn tape(&self) -> Option<Arc<dyn Tape>> {
        Some(Arc::clone(&self.tape) as Arc<dyn Tape>)
    }
}

/// Runs `program` to its first step's end under `limits` with `tape`; the rendered step.
fn run_taped(program: &str, limits: TestLimits, tape: &Arc<ScriptedTape>) -> String {
    let (inner, _cancelled) = TestHost::new();
    let host = Arc::new(TapedHost {
        inner,
        tape: Arc::clone(tape),
    });
    let step = runtime().block_on(async {
        match limits.start(program, setup(), host) {
            Ok(mut run) => run.drive(deadline(&limits)).await,
            Err(error) => LegEnd::Failed {
                error,
                output: Vec::new(),
            },
        }
    });
    render(&step)
}

#[test]
fn a_worker_asks_the_hosts_tape_as_a_vm_thread_does() {
    let program = "const seen = [Date.now(), Math.random(), performance.now(), new Date().getTime()]; \
         const order = []; \
         setTimeout(() => order.push('a'), 0); setTimeout(() => order.push('b'), 0); \
         setTimeout(() => order.push('c'), 0); \
         const echoed = await host.echo(1); \
         await new Promise((resolve) => setTimeout(resolve, 5)); \
         return [seen, order, echoed]";
    let on_thread = Arc::new(ScriptedTape::default());
    let in_worker = Arc::new(ScriptedTape::default());
    let thread_step = run_taped(program, limits(), &on_thread);
    let worker_step = run_taped(program, process_limits(), &in_worker);
    // The tape's values reached the guest, and its timer order held.
    assert_eq!(
        thread_step,
        r#"completed [[1000000000001,0.25,7,1000000000002],["c","b","a"],1]"#
    );
    assert_eq!(worker_step, thread_step);
    // The same questions, in the same order (timers and calls share one id sequence).
    let questions = [
        "reading Clock",
        "reading Random",
        "reading Monotonic",
        "reading Clock",
        "settling 4",
        "timer Some(3)",
        "timer Some(2)",
        "timer Some(1)",
        "timer Some(5)",
    ];
    assert_eq!(on_thread.questions(), questions);
    assert_eq!(in_worker.questions(), questions);
}

#[test]
fn a_tape_that_aborts_ends_the_run_in_a_worker_too() {
    for limits in [limits(), process_limits()] {
        let tape = Arc::new(ScriptedTape {
            abort: Some("code mode run diverged during replay: test".into()),
            ..ScriptedTape::default()
        });
        assert_eq!(
            run_taped("return Date.now()", limits, &tape),
            r#"failed "internal_error" code mode run diverged during replay: test"#
        );
    }
}
