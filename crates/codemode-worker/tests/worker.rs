//! The installed worker binary through the sandbox's worker pool: runs complete, host calls and
//! synchronous calls cross its pipe, and it is locked down.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_sandbox::{
    BridgeHost, BridgeRequest, Callable, GuestSetup, LegEnd, Limits, Placement, Run, WorkerCommand,
    WorkerPool, WorkerPoolConfig, async_trait,
};
use serde_json::{Value, json};

struct Echo;

#[async_trait]
impl BridgeHost for Echo {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        Ok(request.args.into_iter().next().unwrap_or(Value::Null))
    }

    fn call_sync(&self, request: BridgeRequest) -> Result<Value, String> {
        Ok(json!(
            request.args.first().and_then(Value::as_i64).unwrap_or(0) * 2
        ))
    }
}

fn setup() -> GuestSetup {
    let mut setup = GuestSetup::default();
    setup.callables.push((
        vec!["echo".into()],
        Callable::Bridge {
            method: "echo".into(),
            bound_args: vec![],
        },
    ));
    setup.callables.push((
        vec!["twice".into()],
        Callable::Sync {
            method: "twice".into(),
            bound_args: vec![],
        },
    ));
    setup
}

#[test]
fn the_worker_binary_serves_runs() {
    let pool = WorkerPool::new(WorkerPoolConfig {
        command: Some(WorkerCommand::new(env!("CARGO_BIN_EXE_codemode-worker"))),
        max_workers: 2,
        warm_workers: 1,
        ..WorkerPoolConfig::default()
    });
    let (limits, placement) = (Limits::default(), Placement::Process(pool.clone()));
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let program = "text('hi'); return (await echo(20)) + (await twice(11))";
    for _ in 0..3 {
        let mut run = Run::start(program, setup(), &limits, &placement, Arc::new(Echo)).unwrap();
        // A deadline no machine comes near: the program ends on its own.
        let step = runtime.block_on(run.drive(Instant::now() + Duration::from_secs(60)));
        let LegEnd::Completed { value, output, .. } = step else {
            panic!("unexpected {step:?}");
        };
        assert_eq!(value, json!(42));
        assert_eq!(output.len(), 1);
    }
    // The worker that served the runs (greeted, so filtered; a warm spare may still be
    // starting) runs under the system-call filter.
    if cfg!(target_os = "linux") {
        let filtered = pool.worker_pids().into_iter().any(|pid| {
            std::fs::read_to_string(format!("/proc/{pid}/status"))
                .is_ok_and(|status| status.contains("Seccomp:\t2"))
        });
        assert!(filtered, "{:?}", pool.worker_pids());
    }
}
