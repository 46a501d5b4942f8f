//! `cargo xtask bench` rows for codemode-core: exec of `return 1` through core with catalogs of
//! 1 to 10,000 tools, 1,000 sequential nested calls to an instant host tool, a 100-call `Promise.all`
//! behind the default pending-call cap, and 64 parked runs; printed rows (`row: ...`): the memory
//! of 64 parked runs and the latency of a trivial exec beside two CPU-bound cells.
#![allow(
    clippy::print_stdout,
    reason = "the memory row is printed beside divan's table"
)]

use std::sync::Arc;

use async_trait::async_trait;
use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::{
    Activation, ActivationRequest, CodeMode, CodeModeConfig, CodeModeSession, ToolCallContext,
    ToolError, ToolExecutor,
};
use serde_json::{Value, json};

fn main() {
    if std::env::var_os(FIRST_EXEC_CHILD).is_some() {
        first_exec_child();
        return;
    }
    if let Some(mode) = std::env::var_os(OTEL_CHILD) {
        otel_child(mode.to_str() == Some("on"));
        return;
    }
    // `cargo xtask bench sched` reads one report of a process of its own per variant.
    if std::env::var_os(BESIDE_CPU_BOUND_ONLY).is_some() {
        report_trivial_exec_beside_cpu_bound_cells();
        return;
    }
    // `cargo xtask bench otel` times divan's rows of two builds in turns, without the reports.
    if std::env::var_os("CODEMODE_BENCH_ROWS_ONLY").is_none() {
        report_first_exec_in_a_new_process();
        report_warm_exec_with_otel();
        report_parked_memory();
        report_trivial_exec_beside_cpu_bound_cells();
    }
    divan::main();
}

/// Set in a child of this bench binary: it makes one session, times its first `exec("return 1")`
/// (everything a process pays once: the bootstrap's compilation, the VM threads, the engine
/// check) and prints the nanoseconds.
const FIRST_EXEC_CHILD: &str = "CODEMODE_BENCH_FIRST_EXEC_CHILD";

fn first_exec_child() {
    let rt = runtime();
    let (_code_mode, session) = session_with(CodeModeConfig::enabled().build().unwrap(), 1);
    let input = json!({ "code": "return 1" });
    let start = std::time::Instant::now();
    let result = rt.block_on(session.exec("first", &input));
    let elapsed = start.elapsed();
    assert_eq!(result.status(), "completed", "{}", result.to_json());
    println!("{}", elapsed.as_nanos());
}

/// The first `exec("return 1")` of a new process, library defaults (no prebuilt VMs): 20 child
/// processes, each timing its own first exec (printed, not timed by divan: the cost is paid once
/// per process).
fn report_first_exec_in_a_new_process() {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let mut samples: Vec<u128> = (0..20)
        .filter_map(|_| {
            let output = std::process::Command::new(&exe)
                .env(FIRST_EXEC_CHILD, "1")
                .output()
                .ok()?;
            String::from_utf8_lossy(&output.stdout).trim().parse().ok()
        })
        .collect();
    if samples.is_empty() {
        return;
    }
    samples.sort_unstable();
    println!(
        "row: core: first exec(\"return 1\") in a new process: median {:.2} ms, fastest {:.2} ms ({} processes)",
        samples[samples.len() / 2] as f64 / 1e6,
        samples[0] as f64 / 1e6,
        samples.len()
    );
}

/// Set in a child of this bench binary: `on` exports spans to an OTLP receiver in the child (a
/// global subscriber, so every span is traced, VM threads included), `off` installs nothing.
const OTEL_CHILD: &str = "CODEMODE_BENCH_OTEL_CHILD";

/// Cells timed by [`otel_child`]: a warm `return 1`, and one nested call.
const OTEL_CELLS: [&str; 2] = ["return 1", "return (await tools.tool_0({ x: 1 })).x"];

