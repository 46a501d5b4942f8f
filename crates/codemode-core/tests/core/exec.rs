//! `exec` / `wait` end to end through the real sandbox, catalog, TypeScript transform, MCP
//! declarations and namespaces: the items of the seed's validation checklist this layer owns.

use std::sync::Arc;
use std::time::Duration;

use crate::support::*;
use codemode_catalog::ToolOrigin;
use codemode_core::*;
use codemode_namespaces::{NamespaceRegistry, NamespaceTool, Registration, ScopeValue};
use serde_json::{Value, json};

fn names(tools: &[ModelTool]) -> Vec<&str> {
    tools.iter().map(|t| t.name.as_str()).collect()
}

#[tokio::test]
async fn disabled_config_leaves_the_tool_list_unchanged() {
    for config in [json!(false), json!({ "timeoutMs": 500 }), Value::Null] {
        let config = CodeModeConfig::from_json(&config).unwrap();
        let code_mode = CodeMode::builder(config, TestExecutor::new()).build();
        let Ok(Activation::Unchanged(tools)) =
            code_mode.activate(ActivationRequest::new(crate::support::tools()))
        else {
            panic!("disabled code mode activated")
        };
        assert_eq!(tools, crate::support::tools());
    }
}

#[tokio::test]
async fn runs_without_tools_never_activate() {
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        TestExecutor::new(),
    )
    .build();
    assert!(
        matches!(code_mode.activate(ActivationRequest::new(vec![])), Ok(Activation::Unchanged(t)) if t.is_empty())
    );
    let mut request = ActivationRequest::new(crate::support::tools());
    request.tools_disabled = true;
    assert!(
        matches!(code_mode.activate(request), Ok(Activation::Unchanged(t)) if t.len() == crate::support::tools().len())
    );
}

#[tokio::test]
async fn enabled_shows_exec_wait_and_only_direct_tools() {
    let h = harness();
    assert_eq!(names(h.session.model_tools()), ["exec", "wait", "computer"]);
    let exec = &h.session.model_tools()[0];
    let language = &exec.parameters["properties"]["language"];
    assert_eq!(
        (&language["type"], &language["enum"], &language["default"]),
        (
            &json!("string"),
            &json!(["javascript", "typescript"]),
            &json!("javascript")
        )
    );
    let schema_text = exec.parameters.to_string();
    assert!(
        !schema_text.contains("oneOf")
            && !schema_text.contains("anyOf")
            && !schema_text.contains("null"),
        "{schema_text}"
    );
    assert!(exec.description.contains("10 s"), "{}", exec.description);
    assert!(
        exec.description.contains("API.read"),
        "MCP paragraph present when MCP is visible"
    );
    assert!(
        h.session
            .check_payload(["exec", "wait", "computer"])
            .is_ok()
    );
    assert!(h.session.check_payload(["exec", "wait", "echo"]).is_err());
    assert!(h.session.check_payload(["exec", "computer"]).is_err());
    assert!(h.session.check_payload(["exec", "exec", "wait"]).is_err());
    let wait = &h.session.model_tools()[1];
    assert_eq!(wait.parameters["required"], json!(["runId"]));
}

#[tokio::test]
async fn exec_description_omits_mcp_without_servers() {
    let tools: Vec<_> = crate::support::tools()
        .into_iter()
        .filter(|t| !matches!(t.origin, ToolOrigin::Mcp(_)))
        .collect();
    let h = harness_with(CodeModeConfig::enabled().build().unwrap(), tools);
    assert!(!h.session.model_tools()[0].description.contains("API.read"));
}

#[tokio::test]
async fn all_tools_holds_catalog_tools_but_not_direct_mcp_or_controls() {
    let h = harness();
    let ids = h.value("return ALL_TOOLS.map(t => t.id)").await;
    let ids: Vec<&str> = ids
        .as_array()
        .unwrap()
        .iter()
        .filter_map(Value::as_str)
        .collect();
    assert!(ids.contains(&"openclaw:core:echo"));
    assert!(
        ids.contains(&"openclaw:core:exec"),
        "a host shell exec tool is catalogued"
    );
    assert!(ids.contains(&"openclaw:browser:browser_request"));
    assert!(ids.contains(&"client:app:select_file"));
    assert!(
        !ids.iter().any(|id| id.ends_with(":computer")),
        "direct-only tools stay out"
    );
    assert!(
        !ids.iter().any(|id| id.starts_with("mcp:")),
        "MCP only through MCP"
    );
    assert!(
        !ids.iter().any(|id| id.ends_with(":tool_search")),
        "tool-search controls are never catalogued"
    );
    let entry = h.value("return ALL_TOOLS[0]").await;
    assert!(
        entry.get("parameters").is_none(),
        "compact entries have no schemas"
    );
}

#[tokio::test]
async fn search_describe_call_work_with_openclaw_plugin_and_client_tools() {
    let h = harness();
    let value = h
        .value(
            r#"
            const hits = await tools.search("browser");
            const described = await tools.describe(hits[0].id);
            const viaCall = await tools.call("client:app:select_file", { path: "a.txt" });
            const viaName = await tools.add({ a: 2, b: 3 });
            const byName = await tools.call("echo", { x: 1 });
            return { first: hits[0].id, params: described.parameters, viaCall, viaName, byName };
            "#,
        )
        .await;
    assert_eq!(value["first"], "openclaw:browser:browser_request");
    assert_eq!(value["params"], json!({ "type": "object" }));
    assert_eq!(value["viaCall"], json!({ "path": "a.txt" }));
    assert_eq!(value["viaName"], json!({ "sum": 5 }));
    assert_eq!(value["byName"], json!({ "x": 1 }));
    let result = h.js("await tools.search('echo'); await tools.describe('echo'); await tools.echo({}); return 1").await;
    assert_eq!(result["telemetry"]["searchCount"], 1);
    assert_eq!(result["telemetry"]["describeCount"], 1);
    assert_eq!(result["telemetry"]["callCount"], 1);
    assert_eq!(
        result["telemetry"]["visibleTools"],
        json!(["exec", "wait", "computer"])
    );
    assert_eq!(
        result["telemetry"]["sources"],
        json!({ "openclaw": 8, "mcp": 1, "client": 1, "mcpCapabilities": 0 })
    );
}

