//! OpenTelemetry for code mode. Code mode's spans are ordinary `tracing` spans under the
//! `codemode` target (`exec`, `wait`, `call`, `vm_build`, `journal_commit`, `replay`); this
//! crate turns them into OpenTelemetry spans and exports them as OTLP over HTTP/protobuf
//! ([`Otlp`]), and carries a run's W3C trace context (`traceparent`) across its legs, a journal
//! and a client's request ([`traceparent`], [`continue_trace`]).
//!
//! It is the one crate that knows OpenTelemetry (`opentelemetry`, `opentelemetry_sdk`,
//! `opentelemetry-otlp`, `tracing-opentelemetry`): codemode-core reaches it only through its
//! `otel` feature, off by default, so a host that only implements the tool trait compiles none
//! of it. It knows nothing about QuickJS, catalogs, journals or MCP.
//!
//! Export never slows a run: a finished span goes into a bounded queue
//! ([`OtlpConfig::max_queued_spans`]) that the SDK's own thread drains; when the collector is
//! slow or unreachable the queue fills and further spans are dropped, never waited for.
//!
//! Feature flags: `test-receiver` (the `receiver` module, off by default): an OTLP/HTTP receiver on
//! loopback for tests, decoding what it gets with `opentelemetry-proto`.
#![forbid(unsafe_code)]

mod export;
mod propagation;
#[cfg(feature = "test-receiver")]
pub mod receiver;

pub use export::{Otlp, OtlpConfig, TelemetryError};
pub use propagation::{
    MAX_TRACEPARENT_BYTES, continue_trace, link_trace, parse_traceparent, traceparent,
};
