//! The MCP server against rmcp's client, in process (the stdio code path over an in-memory
//! pipe), and its HTTP guard over a real socket. No test waits on a timer: every timeout below
//! is a failure bound only.

use std::sync::Arc;
use std::time::Duration;

use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::{
    ActivationRequest, AgentRunContext, CodeMode, CodeModeConfig, ToolCallContext, ToolError,
    ToolExecutor,
};
use codemode_mcp_server::{CodeModeServer, HttpOptions, MCP_PATH};
use rmcp::model::{CallToolRequestParams, CallToolResult};
use rmcp::service::RunningService;
use rmcp::{RoleClient, ServiceExt as _};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::sync::mpsc;
use tokio_util::sync::CancellationToken;

/// Failure bound for anything awaited in these tests.
const BOUND: Duration = Duration::from_secs(60);

/// Progress notifications and the metrics endpoint (issue 31).
mod observe;

/// `add` answers at once; `hold` reports that it started, then waits for its cancellation and
/// reports when it ends.
struct Tools {
    started: mpsc::UnboundedSender<()>,
    cancelled: mpsc::UnboundedSender<()>,
}

#[async_trait::async_trait]
impl ToolExecutor for Tools {
    async fn execute(
        &self,
        id: &str,
        input: Value,
        context: ToolCallContext,
    ) -> Result<Value, ToolError> {
        match id {
            "openclaw:core:add" => {
                let a = input["a"].as_f64().unwrap_or_default();
                let b = input["b"].as_f64().unwrap_or_default();
                Ok(json!({ "sum": a + b }))
            }
            "openclaw:core:hold" => {
                // Reports when the call ends: cancelled, or its future dropped.
                struct Report(mpsc::UnboundedSender<()>);
                impl Drop for Report {
                    fn drop(&mut self) {
                        let _ = self.0.send(());
                    }
                }
                let _report = Report(self.cancelled.clone());
                let _ = self.started.send(());
                context.cancellation.cancelled().await;
                Err(ToolError::new("cancelled"))
            }
            other => Err(ToolError::new(format!("Unknown tool id: {other}"))),
        }
    }
}

fn descriptor(name: &str) -> ToolDescriptor {
    ToolDescriptor {
        origin: ToolOrigin::Core,
        name: name.into(),
        label: None,
        description: format!("The {name} tool."),
        parameters: Some(json!({ "type": "object" })),
        direct_only: false,
        read_only: true,
    }
}

struct Fixture {
    server: CodeModeServer,
    started: mpsc::UnboundedReceiver<()>,
    cancelled: mpsc::UnboundedReceiver<()>,
}

fn fixture() -> Fixture {
    let (started_tx, started) = mpsc::unbounded_channel();
    let (cancelled_tx, cancelled) = mpsc::unbounded_channel();
    let tools = Tools {
        started: started_tx,
        cancelled: cancelled_tx,
    };
    let code_mode =
        CodeMode::builder(CodeModeConfig::enabled().build().unwrap(), Arc::new(tools)).build();
    let server = CodeModeServer::new(
        code_mode,
        Arc::new(|run: AgentRunContext| {
            ActivationRequest::new(vec![descriptor("add"), descriptor("hold")]).with_agent_run(run)
        }),
    );
    Fixture {
        server,
        started,
        cancelled,
    }
}

type Client = RunningService<RoleClient, ()>;

/// Connects an rmcp client to a fresh session; the handle ends when the session has ended.
async fn connect(server: &CodeModeServer) -> (Client, tokio::task::JoinHandle<()>) {
    let (client_io, server_io) = tokio::io::duplex(1 << 20);
    let (server_read, server_write) = tokio::io::split(server_io);
    let server = server.clone();
    let session = tokio::spawn(async move {
        server
            .serve_io(server_read, server_write)
            .await
            .expect("the session serves");
    });
    let (client_read, client_write) = tokio::io::split(client_io);
    let client = tokio::time::timeout(BOUND, ().serve((client_read, client_write)))
        .await
        .expect("bound")
        .expect("initialize");
    (client, session)
}

async fn call(client: &Client, tool: &str, arguments: Value) -> CallToolResult {
    let Value::Object(arguments) = arguments else {
        panic!("arguments must be an object")
    };
    let request = CallToolRequestParams::new(tool.to_owned()).with_arguments(arguments);
    tokio::time::timeout(BOUND, client.call_tool(request))
        .await
        .expect("bound")
        .expect("tools/call")
}