/// Times warm execs (a VM built ahead of time, its refill finished before each, as in
/// `exec_return_1_with_prebuilt_vms`) of [`OTEL_CELLS`] and prints the lower quartile and the
/// median nanoseconds of each, or nothing for `on` in a build without the `otel` feature.
fn otel_child(on: bool) {
    #[cfg(feature = "otel")]
    let _otlp = on.then(|| {
        use tracing_subscriber::layer::SubscriberExt;
        // A collector that decodes nothing: the figure is the exporter's cost, not a decoder's
        // competing for the same cores.
        let receiver =
            codemode_telemetry::receiver::OtlpReceiver::start_discarding().expect("a receiver");
        let otlp = codemode_telemetry::Otlp::new(&codemode_telemetry::OtlpConfig::new(
            receiver.endpoint(),
        ))
        .expect("an exporter");
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otlp.layer()))
            .expect("the only subscriber");
        (receiver, otlp)
    });
    #[cfg(not(feature = "otel"))]
    if on {
        return;
    }
    let rt = runtime();
    let code_mode = rt.block_on(async {
        CodeMode::builder(
            CodeModeConfig::enabled().build().unwrap(),
            Arc::new(Instant),
        )
        .prebuilt_vms(4)
        .build()
    });
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(vec![tool(0)]))
    else {
        panic!("code mode did not activate")
    };
    let medians: Vec<String> = OTEL_CELLS
        .iter()
        .map(|code| {
            let input = json!({ "code": code });
            let mut cpu = 0;
            let mut samples: Vec<u128> = (0..1_050)
                .map(|n| {
                    rt.block_on(code_mode.fill_vm_pool());
                    let cpu_before = process_cpu_ns();
                    let start = std::time::Instant::now();
                    let result = rt.block_on(session.exec("bench", &input));
                    let elapsed = start.elapsed().as_nanos();
                    if n >= 50 {
                        cpu += process_cpu_ns().saturating_sub(cpu_before);
                    }
                    assert_eq!(result.status(), "completed", "{}", result.to_json());
                    elapsed
                })
                .skip(50)
                .collect();
            samples.sort_unstable();
            format!(
                "{} {} {}",
                samples[samples.len() / 4],
                samples[samples.len() / 2],
                cpu / samples.len() as u64
            )
        })
        .collect();
    println!("{}", medians.join(" "));
}

/// CPU time of every thread of this process so far, in nanoseconds (Linux: the first field of
/// each thread's `schedstat`; 0 elsewhere). Time spent waiting for a core is not in it, so it
/// shows the work an exec adds even on a machine shared with other builds.
fn process_cpu_ns() -> u64 {
    let Ok(tasks) = std::fs::read_dir("/proc/self/task") else {
        return 0;
    };
    tasks
        .flatten()
        .filter_map(|task| std::fs::read_to_string(task.path().join("schedstat")).ok())
        .filter_map(|stat| stat.split_whitespace().next()?.parse::<u64>().ok())
        .sum()
}

