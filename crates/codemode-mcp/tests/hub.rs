//! `McpHub` against real servers: this crate's rmcp test server and the npm
//! reference servers `@modelcontextprotocol/server-everything` and
//! `@modelcontextprotocol/server-filesystem`, installed at the workspace root
//! by `npm ci --prefix tests/mcp-servers`.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::time::Duration;

use codemode_mcp::{HubOptions, McpError, McpHub, McpServerConfig};
use serde_json::{Value, json};

const TEST_SERVER: &str = env!("CARGO_BIN_EXE_codemode-mcp-test-server");

fn test_server(flags: &[&str]) -> McpServerConfig {
    McpServerConfig::new(TEST_SERVER).with_args(flags.iter().copied())
}

/// A binary of the npm test servers; fails with instructions when missing.
fn npm_server(bin: &str) -> String {
    let manifest = std::fs::canonicalize(env!("CARGO_MANIFEST_DIR")).unwrap_or_default();
    let workspace = manifest
        .ancestors()
        .nth(2)
        .map(PathBuf::from)
        .unwrap_or_default();
    let path = workspace
        .join("tests/mcp-servers/node_modules/.bin")
        .join(bin);
    assert!(
        path.exists(),
        "{} is missing: run `npm ci --prefix tests/mcp-servers` at the workspace root",
        path.display()
    );
    path.display().to_string()
}

async fn start(
    servers: Vec<(&str, McpServerConfig)>,
    options: HubOptions,
) -> (McpHub, Vec<McpError>) {
    let servers: BTreeMap<String, McpServerConfig> = servers
        .into_iter()
        .map(|(name, config)| (name.to_owned(), config))
        .collect();
    McpHub::start(servers, options).await
}

async fn start_ok(servers: Vec<(&str, McpServerConfig)>, options: HubOptions) -> McpHub {
    let (hub, failures) = start(servers, options).await;
    assert!(failures.is_empty(), "start failures: {failures:#?}");
    hub
}

/// The text of the first content item of a tool result.
fn first_text(result: &Value) -> &str {
    result
        .pointer("/content/0/text")
        .and_then(Value::as_str)
        .unwrap_or("<no text>")
}

/// The process has exited and was reaped (a zombie keeps its /proc entry).
fn process_is_gone(pid: u32) -> bool {
    !std::path::Path::new(&format!("/proc/{pid}")).exists()
}

#[tokio::test]
async fn test_server_tools_are_listed_across_pages_and_become_descriptors() {
    let hub = start_ok(vec![("test", test_server(&[]))], HubOptions::default()).await;
    let info = hub.server("test");
    let Some(info) = info else {
        panic!("server `test` is not running");
    };
    assert!(info.has_resources);
    assert!(info.has_prompts);
    assert!(info.warnings.is_empty(), "{:?}", info.warnings);
    let descriptors: Vec<Value> = hub
        .descriptors()
        .into_iter()
        .map(|descriptor| {
            json!({
                "origin": descriptor.origin,
                "name": descriptor.name,
                "label": descriptor.label,
                "read_only": descriptor.read_only,
                "parameters": descriptor.parameters,
            })
        })
        .collect();
    insta::assert_json_snapshot!(descriptors);
    hub.shutdown().await;
}

