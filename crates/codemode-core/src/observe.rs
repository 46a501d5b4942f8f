//! Watching code mode from outside a run, without a metrics or telemetry crate:
//! - [`CallObserver`]: sees one `exec` or `wait` call's nested-call events and output items
//!   while that call is open (an MCP server turns them into progress notifications), given
//!   with [`CodeModeSession::observed`](crate::CodeModeSession::observed);
//! - [`stats`]: process-wide counters and latency histograms (nested calls by origin and
//!   outcome, journal commits, and the sandbox's VM builds and worker processes) that a host's
//!   metrics endpoint renders. They are relaxed atomic adds, always on.

use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use crate::result::OutputItem;
use codemode_host::{NestedCallEvent, NestedCallOutcome};

/// Sees what one `exec` or `wait` call does while it is open: its run's nested-call events
/// (the same the [`EventSink`](crate::EventSink) gets, for the calls that start, report or end
/// while this call drives the run) and the output items its VM produces, step by step, before
/// the call's result. Both are called on the tasks that drive the run and its nested calls:
/// they must be quick and must not block (queue the work elsewhere). What an observer does
/// never changes the run or its result.
///
/// A replayed run (a `wait` that rebuilt its VM from the journal) shows no output items: those
/// produced before the replay point were delivered already, and the result carries the rest.
pub trait CallObserver: Send + Sync + 'static {
    /// A nested call started, reported progress, or ended.
    fn on_event(&self, event: &NestedCallEvent);

    /// The VM produced these output items (they are also in the call's result). The default
    /// ignores them.
    fn on_output(&self, items: &[OutputItem]) {
        let _ = items;
    }
}

/// The observer of the call driving a run now, if it has one: set by `exec` or `wait` for as
/// long as it drives the run, read when an event happens (a nested call started by an `exec`
/// that ends during a later `wait` is reported to the `wait`'s observer).
#[derive(Default)]
pub(crate) struct LegObserver(Mutex<Option<Arc<dyn CallObserver>>>);

impl LegObserver {
    /// Makes `observer` the run's observer until the guard drops.
    pub(crate) fn install(
        self: &Arc<Self>,
        observer: Option<Arc<dyn CallObserver>>,
    ) -> Option<Observing> {
        let observer = observer?;
        *self.0.lock().unwrap_or_else(PoisonError::into_inner) = Some(observer);
        Some(Observing(Arc::clone(self)))
    }

    fn current(&self) -> Option<Arc<dyn CallObserver>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    pub(crate) fn event(&self, event: &NestedCallEvent) {
        if let Some(observer) = self.current() {
            observer.on_event(event);
        }
    }

    pub(crate) fn output(&self, items: &[OutputItem]) {
        if let Some(observer) = self.current() {
            observer.on_output(items);
        }
    }
}

/// Clears a run's observer when the call that set it ends (or is dropped).
pub(crate) struct Observing(Arc<LegObserver>);

impl Drop for Observing {
    fn drop(&mut self) {
        *self.0.0.lock().unwrap_or_else(PoisonError::into_inner) = None;
    }
}

/// Upper bounds, in seconds, of the buckets of every latency histogram here (a last bucket,
/// `+Inf`, takes the rest): from a warm cell's fraction of a millisecond to the five minutes of
/// a slow approval.
pub const LATENCY_BUCKETS_SECONDS: [f64; 14] = [
    0.0005, 0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1.0, 5.0, 30.0, 300.0,
];

/// A latency histogram over [`LATENCY_BUCKETS_SECONDS`]: lock-free, one relaxed add per bucket,
/// count and sum per observation. For a host's own timings too (`codemode serve` keeps its
/// `exec` and `wait` latencies in these).
///
/// ```
/// use std::time::Duration;
/// let histogram = codemode_core::observe::Histogram::default();
/// histogram.observe(Duration::from_millis(3));
/// let reading = histogram.read();
/// assert_eq!(reading.count, 1);
/// assert_eq!(reading.buckets.iter().sum::<u64>(), 1);
/// ```
#[derive(Debug, Default)]
pub struct Histogram {
    buckets: [AtomicU64; LATENCY_BUCKETS_SECONDS.len() + 1],
    count: AtomicU64,
    sum_micros: AtomicU64,
}

