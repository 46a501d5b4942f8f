//! OpenTelemetry (feature `otel`): a real OTLP receiver in this process gets the span tree of a
//! run whose cell makes two nested calls, yields, and goes on in a `wait` that replays it on
//! another host, all in the trace of the client that asked for it; a malformed trace context, from a client or a
//! journal, starts a new trace instead.

use std::sync::{Arc, OnceLock};

use async_trait::async_trait;
use codemode_catalog::ToolOrigin;
use codemode_core::*;
use codemode_journal::JournalStore;
use codemode_telemetry::receiver::{OtlpReceiver, ReceivedSpan};
use codemode_telemetry::{Otlp, OtlpConfig};
use serde_json::{Value, json};
use tracing::Instrument;
use tracing_subscriber::layer::SubscriberExt;

use crate::support::{run_context, tool};

/// The client's trace, as an MCP client sends it in `_meta.traceparent`.
const CLIENT_TRACE: &str = "4bf92f3577b34da6a3ce929d0e0e4736";
const CLIENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";
/// The trace of the client's later `wait` request.
const LATER_CLIENT: &str = "00-11111111111111111111111111111111-2222222222222222-01";

/// One exporter and receiver for the whole test binary: the global subscriber can be set once.
/// Other tests' spans arrive too; each test looks at its own trace only.
fn telemetry() -> &'static (OtlpReceiver, Otlp) {
    static TELEMETRY: OnceLock<(OtlpReceiver, Otlp)> = OnceLock::new();
    TELEMETRY.get_or_init(|| {
        let receiver = OtlpReceiver::start().expect("a receiver");
        let mut config = OtlpConfig::new(receiver.endpoint());
        // The other tests of this binary make spans too: none of ours may be dropped.
        config.max_queued_spans = 1 << 20;
        let otlp = Otlp::new(&config).expect("an exporter");
        tracing::subscriber::set_global_default(tracing_subscriber::registry().with(otlp.layer()))
            .expect("no other global subscriber in this binary");
        (receiver, otlp)
    })
}

/// Sends every finished span and returns the receiver's spans of `trace_id`.
async fn flushed_trace(trace_id: &str) -> Vec<ReceivedSpan> {
    tokio::task::spawn_blocking(|| telemetry().1.flush())
        .await
        .expect("the flush thread")
        .expect("the receiver answers");
    telemetry().0.trace(trace_id)
}

/// Two tools that answer at once.
struct Tools;

#[async_trait]
impl ToolExecutor for Tools {
    async fn execute(
        &self,
        id: &str,
        _input: Value,
        _cx: ToolCallContext,
    ) -> Result<Value, ToolError> {
        match id {
            "openclaw:core:read" => Ok(json!({ "read": true })),
            "openclaw:core:lookup" => Ok(json!({ "found": true })),
            other => Err(ToolError::new(format!("no such tool {other}"))),
        }
    }
}

fn host(store: &Arc<dyn JournalStore>) -> (CodeMode, CodeModeSession) {
    let config = CodeModeConfig::enabled().build().expect("a config");
    let code_mode = CodeMode::builder(config, Arc::new(Tools))
        .journal(Arc::clone(store))
        .build();
    let request = ActivationRequest::new(vec![
        tool(ToolOrigin::Core, "read", true),
        tool(ToolOrigin::Core, "lookup", true),
    ])
    .with_agent_run(run_context("otel"));
    let Ok(Activation::Active(session)) = code_mode.activate(request) else {
        panic!("code mode did not activate")
    };
    (code_mode, session)
}

/// What an MCP server does with a request's `_meta.traceparent`.
fn request_span(traceparent: &str) -> tracing::Span {
    let span = tracing::debug_span!(target: "codemode", "mcp_request");
    trace::continue_trace(&span, traceparent);
    span
}

fn named<'a>(spans: &'a [ReceivedSpan], name: &str) -> Vec<&'a ReceivedSpan> {
    spans.iter().filter(|span| span.name == name).collect()
}

fn one<'a>(spans: &'a [ReceivedSpan], name: &str, parent: &ReceivedSpan) -> &'a ReceivedSpan {
    let children: Vec<_> = named(spans, name)
        .into_iter()
        .filter(|span| span.parent_span_id == parent.span_id)
        .collect();
    assert_eq!(
        children.len(),
        1,
        "one {name} under {}: {spans:#?}",
        parent.name
    );
    children[0]
}

