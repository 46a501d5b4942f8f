//! `codemode serve --otlp-endpoint`: the spans of a client's cells reach a real OTLP receiver
//! (in this test process), in the client's trace when its request carried `_meta.traceparent`,
//! and in a trace of their own when that was malformed. The server sends its last spans when it
//! exits, so the test closes stdin, waits for the exit, and only then reads the receiver.

use std::io::{BufRead, Write};
use std::process::{Command, Stdio};

use codemode_telemetry::receiver::{OtlpReceiver, ReceivedSpan};
use serde_json::{Value, json};

const CLIENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn by<'a>(spans: &'a [ReceivedSpan], name: &str, parent: &str) -> Vec<&'a ReceivedSpan> {
    spans
        .iter()
        .filter(|span| span.name == name && span.parent_span_id == parent)
        .collect()
}

#[test]
fn serve_exports_a_clients_cell_into_its_trace() {
    let receiver = OtlpReceiver::start().expect("a receiver");
    let init = json!({ "jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "cli-test", "version": "0" } } });
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    let code = "const e = await tools.echo({ x: 1 }); const s = await tools.add({ a: 2, b: 3 }); \
                await yield_control(); return e.x + s.sum;";
    let exec = json!({ "jsonrpc": "2.0", "id": 2, "method": "tools/call", "params": {
        "_meta": { "traceparent": CLIENT },
        "name": "exec", "arguments": { "code": code } } });
    let hostile = json!({ "jsonrpc": "2.0", "id": 4, "method": "tools/call", "params": {
        "_meta": { "traceparent": "00-\u{0}garbage-that-is-no-trace-context-at-all" },
        "name": "exec", "arguments": { "code": "return 'fine'" } } });
    let mut child = Command::new(env!("CARGO_BIN_EXE_codemode"))
        .args(["serve", "--demo", "--otlp-endpoint", receiver.endpoint()])
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .expect("codemode serve starts");
    let mut stdin = child.stdin.take().expect("stdin");
    let mut stdout = std::io::BufReader::new(child.stdout.take().expect("stdout"));
    // Answers come in the order their calls end (a `wait` and an `exec` sent together may end
    // either way round): each is kept until asked for.
    let mut answers = std::collections::HashMap::new();
    let mut answer = |id: u64| -> Value {
        loop {
            if let Some(message) = answers.remove(&id) {
                return message;
            }
            let mut line = String::new();
            let read = stdout.read_line(&mut line).expect("stdout");
            assert!(read > 0, "the server closed stdout early");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            let Some(got) = message["id"].as_u64() else {
                continue;
            };
            let text = message["result"]["content"][0]["text"]
                .as_str()
                .unwrap_or_default();
            answers.insert(got, serde_json::from_str(text).unwrap_or(message));
        }
    };
    writeln!(stdin, "{init}\n{initialized}\n{exec}").expect("stdin");
    stdin.flush().expect("stdin");
    let waiting = answer(2);
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let wait = json!({ "jsonrpc": "2.0", "id": 3, "method": "tools/call", "params": {
        "name": "wait", "arguments": { "runId": waiting["runId"] } } });
    writeln!(stdin, "{wait}\n{hostile}").expect("stdin");
    stdin.flush().expect("stdin");
    let done = answer(3);
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], 6, "{done:#}");
    let fine = answer(4);
    assert_eq!(fine["value"], "fine", "{fine:#}");
    drop(stdin);
    let output = child.wait_with_output().expect("the server exits");
    assert_eq!(
        output.status.code(),
        Some(0),
        "{}",
        String::from_utf8_lossy(&output.stderr)
    );

    let spans = receiver.trace("4bf92f3577b34da6a3ce929d0e0e4736");
    let request = by(&spans, "mcp_call_tool", "00f067aa0ba902b7");
    assert_eq!(request.len(), 1, "{spans:#?}");
    assert_eq!(request[0].attribute("tool"), Some("exec"));
    let exec = by(&spans, "exec", &request[0].span_id);
    assert_eq!(exec.len(), 1, "{spans:#?}");
    let calls = by(&spans, "call", &exec[0].span_id);
    let ids: Vec<_> = calls
        .iter()
        .filter_map(|call| call.attribute("catalog_id"))
        .collect();
    assert_eq!(
        ids,
        ["openclaw:core:echo", "openclaw:core:add"],
        "{spans:#?}"
    );
    assert!(
        calls
            .iter()
            .all(|call| call.attribute("status") == Some("ok"))
    );
    assert_eq!(
        by(&spans, "vm_build", &exec[0].span_id).len(),
        1,
        "{spans:#?}"
    );
    // The `wait` (a request of its own, without a trace context) goes on in the run's trace.
    assert_eq!(by(&spans, "wait", &exec[0].span_id).len(), 1, "{spans:#?}");
    // The malformed trace context was ignored: that cell is a trace of its own.
    let all = receiver.spans();
    let hostile_request = all
        .iter()
        .find(|span| {
            span.name == "mcp_call_tool"
                && span.trace_id != "4bf92f3577b34da6a3ce929d0e0e4736"
                && by(&all, "exec", &span.span_id).len() == 1
        })
        .expect("the hostile cell's request span");
    assert!(
        hostile_request.parent_span_id.is_empty(),
        "{hostile_request:#?}"
    );
    assert_eq!(hostile_request.service_name, "codemode");
}
