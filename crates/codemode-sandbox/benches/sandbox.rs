//! Benchmarks of the sandbox rows of `cargo xtask bench` (issue 3). Goals on the reference
//! machine (release): trivial program < 500 µs, < 10 µs per bridge round trip, resume < 100 µs,
//! a parked trivial run < 256 KiB.
#![allow(missing_docs, clippy::print_stdout)]

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_sandbox::{
    BridgeHost, BridgeRequest, Callable, GuestSetup, LegEnd, Limits, Placement, PreparedSetup, Run,
    RunScope, SnapshotStore, VmPool, WorkerCommand, WorkerPool, WorkerPoolConfig, async_trait,
};
use serde_json::Value;

fn main() {
    memory_of_a_parked_trivial_run();
    divan::main();
}

struct Echo;

#[async_trait]
impl BridgeHost for Echo {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        Ok(request.args.into_iter().next().unwrap_or(Value::Null))
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
    setup.freeze = vec!["echo".into()];
    setup
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap()
}

fn deadline() -> Instant {
    Instant::now() + Duration::from_secs(30)
}

async fn complete(program: &str) -> Value {
    // 128 is the largest maxPendingToolCalls the config allows; the parallel row needs 100.
    let limits = Limits::default().with_max_pending_calls(128);
    let mut run = Run::start(
        program,
        setup(),
        &limits,
        &Placement::Thread,
        Arc::new(Echo),
    )
    .unwrap();
    match run.drive(deadline()).await {
        LegEnd::Completed { value, .. } => value,
        other => panic!("unexpected {other:?}"),
    }
}

#[divan::bench(sample_count = 50)]
fn fresh_vm_trivial_program(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    bencher.bench_local(|| rt.block_on(complete("return 1 + 1")));
}

/// A fresh VM whose program touches built-ins of several kinds (methods, a typed array
/// constructor, JSON) and a deferred runtime global (`TextEncoder`, whose part loads on first
/// use). Against `fresh_vm_trivial_program`, the cost of that first use.
#[divan::bench(sample_count = 50)]
fn fresh_vm_touching_built_ins(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    bencher.bench_local(|| {
        rt.block_on(complete(
            "const a = [3, 1, 2]; a.push(4); \
             return a.sort().join() + 'x'.padEnd(3, '-') + new Uint8Array(2).length \
               + new TextEncoder().encode('h').length + JSON.stringify({ a })",
        ))
    });
}

/// The same program in a VM built ahead of time (`Placement::PrebuiltThreads`): before each
/// timed run, outside the timing, the pool is let refill, as between a host's spaced requests.
#[divan::bench(sample_count = 50)]
fn pooled_vm_trivial_program(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let limits = Limits::default().with_max_pending_calls(128);
    let pool = VmPool::new(2);
    let placement = Placement::PrebuiltThreads(pool.clone());
    let prepared = PreparedSetup::new(setup());
    bencher
        .with_inputs(|| rt.block_on(pool.fill_now(&limits)))
        .bench_local_values(|()| {
            rt.block_on(async {
                let mut run = Run::start(
                    "return 1 + 1",
                    prepared.clone(),
                    &limits,
                    &placement,
                    Arc::new(Echo),
                )
                .unwrap();
                match run.drive(deadline()).await {
                    LegEnd::Completed { value, .. } => value,
                    other => panic!("unexpected {other:?}"),
                }
            })
        });
}

/// Divide by 1,000 for the per-call cost.
#[divan::bench(sample_count = 10)]
fn sequential_round_trips_1000(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    bencher.bench_local(|| {
        rt.block_on(complete(
            "let n = 0; for (let i = 0; i < 1000; i++) n += await echo(1); return n",
        ))
    });
}

#[divan::bench(sample_count = 20)]
fn parallel_calls_100(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    bencher.bench_local(|| {
        rt.block_on(complete(
            "const all = await Promise.all(Array.from({ length: 100 }, (_, i) => echo(i))); return all.length",
        ))
    });
}

/// Park a yielded run, resume it and drive it to completion.
#[divan::bench(sample_count = 50)]
fn park_and_resume(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let store: SnapshotStore = SnapshotStore::new();
    bencher
        .with_inputs(|| {
            rt.block_on(async {
                let mut run = Run::start(
                    "await yield_control(); return 1",
                    setup(),
                    &Limits::default(),
                    &Placement::Thread,
                    Arc::new(Echo),
                )
                .unwrap();
                assert!(matches!(
                    run.drive(deadline()).await,
                    LegEnd::Suspended { .. }
                ));
                run
            })
        })
        .bench_local_values(|run| {
            rt.block_on(async {
                let id = store
                    .park(
                        run,
                        RunScope::default(),
                        (),
                        Duration::from_secs(60),
                        10 << 20,
                    )
                    .unwrap();
                let mut resumption = store.resume(&id.to_string(), &RunScope::default()).unwrap();
                let step = resumption.run_mut().drive(deadline()).await;
                resumption.finish();
                step
            })
        });
}