fn structured(result: &CallToolResult) -> &Value {
    result
        .structured_content
        .as_ref()
        .expect("structuredContent")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn list_exec_wait_other_session_and_close() {
    let mut fixture = fixture();
    let server = fixture.server.clone();
    let (client, session) = connect(&server).await;

    // tools/list: exactly the surface of code mode.
    let tools = client.list_all_tools().await.expect("tools/list");
    let names: Vec<&str> = tools.iter().map(|tool| tool.name.as_ref()).collect();
    assert_eq!(names, ["exec", "wait"]);
    assert_eq!(
        tools[0].input_schema.get("type"),
        Some(&json!("object")),
        "exec takes an object"
    );

    // exec: the result JSON as structuredContent and as text.
    let result = call(
        &client,
        "exec",
        json!({ "code": "return (await tools.add({ a: 2, b: 3 })).sum" }),
    )
    .await;
    assert_eq!(result.is_error, Some(false), "{:#}", structured(&result));
    let value = structured(&result);
    assert_eq!(value["status"], "completed", "{value:#}");
    assert_eq!(value["value"], 5);
    let text = result.content[0].as_text().expect("text").text.clone();
    assert_eq!(
        serde_json::from_str::<Value>(&text).expect("JSON text"),
        *value
    );

    // A failed run is a tool error with the stable message, not a protocol error.
    let failed = call(
        &client,
        "exec",
        json!({ "code": "throw new Error('boom')" }),
    )
    .await;
    assert_eq!(failed.is_error, Some(true));
    assert_eq!(structured(&failed)["status"], "failed");
    assert!(
        structured(&failed)["error"]
            .as_str()
            .unwrap_or_default()
            .contains("boom")
    );

    // Bad input: missing code is a tool error; an unknown tool is a protocol error; the
    // session keeps serving.
    let invalid = call(&client, "exec", json!({ "source": 1 })).await;
    assert_eq!(invalid.is_error, Some(true));
    assert_eq!(
        structured(&invalid)["code"],
        "invalid_input",
        "{:#}",
        structured(&invalid)
    );
    let unknown = client
        .call_tool(CallToolRequestParams::new("shell"))
        .await
        .expect_err("unknown tool");
    assert!(
        unknown.to_string().contains("unknown tool `shell`"),
        "{unknown}"
    );

    // A run that suspends, then `wait` in a later request.
    let waiting = call(
        &client,
        "exec",
        json!({ "code": "await yield_control(); return 'resumed'" }),
    )
    .await;
    assert_eq!(
        structured(&waiting)["status"],
        "waiting",
        "{:#}",
        structured(&waiting)
    );
    let run_id = structured(&waiting)["runId"]
        .as_str()
        .expect("runId")
        .to_owned();
    let done = call(&client, "wait", json!({ "runId": run_id })).await;
    assert_eq!(
        structured(&done)["status"],
        "completed",
        "{:#}",
        structured(&done)
    );
    assert_eq!(structured(&done)["value"], "resumed");

    // A second session cannot wait on the first session's run.
    let parked = call(
        &client,
        "exec",
        json!({ "code": "const held = tools.hold({}); await yield_control(); return await held" }),
    )
    .await;
    assert_eq!(structured(&parked)["status"], "waiting");
    let parked_id = structured(&parked)["runId"]
        .as_str()
        .expect("runId")
        .to_owned();
    tokio::time::timeout(BOUND, fixture.started.recv())
        .await
        .expect("bound")
        .expect("hold started");
    let (other, other_session) = connect(&server).await;
    let refused = call(&other, "wait", json!({ "runId": parked_id })).await;
    assert_eq!(refused.is_error, Some(true));
    assert!(
        structured(&refused)["error"]
            .as_str()
            .unwrap_or_default()
            .contains("belongs to a different session"),
        "{:#}",
        structured(&refused)
    );
    assert_eq!(
        server.code_mode().suspended_runs(),
        1,
        "refusal kept the run"
    );
    assert_eq!(server.open_sessions(), 2);

    // Closing the first session drops its run and cancels its host work.
    client.cancel().await.expect("close");
    tokio::time::timeout(BOUND, session)
        .await
        .expect("bound")
        .expect("session task");
    assert_eq!(server.code_mode().suspended_runs(), 0);
    tokio::time::timeout(BOUND, fixture.cancelled.recv())
        .await
        .expect("bound")
        .expect("hold cancelled");

    // The other session still serves.
    let still = call(&other, "exec", json!({ "code": "return 1" })).await;
    assert_eq!(structured(&still)["value"], 1);
    other.cancel().await.expect("close");
    tokio::time::timeout(BOUND, other_session)
        .await
        .expect("bound")
        .expect("session task");
    assert_eq!(server.open_sessions(), 0);
}

/// `maxOutputBytes` bounds the output items as the client receives them, envelopes included:
/// `for (;;) json(0)` stops with `output_limit_exceeded`, its `output` array serializes within
/// the default 65,536 bytes, and the rest of the result is its few fixed fields. The text
/// content is the same JSON as `structuredContent` (MCP's compatibility rule), so a tool
/// result's message carries it twice.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn output_items_are_counted_as_the_client_receives_them() {
    let fixture = fixture();
    let (client, session) = connect(&fixture.server).await;
    let result = call(&client, "exec", json!({ "code": "for (;;) json(0)" })).await;
    let value = structured(&result);
    assert_eq!(value["code"], "output_limit_exceeded", "{value:#}");
    let output = serde_json::to_string(&value["output"]).expect("JSON");
    let limit = 65_536;
    // Full up to one item (`{"type":"json","value":0}` and its comma: 26 bytes).
    assert!(
        output.len() <= limit && output.len() > limit - 26,
        "{} bytes of output",
        output.len()
    );
    let whole = serde_json::to_string(value).expect("JSON");
    assert!(
        whole.len() < limit + 1024,
        "{} bytes of result",
        whole.len()
    );
    let text = result.content[0].as_text().expect("text").text.clone();
    assert_eq!(serde_json::from_str::<Value>(&text).expect("JSON"), *value);
    client.cancel().await.expect("close");
    session.await.expect("session");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_json_rpc_gets_an_error_and_the_session_goes_on() {
    let fixture = fixture();
    let (mut client_io, server_io) = tokio::io::duplex(1 << 16);
    let (server_read, server_write) = tokio::io::split(server_io);
    let server = fixture.server.clone();
    let session = tokio::spawn(async move { server.serve_io(server_read, server_write).await });
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "raw", "version": "0" } } });
    let lines = [
        init.to_string(),
        json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }).to_string(),
        "{ this is not json".to_owned(),
        json!({ "jsonrpc": "2.0", "id": "x", "oops": true }).to_string(),
        json!([{ "jsonrpc": "2.0", "id": 9, "method": "ping" }]).to_string(),
        r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#.to_owned(),
        // Past the 16 MiB bound of one line.
        format!(
            "{{\"jsonrpc\":\"2.0\",\"id\":8,\"method\":\"ping\",\"pad\":\"{}\"}}",
            "x".repeat(17 << 20)
        ),
        json!({ "jsonrpc": "2.0", "id": 2, "method": "no/such/method" }).to_string(),
        json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call",
                "params": { "name": "exec", "arguments": [1, 2] } })
        .to_string(),
        json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call",
                "params": { "name": "exec", "arguments": { "code": "return 7" } } })
        .to_string(),
    ];
    for line in lines {
        client_io.write_all(line.as_bytes()).await.expect("write");
        client_io.write_all(b"\n").await.expect("write");
    }
    // Read until every request has its answer (or the bound fails the test): requests are
    // served concurrently, so answers may come in any order.
    let mut answers: Vec<Value> = Vec::new();
    let mut buffer = Vec::new();
    let null_errors = |answers: &[Value], code: i64| {
        answers
            .iter()
            .filter(|a| a["id"].is_null() && a["error"]["code"] == code)
            .count()
    };
    let complete = |answers: &[Value]| {
        [json!(2), json!(3), json!(4), json!("x")]
            .iter()
            .all(|id| answers.iter().any(|a| a["id"] == *id))
            && null_errors(answers, -32700) == 1
            && null_errors(answers, -32600) == 3
    };
    let read = async {
        while !complete(&answers) {
            let mut chunk = [0u8; 4096];
            let n = client_io.read(&mut chunk).await.expect("read");
            assert!(n > 0, "the server closed the stream");
            buffer.extend_from_slice(&chunk[..n]);
            while let Some(end) = buffer.iter().position(|b| *b == b'\n') {
                let line: Vec<u8> = buffer.drain(..=end).collect();
                answers.push(serde_json::from_slice(&line).expect("JSON line"));
            }
        }
    };
    tokio::time::timeout(BOUND, read).await.expect("bound");
    let by_id = |id: Value| answers.iter().find(|a| a["id"] == id).cloned();
    // Not JSON: a parse error. A batch, a big-integer id and an oversized line: invalid
    // requests with `id: null`; the oversized line's error names the bound.
    assert_eq!(null_errors(&answers, -32700), 1, "{answers:#?}");
    assert_eq!(null_errors(&answers, -32600), 3, "{answers:#?}");
    assert!(
        answers.iter().any(|a| a["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("16777216 bytes"))),
        "{answers:#?}"
    );
    assert!(
        by_id(json!(8)).is_none(),
        "the oversized request was not served"
    );
    let no_method = by_id(json!("x")).expect("answer to a message without a method");
    assert_eq!(no_method["error"]["code"], -32600, "{no_method}");
    let unknown = by_id(json!(2)).expect("answer to the unknown method");
    assert_eq!(unknown["error"]["code"], -32601, "{unknown}");
    let not_object = by_id(json!(3)).expect("answer to non-object arguments");
    assert!(not_object["error"].is_object(), "{not_object}");
    let ok = by_id(json!(4)).expect("answer to exec");
    assert_eq!(ok["result"]["structuredContent"]["value"], 7, "{ok}");
    drop(client_io);
    tokio::time::timeout(BOUND, session)
        .await
        .expect("bound")
        .expect("task")
        .expect("serves");
}

/// One raw HTTP/1.1 request; returns the status and the body.
async fn http(addr: std::net::SocketAddr, headers: &[(&str, &str)], body: &str) -> (u16, String) {
    let (status, _head, body) = http_response(addr, headers, body).await;
    (status, body)
}

/// One raw HTTP/1.1 request; returns the status, the head (status line and headers) and the
/// body.
async fn http_response(
    addr: std::net::SocketAddr,
    headers: &[(&str, &str)],
    body: &str,
) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut request = format!(
        "POST {MCP_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        addr.port(),
        body.len()
    );
    for (name, value) in headers {
        request.push_str(&format!("{name}: {value}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(body);
    stream.write_all(request.as_bytes()).await.expect("send");
    // An accepted initialize answers with an SSE stream that stays open: stop at its first
    // JSON-RPC message. Every other answer ends with the connection (`Connection: close`).
    let mut response = Vec::new();
    let mut chunk = [0u8; 8192];
    loop {
        let n = stream.read(&mut chunk).await.expect("read");
        if n == 0 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&response);
        if text.starts_with("HTTP/1.1 200")
            && text.contains("\"jsonrpc\"")
            && text.ends_with("\n\n")
        {
            break;
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .expect("a status line");
    let (head, body) = text
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_owned(), b.to_owned()))
        .unwrap_or_default();
    (status, head, body)
}

fn initialize_body() -> String {
    json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "raw", "version": "0" } } })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn http_guard_token_origin_body_and_session_bound() {
    let fixture = fixture();
    let server = fixture.server.clone().max_sessions(1);
    let shutdown = CancellationToken::new();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let serving = {
        let server = server.clone();
        let shutdown = shutdown.clone();
        let options = HttpOptions::default()
            .auth_token("s3cret")
            .max_body_bytes(64 * 1024);
        tokio::spawn(async move {
            server
                .serve_http(
                    "127.0.0.1:0".parse().expect("addr"),
                    options,
                    shutdown,
                    |addr| {
                        let _ = bound_tx.send(addr);
                    },
                )
                .await
        })
    };
    let addr = tokio::time::timeout(BOUND, bound_rx)
        .await
        .expect("bound")
        .expect("addr");
    let auth = ("Authorization", "Bearer s3cret");

    let (status, body) = http(addr, &[], &initialize_body()).await;
    assert_eq!(status, 401, "{body}");
    let (status, _) = http(
        addr,
        &[("Authorization", "Bearer wrong")],
        &initialize_body(),
    )
    .await;
    assert_eq!(status, 401);
    assert_eq!(server.open_sessions(), 0, "nothing ran");

    let (status, _) = http(
        addr,
        &[auth, ("Origin", "http://evil.example")],
        &initialize_body(),
    )
    .await;
    assert_eq!(status, 403, "a foreign Origin is refused");

    let huge = format!(
        "{{\"jsonrpc\":\"2.0\",\"id\":1,\"method\":\"ping\",\"pad\":\"{}\"}}",
        "x".repeat(100 * 1024)
    );
    let (status, _) = http(addr, &[auth], &huge).await;
    assert_eq!(status, 413, "a body past the bound is refused");

    let (status, body) = http(
        addr,
        &[auth, ("Origin", "http://localhost:3000")],
        &initialize_body(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    assert!(body.contains("\"result\""), "{body}");
    assert_eq!(server.open_sessions(), 1);
    let (status, body) = http(addr, &[auth], &initialize_body()).await;
    assert_eq!(status, 503, "{body}");
    assert!(body.contains("too many MCP sessions"), "{body}");

    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

/// The tool source is asked when a session activates: after the host's tools change (an
/// upstream's `tools/list_changed`), new sessions see the new catalog, open ones keep theirs.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sessions_activating_after_a_tool_change_see_the_new_tools() {
    use std::sync::atomic::{AtomicBool, Ordering};
    let grown = Arc::new(AtomicBool::new(false));
    let (started, _) = mpsc::unbounded_channel();
    let (cancelled, _) = mpsc::unbounded_channel();
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        Arc::new(Tools { started, cancelled }),
    )
    .build();
    let source_grown = Arc::clone(&grown);
    let server = CodeModeServer::new(
        code_mode,
        Arc::new(move |run: AgentRunContext| {
            let mut tools = vec![descriptor("add")];
            if source_grown.load(Ordering::SeqCst) {
                tools.push(descriptor("grown"));
            }
            ActivationRequest::new(tools).with_agent_run(run)
        }),
    );
    let names = "return ALL_TOOLS.map(t => t.name)";
    let (before, before_session) = connect(&server).await;
    let listed = call(&before, "exec", json!({ "code": names })).await;
    assert_eq!(structured(&listed)["value"], json!(["add"]));
    grown.store(true, Ordering::SeqCst);
    let (after, after_session) = connect(&server).await;
    let listed = call(&after, "exec", json!({ "code": names })).await;
    assert_eq!(structured(&listed)["value"], json!(["add", "grown"]));
    let listed = call(&before, "exec", json!({ "code": names })).await;
    assert_eq!(
        structured(&listed)["value"],
        json!(["add"]),
        "an open session keeps its catalog"
    );
    for (client, session) in [(before, before_session), (after, after_session)] {
        client.cancel().await.expect("close");
        tokio::time::timeout(BOUND, session)
            .await
            .expect("bound")
            .expect("session task");
    }
}

/// One session cannot hold every suspended run of the server: past its bound, its oldest
/// suspended run is cancelled.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_session_keeps_at_most_its_bound_of_suspended_runs() {
    let fixture = fixture();
    let server = fixture.server.clone().max_parked_runs_per_session(2);
    let (client, session) = connect(&server).await;
    let mut run_ids = Vec::new();
    for _ in 0..3 {
        let waiting = call(
            &client,
            "exec",
            json!({ "code": "await yield_control(); return 1" }),
        )
        .await;
        assert_eq!(structured(&waiting)["status"], "waiting");
        run_ids.push(
            structured(&waiting)["runId"]
                .as_str()
                .expect("runId")
                .to_owned(),
        );
    }
    assert_eq!(server.code_mode().suspended_runs(), 2);
    let oldest = call(&client, "wait", json!({ "runId": run_ids[0] })).await;
    assert_eq!(
        structured(&oldest)["error"],
        "code mode run is unavailable or expired.",
        "{:#}",
        structured(&oldest)
    );
    for run_id in &run_ids[1..] {
        let done = call(&client, "wait", json!({ "runId": run_id })).await;
        assert_eq!(
            structured(&done)["status"],
            "completed",
            "{:#}",
            structured(&done)
        );
    }
    assert_eq!(server.code_mode().suspended_runs(), 0);
    client.cancel().await.expect("close");
    tokio::time::timeout(BOUND, session)
        .await
        .expect("bound")
        .expect("session task");
}