#[tokio::test]
async fn search_limit_rules() {
    let h = harness();
    assert_eq!(h.value("return (await tools.search('')).length").await, 8);
    assert_eq!(
        h.value("return (await tools.search('', { limit: 2 })).length")
            .await,
        2
    );
    let caught = h
        .value("try { await tools.search('', { limit: 0 }) } catch (e) { return e.message }")
        .await;
    assert_eq!(caught, "limit must be a positive integer.");
}

#[tokio::test]
async fn mcp_only_through_the_mcp_namespace() {
    let h = harness();
    let value = h
        .value(
            r#"
            const result = await MCP.github.createIssue({ title: "hello" });
            let viaTools = null;
            try { await tools.call("mcp:github:create_issue", { title: "x" }) } catch (e) { viaTools = e.message }
            let missing = null;
            try { await MCP.github.createIssue({}) } catch (e) { missing = e.message }
            return { result, viaTools, missing, convenience: typeof tools.create_issue };
            "#,
        )
        .await;
    assert_eq!(
        value["result"]["structuredContent"],
        json!({ "title": "hello", "labels": [] }),
        "defaults filled"
    );
    assert_eq!(
        value["viaTools"],
        "Unknown tool id: mcp:github:create_issue"
    );
    assert_eq!(
        value["missing"],
        "Missing required MCP namespace argument(s): title"
    );
    assert_eq!(value["convenience"], "undefined");
}

#[tokio::test]
async fn api_list_and_read_answer_without_a_bridge_call() {
    let h = harness();
    let result = h
        .js(r#"
            const files = await API.list("mcp");
            const text = await API.read("mcp/github.d.ts");
            let bad = null;
            try { await API.read("mcp/../secret") } catch (e) { bad = e.message }
            const header = await MCP.github.$api("createIssue", { schema: true });
            return { paths: files.map(f => f.path), mentions: text.includes("createIssue"), bad: bad !== null, header: header !== null };
        "#)
        .await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["value"]["paths"],
        json!(["mcp/index.d.ts", "mcp/github.d.ts"])
    );
    assert_eq!(result["value"]["mentions"], true);
    assert_eq!(result["value"]["bad"], true);
    assert_eq!(
        result["telemetry"]["callCount"], 0,
        "no bridge or tool call"
    );
    assert!(h.executor.calls().is_empty());
}

#[tokio::test]
async fn denied_tools_are_absent_and_not_callable_by_guessed_id() {
    // The host's policy removed `secret_tool` before activation: it is not in the catalog.
    let h = harness();
    let value = h
        .value(
            r#"
            let caught = null;
            try { await tools.call("openclaw:core:secret_tool", {}) } catch (e) { caught = e.message }
            return { caught, listed: ALL_TOOLS.some(t => t.name === "secret_tool") };
            "#,
        )
        .await;
    assert_eq!(
        value,
        json!({ "caught": "Unknown tool id: openclaw:core:secret_tool", "listed": false })
    );
}

