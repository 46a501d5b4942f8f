//! Progress notifications of `exec` and `wait` (issue 31, item 4).

use rmcp::model::{NumberOrString, ProgressToken};
use serde_json::{Value, json};
use tokio::io::{AsyncBufReadExt as _, AsyncWriteExt as _, BufReader};

use super::{BOUND, Watcher, call, connect, fixture, structured};

/// The events of a list of messages, in order, without their ids.
fn kinds(messages: &[(f64, Value)], event: &str) -> Vec<Value> {
    messages
        .iter()
        .filter(|(_, m)| m["event"] == event)
        .map(|(_, m)| {
            let mut m = m.clone();
            if let Some(m) = m.as_object_mut() {
                m.remove("nestedCallId");
            }
            m
        })
        .collect()
}

fn increasing(messages: &[(f64, Value)]) -> bool {
    messages.windows(2).all(|pair| pair[0].0 < pair[1].0)
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_exec_with_a_progress_token_sees_its_calls_updates_and_output() {
    let fixture = fixture();
    let watcher = Watcher::default();
    let client = connect(&fixture.server, watcher.clone()).await;
    let code = "text('before'); const r = await tools.report({}); \
        json({ after: r.reported }); return r";
    let (with, watched) = call(&client, "exec", json!({ "code": code })).await;
    let with = structured(&with);
    // The same cell from a client that asks for no progress (no `_meta`).
    let mut raw = Raw::open(&fixture.server, 1 << 20).await;
    raw.send(&json!({ "jsonrpc": "2.0", "id": 1, "method": "tools/call",
                      "params": { "name": "exec", "arguments": { "code": code } } }))
        .await;
    let (without, progress) = raw.answer(1).await;
    assert!(progress.is_empty());
    assert_eq!(
        with, without["result"]["structuredContent"],
        "progress never changes the result"
    );
    assert_eq!(with["status"], "completed", "{with}");

    let messages = watcher.until_result(&watched).await;
    assert!(increasing(&messages), "{messages:?}");
    let report = "openclaw:core:report";
    assert_eq!(
        kinds(&messages, "start"),
        [json!({ "event": "start", "catalogId": report })]
    );
    assert_eq!(
        kinds(&messages, "update"),
        [
            json!({ "event": "update", "catalogId": report, "update": { "step": 1 } }),
            json!({ "event": "update", "catalogId": report, "update": { "step": 2 } }),
        ]
    );
    assert_eq!(
        kinds(&messages, "end"),
        [json!({ "event": "end", "catalogId": report, "outcome": "ok" })]
    );
    assert_eq!(
        kinds(&messages, "output"),
        [
            json!({ "event": "output", "item": { "type": "text", "text": "before" } }),
            json!({ "event": "output", "item": { "type": "json", "value": { "after": 2 } } }),
        ]
    );
    let position = |event: &str| messages.iter().position(|(_, m)| m["event"] == event);
    assert!(position("start") < position("update") && position("update") < position("end"));
    let (_, last) = messages.last().expect("a last message");
    assert_eq!(
        *last,
        json!({ "event": "result", "status": "completed", "dropped": 0 })
    );
    assert_eq!(messages.len(), 7, "{messages:?}");
    client.cancel().await.expect("close");
}

/// A nested call an `exec` started and that ends while a `wait` drives the run is reported to
/// the `wait`'s client; the `exec` without a token got none.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_wait_sees_the_end_of_a_call_its_exec_started() {
    let fixture = fixture();
    let watcher = Watcher::default();
    let client = connect(&fixture.server, watcher.clone()).await;
    let cell = json!({ "code": "const gate = tools.gate({}); await yield_control(); \
        const r = await tools.report({}); return { gate: await gate, r }" });
    let (waiting, exec_token) = call(&client, "exec", cell).await;
    let waiting = structured(&waiting);
    assert_eq!(waiting["status"], "waiting", "{waiting}");
    let run_id = waiting["runId"].clone();
    // The token rmcp's client gives the next request (it counts them).
    let watched = match &exec_token.0 {
        NumberOrString::Number(n) => ProgressToken(NumberOrString::Number(n + 1)),
        NumberOrString::String(_) => panic!("rmcp numbers its tokens"),
    };
    let opener = async {
        // The wait drives the run once its `report` call ends: then the gate opens.
        watcher
            .until(&watched, |m| {
                m["event"] == "end" && m["catalogId"] == "openclaw:core:report"
            })
            .await;
        fixture.gate.notify_one();
    };
    let ((done, token), ()) =
        tokio::join!(call(&client, "wait", json!({ "runId": run_id })), opener);
    assert_eq!(token, watched);
    let done = structured(&done);
    assert_eq!(done["status"], "completed", "{done}");
    assert_eq!(done["value"]["gate"], json!({ "opened": true }));
    let messages = watcher.until_result(&watched).await;
    let ends: Vec<Value> = kinds(&messages, "end")
        .into_iter()
        .map(|m| m["catalogId"].clone())
        .collect();
    assert_eq!(ends, ["openclaw:core:report", "openclaw:core:gate"]);
    assert_eq!(
        kinds(&messages, "start").len(),
        1,
        "the gate started under the exec, whose notifications had its own token: {messages:?}"
    );
    let exec_messages = watcher.until_result(&exec_token).await;
    assert_eq!(kinds(&exec_messages, "start").len(), 1, "{exec_messages:?}");
    assert!(kinds(&exec_messages, "end").is_empty(), "{exec_messages:?}");
    client.cancel().await.expect("close");
}

/// A client speaking raw JSON-RPC lines over an in-memory pipe of `capacity` bytes.
struct Raw {
    write: tokio::io::WriteHalf<tokio::io::DuplexStream>,
    read: BufReader<tokio::io::ReadHalf<tokio::io::DuplexStream>>,
    session: tokio::task::JoinHandle<()>,
}