/// A client that goes away while its `exec` runs: the run stops, its host work is cancelled,
/// nothing is parked, and other sessions keep being served. (rmcp first gives in-flight
/// requests a few seconds to answer, then cancels them: the run ends within that bound.)
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_disconnecting_mid_run_cancels_the_run() {
    let mut fixture = fixture();
    let server = fixture.server.clone();
    let (other, other_session) = connect(&server).await;
    let (client, session) = connect(&server).await;
    let peer = client.peer().clone();
    let in_flight = tokio::spawn(async move {
        let Value::Object(arguments) = json!({ "code": "return await tools.hold({})" }) else {
            unreachable!()
        };
        peer.call_tool(CallToolRequestParams::new("exec").with_arguments(arguments))
            .await
    });
    tokio::time::timeout(BOUND, fixture.started.recv())
        .await
        .expect("bound")
        .expect("hold started");
    client.cancel().await.expect("close");
    tokio::time::timeout(BOUND, session)
        .await
        .expect("bound")
        .expect("session task");
    tokio::time::timeout(BOUND, fixture.cancelled.recv())
        .await
        .expect("bound")
        .expect("hold cancelled");
    assert!(
        tokio::time::timeout(BOUND, in_flight)
            .await
            .expect("bound")
            .expect("task")
            .is_err(),
        "the call has no answer"
    );
    assert_eq!(server.code_mode().suspended_runs(), 0);
    let still = call(&other, "exec", json!({ "code": "return 2" })).await;
    assert_eq!(structured(&still)["value"], 2);
    other.cancel().await.expect("close");
    tokio::time::timeout(BOUND, other_session)
        .await
        .expect("bound")
        .expect("session task");
}