#[tokio::test]
async fn tool_calls_return_the_whole_result() {
    let config = test_server(&[]).with_env("CODEMODE_TEST_VALUE", "from the config");
    let hub = start_ok(vec![("test", config)], HubOptions::default()).await;
    let mut results = BTreeMap::new();
    let calls = [
        ("echo", json!({ "text": "hello" })),
        ("lookup", json!({ "key": "answer" })),
        ("fail", json!({ "message": "it went wrong" })),
        ("env", json!({ "name": "CODEMODE_TEST_VALUE" })),
    ];
    for (tool, arguments) in calls {
        let result = hub.call_tool("test", tool, arguments).await;
        results.insert(tool, result.map_err(|error| error.to_string()));
    }
    insta::assert_json_snapshot!(results);
    hub.shutdown().await;
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn concurrent_calls_from_many_tasks_each_get_their_answer() {
    let hub = start_ok(vec![("test", test_server(&[]))], HubOptions::default()).await;
    let tasks: Vec<_> = (0..8u64)
        .map(|n| {
            let hub = hub.clone();
            tokio::spawn(async move {
                // Later calls answer sooner, so answers arrive out of order.
                let arguments = json!({ "text": format!("call {n}"), "ms": (8 - n) * 20 });
                hub.call_tool("test", "delayed_echo", arguments).await
            })
        })
        .collect();
    for (n, task) in tasks.into_iter().enumerate() {
        let result = task
            .await
            .map_err(|error| error.to_string())
            .and_then(|r| r.map_err(|e| e.to_string()));
        assert_eq!(
            result.as_ref().map(first_text),
            Ok(format!("call {n}").as_str())
        );
    }
    hub.shutdown().await;
}

#[tokio::test]
async fn a_crash_mid_call_is_an_error_for_that_server_only() {
    let hub = start_ok(
        vec![("fragile", test_server(&[])), ("sturdy", test_server(&[]))],
        HubOptions::default(),
    )
    .await;
    let crash = hub.call_tool("fragile", "crash", json!({})).await;
    match &crash {
        Err(McpError::ServerExited {
            server,
            operation,
            stderr,
        }) => {
            assert_eq!(server, "fragile");
            assert_eq!(operation, "tools/call `crash`");
            assert!(
                stderr
                    .iter()
                    .any(|line| line.contains("crashing on purpose")),
                "stderr tail: {stderr:?}"
            );
        }
        other => panic!("expected ServerExited, got {other:?}"),
    }
    let message = crash
        .err()
        .map(|error| error.to_string())
        .unwrap_or_default();
    assert!(
        message.starts_with(
            "MCP server `fragile` exited or closed its connection during tools/call `crash`"
        ),
        "{message}"
    );
    // The crashed server is restarted on its next use: a new process answers.
    let first_process = hub.server("fragile").and_then(|info| info.process_id);
    let mut changes = hub.changes();
    let again = hub
        .call_tool("fragile", "echo", json!({ "text": "still there?" }))
        .await;
    assert_eq!(
        again.as_ref().map(first_text).ok(),
        Some("still there?"),
        "{again:?}"
    );
    assert_ne!(
        hub.server("fragile").and_then(|info| info.process_id),
        first_process
    );
    assert!(
        changes.has_changed().unwrap_or(false),
        "a restart counts as a change"
    );
    changes.borrow_and_update();
    // The other server keeps working.
    let sturdy = hub
        .call_tool("sturdy", "echo", json!({ "text": "fine" }))
        .await;
    assert_eq!(sturdy.as_ref().map(first_text).ok(), Some("fine"));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_call_that_never_answers_times_out_and_the_server_stays_usable() {
    // `slow_forever` never answers, so the timeout fires by construction; the budget is the
    // follow-up `echo`'s too, so it must be generous for a loaded 2-core machine.
    let options = HubOptions::default().with_call_timeout(Duration::from_secs(2));
    let hub = start_ok(vec![("test", test_server(&[]))], options).await;
    let slow = hub.call_tool("test", "slow_forever", json!({})).await;
    match &slow {
        Err(McpError::Timeout {
            server,
            operation,
            timeout,
        }) => {
            assert_eq!(
                (server.as_str(), operation.as_str()),
                ("test", "tools/call `slow_forever`")
            );
            assert_eq!(*timeout, Duration::from_secs(2));
        }
        other => panic!("expected Timeout, got {other:?}"),
    }
    let echo = hub
        .call_tool("test", "echo", json!({ "text": "after" }))
        .await;
    assert_eq!(echo.as_ref().map(first_text).ok(), Some("after"));
    hub.shutdown().await;
}

#[tokio::test]
async fn a_malformed_response_is_a_clear_error() {
    let options = HubOptions::default().with_call_timeout(Duration::from_secs(10));
    let hub = start_ok(vec![("test", test_server(&[]))], options).await;
    let malformed = hub.call_tool("test", "malformed", json!({})).await;
    assert!(
        matches!(&malformed, Err(McpError::Malformed { server, .. }) if server == "test"),
        "{malformed:?}"
    );
    let echo = hub
        .call_tool("test", "echo", json!({ "text": "after" }))
        .await;
    assert_eq!(echo.as_ref().map(first_text).ok(), Some("after"));
    hub.shutdown().await;
}

#[tokio::test]
async fn request_errors_name_the_server() {
    let hub = start_ok(vec![("test", test_server(&[]))], HubOptions::default()).await;
    let errors = [
        hub.call_tool("nope", "echo", json!({})).await,
        hub.call_tool("test", "echo", json!(["not", "an", "object"]))
            .await,
        hub.call_tool("test", "no_such_tool", json!({})).await,
        hub.call_tool("test", "echo", json!({})).await,
        hub.read_resource("test", "test://missing").await,
        hub.get_prompt("test", "greet", Some(json!("Ada"))).await,
    ];
    let messages: Vec<String> = errors
        .into_iter()
        .map(|result| match result {
            Ok(value) => format!("unexpected success: {value}"),
            Err(error) => error.to_string(),
        })
        .collect();
    insta::assert_json_snapshot!(messages);
    hub.shutdown().await;
}

#[tokio::test]
async fn start_failures_are_reported_and_the_other_servers_start() {
    // `silent` never answers, so it times out by construction; the same budget must let `good`
    // start on a loaded 2-core machine, hence not shorter.
    let options = HubOptions::default().with_start_timeout(Duration::from_secs(5));
    let (hub, failures) = start(
        vec![
            ("good", test_server(&[])),
            (
                "missing",
                McpServerConfig::new("/nonexistent/codemode-mcp-server"),
            ),
            ("exits", test_server(&["--exit-before-handshake"])),
            ("silent", test_server(&["--never-answer"])),
            ("bad:name", test_server(&[])),
            (
                "not-mcp",
                McpServerConfig::new("/bin/sh")
                    .with_args(["-c", "echo this is not MCP; echo oops >&2"]),
            ),
        ],
        options,
    )
    .await;
    let names: Vec<String> = hub.servers().into_iter().map(|info| info.name).collect();
    assert_eq!(names, ["good"]);
    let mut failures: Vec<(String, String)> = failures
        .iter()
        .map(|error| (error.server().to_owned(), error.to_string()))
        .collect();
    failures.sort();
    let find = |server: &str| {
        failures
            .iter()
            .find(|(name, _)| name == server)
            .map(|(_, message)| message.clone())
            .unwrap_or_default()
    };
    assert_eq!(failures.len(), 5, "{failures:#?}");
    let not_mcp = find("not-mcp");
    assert!(
        not_mcp.starts_with("MCP server `not-mcp` failed to start: MCP handshake failed"),
        "{not_mcp}"
    );
    assert!(
        not_mcp.ends_with("its stderr ended with: oops"),
        "{not_mcp}"
    );
    assert_eq!(
        find("bad:name"),
        "invalid MCP server name \"bad:name\": the name contains `:`, which separates the parts of catalog ids"
    );
    assert!(
        find("missing").starts_with(
            "MCP server `missing` could not be started: `/nonexistent/codemode-mcp-server`: "
        ),
        "{}",
        find("missing")
    );
    let exits = find("exits");
    assert!(
        exits.starts_with("MCP server `exits` failed to start: MCP handshake failed"),
        "{exits}"
    );
    assert!(
        exits.ends_with(
            "its stderr ended with: codemode-mcp-test-server: exiting before the handshake as asked"
        ),
        "{exits}"
    );
    assert_eq!(
        find("silent"),
        "MCP server `silent` did not start within 5s"
    );
    let echo = hub.call_tool("good", "echo", json!({ "text": "ok" })).await;
    assert_eq!(echo.as_ref().map(first_text).ok(), Some("ok"));
    hub.shutdown().await;
}

#[tokio::test]
async fn hostile_tool_listings_are_bounded() {
    let hub = start_ok(
        vec![
            ("hostile", test_server(&["--hostile-tools"])),
            ("endless", test_server(&["--endless-pages"])),
        ],
        HubOptions::default().with_max_list_pages(5),
    )
    .await;
    let summary: Vec<Value> = hub
        .servers()
        .into_iter()
        .map(|info| {
            let tools: Vec<(String, usize)> = info
                .tools
                .iter()
                .map(|tool| (tool.name.clone(), tool.description.len()))
                .collect();
            json!({ "name": info.name, "tools": tools, "warnings": info.warnings })
        })
        .collect();
    insta::assert_json_snapshot!(summary);
    hub.shutdown().await;
}

#[tokio::test]
async fn resources_and_prompts_of_the_test_server() {
    let hub = start_ok(vec![("test", test_server(&[]))], HubOptions::default()).await;
    let outcome = json!({
        "resources": hub.list_resources("test").await.map_err(|e| e.to_string()),
        "read": hub.read_resource("test", "test://greeting").await.map_err(|e| e.to_string()),
        "prompts": hub.list_prompts("test").await.map_err(|e| e.to_string()),
        "get": hub.get_prompt("test", "greet", Some(json!({ "name": "Ada" }))).await.map_err(|e| e.to_string()),
    });
    insta::assert_json_snapshot!(outcome);
    hub.shutdown().await;
}

#[tokio::test]
async fn execute_routes_catalog_ids_to_tools_resources_and_prompts() {
    let hub = start_ok(vec![("test", test_server(&[]))], HubOptions::default()).await;
    let ok = |result: Option<Result<Value, String>>| result.expect("an MCP id").expect("a result");
    let echoed = ok(hub.execute("mcp:test:echo", json!({ "text": "hi" })).await);
    assert!(first_text(&echoed).contains("hi"), "{echoed}");
    let read = ok(hub
        .execute(
            "mcp-capability:test:resources/read",
            json!({ "uri": "test://greeting" }),
        )
        .await);
    assert_eq!(
        read,
        hub.read_resource("test", "test://greeting").await.unwrap()
    );
    let prompt = ok(hub
        .execute(
            "mcp-capability:test:prompts/get",
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
        )
        .await);
    assert_eq!(
        prompt,
        hub.get_prompt("test", "greet", Some(json!({ "name": "Ada" })))
            .await
            .unwrap()
    );
    assert!(
        ok(hub
            .execute("mcp-capability:test:resources/list", json!({}))
            .await)["resources"]
            .is_array()
    );
    assert!(
        ok(hub
            .execute("mcp-capability:test:prompts/list", json!({}))
            .await)["prompts"]
            .is_array()
    );
    // Without the capability id, `resources/list` is a tool name: this server has no such tool.
    let not_a_tool = hub
        .execute("mcp:test:resources/list", json!({}))
        .await
        .expect("an MCP id");
    assert!(not_a_tool.is_err(), "{not_a_tool:?}");
    assert!(
        hub.execute("openclaw:core:echo", json!({})).await.is_none(),
        "not an MCP id"
    );
    assert!(hub.execute("mcp:no-separator", json!({})).await.is_none());
    let unknown = hub
        .execute("mcp:elsewhere:echo", json!({}))
        .await
        .expect("an MCP id");
    assert_eq!(unknown, Err("unknown MCP server `elsewhere`".to_owned()));
    hub.shutdown().await;
}

/// A real MCP tool named like an MCP method is a tool: `execute` routes on the id's kind
/// (`mcp:` catalog id or `mcp-capability:` id), never on the tool's name.
#[tokio::test]
async fn tools_named_like_mcp_methods_are_called_as_tools() {
    let hub = start_ok(
        vec![("test", test_server(&["--capability-named-tools"]))],
        HubOptions::default(),
    )
    .await;
    let descriptors = hub.descriptors();
    for name in ["resources/list", "prompts/get"] {
        assert!(
            descriptors.iter().any(|tool| tool.name == name),
            "{name} listed"
        );
        let called = hub
            .execute(&format!("mcp:test:{name}"), json!({}))
            .await
            .expect("an MCP id")
            .expect("the tool answers");
        assert_eq!(
            called["structuredContent"],
            json!({ "tool": name }),
            "{called}"
        );
    }
    let listed = hub
        .execute("mcp-capability:test:resources/list", json!({}))
        .await
        .expect("an MCP capability id")
        .expect("resources listed");
    assert_eq!(listed["resources"][0]["uri"], "test://greeting");
    let prompt = hub
        .execute(
            "mcp-capability:test:prompts/get",
            json!({ "name": "greet", "arguments": { "name": "Ada" } }),
        )
        .await
        .expect("an MCP capability id")
        .expect("prompt");
    assert!(prompt["messages"].is_array(), "{prompt}");
    hub.shutdown().await;
}

/// What `execute` hands back to guest code names the server and gives a short reason; the
/// server's stderr (here with a host path), its command and rmcp's words stay with the host.
#[tokio::test]
async fn guest_messages_name_the_server_and_hide_host_details() {
    // A backoff far longer than the test: the second restart is refused by construction.
    let hour = Duration::from_secs(3600);
    let hub = start_ok(
        vec![("fragile", test_server(&[])), ("odd", test_server(&[]))],
        HubOptions::default().with_restart_backoff(hour, hour),
    )
    .await;
    let mut messages = Vec::new();
    let mut guest = |server: &str, result: Option<Result<Value, String>>| match result {
        Some(Err(message)) => {
            assert!(message.contains(&format!("`{server}`")), "{message}");
            for secret in [
                "rmcp",
                "/",
                "\\",
                "crashing",
                "stderr",
                "codemode-mcp-test-server",
            ] {
                assert!(!message.contains(secret), "{secret:?} in {message:?}");
            }
            messages.push(message);
        }
        other => panic!("expected a guest error, got {other:?}"),
    };
    guest("fragile", hub.execute("mcp:fragile:crash", json!({})).await);
    // The first restart is immediate: the server is back, and crashes again.
    guest("fragile", hub.execute("mcp:fragile:crash", json!({})).await);
    guest(
        "fragile",
        hub.execute("mcp:fragile:echo", json!({ "text": "again" }))
            .await,
    );
    guest("odd", hub.execute("mcp:odd:malformed", json!({})).await);
    guest("odd", hub.execute("mcp:odd:no_such_tool", json!({})).await);
    guest("odd", hub.execute("mcp:odd:echo", json!([1])).await);
    let restarting = messages.remove(2);
    assert!(
        restarting.starts_with(
            "MCP server `fragile` is not running (it exited; it is restarted on a call in 3"
        ),
        "{restarting}"
    );
    assert_eq!(
        messages,
        [
            "MCP server `fragile` is not running (it exited)",
            "MCP server `fragile` is not running (it exited)",
            "MCP server `odd` sent a malformed answer",
            "MCP server `odd` refused the request: unknown tool: no_such_tool (code -32602)",
            "invalid arguments for MCP server `odd`: arguments must be a JSON object, not an array",
        ]
    );
    // The host's typed error says when the next restart may happen.
    let host = hub
        .call_tool("fragile", "echo", json!({ "text": "host" }))
        .await;
    assert!(
        matches!(host, Err(McpError::Restarting { ref server, retry_in }) if server == "fragile" && retry_in > Duration::from_secs(3000)),
        "{host:?}"
    );
    hub.shutdown().await;

    // `slow_forever` never answers: the timeout fires by construction.
    let options = HubOptions::default().with_call_timeout(Duration::from_millis(1500));
    let hub = start_ok(vec![("slow", test_server(&[]))], options).await;
    assert_eq!(
        hub.execute("mcp:slow:slow_forever", json!({})).await,
        Some(Err(
            "MCP server `slow` did not answer within 1.5 s".to_owned()
        ))
    );
    hub.shutdown().await;
}

#[tokio::test]
async fn shutdown_leaves_no_process_behind() {
    let hub = start_ok(
        vec![("a", test_server(&[])), ("b", test_server(&[]))],
        HubOptions::default(),
    )
    .await;
    let pids: Vec<u32> = hub
        .servers()
        .iter()
        .filter_map(|info| info.process_id)
        .collect();
    assert_eq!(pids.len(), 2);
    assert!(pids.iter().all(|&pid| !process_is_gone(pid)));
    let other_handle = hub.clone();
    hub.shutdown().await;
    assert!(
        pids.iter().all(|&pid| process_is_gone(pid)),
        "left over: {pids:?}"
    );
    let after = other_handle
        .call_tool("a", "echo", json!({ "text": "x" }))
        .await;
    assert_eq!(
        after.err().map(|error| error.to_string()),
        Some("MCP server `a` was shut down".to_owned())
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn dropping_the_hub_stops_the_servers() {
    let hub = start_ok(vec![("a", test_server(&[]))], HubOptions::default()).await;
    let pids: Vec<u32> = hub
        .servers()
        .iter()
        .filter_map(|info| info.process_id)
        .collect();
    assert_eq!(pids.len(), 1);
    drop(hub);
    // The servers exit in the background once their stdin closes; poll for
    // that (bounded by 30 s, generous for a loaded machine) rather than
    // sleeping a fixed time.
    let mut gone = false;
    for _ in 0..600 {
        if pids.iter().all(|&pid| process_is_gone(pid)) {
            gone = true;
            break;
        }
        tokio::time::sleep(Duration::from_millis(50)).await;
    }
    assert!(gone, "left over after drop: {pids:?}");
}

#[tokio::test]
async fn server_everything_from_npm() {
    let config = McpServerConfig::new(npm_server("mcp-server-everything")).with_args(["stdio"]);
    let hub = start_ok(vec![("everything", config)], HubOptions::default()).await;
    let descriptors = hub.descriptors();
    let echo = descriptors
        .iter()
        .find(|descriptor| descriptor.name == "echo");
    assert_eq!(echo.map(|descriptor| descriptor.read_only), Some(true));
    assert!(descriptors.len() > 5, "{} tools", descriptors.len());
    let info = hub.server("everything");
    assert_eq!(
        info.as_ref()
            .map(|info| (info.has_resources, info.has_prompts)),
        Some((true, true))
    );

    let echoed = hub
        .call_tool("everything", "echo", json!({ "message": "hi" }))
        .await;
    assert_eq!(echoed.as_ref().map(first_text).ok(), Some("Echo: hi"));

    let structured = hub
        .call_tool(
            "everything",
            "get-structured-content",
            json!({ "location": "Chicago" }),
        )
        .await;
    assert!(
        structured.as_ref().is_ok_and(|result| result
            .get("structuredContent")
            .is_some_and(Value::is_object)),
        "{structured:?}"
    );

    let resources = hub.list_resources("everything").await;
    let uri = resources
        .as_ref()
        .ok()
        .and_then(|list| list.pointer("/resources/0/uri"))
        .and_then(Value::as_str)
        .map(str::to_owned);
    let Some(uri) = uri else {
        panic!("no resource listed: {resources:?}");
    };
    let read = hub.read_resource("everything", &uri).await;
    let text = read
        .as_ref()
        .ok()
        .and_then(|result| result.pointer("/contents/0/text"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(!text.is_empty(), "{read:?}");

    let prompt = hub
        .get_prompt(
            "everything",
            "args-prompt",
            Some(json!({ "city": "Lisbon" })),
        )
        .await;
    let prompt_text = prompt
        .as_ref()
        .ok()
        .and_then(|result| result.pointer("/messages/0/content/text"))
        .and_then(Value::as_str)
        .unwrap_or_default();
    assert!(prompt_text.contains("Lisbon"), "{prompt:?}");
    hub.shutdown().await;
}

#[tokio::test]
async fn server_filesystem_from_npm_reads_a_file() {
    let dir = std::env::temp_dir().join(format!("codemode-mcp-fs-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap_or_else(|error| panic!("{}: {error}", dir.display()));
    let dir = std::fs::canonicalize(&dir).unwrap_or(dir);
    let file = dir.join("note.txt");
    std::fs::write(&file, "code mode reads files\n").unwrap_or_else(|error| panic!("{error}"));
    let config = McpServerConfig::new(npm_server("mcp-server-filesystem"))
        .with_args([dir.display().to_string()]);
    let hub = start_ok(
        vec![("fs", config), ("test", test_server(&[]))],
        HubOptions::default(),
    )
    .await;
    let read_only: BTreeMap<String, bool> = hub
        .descriptors()
        .into_iter()
        .filter(|descriptor| {
            descriptor.origin == codemode_catalog::ToolOrigin::Mcp("fs".to_owned())
        })
        .map(|descriptor| (descriptor.name, descriptor.read_only))
        .collect();
    assert_eq!(read_only.get("read_text_file"), Some(&true));
    assert_eq!(read_only.get("write_file"), Some(&false));

    let read = hub
        .call_tool(
            "fs",
            "read_text_file",
            json!({ "path": file.display().to_string() }),
        )
        .await;
    assert_eq!(
        read.as_ref().map(first_text).ok(),
        Some("code mode reads files\n")
    );

    // Outside the allowed directory: the server reports a tool error.
    let denied = hub
        .call_tool("fs", "read_text_file", json!({ "path": "/etc/hostname" }))
        .await;
    assert_eq!(
        denied
            .as_ref()
            .ok()
            .and_then(|result| result.get("isError")),
        Some(&json!(true)),
        "{denied:?}"
    );

    // The filesystem server offers no prompts.
    let prompts = hub.list_prompts("fs").await;
    assert_eq!(
        prompts.err().map(|error| error.to_string()),
        Some("MCP server `fs` offers no prompts".to_owned())
    );
    hub.shutdown().await;
    let _ = std::fs::remove_dir_all(&dir);
}

#[test]
fn dropping_the_runtime_kills_the_servers() {
    let runtime = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build();
    let Ok(runtime) = runtime else {
        panic!("no runtime: {runtime:?}");
    };
    let hub = runtime.block_on(start_ok(
        vec![("a", test_server(&[]))],
        HubOptions::default(),
    ));
    let pids: Vec<u32> = hub
        .servers()
        .iter()
        .filter_map(|info| info.process_id)
        .collect();
    assert_eq!(pids.len(), 1);
    // The runtime goes first (a host exiting abruptly), then the hub.
    drop(runtime);
    drop(hub);
    // `kill_on_drop` sends SIGKILL synchronously; with no runtime left to
    // reap it, the child may linger as a zombie until this process exits.
    let killed = |pid: u32| match std::fs::read_to_string(format!("/proc/{pid}/stat")) {
        Err(_) => true,
        Ok(stat) => stat
            .rsplit(')')
            .next()
            .is_some_and(|rest| rest.trim_start().starts_with('Z')),
    };
    let mut all_killed = false;
    for _ in 0..600 {
        if pids.iter().all(|&pid| killed(pid)) {
            all_killed = true;
            break;
        }
        std::thread::sleep(Duration::from_millis(50));
    }
    assert!(all_killed, "still running: {pids:?}");
}

/// `notifications/tools/list_changed` makes the hub list the server's tools again; the change
/// counter moves once the new listing is in place (that is the signal this test waits on).
#[tokio::test]
async fn tools_list_changed_refreshes_the_listing() {
    let hub = start_ok(
        vec![("growing", test_server(&["--grow"]))],
        HubOptions::default(),
    )
    .await;
    let names = |hub: &McpHub| -> Vec<String> {
        hub.descriptors()
            .into_iter()
            .map(|tool| tool.name)
            .collect()
    };
    assert!(names(&hub).contains(&"grow".to_owned()));
    assert!(!names(&hub).contains(&"grown".to_owned()));
    let mut changes = hub.changes();
    changes.borrow_and_update();
    let grown = hub.call_tool("growing", "grow", json!({})).await;
    assert_eq!(
        grown.as_ref().map(first_text).ok(),
        Some("grown"),
        "{grown:?}"
    );
    tokio::time::timeout(Duration::from_secs(60), changes.changed())
        .await
        .expect("the listing changes within the failure bound")
        .expect("the hub is alive");
    assert!(
        names(&hub).contains(&"grown".to_owned()),
        "{:?}",
        names(&hub)
    );
    let called = hub.call_tool("growing", "grown", json!({})).await;
    assert_eq!(called.as_ref().map(first_text).ok(), Some("here"));
    hub.shutdown().await;
}
