//! Load figure of `cargo xtask bench`: 32 concurrent MCP client sessions over streamable HTTP,
//! each running `return 1` and a 10-call cell in a loop; then the trivial cell again while 2
//! more sessions run CPU-bound cells. Prints `row:` lines (throughput, p50/p99 latency).
//! Last, the sustained load row: 32 clients in a closed loop beside one client that spins the
//! CPU, for `CODEMODE_BENCH_LOAD_SECONDS` (default 30): throughput, errors, p50/p99 and the
//! process's resident memory sampled every second (start, peak, end).
//!
//! The clients speak raw HTTP/1.1 on loopback, one connection per request (`Connection: close`),
//! so each latency includes a loopback TCP connect. Server and clients share one process and
//! its Tokio runtime (2 worker threads), as on the 2-core machine the goal is set for.
#![allow(
    clippy::print_stdout,
    missing_docs,
    reason = "a benchmark binary reports on stdout"
)]

use std::net::SocketAddr;
use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_catalog::{ToolDescriptor, ToolOrigin};
use codemode_core::{
    ActivationRequest, AgentRunContext, CodeMode, CodeModeConfig, ToolCallContext, ToolError,
    ToolExecutor,
};
use codemode_mcp_server::{CodeModeServer, HttpOptions, MCP_PATH};
use serde_json::{Value, json};
use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio_util::sync::CancellationToken;

const SESSIONS: usize = 32;
const ROUNDS: usize = 20;
const TEN_CALLS: &str = "const r = await Promise.all(Array.from({ length: 10 }, (_, i) => tools.add({ a: i, b: 1 }))); return r.length";
const CPU_BOUND: &str = "let x = 0; for (;;) { x++ }";

struct Add;

#[async_trait::async_trait]
impl ToolExecutor for Add {
    async fn execute(&self, _: &str, input: Value, _: ToolCallContext) -> Result<Value, ToolError> {
        let a = input["a"].as_f64().unwrap_or_default();
        let b = input["b"].as_f64().unwrap_or_default();
        Ok(json!({ "sum": a + b }))
    }
}

/// One POST; returns the response head and body (read to the end).
async fn post(addr: SocketAddr, session: Option<&str>, body: &Value) -> (String, String) {
    let body = body.to_string();
    let mut request = format!(
        "POST {MCP_PATH} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Type: application/json\r\n\
         Accept: application/json, text/event-stream\r\nContent-Length: {}\r\nConnection: close\r\n",
        addr.port(),
        body.len()
    );
    if let Some(session) = session {
        request.push_str(&format!("Mcp-Session-Id: {session}\r\n"));
    }
    request.push_str("\r\n");
    request.push_str(&body);
    let mut stream = tokio::net::TcpStream::connect(addr).await.expect("connect");
    stream.write_all(request.as_bytes()).await.expect("send");
    let mut response = Vec::new();
    let mut chunk = [0u8; 16 * 1024];
    loop {
        let n = stream.read(&mut chunk).await.expect("read");
        if n == 0 {
            break;
        }
        response.extend_from_slice(&chunk[..n]);
        // An initialize answer is an SSE stream that stays open: stop at its JSON-RPC result.
        if session.is_none() && String::from_utf8_lossy(&response).contains("\"result\"") {
            break;
        }
    }
    let text = String::from_utf8_lossy(&response).into_owned();
    let (head, body) = text.split_once("\r\n\r\n").unwrap_or((&text, ""));
    (head.to_owned(), body.to_owned())
}

async fn open_session(addr: SocketAddr) -> String {
    let init = json!({ "jsonrpc": "2.0", "id": 0, "method": "initialize", "params": {
        "protocolVersion": "2025-06-18", "capabilities": {},
        "clientInfo": { "name": "load", "version": "0" } } });
    let (head, _) = post(addr, None, &init).await;
    let session = head
        .lines()
        .find_map(|line| {
            let (name, value) = line.split_once(':')?;
            name.eq_ignore_ascii_case("mcp-session-id")
                .then(|| value.trim().to_owned())
        })
        .expect("a session id");
    let initialized = json!({ "jsonrpc": "2.0", "method": "notifications/initialized" });
    post(addr, Some(&session), &initialized).await;
    session
}