/// Warm execs with OpenTelemetry off (compiled in with the `otel` feature, no subscriber) and
/// on (exporting to a receiver on loopback): alternating child processes, five of each, the
/// median over them of each one's lower quartile and median (printed, not timed by divan: the
/// subscriber is process-wide; the quartile is the steadier figure on a shared machine).
fn report_warm_exec_with_otel() {
    let Ok(exe) = std::env::current_exe() else {
        return;
    };
    let child = |mode: &str| -> Option<Vec<f64>> {
        let output = std::process::Command::new(&exe)
            .env(OTEL_CHILD, mode)
            .output()
            .ok()?;
        let text = String::from_utf8_lossy(&output.stdout);
        let medians: Vec<f64> = text
            .split_whitespace()
            .filter_map(|n| n.parse::<f64>().ok())
            .collect();
        (medians.len() == 3 * OTEL_CELLS.len()).then_some(medians)
    };
    let mut off = Vec::new();
    let mut on = Vec::new();
    for _ in 0..5 {
        off.extend(child("off"));
        on.extend(child("on"));
    }
    // The median over the children of one figure (`at`: the cell's quartile or median).
    let median = |runs: &[Vec<f64>], at: usize| -> Option<f64> {
        let mut values: Vec<f64> = runs.iter().map(|run| run[at]).collect();
        values.sort_by(f64::total_cmp);
        values.get(values.len() / 2).map(|ns| ns / 1e3)
    };
    for (cell, code) in OTEL_CELLS.iter().enumerate() {
        let figures = |runs: &[Vec<f64>]| -> Option<[f64; 3]> {
            Some([
                median(runs, 3 * cell)?,
                median(runs, 3 * cell + 1)?,
                median(runs, 3 * cell + 2)?,
            ])
        };
        let Some([off_q1, off_p50, off_cpu]) = figures(&off) else {
            return;
        };
        match figures(&on) {
            Some([on_q1, on_p50, on_cpu]) => println!(
                "row: core: warm exec({code:?}), OpenTelemetry off: q1 {off_q1:.1} µs, median {off_p50:.1} µs, CPU {off_cpu:.1} µs; on: q1 {on_q1:.1} µs ({:+.1}), median {on_p50:.1} µs ({:+.1}), CPU {on_cpu:.1} µs ({:+.1})",
                on_q1 - off_q1,
                on_p50 - off_p50,
                on_cpu - off_cpu
            ),
            None => println!(
                "row: core: warm exec({code:?}), OpenTelemetry not compiled in: q1 {off_q1:.1} µs, median {off_p50:.1} µs, CPU {off_cpu:.1} µs"
            ),
        }
    }
}

/// Set to print only [`report_trivial_exec_beside_cpu_bound_cells`]'s row.
const BESIDE_CPU_BOUND_ONLY: &str = "CODEMODE_BENCH_BESIDE_CPU_BOUND_ONLY";

/// p50 / p99 of `exec("return 1")` on a 2-worker runtime while two other cells spin until their
/// deadline (printed, not timed by divan: divan reports no percentiles).
fn report_trivial_exec_beside_cpu_bound_cells() {
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let (_busy_mode, busy) = session_with(CodeModeConfig::enabled().build().unwrap(), 1);
    let (_code_mode, quiet) = session_with(CodeModeConfig::enabled().build().unwrap(), 1);
    let mut samples = rt.block_on(async {
        let spin = json!({ "code": "for (;;) {}" });
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let busy = busy.clone();
                let spin = spin.clone();
                tokio::spawn(async move { busy.exec("hog", &spin).await })
            })
            .collect();
        tokio::time::sleep(std::time::Duration::from_millis(50)).await;
        let input = json!({ "code": "return 1" });
        let mut samples = Vec::with_capacity(500);
        for _ in 0..500 {
            let start = std::time::Instant::now();
            let _ = quiet.exec("bench", &input).await;
            samples.push(start.elapsed());
        }
        for hog in hogs {
            hog.abort();
        }
        samples
    });
    samples.sort_unstable();
    let at = |q: f64| samples[((samples.len() as f64 - 1.0) * q) as usize];
    println!(
        "row: trivial_exec_beside_2_cpu_bound_cells: p50 {:?}, p99 {:?}, max {:?} ({} samples, 2 tokio workers)",
        at(0.5),
        at(0.99),
        at(1.0),
        samples.len()
    );
}

/// The memory rows: 64 parked runs of a session with 1, 100 and 10,000 tools (printed, not
/// timed).
fn report_parked_memory() {
    let rt = runtime();
    for tools in [1, 100, 10_000] {
        let (code_mode, session) = session_with(CodeModeConfig::enabled().build().unwrap(), tools);
        let input = json!({ "code": "await yield_control(); return 1" });
        rt.block_on(async {
            for _ in 0..64 {
                let _ = session.exec("bench", &input).await;
            }
        });
        let bytes = code_mode.suspended_memory_bytes();
        println!(
            "row: memory_of_64_parked_runs_with_{tools}_tools: {} runs, {bytes} bytes ({:.1} MiB, {:.0} KiB per run)",
            code_mode.suspended_runs(),
            bytes as f64 / (1024.0 * 1024.0),
            bytes as f64 / 1024.0 / 64.0
        );
        code_mode.shutdown();
    }
}

