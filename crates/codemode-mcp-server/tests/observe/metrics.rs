//! The metrics endpoint (issue 31, item 6), read with a real Prometheus text parser.

use std::net::SocketAddr;
use std::time::Duration;

use codemode_mcp_server::{CodeModeServer, MetricsOptions, ServeError};
use prometheus_parse::{Sample, Scrape, Value as Metric};
use serde_json::json;
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::TcpStream;
use tokio_util::sync::CancellationToken;

use super::{BOUND, Watcher, call, connect, fixture, structured};

async fn serve_metrics(
    server: &CodeModeServer,
    options: MetricsOptions,
) -> (SocketAddr, CancellationToken) {
    let shutdown = CancellationToken::new();
    let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
    let server = server.clone();
    let stop = shutdown.clone();
    tokio::spawn(async move {
        server
            .serve_metrics("127.0.0.1:0".parse().unwrap(), options, stop, move |addr| {
                let _ = bound_tx.send(addr);
            })
            .await
            .expect("metrics served");
    });
    let addr = tokio::time::timeout(BOUND, bound_rx)
        .await
        .expect("bound")
        .expect("address");
    (addr, shutdown)
}

/// Sends `request` and reads the whole answer (the server closes after it).
async fn exchange(addr: SocketAddr, request: &str) -> String {
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut answer = String::new();
    tokio::time::timeout(BOUND, stream.read_to_string(&mut answer))
        .await
        .expect("bound")
        .expect("read");
    answer
}

async fn scrape(addr: SocketAddr) -> Scrape {
    let answer = exchange(
        addr,
        &format!(
            "GET /metrics HTTP/1.1\r\nHost: 127.0.0.1:{}\r\n\r\n",
            addr.port()
        ),
    )
    .await;
    let (head, body) = answer.split_once("\r\n\r\n").expect("a head");
    assert!(head.starts_with("HTTP/1.1 200"), "{head}");
    assert!(head.contains("text/plain; version=0.0.4"), "{head}");
    Scrape::parse(body.lines().map(|line| Ok(line.to_owned()))).expect("Prometheus text")
}

