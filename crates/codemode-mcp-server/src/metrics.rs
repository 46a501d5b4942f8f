//! Metrics: what the server counts itself ([`ServerMetrics`]: `exec` and `wait` calls by
//! status and code, in flight, and their latencies), rendered with code mode's own counters
//! (`codemode_core::observe::stats`, the [`CodeMode`](codemode_core::CodeMode)'s parked runs
//! and memory budget) as Prometheus text (version 0.0.4) by [`render`]. `metrics_http.rs`
//! serves it. The counting is always on and costs a few relaxed atomic adds and one
//! uncontended lock per call; nothing is rendered unless the endpoint is scraped.

use std::collections::BTreeMap;
use std::fmt::Write as _;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Mutex, PoisonError};
use std::time::Instant;

use codemode_core::CodeModeResult;
use codemode_core::observe::{
    CallOrigin, CallStatus, Histogram, HistogramReading, LATENCY_BUCKETS_SECONDS,
};

use crate::ServerState;

/// The two calls the server counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, PartialOrd, Ord)]
pub(crate) enum Call {
    Exec,
    Wait,
}

impl Call {
    fn as_str(self) -> &'static str {
        match self {
            Call::Exec => "exec",
            Call::Wait => "wait",
        }
    }
}

/// The server's own counters.
#[derive(Default)]
pub(crate) struct ServerMetrics {
    /// Finished calls by (call, status, code; `""` without a code).
    results: Mutex<BTreeMap<(Call, &'static str, String), u64>>,
    in_flight: [AtomicU64; 2],
    latency: [Histogram; 2],
}

/// One call in flight: counted until it drops, then its latency and result.
pub(crate) struct CallTimer<'a> {
    metrics: &'a ServerMetrics,
    call: Call,
    started: Instant,
}

impl ServerMetrics {
    /// Counts a call in flight until the timer drops (a call the client cancelled is counted
    /// in flight and in the latency, with no result).
    pub(crate) fn start(&self, call: Call) -> CallTimer<'_> {
        self.in_flight[call as usize].fetch_add(1, Ordering::Relaxed);
        CallTimer {
            metrics: self,
            call,
            started: Instant::now(),
        }
    }
}

impl CallTimer<'_> {
    /// Counts the call's result.
    pub(crate) fn finished(&self, result: &CodeModeResult) {
        let (status, code) = match result {
            CodeModeResult::Completed { .. } => ("completed", String::new()),
            CodeModeResult::Waiting { .. } => ("waiting", String::new()),
            CodeModeResult::Failed { code, .. } => (
                "failed",
                code.and_then(|code| serde_json::to_value(code).ok())
                    .and_then(|code| code.as_str().map(str::to_owned))
                    .unwrap_or_default(),
            ),
        };
        *self
            .metrics
            .results
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .entry((self.call, status, code))
            .or_default() += 1;
    }
}

impl Drop for CallTimer<'_> {
    fn drop(&mut self) {
        let call = self.call as usize;
        self.metrics.in_flight[call].fetch_sub(1, Ordering::Relaxed);
        self.metrics.latency[call].observe(self.started.elapsed());
    }
}