struct Instant;

#[async_trait]
impl ToolExecutor for Instant {
    async fn execute(
        &self,
        _id: &str,
        input: Value,
        _cx: ToolCallContext,
    ) -> Result<Value, ToolError> {
        Ok(input)
    }
}

fn session(config: CodeModeConfig) -> (CodeMode, CodeModeSession) {
    session_with(config, 100)
}

/// Tool number `i` of the bench catalogs.
fn tool(i: usize) -> ToolDescriptor {
    ToolDescriptor {
        origin: if i.is_multiple_of(2) {
            ToolOrigin::Core
        } else {
            ToolOrigin::BundledPlugin(format!("plugin{}", i % 7))
        },
        name: format!("tool_{i}"),
        label: None,
        description: format!("Tool number {i} does something useful."),
        parameters: Some(json!({ "type": "object", "properties": { "x": { "type": "number" } } })),
        direct_only: false,
        read_only: true,
    }
}

fn session_with(config: CodeModeConfig, count: usize) -> (CodeMode, CodeModeSession) {
    let tools: Vec<ToolDescriptor> = (0..count).map(tool).collect();
    let code_mode = CodeMode::builder(config, Arc::new(Instant)).build();
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tools)) else {
        panic!("code mode did not activate")
    };
    (code_mode, session)
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// `exec("return 1")` with this many tools in the catalog.
#[divan::bench(sample_count = 50, args = [1, 100, 1_000, 10_000])]
fn exec_return_1_with_tools(bencher: divan::Bencher<'_, '_>, tools: usize) {
    let rt = runtime();
    let (_code_mode, session) = session_with(CodeModeConfig::enabled().build().unwrap(), tools);
    let input = json!({ "code": "return 1" });
    bencher.bench_local(|| rt.block_on(session.exec("bench", &input)));
}

/// `exec("return 1")` with VMs built ahead of time (`CodeModeBuilder::prebuilt_vms`): the VM is
/// ready when the exec starts, and its replacement is built in the background.
#[divan::bench(sample_count = 50, args = [1, 10_000])]
fn exec_return_1_with_prebuilt_vms(bencher: divan::Bencher<'_, '_>, tools: usize) {
    let rt = runtime();
    let tool_list = (0..tools).map(tool).collect();
    // Built inside the runtime, so the pool starts filling at once (outside one, it starts at
    // the first exec).
    let code_mode = rt.block_on(async {
        CodeMode::builder(
            CodeModeConfig::enabled().build().unwrap(),
            Arc::new(Instant),
        )
        .prebuilt_vms(4)
        .build()
    });
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tool_list))
    else {
        panic!("code mode did not activate")
    };
    let input = json!({ "code": "return 1" });
    // A warm pool, as a host serving requests spaced further apart than one VM build sees it:
    // before each timed exec (outside the timing) the background refill is let finish. The VM
    // thread that finished the last build is still awake when the exec starts; a thread that
    // sleeps costs a wake-up more (50-100 µs on a virtual machine).
    bencher
        .with_inputs(|| rt.block_on(code_mode.fill_vm_pool()))
        .bench_local_values(|()| rt.block_on(session.exec("bench", &input)));
}

/// A cell that calls one convenience function: `tools` is built on this first read.
#[divan::bench(sample_count = 20, args = [1, 10_000])]
fn exec_calling_one_tool_function(bencher: divan::Bencher<'_, '_>, tools: usize) {
    let rt = runtime();
    let (_code_mode, session) = session_with(CodeModeConfig::enabled().build().unwrap(), tools);
    let input = json!({ "code": "return (await tools.tool_0({ x: 1 })).x" });
    bencher.bench_local(|| rt.block_on(session.exec("bench", &input)));
}

