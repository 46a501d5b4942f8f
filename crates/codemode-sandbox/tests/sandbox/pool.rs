//! VMs built ahead of time: a run takes one, uses it once, and the pool refills; no run ever
//! sees another's state.

use codemode_sandbox::{LegEnd, Placement, PreparedSetup, VmPool};

use crate::support::{TestHost, TestLimits, deadline, limits, render, runtime, setup};

/// The test limits, with VMs built ahead of time by a pool of `capacity`.
fn pooled(capacity: usize) -> (TestLimits, VmPool) {
    let pool = VmPool::new(capacity);
    let limits = TestLimits {
        placement: Placement::PrebuiltThreads(pool.clone()),
        ..limits()
    };
    (limits, pool)
}

#[test]
fn a_pooled_vm_never_carries_state_from_a_previous_cell() {
    let rt = runtime();
    let (limits, pool) = pooled(2);
    let prepared = PreparedSetup::new(setup());
    rt.block_on(pool.fill_now(&limits.sandbox));
    assert_eq!(pool.ready(), 2);
    // More cells than the pool holds: later ones run in VMs built by the background refill,
    // or fresh ones when it has not caught up; either way nothing of an earlier cell is seen.
    for cell in 0..8 {
        let program = format!(
            "const seen = [typeof globalThis.leak, typeof Object.prototype.leak, Array.prototype.leak]; \
             globalThis.leak = {cell}; Object.prototype.leak = {cell}; Array.prototype.leak = {cell}; \
             try {{ tools.echo.leak = 1 }} catch {{}} \
             return [seen, Object.hasOwn(tools.echo, 'leak'), await host.echo({cell})]"
        );
        let (host, _cancelled) = TestHost::new();
        let step = rt.block_on(async {
            match limits.start(&program, prepared.clone(), host) {
                Ok(mut run) => run.drive(deadline(&limits)).await,
                Err(error) => LegEnd::Failed {
                    error,
                    output: Vec::new(),
                },
            }
        });
        assert_eq!(
            render(&step),
            format!(r#"completed [["undefined","undefined",null],false,{cell}]"#),
            "cell {cell}"
        );
    }
    // The pool refills to its capacity in the background.
    rt.block_on(async {
        for _ in 0..2000 {
            if pool.ready() == pool.capacity() {
                break;
            }
            tokio::time::sleep(std::time::Duration::from_millis(5)).await;
        }
    });
    assert_eq!(pool.ready(), 2);
}

#[test]
fn the_replacement_of_a_taken_vm_is_built_after_the_first_leg() {
    let rt = runtime();
    let (limits, pool) = pooled(1);
    rt.block_on(pool.fill_now(&limits.sandbox));
    let (host, _cancelled) = TestHost::new();
    let mut run = rt.block_on(async {
        limits
            .start("return 1", PreparedSetup::new(setup()), host)
            .unwrap()
    });
    // Taken, and owed to the run: filling neither builds nor waits for it before the first leg.
    rt.block_on(pool.fill_now(&limits.sandbox));
    assert_eq!(pool.ready(), 0);
    let step = rt.block_on(run.drive(deadline(&limits)));
    assert_eq!(render(&step), "completed 1");
    // After the leg the replacement is under way (or built); filling waits for it.
    rt.block_on(pool.fill_now(&limits.sandbox));
    assert_eq!(pool.ready(), 1);
    // A run dropped before its first leg lets its replacement go too.
    let (host, _cancelled) = TestHost::new();
    let run = rt.block_on(async {
        limits
            .start("return 1", PreparedSetup::new(setup()), host)
            .unwrap()
    });
    assert_eq!(pool.ready(), 0);
    rt.block_on(async move {
        drop(run);
        pool.fill_now(&limits.sandbox).await;
        assert_eq!(pool.ready(), 1);
    });
}

#[test]
fn a_refused_program_leaves_the_pooled_vm_in_the_pool() {
    let rt = runtime();
    let (limits, pool) = pooled(1);
    rt.block_on(pool.fill_now(&limits.sandbox));
    let (host, _cancelled) = TestHost::new();
    let refused = rt.block_on(async { limits.start("import('fs')", setup(), host) });
    assert!(refused.is_err());
    assert_eq!(pool.ready(), 1);
}

#[test]
fn a_pooled_run_keeps_every_limit_and_failure() {
    // Deadline, syntax errors and guest errors behave as in a VM built for the run.
    let rt = runtime();
    let (limits, pool) = pooled(3);
    let limits = limits.with_timeout(std::time::Duration::from_millis(100));
    rt.block_on(pool.fill_now(&limits.sandbox));
    for (program, expect) in [
        (
            "for (;;) {}",
            "failed \"timeout\" code mode timeout exceeded",
        ),
        ("return (", "failed \"invalid_input\" SyntaxError"),
        ("throw new TypeError('x')", "failed - TypeError: x"),
    ] {
        let (host, _cancelled) = TestHost::new();
        // Only the endless loop ends at the deadline; the others end on their own.
        let leg = if program.starts_with("for") {
            deadline(&limits)
        } else {
            std::time::Instant::now() + crate::support::UNREACHED_TIMEOUT
        };
        let step = rt.block_on(async {
            let mut run = limits.start(program, setup(), host).unwrap();
            run.drive(leg).await
        });
        assert!(
            render(&step).starts_with(expect),
            "{program}: {}",
            render(&step)
        );
    }
}
