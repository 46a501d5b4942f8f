//! Suspend/resume and the snapshot store: yields, parking across tasks, cancellation of host
//! work, exclusive resumption, scopes, expiry and capacity.

use std::sync::Arc;
use std::time::{Duration, Instant};

use crate::support::{TestHost, limits, render, runtime, setup, suspended_on_never};
use codemode_sandbox::{
    LegEnd, MAX_SUSPENDED_RUNS, ManualClock, Run, RunId, RunScope, SnapshotStore, StoreError,
    WaitReason,
};

fn scope(session: &str, agent_run: &str) -> RunScope {
    RunScope {
        agent_run_id: Some(agent_run.into()),
        session_id: Some(session.into()),
        session_key: Some(format!("key-{session}")),
    }
}

/// Parks `run` for 900 s within a 10 MiB snapshot budget: long and large enough never to matter
/// to the tests that use it.
fn park_long<E: Send + 'static>(
    store: &SnapshotStore<E>,
    run: Run,
    scope: RunScope,
    extra: E,
) -> RunId {
    store
        .park(run, scope, extra, Duration::from_secs(900), 10 << 20)
        .unwrap()
}

/// A run suspended on `yield_control`.
async fn yielded_run(host: Arc<TestHost>) -> Run {
    let mut run = limits()
        .start(
            "await yield_control('pause'); return 'resumed'",
            setup(),
            host,
        )
        .unwrap();
    let step = run.drive(crate::support::deadline(&limits())).await;
    assert!(
        matches!(
            step,
            LegEnd::Suspended {
                reason: WaitReason::Yield,
                ..
            }
        ),
        "{}",
        render(&step)
    );
    run
}

#[test]
fn yield_then_resume_keeps_output_per_leg() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let program = "text('a'); await yield_control('checkpoint'); text('b'); \
                       await yield_control(); return (await host.echo('c'))";
        let mut run = limits().start(program, setup(), host).unwrap();
        let first = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(
            render(&first),
            r#"suspended Yield pending=[] output=[{"type":"text","text":"a"}]"#
        );
        let second = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(
            render(&second),
            r#"suspended Yield pending=[] output=[{"type":"text","text":"b"}]"#
        );
        // Output bytes are cumulative over the run: "a" and "b" are 3 JSON bytes each, plus 24
        // bytes of item envelope each.
        assert_eq!(run.output_bytes(), 54);
        let third = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(render(&third), r#"completed "c""#);
    });
}

#[test]
fn deadline_while_idle_suspends_with_pending_calls() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let program = "const [a, b] = await Promise.all([host.gate('first'), host.echo('quick')]); return [a, b]";
        let mut run = limits().start(program, setup(), Arc::clone(&host) as _).unwrap();
        let step = run.drive(Instant::now() + Duration::from_millis(300)).await;
        assert_eq!(render(&step), r#"suspended PendingTools pending=["gate"]"#);
        let pending = run.pending_calls();
        assert_eq!(pending.len(), 1);
        assert_eq!((pending[0].method.as_str(), pending[0].started), ("gate", true));
        host.gate.add_permits(1);
        let step = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(render(&step), r#"completed ["first","quick"]"#);
    });
}