/// One `exec`; returns its latency and whether it completed.
async fn exec(addr: SocketAddr, session: &str, id: usize, code: &str) -> (Duration, bool) {
    let call = json!({ "jsonrpc": "2.0", "id": id, "method": "tools/call",
        "params": { "name": "exec", "arguments": { "code": code } } });
    let started = Instant::now();
    let (_, body) = post(addr, Some(session), &call).await;
    (started.elapsed(), body.contains("\"status\":\"completed\""))
}

fn percentile(sorted: &[Duration], p: f64) -> Duration {
    let index = ((sorted.len() as f64 - 1.0) * p).round() as usize;
    sorted.get(index).copied().unwrap_or_default()
}

fn ms(d: Duration) -> String {
    format!("{:.2} ms", d.as_secs_f64() * 1000.0)
}

/// Runs `SESSIONS` sessions of `ROUNDS` rounds of `cells`; returns per-cell latencies and the
/// wall time.
async fn load(
    addr: SocketAddr,
    sessions: &[String],
    cells: &'static [&'static str],
) -> (Vec<Vec<Duration>>, Duration) {
    let started = Instant::now();
    let tasks: Vec<_> = sessions
        .iter()
        .cloned()
        .map(|session| {
            tokio::spawn(async move {
                let mut latencies = vec![Vec::new(); cells.len()];
                for round in 0..ROUNDS {
                    for (i, cell) in cells.iter().enumerate() {
                        let (latency, completed) =
                            exec(addr, &session, round * 10 + i + 1, cell).await;
                        assert!(completed, "the cell completed");
                        latencies[i].push(latency);
                    }
                }
                latencies
            })
        })
        .collect();
    let mut all = vec![Vec::new(); cells.len()];
    for task in tasks {
        for (i, latencies) in task.await.expect("session task").into_iter().enumerate() {
            all[i].extend(latencies);
        }
    }
    for latencies in &mut all {
        latencies.sort();
    }
    (all, started.elapsed())
}

fn main() {
    let runtime = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    runtime.block_on(async {
        let config = CodeModeConfig::from_json(&json!({ "enabled": true, "timeoutMs": 2000 }))
            .expect("config");
        let code_mode = CodeMode::builder(config, Arc::new(Add)).build();
        let add = ToolDescriptor {
            origin: ToolOrigin::Core,
            name: "add".into(),
            label: None,
            description: "Add a and b.".into(),
            parameters: Some(json!({ "type": "object" })),
            direct_only: false,
            read_only: true,
        };
        let server = CodeModeServer::new(
            code_mode,
            Arc::new(move |run: AgentRunContext| {
                ActivationRequest::new(vec![add.clone()]).with_agent_run(run)
            }),
        );
        let shutdown = CancellationToken::new();
        let (bound_tx, bound_rx) = tokio::sync::oneshot::channel();
        let serving = tokio::spawn({
            let server = server.clone();
            let shutdown = shutdown.clone();
            async move {
                server
                    .serve_http(
                        "127.0.0.1:0".parse().expect("addr"),
                        HttpOptions::default(),
                        shutdown,
                        |addr| {
                            let _ = bound_tx.send(addr);
                        },
                    )
                    .await
            }
        });
        let addr = bound_rx.await.expect("bound");
        let mut sessions = Vec::new();
        for _ in 0..SESSIONS {
            sessions.push(open_session(addr).await);
        }
        // Warm-up: activation of every session.
        load(addr, &sessions, &["return 1"]).await;

        let (latencies, wall) = load(addr, &sessions, &["return 1", TEN_CALLS]).await;
        let requests = latencies.iter().map(Vec::len).sum::<usize>();
        println!(
            "row: serve over HTTP, {SESSIONS} sessions: {:.0} exec/s ({requests} execs in {:.2} s)",
            requests as f64 / wall.as_secs_f64(),
            wall.as_secs_f64()
        );
        for (name, sorted) in [("return 1", &latencies[0]), ("10-call cell", &latencies[1])] {
            println!(
                "row: serve over HTTP, {SESSIONS} sessions, {name}: p50 {}, p99 {}",
                ms(percentile(sorted, 0.5)),
                ms(percentile(sorted, 0.99))
            );
        }

        // Two more sessions run CPU-bound cells (each ends at timeoutMs) in a loop meanwhile.
        let stop = CancellationToken::new();
        let mut hogs = Vec::new();
        for _ in 0..2 {
            let session = open_session(addr).await;
            let stop = stop.clone();
            hogs.push(tokio::spawn(async move {
                let mut id = 1;
                while !stop.is_cancelled() {
                    let _ = exec(addr, &session, id, CPU_BOUND).await;
                    id += 1;
                }
            }));
        }
        let (latencies, _) = load(addr, &sessions, &["return 1"]).await;
        println!(
            "row: serve over HTTP, {SESSIONS} sessions + 2 CPU-bound, return 1: p50 {}, p99 {}",
            ms(percentile(&latencies[0], 0.5)),
            ms(percentile(&latencies[0], 0.99))
        );
        // One session alone beside the CPU-bound pair: the latency of a trivial exec without
        // the queueing of 32 closed-loop clients on 2 cores.
        let (latencies, _) = load(addr, &sessions[..1], &["return 1"; 5]).await;
        let mut alone: Vec<Duration> = latencies.into_iter().flatten().collect();
        alone.sort();
        stop.cancel();
        println!(
            "row: serve over HTTP, 1 session + 2 CPU-bound, return 1: p50 {}, p99 {}",
            ms(percentile(&alone, 0.5)),
            ms(percentile(&alone, 0.99))
        );
        for hog in hogs {
            let _ = hog.await;
        }

        sustained(addr, &sessions).await;
        shutdown.cancel();
        let _ = serving.await;
    });
}

