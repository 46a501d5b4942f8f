//! codemode-telemetry against a real OTLP receiver (`receiver`, in this process): spans arrive
//! with their tree and attributes, trace contexts from outside are continued or ignored, and a
//! collector that does not answer never holds up the code that makes spans.

use codemode_telemetry::receiver::OtlpReceiver;
use codemode_telemetry::{Otlp, OtlpConfig};
use tracing_subscriber::layer::SubscriberExt;

const PARENT: &str = "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01";

fn exporter(endpoint: &str) -> (Otlp, impl tracing::Subscriber + Send + Sync) {
    let otlp = Otlp::new(&OtlpConfig::new(endpoint)).expect("an exporter");
    let subscriber = tracing_subscriber::registry().with(otlp.layer());
    (otlp, subscriber)
}

#[test]
fn spans_reach_the_receiver_as_a_tree_continuing_the_given_trace() {
    let receiver = OtlpReceiver::start().expect("a receiver");
    let (otlp, subscriber) = exporter(receiver.endpoint());
    let inner_traceparent = tracing::subscriber::with_default(subscriber, || {
        let outer = tracing::debug_span!(target: "codemode", "exec", call_id = "call-1");
        assert!(codemode_telemetry::continue_trace(&outer, PARENT));
        let _outer = outer.enter();
        let inner =
            tracing::debug_span!(target: "codemode", "call", catalog_id = "openclaw:core:echo");
        let traceparent = codemode_telemetry::traceparent(&inner);
        // Another target is not exported.
        let _other = tracing::info_span!(target: "elsewhere", "other").entered();
        traceparent
    });
    otlp.flush().expect("the receiver answers");
    let spans = receiver.trace("4bf92f3577b34da6a3ce929d0e0e4736");
    let exec = spans
        .iter()
        .find(|s| s.name == "exec")
        .expect("the exec span");
    let call = spans
        .iter()
        .find(|s| s.name == "call")
        .expect("the call span");
    assert_eq!(exec.parent_span_id, "00f067aa0ba902b7");
    assert_eq!(call.parent_span_id, exec.span_id);
    assert_eq!(call.attribute("catalog_id"), Some("openclaw:core:echo"));
    assert_eq!(exec.service_name, "codemode");
    assert_eq!(spans.len(), 2, "{spans:#?}");
    let inner_traceparent = inner_traceparent.expect("an exported span has a traceparent");
    assert_eq!(
        inner_traceparent,
        format!("00-4bf92f3577b34da6a3ce929d0e0e4736-{}-01", call.span_id)
    );
}

#[test]
fn malformed_trace_contexts_are_ignored() {
    let receiver = OtlpReceiver::start().expect("a receiver");
    let (otlp, subscriber) = exporter(receiver.endpoint());
    let hostile = [
        "",
        "00",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7",
        "00-00000000000000000000000000000000-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e4736-0000000000000000-01",
        "zz-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4BF92F3577B34DA6A3CE929D0E0E4736-00f067aa0ba902b7-01x",
        "ff-4bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
        "00-4bf92f3577b34da6a3ce929d0e0e47ü6-00f067aa0ba902b7-01",
        "00-\u{0}bf92f3577b34da6a3ce929d0e0e4736-00f067aa0ba902b7-01",
    ];
    let long = format!("{PARENT}-{}", "a".repeat(10_000));
    tracing::subscriber::with_default(subscriber, || {
        for traceparent in hostile.iter().copied().chain([long.as_str()]) {
            assert!(
                codemode_telemetry::parse_traceparent(traceparent).is_none(),
                "{traceparent:?}"
            );
            let span = tracing::debug_span!(target: "codemode", "exec");
            assert!(
                !codemode_telemetry::continue_trace(&span, traceparent),
                "{traceparent:?}"
            );
            assert!(
                !codemode_telemetry::link_trace(&span, traceparent),
                "{traceparent:?}"
            );
            let _entered = span.enter();
        }
    });
    otlp.flush().expect("the receiver answers");
    let spans = receiver.spans();
    assert_eq!(spans.len(), hostile.len() + 1);
    // Each started a trace of its own.
    assert!(
        spans.iter().all(|span| span.parent_span_id.is_empty()),
        "{spans:#?}"
    );
    assert!(
        spans
            .iter()
            .all(|span| span.trace_id != "4bf92f3577b34da6a3ce929d0e0e4736")
    );
}

#[test]
fn a_collector_that_hangs_holds_up_no_span_and_the_queue_stays_bounded() {
    let receiver = OtlpReceiver::start().expect("a receiver");
    // The collector takes requests and answers none of them until released.
    receiver.hold();
    let mut config = OtlpConfig::new(receiver.endpoint());
    config.max_queued_spans = 16;
    let otlp = Otlp::new(&config).expect("an exporter");
    let subscriber = tracing_subscriber::registry().with(otlp.layer());
    // Far more spans than the queue holds while the exporter's request hangs: each span's end
    // only offers it to the bounded queue, so this loop finishes (an exporter that waited for
    // room would hang it for as long as the collector does, here for ever).
    const SPANS: usize = 10_000;
    tracing::subscriber::with_default(subscriber, || {
        for n in 0..SPANS {
            let _span = tracing::debug_span!(target: "codemode", "call", n).entered();
        }
    });
    receiver.release();
    // Whatever the exporter holds is sent now.
    let _ = otlp.flush();
    let received = receiver.spans().len();
    // At most the request that hung, the queue and the batch being gathered: 3 x 16 (the rest
    // was dropped, never buffered).
    assert!(
        received >= 1,
        "the first batch arrives once the collector answers"
    );
    assert!(received <= 3 * 16, "{received} of {SPANS} spans were kept");
}

#[test]
fn endpoints_are_checked_and_completed() {
    assert!(Otlp::new(&OtlpConfig::new("localhost:4318")).is_err());
    assert!(Otlp::new(&OtlpConfig::new("ftp://collector")).is_err());
    let https = Otlp::new(&OtlpConfig::new("https://collector:4318")).expect_err("no TLS");
    assert!(
        https.to_string().contains("https is not supported"),
        "{https}"
    );
    assert_eq!(
        OtlpConfig::new("http://collector:4318/").traces_url(),
        "http://collector:4318/v1/traces"
    );
    assert_eq!(
        OtlpConfig::new("http://collector:4318/v1/traces").traces_url(),
        "http://collector:4318/v1/traces"
    );
}