impl Histogram {
    /// Counts one observation.
    pub fn observe(&self, elapsed: Duration) {
        let seconds = elapsed.as_secs_f64();
        let bucket = LATENCY_BUCKETS_SECONDS
            .iter()
            .position(|bound| seconds <= *bound)
            .unwrap_or(LATENCY_BUCKETS_SECONDS.len());
        if let Some(slot) = self.buckets.get(bucket) {
            slot.fetch_add(1, Ordering::Relaxed);
        }
        self.count.fetch_add(1, Ordering::Relaxed);
        let micros = u64::try_from(elapsed.as_micros()).unwrap_or(u64::MAX);
        self.sum_micros.fetch_add(micros, Ordering::Relaxed);
    }

    /// A reading (each field read on its own: a reading taken during an observation may be one
    /// observation apart between fields).
    pub fn read(&self) -> HistogramReading {
        HistogramReading {
            buckets: self
                .buckets
                .iter()
                .map(|bucket| bucket.load(Ordering::Relaxed))
                .collect(),
            count: self.count.load(Ordering::Relaxed),
            sum_seconds: self.sum_micros.load(Ordering::Relaxed) as f64 / 1e6,
        }
    }
}

/// A reading of a [`Histogram`].
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct HistogramReading {
    /// Observations per bucket (not cumulative), one per bound of [`LATENCY_BUCKETS_SECONDS`]
    /// and a last one past them.
    pub buckets: Vec<u64>,
    /// Observations in all.
    pub count: u64,
    /// Their sum, in seconds.
    pub sum_seconds: f64,
}

/// Where a nested call went, for [`stats`]: from its catalog id's source and owner.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallOrigin {
    /// A core tool of the host.
    Core,
    /// A tool of a plugin of the host.
    Plugin,
    /// A tool of an MCP server.
    Mcp,
    /// An MCP server's resources or prompts (`mcp-capability:…`).
    McpCapability,
    /// A tool of the client application.
    Client,
}

impl CallOrigin {
    /// Every origin, in the order of [`Stats::nested_calls`].
    pub const ALL: [CallOrigin; 5] = [
        CallOrigin::Core,
        CallOrigin::Plugin,
        CallOrigin::Mcp,
        CallOrigin::McpCapability,
        CallOrigin::Client,
    ];

    /// Its label (`core`, `plugin`, `mcp`, `mcp_capability`, `client`).
    pub fn as_str(self) -> &'static str {
        match self {
            CallOrigin::Core => "core",
            CallOrigin::Plugin => "plugin",
            CallOrigin::Mcp => "mcp",
            CallOrigin::McpCapability => "mcp_capability",
            CallOrigin::Client => "client",
        }
    }

    /// The origin of an exact catalog id `<source>:<owner>:<name>` (the host's own source is
    /// any other than `mcp`, `client` and `mcp-capability`; its owner `core` or a plugin).
    pub(crate) fn of(catalog_id: &str) -> CallOrigin {
        let mut parts = catalog_id.splitn(3, ':');
        match (parts.next(), parts.next()) {
            (Some("mcp"), _) => CallOrigin::Mcp,
            (Some("mcp-capability"), _) => CallOrigin::McpCapability,
            (Some("client"), _) => CallOrigin::Client,
            (_, Some("core")) => CallOrigin::Core,
            _ => CallOrigin::Plugin,
        }
    }

    fn index(self) -> usize {
        self as usize
    }
}

/// How a nested call ended, for [`stats`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
#[non_exhaustive]
pub enum CallStatus {
    /// The executor returned a value.
    Ok,
    /// The executor returned an error (or panicked).
    Error,
    /// The run was dropped before the call finished.
    Cancelled,
}

impl CallStatus {
    /// Every status, in the order of [`Stats::nested_calls`].
    pub const ALL: [CallStatus; 3] = [CallStatus::Ok, CallStatus::Error, CallStatus::Cancelled];

    /// Its label (`ok`, `error`, `cancelled`).
    pub fn as_str(self) -> &'static str {
        match self {
            CallStatus::Ok => "ok",
            CallStatus::Error => "error",
            CallStatus::Cancelled => "cancelled",
        }
    }

    pub(crate) fn of(outcome: &NestedCallOutcome) -> CallStatus {
        match outcome {
            NestedCallOutcome::Ok => CallStatus::Ok,
            NestedCallOutcome::Error(_) => CallStatus::Error,
            NestedCallOutcome::Cancelled => CallStatus::Cancelled,
        }
    }
}