#[tokio::test]
async fn shell_exec_hidden_from_the_model_but_callable_by_id_and_no_recursion() {
    let h = harness();
    assert_eq!(
        names(h.session.model_tools())
            .iter()
            .filter(|n| **n == "exec")
            .count(),
        1
    );
    let value = h
        .value(r#"return await tools.call("openclaw:core:exec", { command: "ls" })"#)
        .await;
    assert_eq!(value, json!({ "shell": "ls" }));
    // Code mode's own exec and wait are never reachable from the guest.
    let tools: Vec<_> = crate::support::tools()
        .into_iter()
        .filter(|t| t.name != "exec")
        .collect();
    let h = harness_with(CodeModeConfig::enabled().build().unwrap(), tools);
    let value = h
        .value(
            r#"
            const out = [];
            for (const id of ["exec", "wait", "openclaw:core:wait", "tool_search"]) {
              try { await tools.call(id, {}); out.push("called") } catch (e) { out.push(e.message) }
            }
            return { out, exec: typeof tools.exec, wait: typeof tools.wait };
            "#,
        )
        .await;
    assert_eq!(
        value,
        json!({ "out": ["Unknown tool id: exec", "Unknown tool id: wait", "Unknown tool id: openclaw:core:wait",
                        "Unknown tool id: tool_search"], "exec": "undefined", "wait": "undefined" })
    );
}

#[tokio::test]
async fn nested_calls_keep_approval_and_hook_behaviour() {
    let h = harness();
    // The executor denies one call (policy) and holds another (approval): both through one path.
    let result = h
        .js(r#"
            let denied = null;
            try { await tools.denied_at_call({}) } catch (e) { denied = e.message }
            const approved = await tools.approve_me({});
            return { denied, approved };
        "#)
        .await;
    assert_eq!(result["status"], "completed", "{result}");
    assert_eq!(
        result["value"],
        json!({ "denied": "denied by policy: denied_at_call", "approved": { "approved": true } })
    );
    let events = h.events.events.lock().unwrap().clone();
    let kinds: Vec<String> = events
        .iter()
        .map(|e| {
            serde_json::to_value(e).unwrap()["event"]
                .as_str()
                .unwrap()
                .to_owned()
        })
        .collect();
    assert_eq!(kinds, ["start", "end", "start", "update", "end"]);
    // The update reaches the host with its payload.
    let update = serde_json::to_value(&events[3]).unwrap();
    assert_eq!(update["update"], json!({ "status": "awaiting approval" }));
    assert_eq!(update["nestedCallId"], "call_1/2");
    let first = serde_json::to_value(&events[0]).unwrap();
    assert_eq!(first["parentCallId"], "call_1");
    assert_eq!(first["nestedCallId"], "call_1/1");
    assert_eq!(first["catalogId"], "openclaw:core:denied_at_call");
}

#[tokio::test]
async fn typescript_is_transformed_and_javascript_never_reaches_the_transform() {
    let h = harness();
    let before = codemode_ts::transform_count();
    assert_eq!(h.value("const x = 1; return x + 1").await, 2);
    assert_eq!(
        codemode_ts::transform_count(),
        before,
        "JavaScript must not reach codemode-ts"
    );
    let result = h
        .session
        .exec("call_ts", &json!({ "language": "typescript", "code": "enum E { A = 2 }\nconst n: number = E.A;\nreturn (await tools.add({ a: n, b: 1 } as const)).sum" }))
        .await
        .to_json();
    assert_eq!(result["value"], 3, "{result}");
    assert!(codemode_ts::transform_count() > before);
    let bad = h
        .session
        .exec(
            "c",
            &json!({ "language": "typescript", "code": "const a = 1;\nconst b: = 2;" }),
        )
        .await
        .to_json();
    assert_eq!(bad["code"], "invalid_input");
    assert!(
        bad["error"]
            .as_str()
            .unwrap()
            .starts_with("typescript transform failed: "),
        "{bad}"
    );
    assert!(
        bad["error"].as_str().unwrap().contains(" at 2:"),
        "user line: {bad}"
    );
    let typed = h
        .session
        .exec("c", &json!({ "language": "typescript", "code": "import type { X } from './x';\nconst x: X | number = 1;\nreturn x" }))
        .await
        .to_json();
    assert_eq!(typed["value"], 1, "`import type` is erased: {typed}");
    let value_import = h
        .session
        .exec(
            "c",
            &json!({ "language": "typescript", "code": "import fs from 'fs';\nreturn 1" }),
        )
        .await
        .to_json();
    assert_eq!(
        value_import["error"],
        "code mode module access is disabled."
    );
    let js_only = harness_with(
        CodeModeConfig::from_json(&json!({ "enabled": true, "languages": ["javascript"] }))
            .unwrap(),
        crate::support::tools(),
    );
    let refused = js_only
        .session
        .exec(
            "c",
            &json!({ "language": "typescript", "code": "return 1" }),
        )
        .await
        .to_json();
    assert_eq!(refused["error"], "code mode typescript input is disabled.");
    assert_eq!(refused["code"], "invalid_input");
}

#[tokio::test]
async fn malformed_exec_and_wait_inputs_are_invalid_input() {
    let h = harness();
    let cases = [
        (json!({}), "code or command must be a non-empty string."),
        (
            json!({ "code": "" }),
            "code or command must be a non-empty string.",
        ),
        (
            json!({ "code": 5 }),
            "code or command must be a non-empty string.",
        ),
        (
            json!({ "code": "return 1", "command": "return 2" }),
            "code and command must match when both are provided.",
        ),
        (
            json!({ "code": "return 1", "language": "bash" }),
            "language must be javascript or typescript.",
        ),
        (json!("return 1"), "exec input must be a JSON object."),
    ];
    for (input, message) in cases {
        let result = h.session.exec("c", &input).await.to_json();
        assert_eq!(
            (result["error"].as_str(), result["code"].as_str()),
            (Some(message), Some("invalid_input")),
            "{input}"
        );
    }
    assert_eq!(
        h.session
            .exec("c", &json!({ "command": "return 7" }))
            .await
            .to_json()["value"],
        7
    );
    assert_eq!(
        h.session
            .exec("c", &json!({ "code": "return 7", "command": "return 7" }))
            .await
            .to_json()["value"],
        7
    );
    // A shell string sent as JavaScript is a guest syntax error, not a shell command.
    let shell = h
        .session
        .exec("c", &json!({ "code": "ls -la" }))
        .await
        .to_json();
    assert_eq!(shell["status"], "failed");
    for input in [json!({}), json!({ "runId": "" }), json!({ "runId": 5 })] {
        let result = h.session.wait(&input).await.to_json();
        assert_eq!(
            result["error"], "runId must be a non-empty string.",
            "{input}"
        );
    }
    let unknown = h
        .session
        .wait(&json!({ "runId": "cm_00000000-0000-0000-0000-000000000000" }))
        .await
        .to_json();
    assert_eq!(
        (unknown["error"].as_str(), unknown["code"].as_str()),
        (
            Some("code mode run is unavailable or expired."),
            Some("invalid_input")
        )
    );
}

#[tokio::test]
async fn module_filesystem_network_and_environment_access_fail() {
    let h = harness();
    for code in [
        "import fs from 'fs'",
        "const m = await import('fs')",
        "require('fs')",
        "return import.meta.url",
        "return `${await import('x')}`",
    ] {
        let (error, code_value) = h.error(code).await;
        assert_eq!(error, "code mode module access is disabled.", "{code}");
        assert_eq!(code_value, "invalid_input");
    }
    let value = h
        .value("return [typeof process, typeof fetch, typeof XMLHttpRequest, typeof std, typeof os, typeof Deno, typeof require]")
        .await;
    assert_eq!(
        value,
        json!([
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined",
            "undefined"
        ])
    );
    assert_eq!(
        h.value("const s = 'import x from y'; return s.length")
            .await,
        15,
        "strings are not module access"
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn infinite_loops_time_out_without_blocking_other_runs() {
    // The loop spins for seconds; the other run (default budget, no deadline near) ends while it
    // still spins, however busy the machine is.
    let config = CodeModeConfig::from_json(&json!({ "enabled": true, "timeoutMs": 3000 })).unwrap();
    let h = Arc::new(harness_with(config, crate::support::tools()));
    let looping = {
        let h = Arc::clone(&h);
        tokio::spawn(async move { h.js("text('before'); while (true) {}").await })
    };
    let other = harness()
        .value("return (await tools.add({ a: 1, b: 1 })).sum")
        .await;
    assert_eq!(other, 2.0);
    assert!(
        !looping.is_finished(),
        "the other run ended only after the loop's deadline"
    );
    let result = looping.await.unwrap();
    assert_eq!(
        (result["error"].as_str(), result["code"].as_str()),
        (Some("code mode timeout exceeded"), Some("timeout"))
    );
    assert_eq!(
        result["output"],
        json!([{ "type": "text", "text": "before" }]),
        "output before a failure is kept"
    );
}

#[tokio::test]
async fn memory_limit_ends_the_guest_vm() {
    let config =
        CodeModeConfig::from_json(&json!({ "enabled": true, "memoryLimitBytes": 4194304 }))
            .unwrap();
    let h = harness_with(config, crate::support::tools());
    let result = h
        .js("const hoard = []; while (true) { hoard.push(new Array(100000).fill(hoard.length)) }")
        .await;
    assert_eq!(result["status"], "failed");
    assert!(
        result["error"].as_str().unwrap().contains("memory"),
        "{result}"
    );
    assert_eq!(h.value("return 1").await, 1, "the host is fine afterwards");
}

#[tokio::test]
async fn output_and_snapshot_limits_apply_to_completed_and_suspended_runs() {
    let config = CodeModeConfig::from_json(
        &json!({ "enabled": true, "maxOutputBytes": 1024, "timeoutMs": 400 }),
    )
    .unwrap();
    let h = harness_with(config, crate::support::tools());
    let (error, code) = h.error("text('x'.repeat(2000)); return 1").await;
    assert_eq!(
        (error.as_str(), code),
        (
            "code mode output limit exceeded",
            json!("output_limit_exceeded")
        )
    );
    // A final value over the limit is cut to fit instead (the run's work is done).
    let result = h.js("return 'y'.repeat(5000)").await;
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["truncated"]["originalBytes"], 5002);
    let (error, _) = h
        .error("text('z'.repeat(2000)); await tools.approve_me({}); return 1")
        .await;
    assert_eq!(
        error, "code mode output limit exceeded",
        "checked before suspending"
    );
    let config = CodeModeConfig::from_json(
        &json!({ "enabled": true, "maxSnapshotBytes": 1024, "timeoutMs": 400 }),
    )
    .unwrap();
    let h = harness_with(config, crate::support::tools());
    let (error, code) = h.error("await tools.approve_me({}); return 1").await;
    assert_eq!(
        (error.as_str(), code),
        (
            "code mode snapshot limit exceeded",
            json!("snapshot_limit_exceeded")
        )
    );
    assert_eq!(h.code_mode.suspended_runs(), 0);
}

async fn park(h: &Harness, code: &str) -> String {
    let result = h.js(code).await;
    assert_eq!(result["status"], "waiting", "{result}");
    result["runId"].as_str().unwrap().to_owned()
}

fn fast() -> CodeModeConfig {
    CodeModeConfig::from_json(&json!({ "enabled": true, "timeoutMs": 400 })).unwrap()
}

#[tokio::test]
async fn wait_resumes_a_suspended_run_and_returns_the_final_value() {
    let h = harness_with(fast(), crate::support::tools());
    let result = h
        .js("text('before'); const r = await tools.approve_me({}); text('after'); return r")
        .await;
    assert_eq!(result["status"], "waiting", "{result}");
    assert_eq!(result["reason"], "pending_tools");
    assert_eq!(
        result["pendingToolCalls"][0]["toolId"],
        "openclaw:core:approve_me"
    );
    assert_eq!(
        result["output"],
        json!([{ "type": "text", "text": "before" }])
    );
    let run_id = result["runId"].as_str().unwrap();
    assert!(run_id.starts_with("cm_"));
    let mut resumed = h.session.wait(&json!({ "run_id": run_id })).await.to_json();
    while resumed["status"] == "waiting" {
        resumed = h.session.wait(&json!({ "runId": run_id })).await.to_json();
    }
    assert_eq!(resumed["status"], "completed", "{resumed}");
    assert_eq!(resumed["value"], json!({ "approved": true }));
    assert_eq!(
        resumed["output"],
        json!([{ "type": "text", "text": "after" }])
    );
    assert_eq!(
        h.code_mode.suspended_runs(),
        0,
        "resolved runs leave the store"
    );
    let again = h.session.wait(&json!({ "runId": run_id })).await.to_json();
    assert_eq!(again["error"], "code mode run is unavailable or expired.");
}

#[tokio::test]
async fn yield_control_suspends_and_wait_continues() {
    let h = harness();
    let result = h
        .js("text('one'); await yield_control('checkpoint'); text('two'); return 2")
        .await;
    assert_eq!(result["status"], "waiting", "{result}");
    assert_eq!(result["reason"], "yield");
    let resumed = h
        .session
        .wait(&json!({ "runId": result["runId"] }))
        .await
        .to_json();
    assert_eq!(resumed["value"], 2);
    assert_eq!(
        resumed["output"],
        json!([{ "type": "text", "text": "two" }])
    );
}

#[tokio::test]
async fn expired_cancelled_other_session_and_unknown_run_ids_fail() {
    let h = harness_with(fast(), crate::support::tools());
    // Cancelled.
    let run_id = park(&h, "await tools.approve_me({}); return 1").await;
    assert!(h.session.cancel(&run_id));
    let result = h.session.wait(&json!({ "runId": run_id })).await.to_json();
    assert_eq!(result["error"], "code mode run is unavailable or expired.");
    // Other session and other agent run.
    let run_id = park(&h, "await tools.approve_me({}); return 1").await;
    let mut other =
        ActivationRequest::new(crate::support::tools()).with_agent_run(run_context("s2"));
    other.mcp_capabilities = Default::default();
    let Ok(Activation::Active(other_session)) = h.code_mode.activate(other) else {
        panic!()
    };
    assert!(
        !other_session.cancel(&run_id),
        "another session cannot cancel the run"
    );
    assert_eq!(h.code_mode.suspended_runs(), 1);
    let result = other_session
        .wait(&json!({ "runId": run_id }))
        .await
        .to_json();
    assert_eq!(
        (result["error"].as_str(), result["code"].as_str()),
        (
            Some("code mode run belongs to a different session."),
            Some("invalid_input")
        )
    );
    let mut other_run = run_context("s1");
    other_run.agent_run_id = Some("run-2".into());
    let Ok(Activation::Active(other_run)) = h
        .code_mode
        .activate(ActivationRequest::new(crate::support::tools()).with_agent_run(other_run))
    else {
        panic!()
    };
    let result = other_run.wait(&json!({ "runId": run_id })).await.to_json();
    assert_eq!(
        result["error"],
        "code mode run belongs to a different agent run."
    );
    // Session end drops its runs.
    h.code_mode.end_session("s1");
    assert_eq!(h.code_mode.suspended_runs(), 0);
    // Expired: the TTL passes on a clock the test moves, not by sleeping past it.
    let config = CodeModeConfig::from_json(
        &json!({ "enabled": true, "timeoutMs": 400, "snapshotTtlSeconds": 60 }),
    )
    .unwrap();
    let clock = ManualClock::new();
    let h = crate::support::harness_on_clock(config, crate::support::tools(), clock.clone());
    let run_id = park(&h, "await tools.approve_me({}); return 1").await;
    clock.advance(Duration::from_secs(60));
    let result = h.session.wait(&json!({ "runId": run_id })).await.to_json();
    assert_eq!(result["error"], "code mode run is unavailable or expired.");
    // Unknown.
    let result = h
        .session
        .wait(&json!({ "runId": "cm_nope" }))
        .await
        .to_json();
    assert_eq!(result["error"], "code mode run is unavailable or expired.");
}

#[tokio::test]
async fn a_panicking_or_garbage_executor_is_a_catchable_guest_error() {
    let h = harness();
    let value = h
        .value(
            r#"
            const out = [];
            for (const name of ["panics", "deep"]) {
              try { await tools.call(name, {}); out.push("ok") } catch (e) { out.push(e.message) }
            }
            return out;
            "#,
        )
        .await;
    assert_eq!(
        value[0],
        "tool openclaw:core:panics failed: the host tool executor panicked."
    );
    assert_eq!(value[1], "the host value nests deeper than 128 levels");
}

#[tokio::test]
async fn restart_safe_refuses_side_effects_and_marks_results_replay_safe() {
    let h = harness();
    let input = json!({ "code": "const a = await tools.echo({ x: 1 }); let b = null; try { await tools.approve_me({}) } catch (e) { b = e.message } return { a, b }", "restartSafe": true });
    let result = h.session.exec("c", &input).await.to_json();
    assert_eq!(result["replaySafe"], true);
    assert_eq!(
        result["value"]["b"],
        "restart-safe code mode cannot call side-effecting tools."
    );
    let recovered = h.session.recover("c2", &input).await.to_json();
    assert_eq!(
        recovered["value"], result["value"],
        "recovery re-runs the read-only input"
    );
    let refused = h
        .session
        .recover("c3", &json!({ "code": "return 1" }))
        .await
        .to_json();
    assert_eq!(refused["code"], "invalid_input");
}

#[tokio::test]
async fn namespaces_visible_callable_catchable_and_refused_when_restart_safe() {
    let registry = Arc::new(NamespaceRegistry::new());
    let create_scope = Arc::new(|_: &codemode_namespaces::ScopeContext| {
        Ok(ScopeValue::object([
            ("kind", ScopeValue::Json(json!("demo"))),
            ("list", ScopeValue::Tool(NamespaceTool::new("issues_list"))),
            ("fail", ScopeValue::Tool(NamespaceTool::new("issues_fail"))),
        ]))
    });
    registry
        .register_for_plugin(
            "demo-issues",
            Registration {
                id: "demo-issues".into(),
                global_name: "Issues".into(),
                description: "Issue helpers.".into(),
                required_tool_names: vec!["issues_list".into(), "issues_fail".into()],
                prompt: Some("Use Issues.list(params).".into()),
                create_scope,
            },
        )
        .unwrap();
    let plugin = || ToolOrigin::BundledPlugin("demo-issues".into());
    let executor = TestExecutor::new();
    let code_mode = CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), executor.clone())
        .namespaces(registry.clone())
        .build();
    let mut tools = crate::support::tools();
    tools.push(tool(plugin(), "issues_list", true));
    tools.push(tool(plugin(), "issues_fail", true));
    let Ok(Activation::Active(session)) =
        code_mode.activate(ActivationRequest::new(tools.clone()).with_agent_run(run_context("s")))
    else {
        panic!()
    };
    assert!(
        session.model_tools()[0]
            .description
            .contains("Use Issues.list(params).")
    );
    let result = session
        .exec(
            "c",
            &json!({ "code": "let caught = null; try { await Issues.fail() } catch (e) { caught = e.message } return { kind: Issues.kind, same: typeof namespaces.Issues.list, caught }" }),
        )
        .await
        .to_json();
    assert_eq!(
        result["value"],
        json!({ "kind": "demo", "same": "function", "caught": "no such tool openclaw:demo-issues:issues_fail" })
    );
    let refused = session
        .exec("c", &json!({ "code": "try { await Issues.list({}) } catch (e) { return e.message }", "restartSafe": true }))
        .await
        .to_json();
    assert_eq!(
        refused["value"],
        "restart-safe code mode cannot call plugin namespaces."
    );
    // A same-named tool from another owner does not expose the namespace, nor its prompt.
    let mut foreign = crate::support::tools();
    foreign.push(tool(
        ToolOrigin::BundledPlugin("other".into()),
        "issues_list",
        true,
    ));
    foreign.push(tool(
        ToolOrigin::BundledPlugin("other".into()),
        "issues_fail",
        true,
    ));
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(foreign))
    else {
        panic!()
    };
    assert!(!session.model_tools()[0].description.contains("Issues"));
    assert_eq!(
        session
            .exec("c", &json!({ "code": "return typeof Issues" }))
            .await
            .to_json()["value"],
        "undefined"
    );
    // Plugin rollback clears the namespace.
    registry.clear_for_plugin("demo-issues");
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tools)) else {
        panic!()
    };
    assert_eq!(
        session
            .exec("c", &json!({ "code": "return typeof Issues" }))
            .await
            .to_json()["value"],
        "undefined"
    );
}