impl Raw {
    async fn open(server: &codemode_mcp_server::CodeModeServer, capacity: usize) -> Raw {
        let (client_io, server_io) = tokio::io::duplex(capacity);
        let (server_read, server_write) = tokio::io::split(server_io);
        let server = server.clone();
        let session = tokio::spawn(async move {
            let _ = server.serve_io(server_read, server_write).await;
        });
        let (read, write) = tokio::io::split(client_io);
        let mut raw = Raw {
            write,
            read: BufReader::new(read),
            session,
        };
        raw.send(
            &json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
            "protocolVersion": "2025-06-18", "capabilities": {},
            "clientInfo": { "name": "raw", "version": "0" } } }),
        )
        .await;
        raw.answer(0).await;
        raw.send(&json!({ "jsonrpc": "2.0", "method": "notifications/initialized" }))
            .await;
        raw
    }

    async fn send(&mut self, message: &Value) {
        let mut line = serde_json::to_vec(message).expect("json");
        line.push(b'\n');
        tokio::time::timeout(BOUND, self.write.write_all(&line))
            .await
            .expect("bound")
            .expect("write");
    }

    /// Reads lines until the answer to `id`: (the answer, the progress notifications before it).
    async fn answer(&mut self, id: u64) -> (Value, Vec<Value>) {
        let mut progress = Vec::new();
        loop {
            let mut line = String::new();
            let read = tokio::time::timeout(BOUND, self.read.read_line(&mut line))
                .await
                .expect("bound")
                .expect("read");
            assert!(read > 0, "the server closed the pipe");
            let message: Value = serde_json::from_str(&line).expect("a JSON-RPC line");
            if message["id"] == id {
                return (message, progress);
            }
            if message["method"] == "notifications/progress" {
                progress.push(message["params"].clone());
            }
        }
    }
}

fn exec_with_meta(id: u64, meta: Value, code: &str) -> Value {
    json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
            "params": { "name": "exec", "arguments": { "code": code }, "_meta": meta } })
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn garbage_progress_tokens_change_nothing() {
    let fixture = fixture();
    let mut raw = Raw::open(&fixture.server, 1 << 20).await;
    let code = "return await tools.add({ a: 1, b: 2 })";
    let not_tokens = [
        json!({ "progressToken": { "nested": [1, 2] } }),
        json!({ "progressToken": [1, 2, 3] }),
        json!({ "progressToken": true }),
        json!({ "progressToken": null }),
        json!({ "progressToken": 1.5 }),
        json!({ "other": "x".repeat(10_000) }),
        json!("not an object"),
    ];
    let odd_tokens = [
        json!("t".repeat(20_000)),
        json!(""),
        json!(-1),
        json!(i64::MAX),
    ];
    let mut id = 1;
    for meta in not_tokens {
        raw.send(&exec_with_meta(id, meta.clone(), code)).await;
        let (answer, progress) = raw.answer(id).await;
        if meta.is_object() {
            let result = &answer["result"]["structuredContent"];
            assert_eq!(result["value"], json!({ "sum": 3 }), "{meta}: {answer}");
        } else {
            // Not a `_meta` at all: the request is refused as such, and the session goes on.
            assert_eq!(answer["error"]["code"], -32602, "{answer}");
        }
        assert!(progress.is_empty(), "{meta}: {progress:?}");
        id += 1;
    }
    for token in odd_tokens {
        let meta = json!({ "progressToken": token });
        raw.send(&exec_with_meta(id, meta, code)).await;
        let (answer, progress) = raw.answer(id).await;
        assert_eq!(
            answer["result"]["structuredContent"]["value"],
            json!({ "sum": 3 })
        );
        assert!(
            !progress.is_empty(),
            "a valid token gets progress: {answer}"
        );
        assert!(progress.iter().all(|p| p["progressToken"] == token));
        id += 1;
    }
}

/// A client that does not read while a tool floods updates: the run goes on at its own pace,
/// what the server holds for the client stays bounded, and the result is whole.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_client_that_does_not_read_holds_back_nothing() {
    let mut fixture = fixture();
    let mut raw = Raw::open(&fixture.server, 4096).await;
    let floods = 5_000u64;
    let code = format!("return await tools.flood({{ count: {floods} }})");
    raw.send(&exec_with_meta(
        1,
        json!({ "progressToken": "slow" }),
        &code,
    ))
    .await;
    // The tool sent every update while nobody read the pipe.
    let flooded = tokio::time::timeout(BOUND, fixture.flooded.recv())
        .await
        .expect("the tool finishes while the client reads nothing");
    assert_eq!(flooded, Some(floods));
    let (answer, progress) = raw.answer(1).await;
    assert_eq!(
        answer["result"]["structuredContent"]["value"],
        json!({ "sent": floods })
    );
    // At most what fitted the pipe (a few), the queue and the last one.
    let bound = codemode_mcp_server::MAX_QUEUED_EVENTS + 32;
    assert!(progress.len() <= bound, "{} notifications", progress.len());
    if let Some(last) = progress.last() {
        let message: Value =
            serde_json::from_str(last["message"].as_str().unwrap_or("null")).expect("json");
        if message["event"] == "result" {
            assert!(message["dropped"].as_u64() >= Some(floods - progress.len() as u64));
        }
    }
    // A client that goes away mid-call ends its session, progress and all.
    raw.send(&exec_with_meta(
        2,
        json!({ "progressToken": 7 }),
        "return await tools.gate({})",
    ))
    .await;
    let Raw {
        write,
        read,
        session,
    } = raw;
    drop((write, read));
    tokio::time::timeout(BOUND, session)
        .await
        .expect("the session ends when its client goes away")
        .expect("task");
}
