//! Host memory attributable to one run stays within a documented multiple of
//! `memoryLimitBytes`, whatever the guest sends. Measured with a counting global allocator, so
//! this file is its own test binary with ONE test: nothing else allocates in the process while a
//! cell runs. The VM's own heap is QuickJS's (not the Rust allocator's) and is bounded by the
//! memory limit itself; what is measured here is everything the host holds for the run.

use std::sync::Arc;
use std::time::Duration;

use codemode_core::*;
use peak_alloc::PeakAlloc;
use serde_json::{Value, json};

/// A host that keeps nothing of what it is sent: `echo` answers with its input, `approve_me`
/// waits until cancelled or 10 s pass. (The shared test executor records every input, which
/// would measure the test host rather than code mode.)
struct Forgetful;

#[async_trait::async_trait]
impl ToolExecutor for Forgetful {
    async fn execute(
        &self,
        catalog_id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        match catalog_id {
            "openclaw:core:echo" => Ok(input),
            _ => {
                drop(input);
                tokio::select! {
                    () = tokio::time::sleep(Duration::from_secs(10)) => Ok(Value::Null),
                    () = context.cancellation.cancelled() => Err(ToolError::new("cancelled")),
                }
            }
        }
    }
}

struct Host {
    code_mode: CodeMode,
    session: CodeModeSession,
}

fn host(config: CodeModeConfig) -> Host {
    let code_mode = CodeMode::builder(config, Arc::new(Forgetful)).build();
    let tools = ["echo", "approve_me"]
        .map(|name| codemode_catalog::ToolDescriptor {
            origin: codemode_catalog::ToolOrigin::Core,
            name: name.into(),
            label: None,
            description: format!("The {name} tool."),
            parameters: Some(json!({ "type": "object" })),
            direct_only: false,
            read_only: name == "echo",
        })
        .to_vec();
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tools)) else {
        panic!("code mode did not activate")
    };
    Host { code_mode, session }
}

#[global_allocator]
static ALLOCATOR: PeakAlloc = PeakAlloc;

/// The documented bound: host memory of one run is at most four times its VM memory limit.
const HOST_MEMORY_MULTIPLE: usize = 4;
const MIB: usize = 1024 * 1024;

#[test]
#[allow(clippy::print_stdout, reason = "the figures are a benchmark row")]
fn hostile_cells_keep_host_memory_within_a_multiple_of_the_vm_limit() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let memory_limit = 64 * MIB;
    let cells = [
        (
            "sixteen parallel echoes of a 4M-number array",
            json!({ "enabled": true }),
            "const big = new Array(2000).fill(new Array(2000).fill(0)); \
             await Promise.allSettled(Array.from({ length: 16 }, () => tools.echo(big))); return 1",
        ),
        (
            "sixteen pending calls with 4 MiB strings",
            json!({ "enabled": true, "timeoutMs": 300 }),
            "const big = 'x'.repeat(4 * 1024 * 1024 - 64); \
             await Promise.allSettled(Array.from({ length: 16 }, () => tools.approve_me({ big }))); return 1",
        ),
        (
            "128 pending calls with 16 MiB strings",
            json!({ "enabled": true, "timeoutMs": 300, "maxPendingToolCalls": 128 }),
            "const big = 'x'.repeat(16 * 1024 * 1024 - 64); \
             await Promise.allSettled(Array.from({ length: 128 }, () => tools.approve_me({ big }))); return 1",
        ),
        (
            "json(0) forever with a 10 MiB output limit",
            json!({ "enabled": true, "maxOutputBytes": 10 * MIB }),
            "for (;;) json(0)",
        ),
    ];
    let mut report = Vec::new();
    let mut over = Vec::new();
    for (name, config, code) in cells {
        let config = CodeModeConfig::from_json(&config).unwrap();
        assert_eq!(config.memory_limit_bytes() as usize, memory_limit);
        let h = host(config);
        let before = ALLOCATOR.current_usage();
        ALLOCATOR.reset_peak_usage();
        let result = runtime.block_on(h.session.exec("call_1", &json!({ "code": code })));
        let peak = ALLOCATOR.peak_usage().saturating_sub(before);
        report.push(format!("{name}: {} KiB", peak / 1024));
        drop(result);
        h.code_mode.shutdown();
        drop(h);
        if peak > HOST_MEMORY_MULTIPLE * memory_limit {
            over.push(format!(
                "{name}: {} MiB of host memory for one run (limit {} MiB)",
                peak / MIB,
                HOST_MEMORY_MULTIPLE * memory_limit / MIB
            ));
        }
    }
    // A JavaScript cell over the source limit is refused before it costs anything.
    let h = host(CodeModeConfig::enabled().build().unwrap());
    let code = format!("return 1;//{}", "x".repeat(100 * MIB));
    let input = json!({ "code": code });
    drop(code);
    let before = ALLOCATOR.current_usage();
    ALLOCATOR.reset_peak_usage();
    let result = runtime.block_on(h.session.exec("call_1", &input)).to_json();
    let peak = ALLOCATOR.peak_usage().saturating_sub(before);
    assert_eq!(result["code"], "invalid_input");
    assert!(
        peak < MIB,
        "a refused 100 MiB cell cost {} KiB",
        peak / 1024
    );
    report.push(format!("a 100 MiB cell: {} KiB", peak / 1024));
    // Printed for `cargo xtask bench`, which collects this line.
    println!("peak host bytes per cell: {}", report.join("; "));
    assert!(over.is_empty(), "{over:#?}");
}