#[tokio::test]
async fn pending_namespace_calls_resume_with_wait() {
    let registry = Arc::new(NamespaceRegistry::new());
    let create_scope = Arc::new(|_: &codemode_namespaces::ScopeContext| {
        Ok(ScopeValue::object([(
            "approve",
            ScopeValue::Tool(NamespaceTool::new("approve_me")),
        )]))
    });
    registry
        .register_for_plugin(
            "core-like",
            Registration {
                id: "approvals".into(),
                global_name: "Approvals".into(),
                description: "Approvals.".into(),
                required_tool_names: vec!["approve_me".into()],
                prompt: None,
                create_scope,
            },
        )
        .unwrap();
    let code_mode = CodeMode::builder(fast(), TestExecutor::new())
        .namespaces(registry)
        .build();
    let tools = vec![tool(
        ToolOrigin::BundledPlugin("core-like".into()),
        "approve_me",
        false,
    )];
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tools)) else {
        panic!()
    };
    let result = session
        .exec(
            "c",
            &json!({ "code": "return await Approvals.approve({})" }),
        )
        .await
        .to_json();
    assert_eq!(result["status"], "waiting", "{result}");
    let mut resumed = session
        .wait(&json!({ "runId": result["runId"] }))
        .await
        .to_json();
    while resumed["status"] == "waiting" {
        resumed = session
            .wait(&json!({ "runId": result["runId"] }))
            .await
            .to_json();
    }
    assert_eq!(resumed["value"], json!({ "approved": true }));
}