#[test]
fn park_on_one_task_and_resume_on_another() {
    let (host, _cancelled) = TestHost::new();
    let store: SnapshotStore<u32> = SnapshotStore::new();
    let rt = runtime();
    let caller = scope("s1", "r1");
    let id = rt.block_on({
        let (store, caller, host) = (store.clone(), caller.clone(), Arc::clone(&host));
        async move {
            tokio::spawn(async move {
                let mut run = limits()
                    .start("return (await host.gate('slow')) + '!'", setup(), host)
                    .unwrap();
                let step = run.drive(Instant::now() + Duration::from_millis(250)).await;
                assert!(matches!(
                    step,
                    LegEnd::Suspended {
                        reason: WaitReason::PendingTools,
                        ..
                    }
                ));
                park_long(&store, run, caller, 7)
            })
            .await
            .unwrap()
        }
    });
    assert!(id.to_string().starts_with("cm_"));
    assert_eq!(store.len(), 1);
    // Host work keeps running while parked; let it finish before resuming.
    host.gate.add_permits(1);
    let step = rt.block_on({
        let store = store.clone();
        async move {
            tokio::spawn(async move {
                let mut resumption = store.resume(&id.to_string(), &caller).unwrap();
                assert_eq!(*resumption.extra(), 7);
                let step = resumption
                    .run_mut()
                    .drive(crate::support::deadline(&limits()))
                    .await;
                resumption.finish();
                render(&step)
            })
            .await
            .unwrap()
        }
    });
    assert_eq!(step, r#"completed "slow!""#);
    assert!(store.is_empty());
}

#[test]
fn dropping_a_parked_run_cancels_its_host_work() {
    let (host, mut cancelled) = TestHost::new();
    let rt = runtime();
    rt.block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let mut run = limits()
            .start(
                "return await Promise.all([host.never(1), host.never(2)])",
                setup(),
                Arc::clone(&host) as _,
            )
            .unwrap();
        let step = run.drive(Instant::now() + Duration::from_millis(250)).await;
        assert_eq!(
            render(&step),
            r#"suspended PendingTools pending=["never", "never"]"#
        );
        let id = park_long(&store, run, RunScope::default(), ());
        assert!(store.cancel(&id.to_string(), &RunScope::default()));
        let mut ids = vec![
            cancelled.recv().await.unwrap(),
            cancelled.recv().await.unwrap(),
        ];
        ids.sort_unstable();
        assert_eq!(ids, vec![1, 2]);
        assert!(
            !store.cancel(&id.to_string(), &RunScope::default()),
            "a cancelled run is gone"
        );
        assert_eq!(host.calls(), 2);
    });
}

#[test]
fn a_failed_run_cancels_its_host_work_too() {
    let (host, mut cancelled) = TestHost::new();
    runtime().block_on(async {
        let step = crate::support::run_with(
            "host.never(1); await host.echo(2); throw new Error('bail')",
            limits(),
            host,
        )
        .await;
        assert_eq!(render(&step), "failed - Error: bail");
        assert_eq!(cancelled.recv().await, Some(1));
    });
}

#[test]
fn a_second_concurrent_resume_is_refused() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let caller = scope("s1", "r1");
        let id = park_long(&store, yielded_run(host).await, caller.clone(), ());
        let id = id.to_string();
        let first = store.resume(&id, &caller).unwrap();
        let second = store.resume(&id, &caller).unwrap_err();
        assert_eq!(
            second.to_string(),
            "code mode run is already being resumed."
        );
        first.repark().unwrap();
        let mut third = store.resume(&id, &caller).unwrap();
        let step = third
            .run_mut()
            .drive(crate::support::deadline(&limits()))
            .await;
        assert_eq!(render(&step), r#"completed "resumed""#);
        drop(third);
        assert_eq!(
            store.resume(&id, &caller).unwrap_err(),
            StoreError::Unavailable
        );
    });
}

#[test]
fn scope_and_id_checks_use_the_spec_messages() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let owner = scope("s1", "r1");
        let id = park_long(&store, yielded_run(host).await, owner.clone(), ());
        let id = id.to_string();
        let message = |result: Result<_, StoreError>| result.map(|_| ()).unwrap_err().to_string();
        assert_eq!(
            message(store.resume(&id, &scope("s2", "r1"))),
            "code mode run belongs to a different session."
        );
        let other_key = RunScope {
            session_key: Some("other".into()),
            ..owner.clone()
        };
        assert_eq!(
            message(store.resume(&id, &other_key)),
            "code mode run belongs to a different session."
        );
        assert_eq!(
            message(store.resume(&id, &scope("s1", "r2"))),
            "code mode run belongs to a different agent run."
        );
        assert_eq!(
            message(store.resume(&id, &RunScope::default())),
            "code mode run belongs to a different session."
        );
        for bad in [
            "",
            "cm_",
            "cm_nope",
            "00000000-0000-0000-0000-000000000000",
            &format!("cm_{}", uuid_like()),
        ] {
            assert_eq!(
                message(store.resume(bad, &owner)),
                "code mode run is unavailable or expired.",
                "{bad:?}"
            );
        }
        // The failed attempts did not disturb the run.
        assert!(store.resume(&id, &owner).is_ok());
    });
}

