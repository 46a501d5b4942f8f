//! The OTLP exporter: a tracer provider with a bounded batch queue, and the `tracing` layer
//! that feeds it.

use std::time::Duration;

use opentelemetry::trace::TracerProvider as _;
use opentelemetry_otlp::{Protocol, WithExportConfig};
use opentelemetry_sdk::Resource;
use opentelemetry_sdk::trace::{BatchConfigBuilder, BatchSpanProcessor, SdkTracerProvider};
use tracing::Level;
use tracing::Subscriber;
use tracing_subscriber::Layer;
use tracing_subscriber::filter::filter_fn;
use tracing_subscriber::registry::LookupSpan;

/// The path of the traces signal of OTLP over HTTP, appended to an endpoint given without it.
const TRACES_PATH: &str = "/v1/traces";

/// Where and how spans are exported.
#[derive(Debug, Clone, PartialEq, Eq)]
#[non_exhaustive]
pub struct OtlpConfig {
    /// The collector, `http://host:4318` (the traces path `/v1/traces` is appended) or the full
    /// URL of its traces endpoint. Plain HTTP only: no TLS client is compiled in.
    pub endpoint: String,
    /// `service.name` of the exported resource.
    pub service_name: String,
    /// Finished spans waiting for export, at most (default
    /// [`OtlpConfig::DEFAULT_MAX_QUEUED_SPANS`]); a span that finds the queue full is dropped.
    pub max_queued_spans: usize,
    /// How long one export request may take before it is given up (default
    /// [`OtlpConfig::DEFAULT_EXPORT_TIMEOUT`]). It bounds the exporter's thread, never a run.
    pub export_timeout: Duration,
    /// How often the queue is sent (default [`OtlpConfig::DEFAULT_BATCH_DELAY`]).
    pub batch_delay: Duration,
}

impl OtlpConfig {
    /// Default bound of the export queue, in spans.
    pub const DEFAULT_MAX_QUEUED_SPANS: usize = 2048;
    /// Default bound of one export request.
    pub const DEFAULT_EXPORT_TIMEOUT: Duration = Duration::from_secs(10);
    /// Default interval between two exports.
    pub const DEFAULT_BATCH_DELAY: Duration = Duration::from_secs(5);

    /// The defaults, exporting to `endpoint` as service `codemode`.
    pub fn new(endpoint: impl Into<String>) -> Self {
        Self {
            endpoint: endpoint.into(),
            service_name: "codemode".to_owned(),
            max_queued_spans: Self::DEFAULT_MAX_QUEUED_SPANS,
            export_timeout: Self::DEFAULT_EXPORT_TIMEOUT,
            batch_delay: Self::DEFAULT_BATCH_DELAY,
        }
    }

    /// The full URL spans are posted to.
    pub fn traces_url(&self) -> String {
        let endpoint = self.endpoint.trim_end_matches('/');
        if endpoint.ends_with(TRACES_PATH) {
            endpoint.to_owned()
        } else {
            format!("{endpoint}{TRACES_PATH}")
        }
    }
}

/// Why the exporter could not be built or flushed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TelemetryError {
    /// The endpoint is not an `http://` URL the exporter accepts (`https://` is refused: no TLS
    /// client is compiled in).
    #[error("invalid OTLP endpoint {endpoint:?}: {reason}")]
    Endpoint {
        /// The endpoint as given.
        endpoint: String,
        /// What is wrong with it.
        reason: String,
    },
    /// A flush or shutdown did not complete (the collector refused or did not answer in time).
    #[error("OTLP export failed: {0}")]
    Export(String),
}

/// An OTLP exporter of code mode's spans. [`Otlp::layer`] joins it to a `tracing` subscriber;
/// [`Otlp::flush`] sends what is queued; dropping it (or [`Otlp::shutdown`]) sends the rest and
/// stops its thread.
///
/// ```no_run
/// use tracing_subscriber::layer::SubscriberExt;
/// let otlp = codemode_telemetry::Otlp::new(&codemode_telemetry::OtlpConfig::new("http://127.0.0.1:4318"))?;
/// let subscriber = tracing_subscriber::registry().with(otlp.layer());
/// tracing::subscriber::set_global_default(subscriber).expect("the first subscriber");
/// // ... serve ...
/// otlp.shutdown()?;
/// # Ok::<(), codemode_telemetry::TelemetryError>(())
/// ```
#[derive(Debug)]
pub struct Otlp {
    provider: SdkTracerProvider,
}

