//! Process isolation: the same runs with every VM in a worker process (`Placement::Process`),
//! and what a worker that dies, misbehaves or runs out of workers does to its run and its host.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_sandbox::{BridgeHost, BridgeRequest, ErrorCode, GuestSetup, LegEnd, Run, WorkerPool};

use crate::support::{TestHost, TestLimits, UNREACHED_TIMEOUT, limits, render, run_with, runtime};

/// Programs whose rendered step must be the same wherever the VM lives.
const PARITY: &[&str] = &[
    "return 1 + 1",
    "text('hi'); json({ a: [1, 2] }); return { b: undefined, c: 'x' }",
    "const a = await host.echo(1); const b = await host.echo(a + 1); return [a, b]",
    "return await Promise.all([1, 2, 3].map((n) => host.echo(n * 10)))",
    "return await tools.echo({ x: 1 })",
    "return await tools.search('q')",
    "try { await local.fail() } catch (e) { return e.message }",
    "try { await host.fail('nope') } catch (e) { return e.message }",
    "try { await host.panic() } catch (e) { return e.message }",
    "try { await host.deep() } catch (e) { return e.message }",
    "let n = 0; for (let i = 0; i < 200; i++) n += await host.echo(1); return n",
    "await new Promise((resolve) => setTimeout(resolve, 5)); return 'timer'",
    "throw new TypeError('boom')",
    "return (",
    "for (;;) {}",
    "const a = []; for (;;) a.push('x'.repeat(1 << 16))",
    "for (;;) text('x'.repeat(1000))",
    "await host.never()",
    "yield_control(); return 1",
];

#[test]
fn process_isolation_gives_the_same_steps_as_threads() {
    let rt = runtime();
    let mut differences = Vec::new();
    for program in PARITY {
        // Only the endless loop ends at its deadline, and the never-answered call parks at it
        // (seconds after a worker has started, however busy the machine); every other program
        // ends on its own, so its deadline is one no machine comes near (a leg in a worker may
        // include starting the worker, and a loaded machine may starve a demoted step).
        let timeout = match *program {
            "for (;;) {}" => Duration::from_millis(500),
            "await host.never()" => Duration::from_secs(3),
            _ => UNREACHED_TIMEOUT,
        };
        let (host, _cancelled) = TestHost::new();
        let limits = limits().with_timeout(timeout);
        let thread = render(&rt.block_on(run_with(program, limits.clone(), Arc::clone(&host))));
        let process_limits = crate::support::process_limits().with_timeout(timeout);
        let process = render(&rt.block_on(run_with(program, process_limits, host)));
        if thread != process {
            differences.push(format!(
                "{program}\n  thread:  {thread}\n  process: {process}"
            ));
        }
    }
    assert!(differences.is_empty(), "{}", differences.join("\n"));
}

/// A host whose `kill` method SIGKILLs every worker process of its pool, mid-run.
struct KillingHost(WorkerPool);

#[codemode_sandbox::async_trait]
impl BridgeHost for KillingHost {
    async fn call(&self, request: BridgeRequest) -> Result<serde_json::Value, String> {
        match request.method.as_str() {
            "kill" => {
                kill_workers(&self.0);
                Ok(serde_json::Value::Null)
            }
            "never" => std::future::pending().await,
            _ => Ok(serde_json::Value::Null),
        }
    }
}

/// SIGKILLs every worker of `pool` and returns once each is dead: gone, or a zombie its parent
/// can reap. A killed worker's main thread turns zombie before its other threads have exited,
/// and until they have, `waitpid` does not report the process: the pool would still see it
/// alive. So the zombie must also be down to its one thread.
fn kill_workers(pool: &WorkerPool) {
    for pid in pool.worker_pids() {
        let status = std::process::Command::new("kill")
            .args(["-9", &pid.to_string()])
            .status()
            .expect("kill runs");
        assert!(status.success(), "kill -9 {pid}");
        let dead = || {
            let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
                return true;
            };
            let zombie = stat
                .rsplit(')')
                .next()
                .is_some_and(|rest| rest.trim_start().starts_with('Z'));
            let threads =
                std::fs::read_dir(format!("/proc/{pid}/task")).map_or(0, |tasks| tasks.count());
            zombie && threads <= 1
        };
        let give_up = Instant::now() + Duration::from_secs(20);
        while !dead() && Instant::now() < give_up {
            std::thread::yield_now();
        }
    }
}

fn killing_setup() -> GuestSetup {
    let mut setup = GuestSetup::default();
    for method in ["kill", "never"] {
        setup.callables.push((
            vec![method.into()],
            codemode_sandbox::Callable::Bridge {
                method: method.into(),
                bound_args: vec![],
            },
        ));
    }
    setup
}

fn drive(run: &mut Run, limits: &TestLimits) -> LegEnd {
    runtime().block_on(run.drive(Instant::now() + limits.timeout))
}

fn code_and_message(step: &LegEnd) -> (Option<ErrorCode>, String) {
    match step {
        LegEnd::Failed { error, .. } => (error.code(), error.to_string()),
        other => (None, render(other)),
    }
}