#[tokio::test]
async fn hook_metadata_tells_code_cells_from_shell_exec() {
    let meta =
        HookMetadata::for_exec_input(&json!({ "code": "return 1", "language": "typescript" }));
    assert_eq!(
        serde_json::to_value(meta).unwrap(),
        json!({ "toolKind": "code_mode_exec", "toolInputKind": "typescript" })
    );
    let meta = HookMetadata::for_exec_input(&json!({ "code": "return 1" }));
    assert_eq!(
        serde_json::to_value(meta).unwrap()["toolInputKind"],
        "javascript"
    );
}

#[tokio::test]
async fn undefined_becomes_null_and_output_order_is_kept() {
    let h = harness();
    let result = h.js("text('a'); json({ b: 1 }); text({ c: 2 })").await;
    assert_eq!(result["value"], Value::Null);
    assert_eq!(
        result["output"],
        json!([{ "type": "text", "text": "a" }, { "type": "json", "value": { "b": 1 } }, { "type": "text", "text": "{\"c\":2}" }])
    );
    let (error, code) = h.error("text('kept'); throw new Error('boom')").await;
    assert!(error.contains("boom"), "{error}");
    assert_eq!(code, Value::Null, "an uncaught guest error has no code");
}

#[tokio::test]
async fn dropping_code_mode_releases_parked_runs_and_cancels_their_host_work() {
    let Harness {
        code_mode,
        session,
        events,
        ..
    } = harness_with(fast(), crate::support::tools());
    let result = session
        .exec(
            "call_1",
            &json!({ "code": "return await tools.approve_me({})" }),
        )
        .await
        .to_json();
    assert_eq!(result["status"], "waiting", "{result}");
    assert_eq!(code_mode.suspended_runs(), 1);
    drop(session);
    drop(code_mode);
    let cancelled = |events: &Recorder| {
        events.events.lock().unwrap().iter().any(|event| {
            matches!(
                event,
                NestedCallEvent::End {
                    outcome: NestedCallOutcome::Cancelled,
                    ..
                }
            )
        })
    };
    // The aborted host task is dropped the next time the runtime schedules it.
    for _ in 0..1000 {
        if cancelled(&events) {
            break;
        }
        tokio::task::yield_now().await;
    }
    assert!(
        cancelled(&events),
        "the parked run's host work was cancelled"
    );
}

