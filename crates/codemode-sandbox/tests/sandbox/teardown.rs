//! What a VM holds of the host is let go when its run ends, whichever way: the engine tears a
//! VM down in bulk (codemode-quickjs-sys patch 15), running only the finalizers that reach
//! outside its heap, and these finalizers are what release the host. Each test waits for the
//! host's own drop, with a bound no machine comes near.

use std::sync::Arc;
use std::sync::mpsc;
use std::time::Instant;

use codemode_sandbox::{BridgeHost, BridgeRequest, LegEnd, RunError, async_trait};
use serde_json::Value;

use crate::support::{UNREACHED_TIMEOUT, limits, render, runtime, setup};

/// A host that answers every call with its first argument and says when it is dropped: the
/// VM's natives hold it (through the bridge's state) until their finalizers run.
struct DropsLoudly(mpsc::Sender<()>);

impl Drop for DropsLoudly {
    fn drop(&mut self) {
        let _ = self.0.send(());
    }
}

#[async_trait]
impl BridgeHost for DropsLoudly {
    async fn call(&self, request: BridgeRequest) -> Result<Value, String> {
        Ok(request.args.into_iter().next().unwrap_or(Value::Null))
    }
}

/// Runs `program` for one leg on a VM thread with `memory_bytes` of heap, checks how the leg
/// ended, drops the run, and waits until nothing holds the host any more.
fn host_is_released_after(program: &str, memory_bytes: usize, ended: fn(&LegEnd) -> bool) {
    let (dropped, on_drop) = mpsc::channel();
    let host: Arc<dyn BridgeHost> = Arc::new(DropsLoudly(dropped));
    let limits = limits().with_memory_bytes(memory_bytes);
    runtime().block_on(async {
        let mut run = limits.start(program, setup(), host).unwrap();
        let step = run.drive(Instant::now() + UNREACHED_TIMEOUT).await;
        assert!(ended(&step), "{program}: {}", render(&step));
        // A suspended run is dropped here, on this thread; a finished one's VM is torn down on
        // its VM thread after the answer.
        drop(run);
    });
    assert_eq!(
        on_drop.recv_timeout(UNREACHED_TIMEOUT),
        Ok(()),
        "{program}: the host is still held after its run was dropped"
    );
}

#[test]
fn a_completed_run_lets_its_host_go() {
    host_is_released_after(
        "const bytes = new TextEncoder().encode('x'.repeat(1000)); \
         const copy = structuredClone({ t: new Uint8Array(bytes), m: new Map([[1, 2]]) }); \
         await new Promise((resolve) => setTimeout(resolve, 0)); \
         return [await tools.echo(copy.t.length), await host.echo(bytes.buffer.byteLength)]",
        16 << 20,
        |step| matches!(step, LegEnd::Completed { .. }),
    );
}

#[test]
fn a_run_that_ran_out_of_memory_lets_its_host_go() {
    host_is_released_after(
        "await host.echo(1); const keep = []; \
         for (;;) keep.push(new Uint8Array(4096), { n: keep.length });",
        4 << 20,
        |step| {
            matches!(
                step,
                LegEnd::Failed {
                    error: RunError::MemoryLimitExceeded,
                    ..
                }
            )
        },
    );
}

#[test]
fn a_suspended_run_dropped_lets_its_host_go() {
    host_is_released_after(
        "const tick = () => new Promise((resolve) => setTimeout(resolve, 0)); \
         await tick(); await yield_control(); return 1",
        16 << 20,
        |step| matches!(step, LegEnd::Suspended { .. }),
    );
}
