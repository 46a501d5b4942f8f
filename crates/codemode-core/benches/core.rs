//! `cargo xtask bench` rows for codemode-core: exec of `return 1` through core with a 100-tool
//! catalog, 1,000 sequential nested calls to an instant host tool, and 64 parked runs.
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
    report_parked_memory();
    divan::main();
}

/// The memory row: 64 parked runs of a 100-tool session (printed, not timed).
fn report_parked_memory() {
    let rt = runtime();
    let (code_mode, session) = session(CodeModeConfig::enabled());
    let input = json!({ "code": "await yield_control(); return 1" });
    rt.block_on(async {
        for _ in 0..64 {
            let _ = session.exec("bench", &input).await;
        }
    });
    let bytes = code_mode.suspended_memory_bytes();
    println!(
        "memory_of_64_parked_runs: {} runs, {bytes} bytes ({:.1} MiB, {:.0} KiB per run)",
        code_mode.suspended_runs(),
        bytes as f64 / (1024.0 * 1024.0),
        bytes as f64 / 1024.0 / 64.0
    );
    code_mode.shutdown();
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

fn session_with(config: CodeModeConfig, count: usize) -> (CodeMode, CodeModeSession) {
    let tools: Vec<ToolDescriptor> = (0..count)
        .map(|i| ToolDescriptor {
            origin: if i % 2 == 0 {
                ToolOrigin::Core
            } else {
                ToolOrigin::BundledPlugin(format!("plugin{}", i % 7))
            },
            name: format!("tool_{i}"),
            label: None,
            description: format!("Tool number {i} does something useful."),
            parameters: Some(
                json!({ "type": "object", "properties": { "x": { "type": "number" } } }),
            ),
            direct_only: false,
            read_only: true,
        })
        .collect();
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

#[divan::bench(sample_count = 50)]
fn exec_return_1_with_100_tools(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (_code_mode, session) = session(CodeModeConfig::enabled());
    let input = json!({ "code": "return 1" });
    bencher.bench_local(|| rt.block_on(session.exec("bench", &input)));
}

#[divan::bench(sample_count = 50)]
fn exec_return_1_with_1_tool(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (_code_mode, session) = session_with(CodeModeConfig::enabled(), 1);
    let input = json!({ "code": "return 1" });
    bencher.bench_local(|| rt.block_on(session.exec("bench", &input)));
}

#[divan::bench(sample_count = 10)]
fn exec_1000_sequential_nested_calls(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (_code_mode, session) = session(CodeModeConfig::enabled());
    let input = json!({ "code": "let s = 0; for (let i = 0; i < 1000; i++) { s += (await tools.tool_0({ x: i })).x } return s" });
    bencher
        .counter(divan::counter::ItemsCount::new(1000usize))
        .bench_local(|| rt.block_on(session.exec("bench", &input)));
}

#[divan::bench(sample_count = 5)]
fn park_64_suspended_runs(bencher: divan::Bencher<'_, '_>) {
    let rt = runtime();
    let (code_mode, session) = session(CodeModeConfig::enabled());
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
