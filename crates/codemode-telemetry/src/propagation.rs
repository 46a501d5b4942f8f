//! W3C trace context (`traceparent`): read from a span, and continued by a span. Input from a
//! client or a journal is hostile: anything malformed is ignored, and the span starts a new
//! trace.

use std::collections::HashMap;

use opentelemetry::propagation::TextMapPropagator as _;
use opentelemetry::trace::{SpanContext, TraceContextExt as _};
use opentelemetry_sdk::propagation::TraceContextPropagator;
use tracing::Span;
use tracing_opentelemetry::OpenTelemetrySpanExt as _;

/// The longest `traceparent` looked at: a version-00 one is 55 bytes; future versions may add
/// fields, but nothing legitimate comes near this.
pub const MAX_TRACEPARENT_BYTES: usize = 256;

/// The `traceparent` of the OpenTelemetry span behind `span`, or `None` when `span` is not
/// exported (no [`Otlp`](crate::Otlp) layer, or the span is disabled). Reading it starts the
/// span's OpenTelemetry context: call [`continue_trace`] on a span before this.
pub fn traceparent(span: &Span) -> Option<String> {
    if span.is_disabled() {
        return None;
    }
    let context = span.context();
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then(|| {
        format!(
            "00-{}-{}-{:02x}",
            span_context.trace_id(),
            span_context.span_id(),
            span_context.trace_flags().to_u8()
        )
    })
}

/// The span context a `traceparent` names, or `None` when it is malformed, too long
/// ([`MAX_TRACEPARENT_BYTES`]) or names the invalid (all-zero) trace or span.
pub fn parse_traceparent(traceparent: &str) -> Option<SpanContext> {
    if traceparent.len() > MAX_TRACEPARENT_BYTES {
        return None;
    }
    let carrier = HashMap::from([("traceparent".to_owned(), traceparent.trim().to_owned())]);
    let context = TraceContextPropagator::new().extract(&carrier);
    let span_context = context.span().span_context().clone();
    span_context.is_valid().then_some(span_context)
}

/// Makes `span` a child of the span `traceparent` names, so it continues that trace. Returns
/// whether it did: a malformed `traceparent`, a disabled span or one already started (entered,
/// or its context read) is left as it was, starting a trace of its own or continuing its
/// `tracing` parent's.
pub fn continue_trace(span: &Span, traceparent: &str) -> bool {
    if span.is_disabled() {
        return false;
    }
    let Some(parent) = parse_traceparent(traceparent) else {
        return false;
    };
    let context = opentelemetry::Context::new().with_remote_span_context(parent);
    span.set_parent(context).is_ok()
}

/// Links `span` to the span `traceparent` names (a malformed one is ignored): for a span that
/// keeps its own trace but was asked for from another (a `wait` whose request carried a
/// client's trace, while the run's trace is the one of its `exec`).
pub fn link_trace(span: &Span, traceparent: &str) -> bool {
    if span.is_disabled() {
        return false;
    }
    match parse_traceparent(traceparent) {
        Some(linked) => {
            span.add_link(linked);
            true
        }
        None => false,
    }
}