impl Otlp {
    /// Builds the exporter and starts its thread. Nothing is sent until spans finish.
    ///
    /// # Errors
    /// [`TelemetryError::Endpoint`] for an endpoint that is not an `http://` URL.
    pub fn new(config: &OtlpConfig) -> Result<Self, TelemetryError> {
        let url = config.traces_url();
        let invalid = |reason: String| TelemetryError::Endpoint {
            endpoint: config.endpoint.clone(),
            reason,
        };
        // No TLS client is compiled in (it would bring a TLS stack to every build): spans go
        // to a collector on this host or network, which forwards them.
        if url.starts_with("https://") {
            return Err(invalid(
                "https is not supported: export over http to a collector on this host or \
                 network, and let it forward"
                    .to_owned(),
            ));
        }
        if !url.starts_with("http://") {
            return Err(invalid("it must start with http://".to_owned()));
        }
        let exporter = opentelemetry_otlp::SpanExporter::builder()
            .with_http()
            .with_protocol(Protocol::HttpBinary)
            .with_endpoint(url)
            .with_timeout(config.export_timeout)
            .build()
            .map_err(|error| invalid(error.to_string()))?;
        let batch = BatchConfigBuilder::default()
            .with_max_queue_size(config.max_queued_spans.max(1))
            .with_max_export_batch_size(config.max_queued_spans.clamp(1, 512))
            .with_scheduled_delay(config.batch_delay)
            .build();
        let processor = BatchSpanProcessor::builder(exporter)
            .with_batch_config(batch)
            .build();
        let provider = SdkTracerProvider::builder()
            .with_span_processor(processor)
            .with_resource(
                Resource::builder()
                    .with_service_name(config.service_name.clone())
                    .build(),
            )
            .build();
        Ok(Self { provider })
    }

    /// The `tracing` layer exporting the spans of the `codemode` targets (debug and above, every
    /// target starting with `codemode`) through this exporter, with their warnings and errors as
    /// span events; other targets and the debug events (log lines, not structure) are left to
    /// the subscriber's other layers. Spans carry their own fields only: no source location, no
    /// thread, no busy/idle time, which would cost every span for little.
    pub fn layer<S>(&self) -> impl Layer<S> + use<S>
    where
        S: Subscriber + for<'span> LookupSpan<'span>,
    {
        let tracer = self.provider.tracer("codemode");
        tracing_opentelemetry::layer()
            .with_tracer(tracer)
            .with_location(false)
            .with_threads(false)
            .with_tracked_inactivity(false)
            .with_filter(filter_fn(|metadata| {
                metadata.target().starts_with("codemode")
                    && (metadata.is_span() && *metadata.level() <= Level::DEBUG
                        || *metadata.level() <= Level::WARN)
            }))
    }

    /// Sends every finished span now and waits for the collector's answer (bounded by
    /// [`OtlpConfig::export_timeout`]). Blocks the calling thread: from async code, call it on
    /// a blocking thread.
    ///
    /// # Errors
    /// [`TelemetryError::Export`] when the collector refused, did not answer in time, or was
    /// not reached.
    pub fn flush(&self) -> Result<(), TelemetryError> {
        self.provider
            .force_flush()
            .map_err(|error| TelemetryError::Export(error.to_string()))
    }

    /// Sends what is left and stops the exporter's thread (what [`Drop`] does, with its
    /// outcome).
    ///
    /// # Errors
    /// As [`Otlp::flush`].
    pub fn shutdown(&self) -> Result<(), TelemetryError> {
        self.provider
            .shutdown()
            .map_err(|error| TelemetryError::Export(error.to_string()))
    }
}