fn uuid_like() -> &'static str {
    "6a1f1a5e-0000-4000-8000-000000000000"
}

#[test]
fn expired_runs_are_purged_and_released() {
    let (host, mut cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let mut run = limits()
            .start(
                "await host.never(); return 1",
                setup(),
                Arc::clone(&host) as _,
            )
            .unwrap();
        run.drive(Instant::now() + Duration::from_millis(250)).await;
        let id = store
            .park(run, RunScope::default(), (), Duration::ZERO, 10 << 20)
            .unwrap();
        let error = store
            .resume(&id.to_string(), &RunScope::default())
            .unwrap_err();
        assert_eq!(
            error.to_string(),
            "code mode run is unavailable or expired."
        );
        assert_eq!(store.len(), 0);
        // Expiry released the VM and cancelled the host work.
        assert_eq!(cancelled.recv().await, Some(1));
    });
}

#[test]
fn expiry_is_eager_and_cancels_host_work_in_a_quiet_host() {
    let (host, mut cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let run = suspended_on_never(&host).await;
        store
            .park(
                run,
                RunScope::default(),
                (),
                Duration::from_millis(50),
                10 << 20,
            )
            .unwrap();
        // Nobody touches the store again: the expiry task alone releases the run, and with it
        // the host work of its pending call.
        assert_eq!(cancelled.recv().await, Some(1), "request 1 was cancelled");
        assert_eq!(store.len(), 0);
    });
}

/// On a manual clock, a run outlives every instant before its TTL however long the test takes,
/// and expires (its host work cancelled by the expiry task, nobody touching the store) as soon
/// as the clock is advanced past it.
#[test]
fn a_manual_clock_decides_expiry() {
    let (host, mut cancelled) = TestHost::new();
    runtime().block_on(async {
        let clock = ManualClock::new();
        let store: SnapshotStore = SnapshotStore::new().with_manual_clock(clock.clone());
        assert_eq!(store.now(), clock.now());
        let run = suspended_on_never(&host).await;
        let ttl = Duration::from_secs(900);
        let id = store
            .park(run, RunScope::default(), (), ttl, 10 << 20)
            .unwrap()
            .to_string();
        // One second short of the TTL: still parked, and resumable.
        clock.advance(ttl - Duration::from_secs(1));
        assert_eq!(store.len(), 1);
        let resumption = store.resume(&id, &RunScope::default()).unwrap();
        resumption.repark().unwrap();
        assert!(cancelled.try_recv().is_err(), "nothing was cancelled yet");
        // Reparking started a fresh TTL; past it, the expiry task releases the run.
        clock.advance(ttl);
        assert_eq!(cancelled.recv().await, Some(1), "request 1 was cancelled");
        assert_eq!(store.len(), 0);
        assert_eq!(
            store
                .resume(&id, &RunScope::default())
                .unwrap_err()
                .to_string(),
            "code mode run is unavailable or expired."
        );
    });
}

#[test]
fn cancel_is_scoped_to_the_callers_session() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let mine = RunScope {
            session_id: Some("mine".into()),
            ..RunScope::default()
        };
        let theirs = RunScope {
            session_id: Some("theirs".into()),
            ..RunScope::default()
        };
        let id = park_long(&store, yielded_run(host).await, mine.clone(), ());
        assert!(!store.cancel(&id.to_string(), &theirs));
        assert_eq!(store.len(), 1);
        assert!(store.cancel(&id.to_string(), &mine));
        assert!(store.is_empty());
    });
}

#[test]
fn cancellation_while_resuming_fails_the_repark() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let id = park_long(&store, yielded_run(host).await, RunScope::default(), ());
        let resumption = store.resume(&id.to_string(), &RunScope::default()).unwrap();
        assert_eq!(store.drop_session("nobody"), 0);
        assert!(store.cancel(&id.to_string(), &RunScope::default()));
        assert_eq!(resumption.repark().unwrap_err(), StoreError::Unavailable);
        assert!(store.is_empty());
    });
}