#[tokio::test]
async fn an_unawaited_side_effect_runs_before_completed() {
    // The seed: `exec` is `completed` only when the guest has no pending work.
    let h = harness();
    let result = h.js("tools.echo({ side: 'effect' }); return 1").await;
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(result["value"], 1);
    assert_eq!(result["telemetry"]["callCount"], 1);
    assert_eq!(h.executor.calls(), vec!["openclaw:core:echo".to_string()]);
}

#[tokio::test]
async fn a_hundred_parallel_calls_queue_behind_the_default_cap() {
    let h = harness();
    let value = h
        .value(
            "const items = Array.from({ length: 100 }, (_, i) => i); \
             const out = await Promise.all(items.map((i) => tools.echo({ i }))); \
             return out.map((r) => r.i).join() === items.join()",
        )
        .await;
    assert_eq!(value, true);
    assert_eq!(h.executor.calls().len(), 100);
}

#[tokio::test]
async fn the_queue_bound_refuses_with_the_stable_message() {
    let config = CodeModeConfig::from_json(
        &json!({ "enabled": true, "maxPendingToolCalls": 1, "maxQueuedToolCalls": 0 }),
    )
    .unwrap();
    let h = harness_with(config, crate::support::tools());
    let value = h
        .value(
            "const r = await Promise.allSettled([tools.echo({}), tools.echo({})]); \
             return r.map((x) => x.status === 'fulfilled' ? 'ok' : x.reason.message)",
        )
        .await;
    assert_eq!(
        value,
        json!(["ok", "too many pending code mode tool calls"])
    );
}

#[tokio::test]
async fn results_never_fail_on_values_json_cannot_hold() {
    let h = harness();
    let value = h
        .value("const a = { f: () => 1, n: 2n }; a.self = a; return a")
        .await;
    assert_eq!(value, json!({ "n": "2", "self": "[Circular]" }));
}

#[tokio::test]
async fn oversized_javascript_is_invalid_input() {
    let h = harness();
    let code = format!("return 1;//{}", "x".repeat(1 << 20));
    let result = h.js(&code).await;
    assert_eq!(result["code"], "invalid_input", "{result:#}");
    assert!(
        result["error"]
            .as_str()
            .is_some_and(|error| error.contains("the limit is 1048576 bytes")),
        "{result:#}"
    );
}

#[test]
fn cpu_bound_cells_do_not_starve_a_trivial_exec_on_a_two_worker_runtime() {
    // Guest code runs on the sandbox's VM threads, never on the runtime's two workers: while
    // two cells spin until their deadline, a trivial exec of another session still completes.
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .unwrap();
    let config =
        CodeModeConfig::from_json(&json!({ "enabled": true, "timeoutMs": 20000 })).unwrap();
    let busy = harness_with(config, crate::support::tools());
    let quiet = harness();
    runtime.block_on(async {
        let spin = json!({ "code": "for (;;) {}" });
        let hogs: Vec<_> = (0..2)
            .map(|_| {
                let session = busy.session.clone();
                let spin = spin.clone();
                tokio::spawn(async move { session.exec("hog", &spin).await })
            })
            .collect();
        for _ in 0..5 {
            let result = quiet
                .session
                .exec("call_1", &json!({ "code": "return 1" }))
                .await;
            assert_eq!(result.to_json()["value"], 1);
        }
        assert!(
            hogs.iter().all(|hog| !hog.is_finished()),
            "the trivial execs completed while both CPU-bound cells still ran"
        );
        for hog in hogs {
            hog.abort();
        }
    });
}

