//! A large catalog costs a run nothing until the guest reads it, and VMs built ahead of time
//! serve runs exactly like VMs built per run.

use std::sync::Arc;

use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::*;
use serde_json::{Value, json};

use crate::support::{TestExecutor, tool};

fn many_tools(count: usize) -> Vec<ToolDescriptor> {
    let mut tools: Vec<ToolDescriptor> = (0..count)
        .map(|i| tool(ToolOrigin::Core, &format!("tool_{i}"), true))
        .collect();
    tools.push(tool(ToolOrigin::Core, "echo", true));
    tools
}

fn session(code_mode: &CodeMode, tools: Vec<ToolDescriptor>) -> CodeModeSession {
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tools)) else {
        panic!("code mode did not activate")
    };
    session
}

async fn value(session: &CodeModeSession, code: &str) -> Value {
    let result = session.exec("c1", &json!({ "code": code })).await.to_json();
    assert_eq!(result["status"], "completed", "{code}: {result}");
    result["value"].clone()
}

#[tokio::test]
async fn ten_thousand_tools_are_all_there_when_read() {
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        TestExecutor::new(),
    )
    .build();
    let session = session(&code_mode, many_tools(10_000));
    assert_eq!(value(&session, "return 1").await, json!(1));
    assert_eq!(
        value(
            &session,
            "return [ALL_TOOLS.length, Object.keys(tools).length, typeof tools.tool_9999, \
                     Object.isFrozen(tools), Object.isFrozen(ALL_TOOLS[9999]), ALL_TOOLS.some((t) => t.name === 'tool_9999'), \
                     (await tools.search('tool_9999', { limit: 1 }))[0].name]"
        )
        .await,
        json!([10_001, 10_004, "function", true, true, true, "tool_9999"])
    );
    // Parked runs hold nothing of the catalog a run did not read.
    let parked = session
        .exec("c2", &json!({ "code": "await yield_control(); return 1" }))
        .await;
    assert_eq!(parked.to_json()["status"], "waiting");
    let per_run = code_mode.suspended_memory_bytes();
    let small = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        TestExecutor::new(),
    )
    .build();
    let small_session = self::session(&small, many_tools(1));
    let parked = small_session
        .exec("c2", &json!({ "code": "await yield_control(); return 1" }))
        .await;
    assert_eq!(parked.to_json()["status"], "waiting");
    let small_per_run = small.suspended_memory_bytes();
    assert!(
        per_run < small_per_run + 100 * 1024,
        "a parked run with 10,000 tools takes {per_run} bytes, with 1 tool {small_per_run}"
    );
}

#[tokio::test]
async fn prebuilt_vms_serve_runs_like_fresh_ones_and_never_share_state() {
    let executor = TestExecutor::new();
    let pooled = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        Arc::clone(&executor) as _,
    )
    .prebuilt_vms(2)
    .build();
    let fresh = CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), executor).build();
    // Filling waits until the pool is full; without a pool it has nothing to wait for.
    pooled.fill_vm_pool().await;
    assert_eq!(pooled.ready_vms(), 2);
    fresh.fill_vm_pool().await;
    assert_eq!(fresh.ready_vms(), 0);
    let pooled_session = session(&pooled, many_tools(3));
    let fresh_session = session(&fresh, many_tools(3));
    for cell in 0..6 {
        let code = format!(
            "const seen = typeof globalThis.leak; globalThis.leak = {cell}; \
             return [seen, (await tools.echo({{ cell: {cell} }})).cell, ALL_TOOLS.length, \
                     (await tools.search('tool_1')).length > 0]"
        );
        let expect = json!(["undefined", cell, 4, true]);
        assert_eq!(
            value(&pooled_session, &code).await,
            expect,
            "pooled cell {cell}"
        );
        assert_eq!(
            value(&fresh_session, &code).await,
            expect,
            "fresh cell {cell}"
        );
    }
    let config = CodeModeConfig::from_json(&json!({ "enabled": true, "timeoutMs": 100 }))
        .expect("a valid config");
    let short = CodeMode::builder(config, TestExecutor::new())
        .prebuilt_vms(1)
        .build();
    let timeout = session(&short, many_tools(1))
        .exec("c3", &json!({ "code": "for (;;) {}" }))
        .await
        .to_json();
    assert_eq!(timeout["code"], "timeout", "{timeout}");
}