#[test]
fn session_end_and_shutdown_drop_runs() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let ttl = Duration::from_secs(900);
        store
            .park(
                yielded_run(Arc::clone(&host)).await,
                scope("s1", "r1"),
                (),
                ttl,
                10 << 20,
            )
            .unwrap();
        store
            .park(
                yielded_run(Arc::clone(&host)).await,
                scope("s1", "r2"),
                (),
                ttl,
                10 << 20,
            )
            .unwrap();
        store
            .park(
                yielded_run(Arc::clone(&host)).await,
                scope("s2", "r3"),
                (),
                ttl,
                10 << 20,
            )
            .unwrap();
        assert_eq!(store.drop_session("key-s1"), 2);
        assert_eq!(store.drop_agent_run("r3"), 1);
        store
            .park(
                yielded_run(Arc::clone(&host)).await,
                scope("s3", "r4"),
                (),
                ttl,
                10 << 20,
            )
            .unwrap();
        store.clear();
        assert!(store.is_empty());
    });
}

#[test]
fn capacity_and_snapshot_size_are_enforced() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let ttl = Duration::from_secs(900);
        let run = yielded_run(Arc::clone(&host)).await;
        let size = run.memory_bytes();
        assert!(size > 1024, "a VM weighs more than 1 KiB, measured {size}");
        assert_eq!(
            store
                .park(run, RunScope::default(), (), ttl, 1024)
                .unwrap_err()
                .to_string(),
            "code mode snapshot limit exceeded"
        );
        for _ in 0..MAX_SUSPENDED_RUNS {
            store
                .park(
                    yielded_run(Arc::clone(&host)).await,
                    RunScope::default(),
                    (),
                    ttl,
                    10 << 20,
                )
                .unwrap();
        }
        let refused = store.park(
            yielded_run(Arc::clone(&host)).await,
            RunScope::default(),
            (),
            ttl,
            10 << 20,
        );
        assert_eq!(
            refused.unwrap_err().to_string(),
            "too many suspended code mode runs."
        );
        assert_eq!(store.len(), MAX_SUSPENDED_RUNS);
    });
}

#[test]
fn a_run_that_grew_past_the_snapshot_limit_cannot_be_reparked() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let store: SnapshotStore = SnapshotStore::new();
        let program = "await yield_control(); globalThis.keep = 'x'.repeat(8 << 20); \
                       await yield_control(); return 1";
        let mut run = limits()
            .with_memory_bytes(256 << 20)
            .start(program, setup(), host)
            .unwrap();
        run.drive(crate::support::deadline(&limits())).await;
        let id = store
            .park(
                run,
                RunScope::default(),
                (),
                Duration::from_secs(900),
                4 << 20,
            )
            .unwrap();
        let mut resumption = store.resume(&id.to_string(), &RunScope::default()).unwrap();
        let step = resumption
            .run_mut()
            .drive(crate::support::deadline(&limits()))
            .await;
        assert!(
            matches!(
                step,
                LegEnd::Suspended {
                    reason: WaitReason::Yield,
                    ..
                }
            ),
            "{}",
            render(&step)
        );
        assert!(resumption.run().memory_bytes() > 8 << 20);
        assert_eq!(
            resumption.repark().unwrap_err(),
            StoreError::SnapshotLimitExceeded
        );
        assert!(store.is_empty());
    });
}

#[test]
fn timers_run_after_microtasks_in_due_order_and_count_as_pending_work() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let program = "const out = []; \
             setTimeout(() => out.push('t1'), 0); setTimeout(() => out.push('t0'), 0); \
             setTimeout((a, b) => out.push(a + b), 2, 'ar', 'gs'); \
             const gone = setTimeout(() => out.push('cleared'), 1); clearTimeout(gone); \
             Promise.resolve().then(() => out.push('micro')); queueMicrotask(() => out.push('queued')); \
             let ticks = 0; \
             await new Promise((resolve) => { \
               const every = setInterval(() => { if (++ticks === 3) { clearInterval(every); resolve() } }, 1) }); \
             setTimeout(() => text('after return'), 1); \
             return [out, ticks]";
        let mut run = limits().start(program, setup(), host).unwrap();
        let step = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(
            render(&step),
            r#"completed [["micro","queued","t1","t0","args"],3] output=[{"type":"text","text":"after return"}]"#
        );
    });
}