#[tokio::test]
async fn a_final_value_over_the_output_limit_completes_truncated() {
    let config =
        CodeModeConfig::from_json(&json!({ "enabled": true, "maxOutputBytes": 2048 })).unwrap();
    let h = harness_with(config, crate::support::tools());
    let result = h
        .js("return Array.from({ length: 5000 }, (_, i) => ({ i }))")
        .await;
    assert_eq!(result["status"], "completed", "{result:#}");
    let truncated = &result["truncated"];
    let kept = serde_json::to_string(&result["value"]).unwrap().len() as u64;
    assert_eq!(truncated["keptBytes"].as_u64(), Some(kept));
    assert!(
        truncated["originalBytes"].as_u64().unwrap() > 40_000,
        "{truncated}"
    );
    assert!(kept <= 2048);
}

// The model must see exactly one `exec` and one `wait`: a direct-only tool (which stays visible)
// named like a control tool fails activation, closed, naming the tool.
#[tokio::test]
async fn direct_only_tools_named_like_a_control_tool_fail_activation() {
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        TestExecutor::new(),
    )
    .build();
    let cases = [
        (ToolOrigin::Core, "exec", "openclaw:core:exec"),
        (ToolOrigin::Client("app".into()), "exec", "client:app:exec"),
        (
            ToolOrigin::BundledPlugin("timer".into()),
            "wait",
            "openclaw:timer:wait",
        ),
        (ToolOrigin::Mcp("clock".into()), "wait", "mcp:clock:wait"),
        (ToolOrigin::Client("app".into()), "wait", "client:app:wait"),
    ];
    for (origin, name, id) in cases {
        let mut direct = tool(origin, name, true);
        direct.direct_only = true;
        let mut tools = crate::support::tools();
        tools.push(direct);
        let error = match code_mode.activate(ActivationRequest::new(tools)) {
            Err(error) => error,
            Ok(_) => panic!("{id} activated beside the control tool"),
        };
        assert_eq!(
            error,
            ActivationError::ControlNameCollision {
                name: name.into(),
                id: id.into()
            }
        );
        assert_eq!(
            error.to_string(),
            format!(
                "a direct-only tool named `{name}` ({id}) would collide with the code mode control tool `{name}`."
            )
        );
    }
    // Catalogued (not direct-only) tools of those names stay hidden behind `exec`, and a core
    // `wait` is the host's copy of code mode's own control tool: both still activate.
    let mut tools = crate::support::tools();
    tools.push(tool(ToolOrigin::Client("app".into()), "wait", true));
    let mut core_wait = tool(ToolOrigin::Core, "wait", true);
    core_wait.direct_only = true;
    tools.push(core_wait);
    let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tools)) else {
        panic!("did not activate")
    };
    assert_eq!(names(session.model_tools()), ["exec", "wait", "computer"]);
    assert!(session.catalog().get("client:app:wait").is_some());
}

// MCP resources and prompts are a kind of nested call of their own (not catalog entries): they
// reach the executor as `mcp-capability:<server>:<method>`, pass the same restart-safe check as
// tools (they only read), show in telemetry, and never shadow a real tool named like them.
#[tokio::test]
async fn mcp_capabilities_are_their_own_kind_and_never_shadow_a_tool() {
    let executor = TestExecutor::new();
    let code_mode =
        CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), executor.clone()).build();
    let mut tools = crate::support::tools();
    // A real MCP tool named like a capability, with side effects.
    tools.push(tool(
        ToolOrigin::Mcp("github".into()),
        "resources/list",
        false,
    ));
    let mut request = ActivationRequest::new(tools).with_agent_run(run_context("s"));
    request.mcp_capabilities.insert(
        "github".into(),
        McpServerCapabilities {
            resources: true,
            prompts: true,
        },
    );
    // A server without visible tools gets no capability calls, whatever its flags say.
    request.mcp_capabilities.insert(
        "hidden".into(),
        McpServerCapabilities {
            resources: true,
            prompts: true,
        },
    );
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("did not activate")
    };
    let code = r#"
        const attempt = async (f) => { try { await f(); return "ok" } catch (e) { return e.message } };
        return {
            list: await attempt(() => MCP.github.resources.list()),
            read: await attempt(() => MCP.github.resources.read({ uri: "file:///a" })),
            prompts: await attempt(() => MCP.github.prompts.list()),
            get: await attempt(() => MCP.github.prompts.get({ name: "p" })),
            tool: await attempt(() => MCP.github.resourcesList({})),
            forged: await attempt(() => tools.call("mcp-capability:github:resources/list", {})),
            hidden: typeof MCP.hidden,
        };
    "#;
    let result = session.exec("c1", &json!({ "code": code })).await.to_json();
    assert_eq!(result["status"], "completed", "{result:#}");
    let value = &result["value"];
    assert_eq!(value["tool"], "no such tool mcp:github:resources/list");
    assert_eq!(
        value["forged"],
        "Unknown tool id: mcp-capability:github:resources/list"
    );
    assert_eq!(value["hidden"], "undefined");
    assert_eq!(result["telemetry"]["sources"]["mcpCapabilities"], 4);
    assert_eq!(
        executor.calls(),
        [
            "mcp-capability:github:resources/list",
            "mcp-capability:github:resources/read",
            "mcp-capability:github:prompts/list",
            "mcp-capability:github:prompts/get",
            "mcp:github:resources/list",
        ]
    );
    // Restart-safe: the capability calls only read and pass; the side-effecting tool named
    // `resources/list` is refused before it reaches the executor.
    let result = session
        .exec("c2", &json!({ "code": code, "restartSafe": true }))
        .await
        .to_json();
    assert_eq!(result["status"], "completed", "{result:#}");
    assert_eq!(
        result["value"]["tool"],
        "restart-safe code mode cannot call side-effecting tools."
    );
    assert_eq!(executor.calls().len(), 9, "{:?}", executor.calls());
    assert!(
        executor
            .calls()
            .iter()
            .skip(5)
            .all(|id| id.starts_with("mcp-capability:github:"))
    );
}