/// The Prometheus text of every metric (see `docs/reference.md` for the list).
pub(crate) fn render(state: &ServerState) -> String {
    let mut out = String::with_capacity(8 * 1024);
    let metrics = &state.metrics;
    let results = metrics
        .results
        .lock()
        .unwrap_or_else(PoisonError::into_inner)
        .clone();
    family(
        &mut out,
        "codemode_calls_total",
        "counter",
        "exec and wait calls answered, by tool, status and code (empty without one).",
    );
    for ((call, status, code), count) in &results {
        let _ = writeln!(
            out,
            "codemode_calls_total{{tool=\"{}\",status=\"{status}\",code=\"{}\"}} {count}",
            call.as_str(),
            escape(code)
        );
    }
    family(
        &mut out,
        "codemode_calls_in_flight",
        "gauge",
        "exec and wait calls running now (runs in flight), by tool.",
    );
    for call in [Call::Exec, Call::Wait] {
        let value = metrics.in_flight[call as usize].load(Ordering::Relaxed);
        let _ = writeln!(
            out,
            "codemode_calls_in_flight{{tool=\"{}\"}} {value}",
            call.as_str()
        );
    }
    family(
        &mut out,
        "codemode_call_duration_seconds",
        "histogram",
        "How long exec and wait calls took, by tool.",
    );
    for call in [Call::Exec, Call::Wait] {
        let reading = metrics.latency[call as usize].read();
        histogram(
            &mut out,
            "codemode_call_duration_seconds",
            &format!("tool=\"{}\"", call.as_str()),
            &reading,
        );
    }
    let code_mode = &state.code_mode;
    let (in_use, total) = code_mode.memory_budget();
    let gauges: [(&str, &str, u64); 6] = [
        (
            "codemode_runs_parked",
            "Suspended runs held in memory, waiting for wait.",
            code_mode.suspended_runs() as u64,
        ),
        (
            "codemode_parked_memory_bytes",
            "Measured VM memory of the suspended runs.",
            code_mode.suspended_memory_bytes() as u64,
        ),
        (
            "codemode_memory_budget_in_use_bytes",
            "Bytes of the host memory budget reserved by running calls.",
            in_use,
        ),
        (
            "codemode_memory_budget_bytes",
            "The host memory budget (--max-memory).",
            total,
        ),
        (
            "codemode_calls_waiting_for_memory",
            "exec and wait calls waiting for room in the memory budget.",
            code_mode.calls_waiting_for_memory() as u64,
        ),
        (
            "codemode_sessions_open",
            "MCP client sessions open.",
            (state.max_sessions - state.sessions.available_permits()) as u64,
        ),
    ];
    for (name, help, value) in gauges {
        family(&mut out, name, "gauge", help);
        let _ = writeln!(out, "{name} {value}");
    }
    let stats = codemode_core::observe::stats();
    family(
        &mut out,
        "codemode_nested_calls_total",
        "counter",
        "Nested tool calls that ended, by origin and status.",
    );
    for (origin, row) in CallOrigin::ALL.iter().zip(stats.nested_calls.iter()) {
        for (status, count) in CallStatus::ALL.iter().zip(row.iter()) {
            let _ = writeln!(
                out,
                "codemode_nested_calls_total{{origin=\"{}\",status=\"{}\"}} {count}",
                origin.as_str(),
                status.as_str()
            );
        }
    }
    family(
        &mut out,
        "codemode_nested_call_duration_seconds",
        "histogram",
        "How long nested tool calls took.",
    );
    histogram(
        &mut out,
        "codemode_nested_call_duration_seconds",
        "",
        &stats.nested_call_latency,
    );
    family(
        &mut out,
        "codemode_journal_commit_duration_seconds",
        "histogram",
        "How long each journal commit took (--state other than memory).",
    );
    histogram(
        &mut out,
        "codemode_journal_commit_duration_seconds",
        "",
        &stats.journal_commit_latency,
    );
    let sandbox = stats.sandbox;
    let counters: [(&str, &str, u64); 5] = [
        (
            "codemode_vm_builds_total",
            "VMs built in this process (for a run or ahead of time).",
            sandbox.vm_builds,
        ),
        (
            "codemode_bootstrap_compiles_total",
            "Bootstrap scripts compiled from source (0 while the shipped bytecode loads).",
            sandbox.bootstrap_compiles,
        ),
        (
            "codemode_worker_processes_started_total",
            "Worker processes started (--isolation process).",
            sandbox.workers_started,
        ),
        (
            "codemode_worker_processes_ended_total",
            "Worker processes ended.",
            sandbox.workers_ended,
        ),
        (
            "codemode_worker_restarts_total",
            "Worker processes given up on (died, broke the protocol or stalled) and replaced.",
            sandbox.workers_replaced,
        ),
    ];
    for (name, help, value) in counters {
        family(&mut out, name, "counter", help);
        let _ = writeln!(out, "{name} {value}");
    }
    family(
        &mut out,
        "codemode_worker_processes",
        "gauge",
        "Worker processes alive now.",
    );
    let _ = writeln!(
        out,
        "codemode_worker_processes {}",
        sandbox
            .workers_started
            .saturating_sub(sandbox.workers_ended)
    );
    out
}

fn family(out: &mut String, name: &str, kind: &str, help: &str) {
    let _ = writeln!(out, "# HELP {name} {help}");
    let _ = writeln!(out, "# TYPE {name} {kind}");
}

/// A histogram's `_bucket` (cumulative), `_sum` and `_count` lines; `labels` go before `le`.
fn histogram(out: &mut String, name: &str, labels: &str, reading: &HistogramReading) {
    let separator = if labels.is_empty() { "" } else { "," };
    let mut cumulative = 0u64;
    for (index, count) in reading.buckets.iter().enumerate() {
        cumulative += count;
        let bound = LATENCY_BUCKETS_SECONDS
            .get(index)
            .map_or_else(|| "+Inf".to_owned(), |bound| bound.to_string());
        let _ = writeln!(
            out,
            "{name}_bucket{{{labels}{separator}le=\"{bound}\"}} {cumulative}"
        );
    }
    let braces = if labels.is_empty() {
        String::new()
    } else {
        format!("{{{labels}}}")
    };
    let _ = writeln!(out, "{name}_sum{braces} {}", reading.sum_seconds);
    let _ = writeln!(out, "{name}_count{braces} {}", reading.count);
}

/// A label value escaped for the text format.
fn escape(value: &str) -> String {
    value
        .replace('\\', "\\\\")
        .replace('"', "\\\"")
        .replace('\n', "\\n")
}