#[test]
fn a_timer_due_after_the_deadline_parks_the_run_and_wait_continues_it() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let program = "await new Promise((resolve) => setTimeout(resolve, 400)); return 'woke'";
        let mut run = limits().start(program, setup(), host).unwrap();
        // The timer is due 400 ms after the program registered it, so always after this leg.
        let step = run.drive(Instant::now() + Duration::from_millis(300)).await;
        assert_eq!(render(&step), "suspended PendingTools pending=[]");
        let step = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(render(&step), r#"completed "woke""#);
    });
}

#[test]
fn an_interval_that_never_stops_ends_each_leg_at_the_deadline() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        // The yield parks the first leg at once, so the short legs below only run the interval
        // (building the VM does not count against them).
        let program =
            "await yield_control(); let n = 0; setInterval(() => { n++ }, 1); return 'returned'";
        let mut run = limits().start(program, setup(), host).unwrap();
        let step = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(render(&step), "suspended Yield pending=[]");
        for _ in 0..2 {
            let step = run.drive(Instant::now() + Duration::from_millis(300)).await;
            assert_eq!(render(&step), "suspended PendingTools pending=[]");
        }
        drop(run);
    });
}

#[test]
fn thousands_of_timers_are_refused_past_the_bound() {
    // The program ends on its own: `limits()` puts no deadline near.
    let limits = limits().with(|limits| limits.with_max_pending_calls(2).with_max_queued_calls(3));
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let program = "let refused = ''; \
             for (let i = 0; i < 5000; i++) { try { setTimeout(() => {}, 1) } catch (e) { refused = e.name + ': ' + e.message } } \
             try { setTimeout('not a function', 1) } catch (e) { refused += ' / ' + e.name } \
             return refused";
        let mut run = limits.start(program, setup(), host).unwrap();
        let step = run.drive(crate::support::deadline(&limits)).await;
        assert_eq!(
            render(&step),
            r#"completed "RangeError: too many pending code mode timers (at most 5) / TypeError""#
        );
    });
}

#[test]
fn an_uncaught_error_in_a_timer_fails_the_run() {
    let (host, _cancelled) = TestHost::new();
    runtime().block_on(async {
        let program = "setTimeout(() => { throw new Error('in timer') }, 1); \
                       await new Promise((resolve) => setTimeout(resolve, 50)); return 1";
        let mut run = limits().start(program, setup(), host).unwrap();
        let step = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(render(&step), "failed - Error: in timer");
    });
}

/// A due timer and the deadline seen at once (the runtime's only thread was busy across the
/// deadline): the leg parks and the timer fires in the next leg; no guest code runs after the
/// deadline, and the run is not failed with a timeout.
#[test]
fn a_leg_woken_after_its_deadline_parks_and_fires_the_timer_in_the_next() {
    let (host, _cancelled) = TestHost::new();
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let program =
            "await yield_control(); await new Promise((resolve) => setTimeout(resolve, 150)); return 5";
        let mut run = limits().start(program, setup(), host).unwrap();
        let step = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(render(&step), "suspended Yield pending=[]");
        let deadline = Instant::now() + Duration::from_millis(300);
        // Once the leg waits for its timer, keep this runtime's only thread busy until after the
        // deadline: the driver then finds the timer due and the deadline passed at once. (Had
        // the step not answered by then, the driver finds the deadline passed on its answer:
        // the leg parks either way.)
        let busy = tokio::spawn(async move {
            tokio::time::sleep(Duration::from_millis(20)).await;
            while Instant::now() < deadline + Duration::from_millis(50) {
                std::thread::sleep(Duration::from_millis(10));
            }
        });
        let step = run.drive(deadline).await;
        busy.await.unwrap();
        assert_eq!(render(&step), "suspended PendingTools pending=[]");
        let step = run.drive(crate::support::deadline(&limits())).await;
        assert_eq!(render(&step), "completed 5");
    });
}
