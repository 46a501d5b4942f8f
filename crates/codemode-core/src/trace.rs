//! The spans of a run and its trace context. Every span is a `tracing` span under the
//! `codemode` target: `exec` and `wait` (one per leg), `call` (a nested call: catalog id,
//! origin, status, bytes in and out), `vm_build` (codemode-sandbox), `journal_commit` and
//! `replay`. With the `otel` feature and an OpenTelemetry layer installed
//! (`codemode_telemetry::Otlp`), a run keeps the W3C `traceparent` of its first leg (in memory,
//! and in its journal), and every later leg continues that trace, on this host or, after a
//! replay, on another. Without the feature, or without the layer, nothing here costs more than
//! a disabled span.
//!
//! Trace contexts come from outside (a client's request, a journal row): a malformed one is
//! ignored and the span starts a trace of its own.

use serde_json::Value;
use tracing::Span;

/// Makes `span`, not yet entered, continue the trace of `traceparent` (a W3C trace context,
/// as an MCP client sends in `_meta.traceparent`). Returns whether it did: it does nothing
/// without the `otel` feature, without an OpenTelemetry layer, for a disabled span, or for a
/// malformed `traceparent`.
///
/// ```
/// let span = tracing::debug_span!(target: "codemode", "mcp_request");
/// // Ignored (no OpenTelemetry layer here, and a malformed trace context anyway).
/// assert!(!codemode_core::trace::continue_trace(&span, "00-nonsense"));
/// ```
pub fn continue_trace(span: &Span, traceparent: &str) -> bool {
    #[cfg(feature = "otel")]
    {
        codemode_telemetry::continue_trace(span, traceparent)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = (span, traceparent);
        false
    }
}

/// The `traceparent` of `span` when it is exported to OpenTelemetry (`otel` feature and layer).
pub(crate) fn traceparent(span: &Span) -> Option<String> {
    #[cfg(feature = "otel")]
    {
        codemode_telemetry::traceparent(span)
    }
    #[cfg(not(feature = "otel"))]
    {
        let _ = span;
        None
    }
}

/// Makes a leg's span (`wait`, not yet entered) continue its run's trace, `run_trace` as kept
/// in memory or the journal. The span keeps a link to the trace it was asked from (the
/// caller's current span), when that is another.
pub(crate) fn continue_run(span: &Span, run_trace: Option<&str>) {
    let Some(run_trace) = run_trace else {
        return;
    };
    if span.is_disabled() {
        return;
    }
    #[cfg(feature = "otel")]
    {
        let asked_from = codemode_telemetry::traceparent(&Span::current());
        if codemode_telemetry::continue_trace(span, run_trace)
            && let Some(asked_from) = asked_from
            && asked_from.get(3..35) != run_trace.get(3..35)
        {
            codemode_telemetry::link_trace(span, &asked_from);
        }
    }
    #[cfg(not(feature = "otel"))]
    let _ = run_trace;
}

/// The span of one nested call to `catalog_id`, a child of the current span (the leg's, on
/// the VM thread that first polls the call). Its status and bytes out are recorded by
/// [`call_ended`].
pub(crate) fn call_span(catalog_id: &str, method: &str, input: &Value) -> Span {
    let span = tracing::debug_span!(
        target: "codemode",
        "call",
        catalog_id,
        origin = catalog_id.split(':').next().unwrap_or_default(),
        method,
        nested_call_id = tracing::field::Empty,
        bytes_in = tracing::field::Empty,
        bytes_out = tracing::field::Empty,
        status = tracing::field::Empty,
        otel.status_code = tracing::field::Empty,
    );
    if !span.is_disabled() {
        span.record("bytes_in", json_bytes(input));
    }
    span
}

/// Records how a nested call ended (`status`: `ok`, `error`, or `replayed` for an answer the
/// journal gave) and the bytes of its answer, and passes the result on.
pub(crate) fn call_ended(
    span: &Span,
    replayed: bool,
    result: Result<Value, String>,
) -> Result<Value, String> {
    if span.is_disabled() {
        return result;
    }
    let (status, bytes_out) = match &result {
        Ok(value) => ("ok", json_bytes(value)),
        Err(message) => ("error", message.len() as u64),
    };
    span.record("status", if replayed { "replayed" } else { status });
    span.record("bytes_out", bytes_out);
    if result.is_err() {
        span.record("otel.status_code", "ERROR");
    }
    result
}

/// What the journal of a durable run (`codemode-durable`) reports: each commit's latency to
/// [`crate::observe::stats`], and the span of a commit scheduled for later from here.
pub(crate) const JOURNAL_HOOKS: codemode_durable::JournalHooks = codemode_durable::JournalHooks {
    committed: crate::observe::journal_committed,
    linger_span: journal_linger_span,
};

/// The span of a journal commit scheduled for later (after a call settled): in the current
/// span's trace, without holding the current span open while it lingers.
fn journal_linger_span() -> Span {
    let span = tracing::debug_span!(target: "codemode", parent: None, "journal_linger");
    if !span.is_disabled()
        && let Some(current) = traceparent(&Span::current())
    {
        continue_trace(&span, &current);
    }
    span
}

/// The size of `value` as JSON, counted without building the text.
fn json_bytes(value: &Value) -> u64 {
    struct Count(u64);
    impl std::io::Write for Count {
        fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
            self.0 += bytes.len() as u64;
            Ok(bytes.len())
        }
        fn flush(&mut self) -> std::io::Result<()> {
            Ok(())
        }
    }
    let mut count = Count(0);
    // Writing a `Value` into a sink that never fails cannot fail.
    let _ = serde_json::to_writer(&mut count, value);
    count.0
}