/// A cell that reads `ALL_TOOLS`: the catalog listing is parsed and frozen on this first read.
#[divan::bench(sample_count = 20, args = [1, 10_000])]
fn exec_reading_all_tools(bencher: divan::Bencher<'_, '_>, tools: usize) {
    let rt = runtime();
    let (_code_mode, session) = session_with(CodeModeConfig::enabled().build().unwrap(), tools);
    let input = json!({ "code": "return ALL_TOOLS.length" });
    bencher.bench_local(|| rt.block_on(session.exec("bench", &input)));
}

#[divan::bench(sample_count = 10)]
fn exec_1000_sequential_nested_calls(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (_code_mode, session) = session(CodeModeConfig::enabled().build().unwrap());
    let input = json!({ "code": "let s = 0; for (let i = 0; i < 1000; i++) { s += (await tools.tool_0({ x: i })).x } return s" });
    bencher
        .counter(divan::counter::ItemsCount::new(1000usize))
        .bench_local(|| rt.block_on(session.exec("bench", &input)));
}

#[divan::bench(sample_count = 20)]
fn exec_100_parallel_calls_behind_the_default_cap(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (_code_mode, session) = session(CodeModeConfig::enabled().build().unwrap());
    let input = json!({ "code": "const all = await Promise.all(Array.from({ length: 100 }, (_, i) => tools.tool_0({ x: i }))); return all.length" });
    bencher
        .counter(divan::counter::ItemsCount::new(100usize))
        .bench_local(|| rt.block_on(session.exec("bench", &input)));
}

#[divan::bench(sample_count = 5)]
fn park_64_suspended_runs(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (code_mode, session) = session(CodeModeConfig::enabled().build().unwrap());
    let input = json!({ "code": "await yield_control(); return 1" });
    bencher.bench_local(|| {
        rt.block_on(async {
            for _ in 0..64 {
                let _ = session.exec("bench", &input).await;
            }
        });
        let parked = code_mode.suspended_runs();
        code_mode.shutdown();
        parked
    });
}

/// `results.save` then `results.load` of a 1 MiB value in one cell.
#[divan::bench(sample_count = 10)]
fn results_save_and_load_1_mib(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (_code_mode, session) = session(CodeModeConfig::enabled().build().unwrap());
    let input = json!({ "code": "const v = { rows: 'x'.repeat(1 << 20) }; await results.save('big', v); return (await results.load('big')).rows.length" });
    bencher.bench_local(|| rt.block_on(session.exec("bench", &input)));
}

/// The journal stores of the durable-run rows: none (the baseline), memory, a SQLite file (WAL)
/// and Postgres on loopback when `CODEMODE_TEST_POSTGRES_URL` names one (`cargo xtask bench`
/// starts one).
fn journal_stores() -> Vec<&'static str> {
    let mut stores = vec!["none", "memory", "sqlite"];
    if std::env::var_os("CODEMODE_TEST_POSTGRES_URL").is_some() {
        stores.push("postgres");
    }
    stores
}

/// A store of kind `kind` (empty), and the folder to delete after.
fn journal_store(
    rt: &tokio::runtime::Runtime,
    kind: &str,
) -> (
    Option<Arc<dyn codemode_journal::JournalStore>>,
    Option<std::path::PathBuf>,
) {
    let (address, folder) = match kind {
        "none" => return (None, None),
        "memory" => ("memory".to_owned(), None),
        "sqlite" => {
            let folder = std::env::temp_dir().join(format!(
                "codemode-bench-journal-{}-{}",
                std::process::id(),
                codemode_sandbox::RunId::new()
            ));
            std::fs::create_dir_all(&folder).expect("a temp folder");
            let address = format!("sqlite:{}", folder.join("state.db").display());
            (address, Some(folder))
        }
        _ => (
            std::env::var("CODEMODE_TEST_POSTGRES_URL").expect("a Postgres URL"),
            None,
        ),
    };
    let store = rt
        .block_on(codemode_journal::open(&address))
        .expect("the journal store opens");
    (Some(store), folder)
}