/// Serves `server` over HTTP with its sessions kept in `store`; returns the address, the
/// shutdown token and the serving task.
async fn serve_restorable(
    server: &CodeModeServer,
    store: &Arc<dyn codemode_journal::JournalStore>,
) -> (
    std::net::SocketAddr,
    CancellationToken,
    tokio::task::JoinHandle<Result<(), codemode_mcp_server::ServeError>>,
) {
    let shutdown = CancellationToken::new();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let options = HttpOptions::default().restorable_sessions(
        Arc::clone(store),
        codemode_mcp_server::DEFAULT_SESSION_RETENTION,
    );
    let serving = {
        let server = server.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            server
                .serve_http(
                    "127.0.0.1:0".parse().expect("addr"),
                    options,
                    shutdown,
                    |addr| {
                        let _ = bound_tx.send(addr);
                    },
                )
                .await
        })
    };
    let addr = tokio::time::timeout(BOUND, bound_rx)
        .await
        .expect("bound")
        .expect("addr");
    (addr, shutdown, serving)
}

/// A journaled server on `store`: a fresh `CodeMode`, as a restarted process has.
fn journaled_server(store: &Arc<dyn codemode_journal::JournalStore>) -> CodeModeServer {
    let (started, _) = mpsc::unbounded_channel();
    let (cancelled, _) = mpsc::unbounded_channel();
    let code_mode = CodeMode::builder(
        CodeModeConfig::enabled().build().unwrap(),
        Arc::new(Tools { started, cancelled }),
    )
    .journal(Arc::clone(store))
    .build();
    CodeModeServer::new(
        code_mode,
        Arc::new(|run: AgentRunContext| {
            ActivationRequest::new(vec![descriptor("add")]).with_agent_run(run)
        }),
    )
}