const ORIGINS: usize = CallOrigin::ALL.len();
const STATUSES: usize = CallStatus::ALL.len();

struct Counters {
    nested: [[AtomicU64; STATUSES]; ORIGINS],
    nested_latency: Histogram,
    journal_commits: Histogram,
}

static COUNTERS: Counters = Counters {
    nested: [const { [const { AtomicU64::new(0) }; STATUSES] }; ORIGINS],
    nested_latency: Histogram::new_const(),
    journal_commits: Histogram::new_const(),
};

impl Histogram {
    const fn new_const() -> Histogram {
        Histogram {
            buckets: [const { AtomicU64::new(0) }; LATENCY_BUCKETS_SECONDS.len() + 1],
            count: AtomicU64::new(0),
            sum_micros: AtomicU64::new(0),
        }
    }
}

/// Counts a nested call that ended (bridge.rs).
pub(crate) fn nested_call_ended(catalog_id: &str, outcome: &NestedCallOutcome, took: Duration) {
    let origin = CallOrigin::of(catalog_id).index();
    let status = CallStatus::of(outcome) as usize;
    if let Some(counter) = COUNTERS.nested.get(origin).and_then(|row| row.get(status)) {
        counter.fetch_add(1, Ordering::Relaxed);
    }
    COUNTERS.nested_latency.observe(took);
}

/// Counts one journal commit (codemode-durable).
pub(crate) fn journal_committed(took: Duration) {
    COUNTERS.journal_commits.observe(took);
}

/// A reading of code mode's process-wide counters ([`stats`]): every [`CodeMode`](crate::CodeMode)
/// of the process together, each monotonic since the process started.
#[derive(Debug, Clone, PartialEq)]
#[non_exhaustive]
pub struct Stats {
    /// Nested calls that ended, by [`CallOrigin::ALL`] (rows) and [`CallStatus::ALL`] (columns).
    pub nested_calls: [[u64; STATUSES]; ORIGINS],
    /// How long nested calls took, from the executor's start to its answer.
    pub nested_call_latency: HistogramReading,
    /// How long each journal commit took (a batch of receipts and events written to the
    /// journal store; only with [`CodeModeBuilder::journal`](crate::CodeModeBuilder::journal)).
    pub journal_commit_latency: HistogramReading,
    /// The sandbox's VM builds and worker processes.
    pub sandbox: codemode_sandbox::SandboxStats,
}

/// Reads code mode's process-wide counters, for a host's metrics.
///
/// ```
/// let stats = codemode_core::observe::stats();
/// let calls: u64 = stats.nested_calls.iter().flatten().sum();
/// assert!(calls >= stats.nested_calls[0][0]);
/// ```
pub fn stats() -> Stats {
    Stats {
        nested_calls: COUNTERS
            .nested
            .each_ref()
            .map(|row| row.each_ref().map(|count| count.load(Ordering::Relaxed))),
        nested_call_latency: COUNTERS.nested_latency.read(),
        journal_commit_latency: COUNTERS.journal_commits.read(),
        sandbox: codemode_sandbox::stats(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn origins_come_from_the_catalog_id() {
        for (id, origin) in [
            ("openclaw:core:echo", CallOrigin::Core),
            ("myagent:core:search", CallOrigin::Core),
            ("openclaw:demo-issues:issues_list", CallOrigin::Plugin),
            ("mcp:github:create_issue", CallOrigin::Mcp),
            (
                "mcp-capability:fs:resources/read",
                CallOrigin::McpCapability,
            ),
            ("client:app:pick", CallOrigin::Client),
        ] {
            assert_eq!(CallOrigin::of(id), origin, "{id}");
        }
    }

    #[test]
    fn a_histogram_puts_each_observation_in_its_bucket() {
        let histogram = Histogram::default();
        histogram.observe(Duration::from_micros(100));
        histogram.observe(Duration::from_secs(1));
        histogram.observe(Duration::from_secs(3600));
        let reading = histogram.read();
        assert_eq!(reading.count, 3);
        assert_eq!(reading.buckets[0], 1);
        assert_eq!(
            reading.buckets[10], 1,
            "1 s is in the bucket whose bound is 1 s"
        );
        assert_eq!(reading.buckets[LATENCY_BUCKETS_SECONDS.len()], 1);
        assert!((reading.sum_seconds - 3601.0001).abs() < 1e-6);
    }
}