/// A side-effecting tool (its calls are journaled `started` before they run, settled after).
fn writing_tool() -> ToolDescriptor {
    ToolDescriptor {
        read_only: false,
        ..tool(0)
    }
}

fn durable_session(
    store: Option<Arc<dyn codemode_journal::JournalStore>>,
) -> (CodeMode, CodeModeSession) {
    let config = CodeModeConfig::enabled()
        .timeout(std::time::Duration::from_secs(60))
        .build()
        .unwrap();
    let mut builder = CodeMode::builder(config, Arc::new(Instant));
    if let Some(store) = store {
        builder = builder.journal(store);
    }
    let code_mode = builder.build();
    let run = codemode_core::AgentRunContext {
        agent_run_id: Some("bench-agent-run".into()),
        session_id: Some("bench-session".into()),
        ..codemode_core::AgentRunContext::default()
    };
    let request = ActivationRequest::new(vec![writing_tool()]).with_agent_run(run);
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };
    (code_mode, session)
}

/// 100 sequential side-effecting nested calls in one `exec`, without a journal and with each
/// store: the difference from `none`, divided by 100, is the journal's cost per call (one commit
/// per call: its `started` receipt, with the settled receipt of the call before).
#[divan::bench(sample_count = 10, args = journal_stores())]
fn exec_100_side_effecting_calls_journaled_in(bencher: divan::Bencher<'_, '_>, store: &str) {
    let rt = runtime();
    let (store, folder) = journal_store(&rt, store);
    let (code_mode, session) = durable_session(store);
    let input = json!({ "code": "let s = 0; for (let i = 0; i < 100; i++) { s += (await tools.tool_0({ x: i })).x } return s" });
    bencher
        .counter(divan::counter::ItemsCount::new(100usize))
        .bench_local(|| {
            let result = rt.block_on(session.exec("bench", &input)).to_json();
            assert_eq!(result["value"], 4950, "{result}");
        });
    code_mode.shutdown();
    if let Some(folder) = folder {
        let _ = std::fs::remove_dir_all(folder);
    }
}

/// A `wait` on a fresh host replaying the journal of a 1,000-call run that parked in a
/// `yield_control()` on another host (the run's VM lost): the 1,000 answers come from the
/// journal, and the replay goes on past the yield it parked in to complete the run.
#[divan::bench(sample_count = 10, args = journal_stores().into_iter().filter(|s| *s != "none").collect::<Vec<_>>())]
fn replay_1000_calls_from(bencher: divan::Bencher<'_, '_>, store: &str) {
    let rt = runtime();
    let (store, folder) = journal_store(&rt, store);
    let store = store.expect("a journal store");
    let input = json!({ "code": "let s = 0; for (let i = 0; i < 1000; i++) { s += (await tools.tool_0({ x: i })).x } await yield_control(); return s" });
    bencher
        .with_inputs(|| {
            // Journals left by earlier iterations go: at most 64 may live.
            rt.block_on(store.delete_agent_run("bench-agent-run"))
                .expect("the journals are deleted");
            // The first host runs the calls and parks, then is lost.
            let (first, session) = durable_session(Some(Arc::clone(&store)));
            let waiting = rt.block_on(session.exec("bench", &input)).to_json();
            assert_eq!(waiting["status"], "waiting", "{waiting}");
            first.shutdown();
            drop(session);
            let run_id = waiting["runId"].as_str().expect("a run id").to_owned();
            (durable_session(Some(Arc::clone(&store))), run_id)
        })
        .bench_local_values(|((second, session), run_id)| {
            let done = rt
                .block_on(session.wait(&json!({ "runId": run_id })))
                .to_json();
            assert!(
                done["status"] == "completed" && done["value"] == 499_500,
                "{done}"
            );
            (second, session)
        });
    if let Some(folder) = folder {
        let _ = std::fs::remove_dir_all(folder);
    }
}