fn call<'a>(
    spans: &'a [ReceivedSpan],
    catalog_id: &str,
    parent: &ReceivedSpan,
) -> &'a ReceivedSpan {
    let calls: Vec<_> = named(spans, "call")
        .into_iter()
        .filter(|span| {
            span.parent_span_id == parent.span_id
                && span.attribute("catalog_id") == Some(catalog_id)
        })
        .collect();
    assert_eq!(
        calls.len(),
        1,
        "one call of {catalog_id} under {}: {spans:#?}",
        parent.name
    );
    calls[0]
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_run_across_two_hosts_is_one_trace_continuing_the_clients() {
    telemetry();
    let store = codemode_journal::open("memory").await.expect("a store");
    // The first leg ends in a yield once both calls have answered, so every span of it has
    // ended when `exec` returns (a call cut short would end whenever its task is dropped).
    let (first, session) = host(&store);
    let code = "const a = await tools.read({ n: 1 }); const b = await tools.lookup({}); \
                await yield_control(); return [a, b];";
    let waiting = session
        .exec("call_1", &json!({ "code": code }))
        .instrument(request_span(CLIENT))
        .await
        .to_json();
    assert_eq!(waiting["status"], "waiting", "{waiting:#}");
    let run_id = waiting["runId"].as_str().expect("a run id").to_owned();
    first.shutdown();
    drop((first, session));

    // Another host, on the same journal store, replays the run.
    let (_second, session) = host(&store);
    let done = session
        .wait(&json!({ "runId": run_id }))
        .instrument(request_span(LATER_CLIENT))
        .await
        .to_json();
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], json!([{ "read": true }, { "found": true }]));

    let spans = flushed_trace(CLIENT_TRACE).await;
    let request = named(&spans, "mcp_request")
        .into_iter()
        .find(|span| span.parent_span_id == "00f067aa0ba902b7")
        .expect("the request span, a child of the client's");
    // The first leg: its VM, its two calls and the journal commit of its park.
    let exec = one(&spans, "exec", request);
    assert_eq!(exec.attribute("call_id"), Some("call_1"));
    one(&spans, "vm_build", exec);
    let read = call(&spans, "openclaw:core:read", exec);
    assert_eq!(read.attribute("status"), Some("ok"));
    assert_eq!(read.attribute("origin"), Some("openclaw"));
    assert_eq!(
        read.attribute("bytes_in"),
        Some(r#"{"n":1}"#.len().to_string().as_str())
    );
    assert_eq!(
        read.attribute("bytes_out"),
        Some(r#"{"read":true}"#.len().to_string().as_str())
    );
    assert_eq!(read.attribute("nested_call_id"), Some("call_1/1"));
    let lookup = call(&spans, "openclaw:core:lookup", exec);
    assert_eq!(lookup.attribute("status"), Some("ok"));
    assert_eq!(lookup.attribute("nested_call_id"), Some("call_1/2"));
    let commits = named(&spans, "journal_commit");
    assert!(
        commits.iter().any(
            |c| c.parent_span_id == exec.span_id && c.attribute("operation") == Some("release")
        ),
        "the park's commit under exec: {spans:#?}"
    );
    // The `wait` on the other host continues the run's trace under its exec, linked to the
    // trace of the request that asked for it.
    let wait = one(&spans, "wait", exec);
    assert_eq!(wait.linked_trace_ids, ["11111111111111111111111111111111"]);
    let replay = one(&spans, "replay", wait);
    one(&spans, "vm_build", replay);
    // The replay answers both calls from the journal and goes on past the yield.
    for catalog_id in ["openclaw:core:read", "openclaw:core:lookup"] {
        let replayed = call(&spans, catalog_id, replay);
        assert_eq!(
            replayed.attribute("status"),
            Some("replayed"),
            "{replayed:#?}"
        );
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn malformed_trace_contexts_from_a_client_or_a_journal_start_a_new_trace() {
    telemetry();
    let store = codemode_journal::open("memory").await.expect("a store");
    let (_host, session) = host(&store);
    // A client's garbage is ignored: the run still completes, in a trace of its own.
    let marker = "00-zz-not-a-trace-ctx";
    let done = session
        .exec(
            "call_bad",
            &json!({ "code": "return (await tools.read({})).read" }),
        )
        .instrument(request_span(marker))
        .await
        .to_json();
    assert_eq!(done["value"], true, "{done:#}");

    // A journal whose trace context was damaged: the replay starts a new trace.
    let record = codemode_journal::RunRecord {
        run_id: "cm_0123456789abcdef0123456789abcdef".to_owned(),
        scope: codemode_journal::Scope {
            agent_run_id: Some("run-1".to_owned()),
            session_id: Some("otel".to_owned()),
            session_key: Some("key-otel".to_owned()),
        },
        program: "return (await tools.read({})).read".to_owned(),
        parent_call_id: "call_damaged".to_owned(),
        restart_safe: false,
        ttl_ms: 60_000,
        expires_at_ms: i64::MAX / 2,
        trace_context: Some(format!("00-{}-ffff-01\u{0}", "9".repeat(40))),
        started_at_ms: None,
    };
    store
        .create(&record, "gone-host", 0, 0)
        .await
        .expect("the damaged journal");
    let done = session
        .wait(&json!({ "runId": record.run_id }))
        .await
        .to_json();
    assert_eq!(done["status"], "completed", "{done:#}");
    assert_eq!(done["value"], true, "{done:#}");

    tokio::task::spawn_blocking(|| telemetry().1.flush())
        .await
        .expect("the flush thread")
        .expect("the receiver answers");
    let spans = telemetry().0.spans();
    let exec = spans
        .iter()
        .find(|span| span.name == "exec" && span.attribute("call_id") == Some("call_bad"))
        .expect("the exec span");
    let request = spans
        .iter()
        .find(|span| span.span_id == exec.parent_span_id)
        .expect("its request span");
    assert!(request.parent_span_id.is_empty(), "a root: {request:#?}");
    let replay = spans
        .iter()
        .find(|span| {
            span.name == "replay" && span.attribute("run_id") == Some(record.run_id.as_str())
        })
        .expect("the replay span");
    let wait = spans
        .iter()
        .find(|span| span.span_id == replay.parent_span_id)
        .expect("its wait span");
    assert!(wait.parent_span_id.is_empty(), "a root: {wait:#?}");
}