/// The resident memory of this process (`VmRSS`), in MiB (0 where it cannot be read).
fn rss_mib() -> f64 {
    std::fs::read_to_string("/proc/self/status")
        .ok()
        .and_then(|status| {
            status
                .lines()
                .find_map(|line| line.strip_prefix("VmRSS:"))
                .and_then(|rest| {
                    rest.trim()
                        .trim_end_matches("kB")
                        .trim()
                        .parse::<f64>()
                        .ok()
                })
        })
        .map_or(0.0, |kib| kib / 1024.0)
}

/// 32 clients in a closed loop of `return 1` beside one spinning client, for the load time;
/// prints the throughput, errors, latency and resident memory over time.
async fn sustained(addr: SocketAddr, sessions: &[String]) {
    let seconds = std::env::var("CODEMODE_BENCH_LOAD_SECONDS")
        .ok()
        .and_then(|text| text.parse::<u64>().ok())
        .unwrap_or(30)
        .max(1);
    let until = Instant::now() + Duration::from_secs(seconds);
    let spinner = {
        let session = open_session(addr).await;
        tokio::spawn(async move {
            let mut id = 1;
            while Instant::now() < until {
                let _ = exec(addr, &session, id, CPU_BOUND).await;
                id += 1;
            }
        })
    };
    let sampler = tokio::spawn(async move {
        let mut samples = vec![rss_mib()];
        while Instant::now() < until {
            tokio::time::sleep(Duration::from_secs(1)).await;
            samples.push(rss_mib());
        }
        samples
    });
    let started = Instant::now();
    let clients: Vec<_> = sessions
        .iter()
        .cloned()
        .map(|session| {
            tokio::spawn(async move {
                let (mut latencies, mut errors, mut id) = (Vec::new(), 0usize, 1);
                while Instant::now() < until {
                    let (latency, completed) = exec(addr, &session, id, "return 1").await;
                    latencies.push(latency);
                    errors += usize::from(!completed);
                    id += 1;
                }
                (latencies, errors)
            })
        })
        .collect();
    let (mut latencies, mut errors) = (Vec::new(), 0);
    for client in clients {
        let (mine, failed) = client.await.expect("client task");
        latencies.extend(mine);
        errors += failed;
    }
    let wall = started.elapsed();
    let _ = spinner.await;
    let samples = sampler.await.unwrap_or_default();
    latencies.sort();
    println!(
        "row: serve load, {SESSIONS} clients + 1 spinning, {seconds} s: {:.0} exec/s ({} execs, \
         {errors} errors), p50 {}, p99 {}",
        latencies.len() as f64 / wall.as_secs_f64(),
        latencies.len(),
        ms(percentile(&latencies, 0.5)),
        ms(percentile(&latencies, 0.99))
    );
    let peak = samples.iter().copied().fold(0.0, f64::max);
    println!(
        "row: serve load, {SESSIONS} clients + 1 spinning, RSS over {seconds} s: start {:.0} MiB, \
         peak {peak:.0} MiB, end {:.0} MiB ({} samples)",
        samples.first().copied().unwrap_or_default(),
        samples.last().copied().unwrap_or_default(),
        samples.len()
    );
}
