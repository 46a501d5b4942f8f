//! The end-to-end plan as a test: every one of the 16 steps must pass.

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn end_to_end_plan() {
    let reports = codemode_tests::plan::run_plan().await;
    let failures: Vec<String> = reports
        .iter()
        .filter_map(|r| {
            r.outcome
                .as_ref()
                .err()
                .map(|e| format!("step {} ({}): {e}", r.number, r.name))
        })
        .collect();
    assert_eq!(reports.len(), 16);
    assert!(
        failures.is_empty(),
        "failed steps:\n{}",
        failures.join("\n")
    );
}

/// A server that crashes mid-run is a catchable guest error; the run and the other servers go
/// on, and the crashed server is restarted on its next use.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_crashing_mcp_server_is_a_catchable_error_and_the_run_continues() {
    use codemode_tests::gateway::{self, Gateway, ScriptedModel};
    use std::collections::BTreeMap;

    let server = gateway::test_server_binary().expect("the test MCP server builds");
    let config = || codemode_mcp::McpServerConfig::new(server.display().to_string());
    let servers = BTreeMap::from([
        ("crashy".to_owned(), config()),
        ("steady".to_owned(), config()),
    ]);
    let gateway = Gateway::start(serde_json::json!({ "enabled": true }), Some(servers))
        .await
        .expect("gateway");
    let turn = gateway
        .turn(gateway::host_tools(), true, "crash")
        .expect("turn");
    let code = r#"
        let crashed = null;
        try { await MCP.crashy.crash({}) } catch (e) { crashed = e.message }
        let after;
        try { after = (await MCP.crashy.echo({ text: "again" })).content[0].text } catch (e) { after = "failed: " + e.message }
        const steady = await MCP.steady.echo({ text: "still here" });
        const local = await tools.add({ a: 1, b: 2 });
        return { crashed, after, steady: steady.content[0].text, local: local.sum };
    "#;
    let results = gateway
        .drive(&turn, &mut ScriptedModel::js(code))
        .await
        .expect("drive");
    let value = results.last().expect("a result").to_json();
    assert_eq!(value["status"], "completed", "{value:#}");
    let crashed = value["value"]["crashed"]
        .as_str()
        .expect("the crash was caught");
    assert!(
        crashed.contains("crashy"),
        "the error names the server: {crashed}"
    );
    assert_eq!(
        value["value"]["after"], "again",
        "the next call restarts the crashed server"
    );
    assert!(
        value["value"]["steady"]
            .as_str()
            .unwrap_or_default()
            .contains("still here")
    );
    assert_eq!(value["value"]["local"], 3);
}

/// Durable runs across processes (issue 13).
mod durable;