// Only a plugin's own tools make its namespace visible: an MCP server or a client owner named
// exactly like the plugin cannot stand in for a denied plugin tool.
#[tokio::test]
async fn an_mcp_server_or_client_named_like_a_plugin_does_not_expose_its_namespace() {
    let registry = Arc::new(NamespaceRegistry::new());
    registry
        .register_for_plugin(
            "demo",
            Registration::new("demo-issues", "Issues", |_| {
                Ok(ScopeValue::object([(
                    "list",
                    NamespaceTool::new("issues_list").into(),
                )]))
            })
            .with_required_tools(["issues_list"]),
        )
        .unwrap();
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        TestExecutor::new(),
    )
    .namespaces(registry)
    .build();
    let visible = |origin: ToolOrigin| {
        let mut tools = crate::support::tools();
        tools.push(tool(origin, "issues_list", true));
        let Ok(Activation::Active(session)) = code_mode.activate(ActivationRequest::new(tools))
        else {
            panic!("did not activate")
        };
        session.model_tools()[0].description.contains("Issues")
    };
    assert!(visible(ToolOrigin::BundledPlugin("demo".into())));
    assert!(visible(ToolOrigin::ExternalPlugin("demo".into())));
    assert!(!visible(ToolOrigin::Mcp("demo".into())));
    assert!(!visible(ToolOrigin::Client("demo".into())));
    assert!(!visible(ToolOrigin::BundledPlugin("other".into())));
}

// The namespace global-name guard knows every global of the real guest VM, built-ins, sandbox
// globals and the members the global object inherits from Object.prototype, so the list in
// codemode-namespaces cannot drift from the VM.
#[tokio::test]
async fn every_guest_vm_global_is_refused_as_a_namespace_global_name() {
    let h = harness();
    let names = h
        .value(
            "return Object.getOwnPropertyNames(globalThis).concat(Object.getOwnPropertyNames(Object.prototype))",
        )
        .await;
    let names: Vec<&str> = names
        .as_array()
        .expect("an array of names")
        .iter()
        .map(|name| name.as_str().expect("a name"))
        .collect();
    for expected in ["atob", "btoa", "DOMException", "toString", "__proto__"] {
        assert!(names.contains(&expected), "{expected} not in {names:?}");
    }
    let accepted: Vec<&&str> = names
        .iter()
        .filter(|name| codemode_namespaces::check_global_name(name).is_ok())
        .collect();
    assert!(accepted.is_empty(), "accepted VM globals: {accepted:?}");
    // And the other way: every global code mode says it installs is really there.
    for global in codemode_namespaces::CODE_MODE_GLOBALS {
        assert!(names.contains(global), "{global} not installed");
    }
}

#[tokio::test]
async fn results_carry_values_across_cells_of_a_session_within_bounds() {
    let config = CodeModeConfig::from_json(
        &json!({ "enabled": true, "maxSavedResults": 2, "maxSavedResultBytes": 2048 }),
    )
    .unwrap();
    let h = harness_with(config, crate::support::tools());
    let saved = h
        .value(
            "const r = await tools.echo({ rows: [1, 2, 3] }); return await results.save('rows', r)",
        )
        .await;
    assert_eq!(saved, json!({ "key": "rows", "bytes": 16 }));
    let value = h
        .value("return [(await results.load('rows')).rows.length, await results.list()]")
        .await;
    assert_eq!(value, json!([3, [{ "key": "rows", "bytes": 16 }]]));
    let refusals = h
        .value(
            "const out = []; \
             for (const attempt of [ \
               () => results.save('f', { f() {} }), \
               () => { const a = {}; a.a = a; return results.save('cycle', a) }, \
               () => results.save('k'.repeat(129), 1), \
               () => results.save('big', 'x'.repeat(4096)), \
               () => results.load('missing'), \
             ]) { try { await attempt(); out.push('saved') } catch (e) { out.push(e.message) } } \
             await results.save('second', 2); \
             try { await results.save('third', 3) } catch (e) { out.push(e.message) } \
             out.push(await results.delete('second'), (await results.list()).length); \
             return out",
        )
        .await;
    assert_eq!(
        refusals,
        json!([
            "a function cannot cross the code mode bridge",
            "circular reference",
            "a results key is 1 to 128 characters; this one has 129.",
            "the code mode results store would hold 4114 bytes; its limit is 2048 bytes.",
            "no code mode result is saved under `missing`.",
            "the code mode results store is full: 2 entries (remove one with results.delete).",
            true,
            1
        ])
    );
    // Another session has its own store.
    let other = harness_with(
        CodeModeConfig::enabled().build().unwrap(),
        crate::support::tools(),
    );
    assert_eq!(other.value("return await results.list()").await, json!([]));
}

#[tokio::test]
async fn the_guest_runtime_is_declared_in_guest_globals_d_ts() {
    let h = harness();
    let value = h
        .value(
            "const rows = await API.list(); const guest = await API.list('guest'); \
             return [rows.map((r) => r.path), guest.length, await API.read('guest/globals.d.ts')]",
        )
        .await;
    let paths = value[0].as_array().unwrap();
    assert!(paths.contains(&json!("guest/globals.d.ts")), "{paths:?}");
    assert!(paths.contains(&json!("mcp/index.d.ts")), "{paths:?}");
    assert_eq!(value[1], 1);
    let text = value[2].as_str().unwrap();
    for name in [
        "console",
        "setTimeout",
        "TextEncoder",
        "structuredClone",
        "results",
        "yield_control",
    ] {
        assert!(text.contains(name), "{name} is declared");
    }
    codemode_ts::check_declaration_file(text).expect("the guest declarations parse as .d.ts");
}

#[tokio::test]
async fn waiting_says_what_is_pending_and_for_how_long() {
    let h = harness_with(fast(), crate::support::tools());
    let result = h.js("await tools.approve_me({}); return 1").await;
    assert_eq!(result["status"], "waiting", "{result:#}");
    let pending = &result["pendingToolCalls"][0];
    assert_eq!(pending["toolId"], "openclaw:core:approve_me");
    assert!(pending["pendingMs"].as_u64().is_some(), "{pending}");
    let wait = &h.session.model_tools()[1];
    assert_eq!(
        wait.parameters["properties"]["timeoutMs"]["type"],
        "integer"
    );
    assert!(!wait.parameters.to_string().contains("null"));
}