fn memory_of_a_parked_trivial_run() {
    let rt = runtime();
    let bytes = rt.block_on(async {
        let mut run = Run::start(
            "await yield_control(); return 1",
            setup(),
            &Limits::default(),
            &Placement::Thread,
            Arc::new(Echo),
        )
        .unwrap();
        assert!(matches!(
            run.drive(deadline()).await,
            LegEnd::Suspended { .. }
        ));
        run.memory_bytes()
    });
    println!(
        "row: memory_of_a_parked_trivial_run: {bytes} bytes ({:.1} KiB, goal < 256 KiB)",
        bytes as f64 / 1024.0
    );
}

/// 10,000 `console.log` lines, beside the same output through `text()` (goal: within 2×).
#[divan::bench(sample_count = 10, args = ["console.log", "text"])]
fn output_10000_lines(bencher: divan::Bencher<'_, '_>, via: &str) {
    let rt = runtime();
    let program = format!("for (let i = 0; i < 10000; i++) {via}('line ' + i); return 1");
    let limits = Limits::default().with_max_output_bytes(10 << 20);
    bencher.bench_local(|| {
        rt.block_on(async {
            let mut run = Run::start(
                &program,
                setup(),
                &limits,
                &Placement::Thread,
                Arc::new(Echo),
            )
            .unwrap();
            run.drive(deadline()).await
        })
    });
}

/// 1,000 `setTimeout(f, 0)` awaited together, beside 1,000 resolved promises (goal: within 2×
/// of a plain loop).
#[divan::bench(sample_count = 10, args = ["setTimeout", "promise"])]
fn thousand_zero_delay_callbacks(bencher: divan::Bencher<'_, '_>, via: &str) {
    let rt = runtime();
    let program = match via {
        "setTimeout" => {
            "let n = 0; await Promise.all(Array.from({ length: 1000 }, () => new Promise((r) => setTimeout(() => { n++; r() }, 0)))); return n"
        }
        _ => {
            "let n = 0; await Promise.all(Array.from({ length: 1000 }, () => new Promise((r) => Promise.resolve().then(() => { n++; r() })))); return n"
        }
    };
    bencher.bench_local(|| rt.block_on(complete(program)));
}

/// Where the VM of a process-mode row lives: the worker of the sandbox's own binary target (the
/// real worker; it misbehaves only when given an argument), one pool for every row.
fn process_pool() -> WorkerPool {
    static POOL: std::sync::OnceLock<WorkerPool> = std::sync::OnceLock::new();
    POOL.get_or_init(|| {
        WorkerPool::new(WorkerPoolConfig {
            command: Some(WorkerCommand::new(env!(
                "CARGO_BIN_EXE_codemode-test-worker"
            ))),
            warm_workers: 2,
            ..WorkerPoolConfig::default()
        })
    })
    .clone()
}

/// A trivial program and 1,000 sequential round trips with the VM on a VM thread or in a warm
/// worker process (goals for `process`: < 1 ms for `return 1`, < 25 µs per call; divide the
/// second row by 1,000).
#[divan::bench(sample_count = 30, args = ["thread", "process"])]
fn isolation_return_1(bencher: divan::Bencher<'_, '_>, isolation: &str) {
    let rt = runtime();
    let placement = placement_for(isolation);
    // One run first, so the row measures warm workers.
    rt.block_on(complete_with("return 1", &placement));
    bencher.bench_local(|| rt.block_on(complete_with("return 1", &placement)));
}

#[divan::bench(sample_count = 10, args = ["thread", "process"])]
fn isolation_sequential_round_trips_1000(bencher: divan::Bencher<'_, '_>, isolation: &str) {
    let rt = runtime();
    let placement = placement_for(isolation);
    let program = "let n = 0; for (let i = 0; i < 1000; i++) n += await echo(1); return n";
    rt.block_on(complete_with("return 1", &placement));
    bencher.bench_local(|| rt.block_on(complete_with(program, &placement)));
}

fn placement_for(isolation: &str) -> Placement {
    match isolation {
        "process" => Placement::Process(process_pool()),
        _ => Placement::Thread,
    }
}

async fn complete_with(program: &str, placement: &Placement) -> Value {
    let limits = Limits::default();
    let mut run = Run::start(program, setup(), &limits, placement, Arc::new(Echo)).unwrap();
    match run.drive(deadline()).await {
        LegEnd::Completed { value, .. } => value,
        other => panic!("unexpected {other:?}"),
    }
}
