//! Two QuickJS engines in one binary: codemode-sandbox's (the metered, capped quickjs-ng of
//! `codemode-quickjs-sys`, every C symbol prefixed `codemode_`) and upstream rquickjs 0.14's.
//! Each runs a cell, and each must behave as itself: were a symbol of one to stand in for the
//! other's, the BigInt cap and the metering below would show it.
//!
//! ```text
//! cargo run --manifest-path tests/outside/Cargo.toml -p codemode-outside-engines
//! ```
//!
//! Exits non-zero when either engine is not the one it should be.
#![allow(clippy::print_stdout, reason = "a check prints what it saw")]

use std::sync::Arc;
use std::sync::atomic::{AtomicU32, Ordering};
use std::time::{Duration, Instant};

use codemode_sandbox::{BridgeHost, BridgeRequest, GuestSetup, LegEnd, Limits, Placement, Run};
use serde_json::{Value, json};

type Result<T> = std::result::Result<T, Box<dyn std::error::Error>>;

/// A BigInt past the sandbox engine's 64 Kbit cap, and a search whose work only a metered engine
/// charges to its interrupt counter (the sandbox's own engine check runs the same search).
const CELL: &str = "let big; try { big = (2n ** 70000n).toString(16).length } \
    catch (e) { big = e.name } return big";
const METERED_WORK: &str = "'a'.repeat(20000).indexOf('b'); (function () {})();";

/// The sandbox's host: this cell calls no tool.
struct NoTools;

#[async_trait::async_trait]
impl BridgeHost for NoTools {
    async fn call(&self, request: BridgeRequest) -> std::result::Result<Value, String> {
        Err(format!("no tool {}", request.method))
    }
}

fn main() -> Result<()> {
    // Ours: the 64 Kbit cap refuses the BigInt with a catchable RangeError.
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()?;
    let ours = runtime.block_on(async {
        let limits = Limits::default();
        let deadline = Instant::now() + Duration::from_secs(10);
        let placement = Placement::Thread;
        let mut run = Run::start(
            CELL,
            GuestSetup::default(),
            &limits,
            &placement,
            Arc::new(NoTools),
        )?;
        Ok::<_, Box<dyn std::error::Error>>(run.drive(deadline).await)
    })?;
    println!("codemode-sandbox: {ours:?}");
    match ours {
        LegEnd::Completed { value, .. } if value == json!("RangeError") => {}
        other => {
            return Err(format!("the sandbox's engine is not the capped one: {other:?}").into());
        }
    }

    // Upstream's: no cap at 70,000 bits, and BigInt work never reaches the interrupt handler.
    let runtime = rquickjs::Runtime::new()?;
    let calls = Arc::new(AtomicU32::new(0));
    let counted = Arc::clone(&calls);
    runtime.set_interrupt_handler(Some(Box::new(move || {
        counted.fetch_add(1, Ordering::Relaxed);
        false
    })));
    let context = rquickjs::Context::full(&runtime)?;
    let (length, handler_calls) = context.with(|ctx| -> rquickjs::Result<(i32, u32)> {
        let length = ctx.eval::<i32, _>("(2n ** 70000n).toString(16).length")?;
        // The first poll of a new context calls the handler once; count from after it.
        calls.store(0, Ordering::Relaxed);
        ctx.eval::<(), _>(METERED_WORK)?;
        Ok((length, calls.load(Ordering::Relaxed)))
    })?;
    println!(
        "upstream rquickjs: 2n ** 70000n has {length} hex digits; handler calls: {handler_calls}"
    );
    if length != 17_501 || handler_calls != 0 {
        return Err("upstream's engine is not upstream's: the symbols met".into());
    }
    println!("both engines ran, each as itself");
    Ok(())
}