#[cfg(target_os = "linux")]
#[test]
fn a_worker_killed_mid_run_fails_only_its_run_and_the_host_keeps_serving() {
    let pool = crate::support::worker_pool(None, 2);
    // Most legs here start a worker process (a spawn and a VM built in it): a generous deadline,
    // so that a machine busy with other tests does not turn the start into a timeout (the
    // deadline's kill would then look like the death this test is about).
    let limits = limits()
        .with_timeout(Duration::from_secs(20))
        .in_process(pool.clone());
    let host = Arc::new(KillingHost(pool.clone()));
    let start = |program: &str| {
        limits
            .start(program, killing_setup(), host.clone())
            .unwrap()
    };

    // Killed while it waits for the answer of a host call.
    let step = drive(&mut start("await kill(); return 1"), &limits);
    let (code, message) = code_and_message(&step);
    assert_eq!(code, Some(ErrorCode::RuntimeUnavailable), "{message}");
    assert!(
        message.contains("worker process running this program exited")
            && message.contains("SIGKILL"),
        "{message}"
    );

    // The idle spare was killed too: a dead idle worker is never handed to a run, which gets
    // a fresh one.
    let step = drive(&mut start("return 1"), &limits);
    assert_eq!(render(&step), "completed 1");
    // Parked at once by a yield (no deadline involved: a leg waiting on a host call would park
    // only at its deadline), with its VM in a worker; the worker is killed, and the next leg
    // fails at once.
    let mut parked = start("await yield_control(); return 1");
    let step = drive(&mut parked, &limits);
    assert!(
        matches!(step, LegEnd::Suspended { .. }),
        "{}",
        render(&step)
    );
    kill_workers(&pool);
    let (code, message) = code_and_message(&drive(&mut parked, &limits));
    assert_eq!(code, Some(ErrorCode::RuntimeUnavailable), "{message}");
    assert!(message.contains("exited"), "{message}");

    // The pool replaced them.
    for _ in 0..3 {
        let step = drive(&mut start("return 40 + 2"), &limits);
        assert_eq!(render(&step), "completed 42");
    }
}

#[test]
fn a_worker_that_misbehaves_is_stopped_with_a_clear_error() {
    let cases = [
        ("garbage", "sent a malformed message"),
        (
            "flood",
            "sent a message of 4294967295 bytes, over the limit of",
        ),
        ("reading-without-tape", "a reading the run does not record"),
        (
            "settling-unknown",
            "settling call 999, which this step did not settle",
        ),
    ];
    for (misbehaviour, expected) in cases {
        let pool = crate::support::worker_pool(Some(misbehaviour), 1);
        let limits = limits().in_process(pool.clone());
        let (host, _cancelled) = TestHost::new();
        let step = runtime().block_on(run_with("return 1", limits, host));
        let (code, message) = code_and_message(&step);
        assert_eq!(
            code,
            Some(ErrorCode::RuntimeUnavailable),
            "{misbehaviour}: {message}"
        );
        assert!(message.contains(expected), "{misbehaviour}: {message}");
    }

    // A worker that never answers is killed at the deadline plus the grace: `timeout`. The
    // deadline leaves a busy machine time to start the worker first.
    let pool = crate::support::worker_pool(Some("stall"), 1);
    let limits = limits()
        .with_timeout(Duration::from_millis(1000))
        .in_process(pool.clone());
    let (host, _cancelled) = TestHost::new();
    let started = Instant::now();
    let step = runtime().block_on(run_with("return 1", limits, host));
    assert_eq!(
        render(&step),
        r#"failed "timeout" code mode timeout exceeded"#
    );
    assert!(started.elapsed() < Duration::from_secs(10));
}

/// The filter is installed: a worker that tries to open a file dies with SIGSYS.
#[cfg(target_os = "linux")]
#[test]
fn a_worker_that_opens_a_file_dies_by_seccomp() {
    let pool = crate::support::worker_pool(Some("open-file"), 1);
    let limits = limits().in_process(pool);
    let (host, _cancelled) = TestHost::new();
    let step = runtime().block_on(run_with("return 1", limits, host));
    let (code, message) = code_and_message(&step);
    assert_eq!(code, Some(ErrorCode::RuntimeUnavailable), "{message}");
    assert!(message.contains("signal 31 (SIGSYS"), "{message}");
}

