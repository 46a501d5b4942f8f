//! `Run::drive_until`: a host ends a run early (terminated, or its whole life ran out), keeping
//! the output of the leg so far and cancelling its host work.

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_sandbox::{LegEnd, RunError};

use crate::support::{TestHost, limits, render, runtime, setup};

/// Resolves once the host has seen `calls` bridge calls: a stop tied to the program's progress,
/// never to the clock.
async fn after_calls(host: Arc<TestHost>, calls: usize, error: RunError) -> RunError {
    while host.calls() < calls {
        tokio::task::yield_now().await;
    }
    error
}

#[test]
fn a_stop_ends_a_run_idle_on_host_work_keeping_its_output() {
    runtime().block_on(async {
        let (host, mut cancelled) = TestHost::new();
        let program = "text('before'); await host.never(); return 1;";
        let mut run = limits().start(program, setup(), host.clone()).unwrap();
        // A deadline far beyond the test: only the stop can end this leg.
        let deadline = Instant::now() + Duration::from_secs(600);
        let step = run
            .drive_until(
                deadline,
                after_calls(host.clone(), 1, RunError::Terminated),
            )
            .await;
        assert_eq!(
            render(&step),
            r#"failed "terminated" code mode run was terminated. output=[{"type":"text","text":"before"}]"#
        );
        assert!(!run.is_alive());
        // The pending host call was dropped with the run.
        assert!(cancelled.recv().await.is_some());
        drop(run);
    });
}

#[test]
fn a_stop_interrupts_guest_code_that_is_still_computing() {
    runtime().block_on(async {
        let (host, _cancelled) = TestHost::new();
        let program = "text('spin'); for (;;) {}";
        let mut run = limits().start(program, setup(), host).unwrap();
        // Far beyond the test: without the stop this leg would end as `timeout` in 10 minutes.
        let deadline = Instant::now() + Duration::from_secs(600);
        // Ready at once: the step has started, and the VM is stopped at its next poll.
        let stop = async { RunError::LifetimeExceeded { seconds: 7 } };
        let step = run.drive_until(deadline, stop).await;
        let LegEnd::Failed { error, .. } = &step else {
            panic!("{}", render(&step))
        };
        assert_eq!(error, &RunError::LifetimeExceeded { seconds: 7 });
        assert!(!run.is_alive());
    });
}

#[test]
fn a_stop_that_never_fires_changes_nothing() {
    runtime().block_on(async {
        let (host, _cancelled) = TestHost::new();
        let mut run = limits()
            .start("return await host.echo(2)", setup(), host)
            .unwrap();
        let step = run
            .drive_until(
                Instant::now() + Duration::from_secs(600),
                std::future::pending(),
            )
            .await;
        assert!(
            matches!(step, LegEnd::Completed { .. }),
            "{}",
            render(&step)
        );
    });
}

#[test]
fn a_stop_interrupts_guest_code_computing_in_a_worker_process_keeping_its_output() {
    runtime().block_on(async {
        // One worker, so the run after the stop is served by the same process.
        let pool = crate::support::worker_pool(None, 1);
        let limits = limits().in_process(pool.clone());
        for stop_after_calls in [0, 1] {
            let (host, _cancelled) = TestHost::new();
            // The echo is answered in place: the guest then computes in the same step.
            let program = "text('spin'); await host.echo(1); for (;;) {}";
            let mut run = limits.start(program, setup(), host.clone()).unwrap();
            // Far beyond the test: without the stop this leg would end as `timeout` in 10 minutes.
            let deadline = Instant::now() + Duration::from_secs(600);
            // 0: ready at once, likely before the step's frame reaches the worker; 1: once the
            // guest is past its call, while it computes in the worker.
            let stop = after_calls(host.clone(), stop_after_calls, RunError::Terminated);
            let step = run.drive_until(deadline, stop).await;
            let stopped = r#"failed "terminated" code mode run was terminated."#;
            let with_output = format!(r#"{stopped} output=[{{"type":"text","text":"spin"}}]"#);
            if stop_after_calls == 0 {
                // Stopped before or after its first statement, whichever the signal met.
                assert!(
                    [stopped, with_output.as_str()].contains(&render(&step).as_str()),
                    "{}",
                    render(&step)
                );
            } else {
                assert_eq!(render(&step), with_output);
            }
            assert!(!run.is_alive());
        }
        // The worker was interrupted, not killed, and its next run is not stopped by the signals
        // meant for the runs before.
        let pids = pool.worker_pids();
        let (host, _cancelled) = TestHost::new();
        let mut run = limits
            .start("return await host.echo(3)", setup(), host)
            .unwrap();
        let step = run.drive(Instant::now() + Duration::from_secs(600)).await;
        assert!(
            matches!(step, LegEnd::Completed { .. }),
            "{}",
            render(&step)
        );
        assert_eq!(pool.worker_pids(), pids);
    });
}