/// The JSON-RPC message of an SSE (or plain JSON) answer.
fn rpc_answer(body: &str) -> Value {
    body.lines()
        .filter_map(|line| line.strip_prefix("data:"))
        .chain(std::iter::once(body))
        .find_map(|text| serde_json::from_str::<Value>(text.trim()).ok())
        .unwrap_or_else(|| panic!("no JSON-RPC message in {body}"))
}

fn tool_call(id: u64, tool: &str, arguments: Value) -> String {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": tool, "arguments": arguments } })
    .to_string()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_returning_to_a_restarted_server_goes_on_in_its_session() {
    let dir = std::env::temp_dir().join(format!(
        "codemode-serve-restore-{}-{}",
        std::process::id(),
        uuid_like()
    ));
    std::fs::create_dir_all(&dir).expect("temp dir");
    let address = format!("sqlite:{}", dir.join("state.db").display());
    let store = codemode_journal::open(&address).await.expect("sqlite");

    // The first server: initialize, then an exec that parks in a yield.
    let first = journaled_server(&store);
    let (addr, shutdown, serving) = serve_restorable(&first, &store).await;
    let (status, head, body) = http_response(addr, &[], &initialize_body()).await;
    assert_eq!(status, 200, "{body}");
    let session_id = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("an Mcp-Session-Id");
    let session = ("Mcp-Session-Id", session_id.as_str());
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let (status, _) = http(addr, &[session], &initialized.to_string()).await;
    assert_eq!(status, 202);
    let code = "const a = await tools.add({ a: 1, b: 2 }); await yield_control(); \
                const b = await tools.add({ a: a.sum, b: 4 }); return b.sum;";
    let (status, body) = http(
        addr,
        &[session],
        &tool_call(2, "exec", json!({ "code": code })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let waiting = rpc_answer(&body);
    let waiting = &waiting["result"]["structuredContent"];
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    let run_id = waiting["runId"].as_str().expect("a runId").to_owned();

    // A reader of the state file cannot resume the session: its id is in no row, neither as the
    // transport session's key nor in its run's scope.
    let now = i64::try_from(
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .expect("clock")
            .as_millis(),
    )
    .expect("ms");
    assert_eq!(
        store
            .load_transport_session(&session_id, now)
            .await
            .expect("load"),
        None
    );
    let scope = store
        .scope(&run_id, now)
        .await
        .expect("scope")
        .expect("the run is journaled");
    for field in [&scope.session_id, &scope.session_key, &scope.agent_run_id] {
        let field = field.as_deref().expect("a scope field");
        assert!(!field.contains(&session_id), "{field}");
    }
    for suffix in ["", "-wal"] {
        let file = dir.join(format!("state.db{suffix}"));
        let bytes = std::fs::read(&file).unwrap_or_default();
        assert!(
            !bytes
                .windows(session_id.len())
                .any(|window| window == session_id.as_bytes()),
            "{} holds the session id",
            file.display()
        );
    }

    // The server stops and its process state goes with it.
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
    drop(first);

    // A new server on the same store: the client comes back with its session id, no new
    // initialize, and its run goes on.
    let second = journaled_server(&store);
    let (addr, shutdown, serving) = serve_restorable(&second, &store).await;
    // One `wait`, as with the live run: the replay goes past the yield the run parked in.
    let (status, body) = http(
        addr,
        &[session],
        &tool_call(3, "wait", json!({ "runId": run_id })),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    let done = rpc_answer(&body)["result"]["structuredContent"].clone();
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["value"], 7, "{done}");

    // An unknown session id is still refused.
    let (status, _) = http(
        addr,
        &[("Mcp-Session-Id", "not-a-session")],
        &tool_call(6, "wait", json!({ "runId": run_id })),
    )
    .await;
    assert_eq!(status, 404);
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
    let _ = std::fs::remove_dir_all(dir);
}

fn uuid_like() -> u128 {
    std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos())
}

/// Serves `server` over HTTP with `options` on a loopback port.
async fn serve_with(
    server: &CodeModeServer,
    options: HttpOptions,
) -> (
    std::net::SocketAddr,
    CancellationToken,
    tokio::task::JoinHandle<Result<(), codemode_mcp_server::ServeError>>,
) {
    let shutdown = CancellationToken::new();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let serving = {
        let server = server.clone();
        let shutdown = shutdown.clone();
        tokio::spawn(async move {
            server
                .serve_http(
                    "127.0.0.1:0".parse().expect("addr"),
                    options,
                    shutdown,
                    |addr| {
                        let _ = bound_tx.send(addr);
                    },
                )
                .await
        })
    };
    let addr = tokio::time::timeout(BOUND, bound_rx)
        .await
        .expect("bound")
        .expect("addr");
    (addr, shutdown, serving)
}

/// Sends `request` as it is (request line, headers, body) and reads the answer: the status,
/// the head and the body (up to the first JSON-RPC message of an SSE stream).
async fn raw_http(addr: std::net::SocketAddr, request: &str) -> (u16, String, String) {
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let read = async {
        let mut response = Vec::new();
        let mut chunk = [0u8; 8192];
        loop {
            let n = stream.read(&mut chunk).await.unwrap_or(0);
            if n == 0 {
                break;
            }
            response.extend_from_slice(&chunk[..n]);
            let text = String::from_utf8_lossy(&response);
            if text.starts_with("HTTP/1.1 200")
                && text.contains("\"jsonrpc\"")
                && text.ends_with("\n\n")
            {
                break;
            }
            if let Some((head, body)) = text.split_once("\r\n\r\n") {
                let length = head.lines().find_map(|line| {
                    let (name, value) = line.split_once(':')?;
                    name.eq_ignore_ascii_case("content-length")
                        .then(|| value.trim().parse::<usize>().ok())
                        .flatten()
                });
                if length.is_some_and(|length| body.len() >= length) {
                    break;
                }
            }
        }
        response
    };
    let response = tokio::time::timeout(BOUND, read).await.expect("an answer");
    let text = String::from_utf8_lossy(&response).into_owned();
    let status = text
        .get(9..12)
        .and_then(|s| s.parse().ok())
        .unwrap_or_else(|| panic!("a status line in {text:?}"));
    let (head, body) = text
        .split_once("\r\n\r\n")
        .map(|(h, b)| (h.to_owned(), b.to_owned()))
        .unwrap_or_default();
    (status, head, body)
}

/// A POST of `body` to `target` with `headers` (no `Host` unless given).
fn post(target: &str, headers: &[&str], body: &str) -> String {
    let mut request = format!(
        "POST {target} HTTP/1.1\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        body.len()
    );
    for header in headers {
        request.push_str(header);
        request.push_str("\r\n");
    }
    request.push_str("\r\n");
    request.push_str(body);
    request
}

fn header_value(head: &str, name: &str) -> Option<String> {
    head.lines().find_map(|line| {
        let (key, value) = line.split_once(':')?;
        key.eq_ignore_ascii_case(name)
            .then(|| value.trim().to_owned())
    })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn headers_are_checked_strictly_and_every_one_of_them() {
    let fixture = fixture();
    let (addr, shutdown, serving) = serve_with(&fixture.server, HttpOptions::default()).await;
    let port = addr.port();
    let host = format!("Host: 127.0.0.1:{port}");
    let init = initialize_body();

    // Refused: two Host headers (the second foreign), two Origin headers, an absolute-form
    // target naming a foreign host, origins that only start like a loopback origin.
    let refused: Vec<(String, u16)> = vec![
        (
            post(MCP_PATH, &["Host: localhost", "Host: evil.com"], &init),
            400,
        ),
        (
            post(MCP_PATH, &["Host: evil.com", "Host: localhost"], &init),
            400,
        ),
        (post(MCP_PATH, &[], &init), 400),
        (
            post(
                MCP_PATH,
                &[&host, "Origin: http://localhost", "Origin: http://evil.com"],
                &init,
            ),
            403,
        ),
        (
            post(
                &format!("http://evil.com{MCP_PATH}"),
                &["Host: localhost"],
                &init,
            ),
            403,
        ),
        (
            post(
                MCP_PATH,
                &[&host, &format!("Origin: http://localhost:{port}.evil.com")],
                &init,
            ),
            403,
        ),
        (
            post(MCP_PATH, &[&host, "Origin: http://localhost:abc"], &init),
            403,
        ),
        (
            post(MCP_PATH, &[&host, "Origin: http://localhost/path"], &init),
            403,
        ),
        (
            post(
                MCP_PATH,
                &[&host, "Origin: http://localhost.evil.com"],
                &init,
            ),
            403,
        ),
        (post(MCP_PATH, &[&host, "Origin: null"], &init), 403),
    ];
    for (request, expected) in &refused {
        let (status, _, body) = raw_http(addr, request).await;
        assert_eq!(status, *expected, "{request}\n{body}");
    }
    assert_eq!(
        fixture.server.open_sessions(),
        0,
        "no refused request opened a session"
    );

    // Accepted: https loopback origins, with and without a port, and an absolute-form target
    // that names an allowed host.
    for origin in [
        "https://localhost",
        "https://127.0.0.1:8443",
        "https://[::1]:1",
    ] {
        let request = post(MCP_PATH, &[&host, &format!("Origin: {origin}")], &init);
        let (status, head, body) = raw_http(addr, &request).await;
        assert_eq!(status, 200, "{origin}: {body}");
        let session = header_value(&head, "mcp-session-id").expect("a session id");
        let delete = format!(
            "DELETE {MCP_PATH} HTTP/1.1\r\n{host}\r\nMcp-Session-Id: {session}\r\n\
             Connection: close\r\n\r\n"
        );
        let (status, _, body) = raw_http(addr, &delete).await;
        assert_eq!(
            status, 200,
            "a DELETE that ends a session answers 200: {body}"
        );
    }
    let absolute = post(
        &format!("http://127.0.0.1:{port}{MCP_PATH}"),
        &[&host],
        &init,
    );
    let (status, head, body) = raw_http(addr, &absolute).await;
    assert_eq!(status, 200, "{body}");
    assert!(header_value(&head, "mcp-session-id").is_some());

    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_declared_length_past_the_bound_gets_413_at_once() {
    let fixture = fixture();
    let options = HttpOptions::default().max_body_bytes(64 * 1024);
    let (addr, shutdown, serving) = serve_with(&fixture.server, options).await;
    // The body is never sent: the answer must not wait for it.
    let request = format!(
        "POST {MCP_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 99999999999\r\n\r\n",
        addr.port()
    );
    let (status, _, body) = raw_http(addr, &request).await;
    assert_eq!(status, 413, "{body}");
    let answer: Value = serde_json::from_str(&body).expect("a JSON-RPC error");
    assert!(answer["id"].is_null(), "{answer}");
    assert!(
        answer["error"]["message"]
            .as_str()
            .is_some_and(|m| m.contains("65536")),
        "{answer}"
    );
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_messages_over_http_get_json_rpc_errors() {
    let fixture = fixture();
    let (addr, shutdown, serving) = serve_with(&fixture.server, HttpOptions::default()).await;
    let cases: [(&str, i64, Value); 6] = [
        ("{not json", -32700, Value::Null),
        (
            r#"[{"jsonrpc":"2.0","id":1,"method":"ping"}]"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":null,"method":"ping"}"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":123456789012345678901234567890,"method":"ping"}"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":"q","result":{},"error":{}}"#,
            -32600,
            Value::Null,
        ),
        (
            r#"{"jsonrpc":"2.0","id":5,"method":"initialize","params":7}"#,
            -32602,
            json!(5),
        ),
    ];
    for (body, code, id) in cases {
        let (status, head, answer) = http_response(addr, &[], body).await;
        assert_eq!(status, 400, "{body}: {answer}");
        assert!(
            header_value(&head, "content-type").is_some_and(|t| t.contains("application/json")),
            "{head}"
        );
        let answer: Value = serde_json::from_str(&answer).expect("a JSON-RPC error");
        assert_eq!(answer["jsonrpc"], "2.0", "{answer}");
        assert_eq!(answer["error"]["code"], code, "{body}: {answer}");
        assert_eq!(answer["id"], id, "{body}: {answer}");
    }
    assert_eq!(fixture.server.open_sessions(), 0);
    // A well-formed message still opens a session.
    let (status, _, body) = http_response(addr, &[], &initialize_body()).await;
    assert_eq!(status, 200, "{body}");
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

/// Ends when the peer has closed `stream` (a read gives 0 bytes or an error).
async fn closed(stream: &mut tokio::net::TcpStream) {
    let mut chunk = [0u8; 1024];
    loop {
        match stream.read(&mut chunk).await {
            Ok(0) | Err(_) => return,
            Ok(_) => {}
        }
    }
}

/// Reads one whole answer with a `Content-Length` from a kept-alive connection.
async fn read_answer(stream: &mut tokio::net::TcpStream) -> (u16, String) {
    let mut response = Vec::new();
    let mut chunk = [0u8; 4096];
    loop {
        let n = stream.read(&mut chunk).await.expect("read");
        assert!(n > 0, "the connection closed before its answer");
        response.extend_from_slice(&chunk[..n]);
        let text = String::from_utf8_lossy(&response).into_owned();
        if let Some((head, body)) = text.split_once("\r\n\r\n") {
            let length = header_value(head, "content-length")
                .and_then(|length| length.parse::<usize>().ok())
                .unwrap_or(0);
            if body.len() >= length {
                let status = text.get(9..12).and_then(|s| s.parse().ok()).unwrap_or(0);
                return (status, text);
            }
        }
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn connections_that_send_nothing_useful_are_closed_and_a_client_is_served_throughout() {
    let fixture = fixture();
    let options = HttpOptions::default()
        .auth_token("s3cret")
        .connection_limits(Duration::from_millis(300), Duration::from_millis(300), 1000);
    let (addr, shutdown, serving) = serve_with(&fixture.server, options).await;
    let host = format!("Host: 127.0.0.1:{}", addr.port());
    // Idle from the start; half a request head; a whole head and a body that stalls.
    let mut idle = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let mut partial = tokio::net::TcpStream::connect(addr).await.expect("connect");
    partial
        .write_all(
            format!(
                "POST {MCP_PATH} HTTP/1.1\r\n{host}\r\nX-Pad: {}",
                "a".repeat(4096)
            )
            .as_bytes(),
        )
        .await
        .expect("send");
    let mut stalled = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stalled
        .write_all(
            format!(
                "POST {MCP_PATH} HTTP/1.1\r\n{host}\r\nAuthorization: Bearer s3cret\r\n\
                 Content-Type: application/json\r\nAccept: application/json, text/event-stream\r\n\
                 Content-Length: 100\r\n\r\n{{\"jsonrpc\""
            )
            .as_bytes(),
        )
        .await
        .expect("send");
    // An authenticated client is served meanwhile.
    let (status, body) = http(
        addr,
        &[("Authorization", "Bearer s3cret")],
        &initialize_body(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    for stream in [&mut idle, &mut partial, &mut stalled] {
        tokio::time::timeout(Duration::from_secs(10), closed(stream))
            .await
            .expect("the server closes a connection that sends nothing useful");
    }
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn unauthenticated_connections_are_capped_and_an_authenticated_one_is_kept() {
    let fixture = fixture();
    // Timeouts far past the test: only the cap closes a connection here.
    let options = HttpOptions::default()
        .auth_token("s3cret")
        .connection_limits(Duration::from_secs(600), Duration::from_secs(600), 4);
    let (addr, shutdown, serving) = serve_with(&fixture.server, options).await;
    let host = format!("Host: 127.0.0.1:{}", addr.port());
    // A kept-alive connection that authenticated with a request (a GET without a session:
    // refused by rmcp, but past the guard).
    let mut kept = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let get = format!(
        "GET {MCP_PATH} HTTP/1.1\r\n{host}\r\nAuthorization: Bearer s3cret\r\n\
         Accept: text/event-stream\r\n\r\n"
    );
    kept.write_all(get.as_bytes()).await.expect("send");
    let (status, answer) = tokio::time::timeout(BOUND, read_answer(&mut kept))
        .await
        .expect("an answer");
    assert!((400..500).contains(&status), "{answer}");
    // Four idle connections fill the cap; once they have had their grace to send a request,
    // each newcomer closes the oldest of them.
    let mut idle = Vec::new();
    for _ in 0..4 {
        idle.push(tokio::net::TcpStream::connect(addr).await.expect("connect"));
    }
    tokio::time::sleep(Duration::from_secs(3)).await;
    for _ in 0..4 {
        idle.push(tokio::net::TcpStream::connect(addr).await.expect("connect"));
    }
    for stream in idle.iter_mut().take(4) {
        tokio::time::timeout(BOUND, closed(stream))
            .await
            .expect("the oldest unauthenticated connections are closed");
    }
    // The authenticated connection is still served, and so is a new client.
    kept.write_all(get.as_bytes()).await.expect("send");
    let (status, answer) = tokio::time::timeout(BOUND, read_answer(&mut kept))
        .await
        .expect("an answer");
    assert!((400..500).contains(&status), "{answer}");
    let (status, body) = http(
        addr,
        &[("Authorization", "Bearer s3cret")],
        &initialize_body(),
    )
    .await;
    assert_eq!(status, 200, "{body}");
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn greedy_sessions_cannot_keep_another_from_parking() {
    let fixture = fixture();
    let server = fixture.server.clone();
    let park = json!({ "code": "await yield_control(); return 1" });
    // Four sessions park 16 runs each: the store's 64 are taken.
    let mut greedy = Vec::new();
    for _ in 0..4 {
        let (client, session) = connect(&server).await;
        let mut runs = Vec::new();
        for _ in 0..16 {
            let parked = call(&client, "exec", park.clone()).await;
            let parked = structured(&parked);
            assert_eq!(parked["status"], "waiting", "{parked}");
            runs.push(parked["runId"].as_str().expect("a runId").to_owned());
        }
        greedy.push((client, session, runs));
    }
    assert_eq!(
        server.code_mode().suspended_runs(),
        codemode_core::MAX_SUSPENDED_RUNS
    );
    // A fifth session still parks, twice: its share is 64 / 5 runs.
    let (fifth, fifth_session) = connect(&server).await;
    for _ in 0..2 {
        let parked = call(&fifth, "exec", park.clone()).await;
        assert_eq!(structured(&parked)["status"], "waiting", "{parked:?}");
    }
    assert_eq!(
        server.code_mode().suspended_runs(),
        codemode_core::MAX_SUSPENDED_RUNS
    );
    // What made room: the oldest runs of greedy sessions, not anything of the fifth.
    let mut lost = 0;
    for (client, _, runs) in &greedy {
        let first = call(client, "wait", json!({ "runId": runs[0] })).await;
        if structured(&first)["status"] == "failed" {
            lost += 1;
        }
    }
    assert_eq!(lost, 2, "one oldest run of a greedy session per park");
    for (client, session, _) in greedy {
        client.cancel().await.expect("close");
        tokio::time::timeout(BOUND, session)
            .await
            .expect("bound")
            .expect("session task");
    }
    fifth.cancel().await.expect("close");
    tokio::time::timeout(BOUND, fifth_session)
        .await
        .expect("bound")
        .expect("session task");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_burst_of_clients_past_the_cap_is_served() {
    let fixture = fixture();
    let options = HttpOptions::default()
        .auth_token("s3cret")
        .connection_limits(Duration::from_secs(600), Duration::from_secs(600), 4);
    let (addr, shutdown, serving) = serve_with(&fixture.server, options).await;
    let host = format!("Host: 127.0.0.1:{}", addr.port());
    // Twelve clients connect at once, past a cap of 4, then each sends its request.
    let mut streams = Vec::new();
    for _ in 0..12 {
        streams.push(tokio::net::TcpStream::connect(addr).await.expect("connect"));
    }
    let get = format!(
        "GET {MCP_PATH} HTTP/1.1\r\n{host}\r\nAuthorization: Bearer s3cret\r\n\
         Accept: text/event-stream\r\n\r\n"
    );
    for stream in &mut streams {
        stream.write_all(get.as_bytes()).await.expect("send");
    }
    for stream in &mut streams {
        let (status, answer) = tokio::time::timeout(BOUND, read_answer(stream))
            .await
            .expect("an answer");
        assert!((400..500).contains(&status), "{answer}");
    }
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_body_that_trickles_gets_408_within_the_header_timeout() {
    let fixture = fixture();
    // Idle timeout far past the test: only the body deadline can end this request.
    let options = HttpOptions::default().connection_limits(
        Duration::from_millis(300),
        Duration::from_secs(600),
        32,
    );
    let (addr, shutdown, serving) = serve_with(&fixture.server, options).await;
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    let head = format!(
        "POST {MCP_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: 1000\r\n\r\n{{",
        addr.port()
    );
    stream.write_all(head.as_bytes()).await.expect("send");
    // A byte every 100 ms: never idle, never done. The answer comes while it trickles.
    let trickle = async {
        let mut answer = Vec::new();
        let mut chunk = [0u8; 4096];
        loop {
            tokio::select! {
                read = stream.read(&mut chunk) => {
                    let n = read.unwrap_or(0);
                    if n == 0 {
                        break;
                    }
                    answer.extend_from_slice(&chunk[..n]);
                }
                () = tokio::time::sleep(Duration::from_millis(100)) => {
                    let _ = stream.write_all(b" ").await;
                }
            }
        }
        String::from_utf8_lossy(&answer).into_owned()
    };
    let answer = tokio::time::timeout(Duration::from_secs(10), trickle)
        .await
        .expect("the trickling request is answered and closed");
    assert!(answer.starts_with("HTTP/1.1 408"), "{answer}");
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_request_head_past_64_kib_is_refused() {
    let fixture = fixture();
    let (addr, shutdown, serving) = serve_with(&fixture.server, HttpOptions::default()).await;
    let request = format!(
        "POST {MCP_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nX-Pad: {}\r\n\
         Content-Length: 0\r\nConnection: close\r\n\r\n",
        addr.port(),
        "a".repeat(100 * 1024)
    );
    // Refused before the guard or rmcp, which would answer with a JSON-RPC body.
    let (status, _, body) = raw_http(addr, &request).await;
    assert_eq!(status, 431, "{body}");
    assert!(!body.contains("jsonrpc"), "{body}");
    shutdown.cancel();
    tokio::time::timeout(BOUND, serving)
        .await
        .expect("bound")
        .expect("task")
        .expect("served");
}

/// `wait` arguments reach code mode as sent: `terminate: true` ends a parked run over MCP, its
/// in-flight call cancelled, and a malformed `terminate` is refused with its stable message.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn wait_with_terminate_ends_a_run_over_mcp() {
    let mut fixture = fixture();
    let (client, session) = connect(&fixture.server).await;
    let parked = call(
        &client,
        "exec",
        json!({ "code": "const held = tools.hold({}); await yield_control(); return await held" }),
    )
    .await;
    assert_eq!(structured(&parked)["status"], "waiting");
    let run_id = structured(&parked)["runId"].clone();
    tokio::time::timeout(BOUND, fixture.started.recv())
        .await
        .expect("bound")
        .expect("hold started");
    let odd = call(&client, "wait", json!({ "runId": run_id, "terminate": 1 })).await;
    assert_eq!(structured(&odd)["error"], "terminate must be a boolean.");
    let ended = call(
        &client,
        "wait",
        json!({ "runId": run_id, "terminate": true }),
    )
    .await;
    assert_eq!(ended.is_error, Some(true));
    assert_eq!(
        structured(&ended)["code"],
        "terminated",
        "{:#}",
        structured(&ended)
    );
    tokio::time::timeout(BOUND, fixture.cancelled.recv())
        .await
        .expect("bound")
        .expect("hold cancelled");
    let gone = call(&client, "wait", json!({ "runId": run_id })).await;
    assert_eq!(structured(&gone)["reason"], "unknown");
    client.cancel().await.expect("close");
    tokio::time::timeout(BOUND, session)
        .await
        .expect("bound")
        .expect("session ended");
}