/// A worker whose process freed a large mapped block before its filter (which raises glibc's
/// trim threshold) still trims its heap under the filter without touching a file: a run that
/// frees ~30 MiB of small strings completes, and the same worker serves the next run.
#[cfg(target_os = "linux")]
#[test]
fn a_large_free_before_the_filter_does_not_kill_the_worker() {
    let pool = crate::support::worker_pool(Some("large-free-before-filter"), 1);
    let limits = limits()
        .with_memory_bytes(256 << 20)
        .in_process(pool.clone());
    let program = "let keep = []; \
        for (let i = 0; i < 200000; i++) keep.push('x'.repeat(100) + i); \
        keep.length = 0; keep = null; return 'freed'";
    let mut pids = Vec::new();
    // The second run also builds its VM where the first one's was dropped.
    for _ in 0..2 {
        let (host, _cancelled) = TestHost::new();
        let step = runtime().block_on(run_with(program, limits.clone(), host));
        assert_eq!(render(&step), r#"completed "freed""#);
        pids.push(pool.worker_pids());
    }
    assert_eq!(pids[0], pids[1], "the worker was replaced");
}

/// Under the filter a worker that faults is reported by its true signal: the runtime's fault
/// handler and `abort` make the few system calls dying takes (they were once forbidden, and
/// every fault read as `SIGSYS`).
#[cfg(target_os = "linux")]
#[test]
fn a_worker_that_faults_is_reported_by_its_signal() {
    for (misbehaviour, expected) in [
        ("segfault", "signal 11 (SIGSEGV)"),
        ("bus-error", "signal 7 (SIGBUS)"),
        ("stack-overflow", "signal 6 (SIGABRT)"),
    ] {
        let pool = crate::support::worker_pool(Some(misbehaviour), 1);
        let limits = limits().in_process(pool);
        let (host, _cancelled) = TestHost::new();
        let step = runtime().block_on(run_with("return 1", limits, host));
        let (code, message) = code_and_message(&step);
        assert_eq!(code, Some(ErrorCode::RuntimeUnavailable), "{message}");
        assert!(message.contains(expected), "{misbehaviour}: {message}");
    }
}

/// A worker holds nothing but its pipes: no other descriptor, no environment, a filter.
#[cfg(target_os = "linux")]
#[test]
fn a_worker_holds_only_its_pipes_and_is_filtered() {
    let pool = crate::support::worker_pool(None, 1);
    let limits = limits().in_process(pool.clone());
    let (host, _cancelled) = TestHost::new();
    // After a run, its worker is idle and greeted (locked down).
    let step = runtime().block_on(run_with("return 1", limits, host));
    assert_eq!(render(&step), "completed 1");
    let pids = pool.worker_pids();
    assert_eq!(pids.len(), 1, "{pids:?}");
    let proc = format!("/proc/{}", pids[0]);
    let status = std::fs::read_to_string(format!("{proc}/status")).unwrap();
    assert!(status.contains("Seccomp:\t2"), "{status}");
    let mut fds: Vec<String> = std::fs::read_dir(format!("{proc}/fd"))
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    fds.sort();
    assert_eq!(fds, ["0", "1", "2"]);
    assert_eq!(std::fs::read(format!("{proc}/environ")).unwrap(), b"");
    let limits = std::fs::read_to_string(format!("{proc}/limits")).unwrap();
    let open_files = limits
        .lines()
        .find(|l| l.starts_with("Max open files"))
        .unwrap();
    assert_eq!(
        open_files.split_whitespace().nth(3),
        Some("3"),
        "{open_files}"
    );
}

#[test]
fn an_exhausted_pool_waits_for_a_worker_until_the_deadline() {
    let pool = crate::support::worker_pool(None, 1);
    let limits = limits().in_process(pool.clone());
    let (host, _cancelled) = TestHost::new();
    let rt = runtime();
    // A parked run keeps the one worker.
    let mut parked = limits
        .start(
            "yield_control(); return 'a'",
            crate::support::setup(),
            host.clone(),
        )
        .unwrap();
    assert!(matches!(
        drive(&mut parked, &limits),
        LegEnd::Suspended { .. }
    ));
    let short = limits.clone().with_timeout(Duration::from_millis(200));
    let step = rt.block_on(run_with("return 'b'", short, host.clone()));
    let (code, message) = code_and_message(&step);
    assert_eq!(code, Some(ErrorCode::RuntimeUnavailable), "{message}");
    assert!(
        message
            .contains("no code mode worker process is free: all 1 are running or hold parked runs"),
        "{message}"
    );
    // A run waiting for a worker gets the parked run's once that run ends.
    let waiting = rt.spawn(run_with("return 'c'", limits.clone(), host.clone()));
    assert_eq!(render(&drive(&mut parked, &limits)), r#"completed "a""#);
    assert_eq!(render(&rt.block_on(waiting).unwrap()), r#"completed "c""#);
}

/// A dropped pool ends its idle workers (a worker does not keep its pool alive).
#[cfg(target_os = "linux")]
#[test]
fn dropping_a_pool_ends_its_workers() {
    let pool = crate::support::worker_pool(None, 2);
    let limits = limits().in_process(pool.clone());
    let (host, _cancelled) = TestHost::new();
    let step = runtime().block_on(run_with("return 1", limits.clone(), host));
    assert_eq!(render(&step), "completed 1");
    let pids = pool.worker_pids();
    assert!(!pids.is_empty());
    drop((pool, limits));
    let gone = |pid: &u32| !std::path::Path::new(&format!("/proc/{pid}")).exists();
    let give_up = Instant::now() + Duration::from_secs(20);
    while !pids.iter().all(gone) && Instant::now() < give_up {
        std::thread::sleep(Duration::from_millis(10));
    }
    assert!(pids.iter().all(gone), "{pids:?}");
}