/// The value of the sample `name` whose labels include `labels` (a counter, gauge or
/// untyped value; a histogram's count).
fn value(scrape: &Scrape, name: &str, labels: &[(&str, &str)]) -> f64 {
    let matches = |sample: &&Sample| {
        sample.metric == name
            && labels
                .iter()
                .all(|(key, value)| sample.labels.get(key) == Some(*value))
    };
    match scrape.samples.iter().find(matches).map(|s| &s.value) {
        Some(Metric::Counter(v) | Metric::Gauge(v) | Metric::Untyped(v)) => *v,
        Some(Metric::Histogram(buckets)) => buckets.last().map_or(0.0, |b| b.count),
        Some(other) => panic!("{name}: {other:?}"),
        None => 0.0,
    }
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_scrape_shows_the_counters_moving_after_a_cell() {
    let fixture = fixture();
    let (addr, shutdown) = serve_metrics(&fixture.server, MetricsOptions::default()).await;
    let before = scrape(addr).await;
    let client = connect(&fixture.server, Watcher::default()).await;
    let done = structured(
        &call(
            &client,
            "exec",
            json!({ "code": "return (await tools.add({ a: 2, b: 3 })).sum" }),
        )
        .await
        .0,
    );
    assert_eq!(done["value"], 5);
    let parked = structured(
        &call(
            &client,
            "exec",
            json!({ "code": "await yield_control(); return 1" }),
        )
        .await
        .0,
    );
    assert_eq!(parked["status"], "waiting");
    let bad = structured(&call(&client, "wait", json!({ "runId": "cm_nope" })).await.0);
    assert_eq!(bad["status"], "failed");
    // A journaled run that parks commits its receipt.
    let store: std::sync::Arc<dyn codemode_journal::JournalStore> =
        std::sync::Arc::new(codemode_journal::MemoryJournal::new());
    let journaled = crate::journaled_server(&store);
    let journaled_client = connect(&journaled, Watcher::default()).await;
    let cell = "const r = await tools.add({ a: 1, b: 2 }); await yield_control(); return r";
    let parked_journaled = structured(
        &call(&journaled_client, "exec", json!({ "code": cell }))
            .await
            .0,
    );
    assert_eq!(parked_journaled["status"], "waiting", "{parked_journaled}");
    let after = scrape(addr).await;

    let grew = |name: &str, labels: &[(&str, &str)]| {
        let (old, new) = (value(&before, name, labels), value(&after, name, labels));
        assert!(new > old, "{name} {labels:?}: {old} -> {new}");
    };
    let exec_done = [("tool", "exec"), ("status", "completed"), ("code", "")];
    grew("codemode_calls_total", &exec_done);
    grew(
        "codemode_calls_total",
        &[("tool", "exec"), ("status", "waiting")],
    );
    grew(
        "codemode_calls_total",
        &[("tool", "wait"), ("status", "failed")],
    );
    grew(
        "codemode_nested_calls_total",
        &[("origin", "core"), ("status", "ok")],
    );
    grew("codemode_call_duration_seconds", &[("tool", "exec")]);
    grew("codemode_nested_call_duration_seconds", &[]);
    grew("codemode_vm_builds_total", &[]);
    // The engine's shipped bytecode loads: this process compiled no bootstrap script.
    let compiles = "codemode_bootstrap_compiles_total";
    assert!(after.samples.iter().any(|sample| sample.metric == compiles));
    assert_eq!(value(&after, compiles, &[]), 0.0);
    grew("codemode_journal_commit_duration_seconds", &[]);
    assert!(value(&after, "codemode_runs_parked", &[]) >= 1.0);
    assert!(value(&after, "codemode_sessions_open", &[]) >= 1.0);
    assert!(value(&after, "codemode_memory_budget_bytes", &[]) > 0.0);
    for name in [
        "codemode_calls_in_flight",
        "codemode_memory_budget_in_use_bytes",
        "codemode_calls_waiting_for_memory",
        "codemode_worker_processes_started_total",
        "codemode_worker_restarts_total",
        "codemode_worker_processes",
        "codemode_parked_memory_bytes",
    ] {
        assert!(
            after.docs.contains_key(name),
            "{name} is documented (HELP) in the scrape"
        );
    }
    client.cancel().await.expect("close");
    journaled_client.cancel().await.expect("close");
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_endpoint_refuses_what_is_not_a_scrape() {
    let fixture = fixture();
    let (addr, shutdown) = serve_metrics(&fixture.server, MetricsOptions::default()).await;
    let host = format!("Host: 127.0.0.1:{}", addr.port());
    let not_found = exchange(addr, &format!("GET /mcp HTTP/1.1\r\n{host}\r\n\r\n")).await;
    assert!(not_found.starts_with("HTTP/1.1 404"), "{not_found}");
    let post = exchange(addr, &format!("POST /metrics HTTP/1.1\r\n{host}\r\n\r\n")).await;
    assert!(post.starts_with("HTTP/1.1 405"), "{post}");
    // A DNS name rebound to this host (a web page's fetch) is refused.
    let rebound = exchange(addr, "GET /metrics HTTP/1.1\r\nHost: evil.example\r\n\r\n").await;
    assert!(rebound.starts_with("HTTP/1.1 421"), "{rebound}");
    // A head past the bound gets no answer.
    let huge = format!(
        "GET /metrics HTTP/1.1\r\nX-Pad: {}\r\n\r\n",
        "a".repeat(64 * 1024)
    );
    let mut stream = TcpStream::connect(addr).await.expect("connect");
    let _ = stream.write_all(huge.as_bytes()).await;
    let mut answer = Vec::new();
    let _ = tokio::time::timeout(BOUND, stream.read_to_end(&mut answer))
        .await
        .expect("the server closes it");
    assert!(answer.is_empty(), "{}", String::from_utf8_lossy(&answer));
    shutdown.cancel();
}

/// A scraper that holds connections open holds nothing for long: each one that sends no head
/// is closed at its timeout, and one past the cap closes the oldest, so a real scrape is served
/// while they are open.
#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn held_connections_are_closed_and_a_scrape_is_served_throughout() {
    let fixture = fixture();
    // Short timeout: idle connections are closed without anyone else arriving.
    let quick = MetricsOptions::default().read_timeout(Duration::from_millis(200));
    let (addr, shutdown) = serve_metrics(&fixture.server, quick).await;
    let mut idle = TcpStream::connect(addr).await.expect("connect");
    let mut byte = [0u8; 1];
    let read = tokio::time::timeout(BOUND, idle.read(&mut byte))
        .await
        .expect("the server closes an idle connection");
    assert!(matches!(read, Ok(0) | Err(_)));
    shutdown.cancel();

    // Long timeout, cap of 2: two held connections, then a scrape, which closes the oldest.
    let capped = MetricsOptions::default()
        .read_timeout(BOUND * 2)
        .max_connections(2);
    let (addr, shutdown) = serve_metrics(&fixture.server, capped).await;
    let mut first = TcpStream::connect(addr).await.expect("connect");
    let _second = TcpStream::connect(addr).await.expect("connect");
    let scraped = scrape(addr).await;
    assert!(scraped.docs.contains_key("codemode_calls_total"));
    let read = tokio::time::timeout(BOUND, first.read(&mut byte))
        .await
        .expect("the oldest held connection is closed for the newcomer");
    assert!(matches!(read, Ok(0) | Err(_)));
    shutdown.cancel();
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_non_loopback_address_is_refused_unless_asked_for() {
    let fixture = fixture();
    let refused = fixture
        .server
        .serve_metrics(
            "0.0.0.0:0".parse().unwrap(),
            MetricsOptions::default(),
            CancellationToken::new(),
            |_| panic!("never bound"),
        )
        .await;
    match refused {
        Err(ServeError::Options(message)) => {
            assert!(message.contains("not a loopback address"), "{message}")
        }
        other => panic!("{other:?}"),
    }
    let shutdown = CancellationToken::new();
    shutdown.cancel();
    let allowed = fixture
        .server
        .serve_metrics(
            "0.0.0.0:0".parse().unwrap(),
            MetricsOptions::default().allow_non_loopback(true),
            shutdown,
            |_| {},
        )
        .await;
    assert!(allowed.is_ok(), "{allowed:?}");
}
