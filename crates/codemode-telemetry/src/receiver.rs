//! An OTLP/HTTP receiver for tests (feature `test-receiver`): it listens on loopback, accepts
//! `POST /v1/traces`, decodes each body as the protocol's `ExportTraceServiceRequest`
//! (opentelemetry-proto) and keeps the spans as plain data. It speaks just enough HTTP/1.1 for
//! an exporter: a request head, a `Content-Length` body, keep-alive.

use std::collections::BTreeMap;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::{Arc, Condvar, Mutex, PoisonError};

use opentelemetry_proto::tonic::collector::trace::v1::ExportTraceServiceRequest;
use opentelemetry_proto::tonic::common::v1::any_value::Value as AnyValue;
use prost::Message as _;

/// The largest request body the receiver reads.
const MAX_BODY_BYTES: usize = 16 << 20;
/// The longest request head line the receiver reads.
const MAX_LINE_BYTES: usize = 8 << 10;

/// One span as the receiver got it.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct ReceivedSpan {
    /// The span's name.
    pub name: String,
    /// The trace id, 32 lowercase hex digits.
    pub trace_id: String,
    /// The span id, 16 lowercase hex digits.
    pub span_id: String,
    /// The parent's span id (empty for a root span).
    pub parent_span_id: String,
    /// The span's attributes, each value as text.
    pub attributes: BTreeMap<String, String>,
    /// The trace ids of the span's links.
    pub linked_trace_ids: Vec<String>,
    /// The `service.name` of the resource that sent it.
    pub service_name: String,
}

impl ReceivedSpan {
    /// The attribute `key`, as text.
    pub fn attribute(&self, key: &str) -> Option<&str> {
        self.attributes.get(key).map(String::as_str)
    }
}

/// A receiver listening on `127.0.0.1`, served by threads of its own until the process ends.
#[derive(Debug, Clone)]
pub struct OtlpReceiver {
    endpoint: String,
    spans: Arc<Mutex<Vec<ReceivedSpan>>>,
    held: Arc<Hold>,
}

/// What the receiver does with a request's spans.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Keep {
    /// Decode and keep them.
    Decoded,
    /// Answer without decoding (a collector that costs this process nothing but the read).
    Nothing,
}

/// Whether requests are held unanswered ([`OtlpReceiver::hold`]).
#[derive(Debug, Default)]
struct Hold {
    held: Mutex<bool>,
    changed: Condvar,
}

impl Hold {
    fn set(&self, held: bool) {
        *self.held.lock().unwrap_or_else(PoisonError::into_inner) = held;
        self.changed.notify_all();
    }

    fn wait_released(&self) {
        let mut held = self.held.lock().unwrap_or_else(PoisonError::into_inner);
        while *held {
            held = self
                .changed
                .wait(held)
                .unwrap_or_else(PoisonError::into_inner);
        }
    }
}

impl OtlpReceiver {
    /// Binds a free loopback port and starts serving.
    ///
    /// # Errors
    /// When no port can be bound.
    pub fn start() -> std::io::Result<Self> {
        Self::start_keeping(Keep::Decoded)
    }

    /// Like [`start`](Self::start), but the spans are read and answered, never decoded or kept:
    /// for measuring the exporter's cost without a decoder in the same process.
    ///
    /// # Errors
    /// When no port can be bound.
    pub fn start_discarding() -> std::io::Result<Self> {
        Self::start_keeping(Keep::Nothing)
    }

    fn start_keeping(keep: Keep) -> std::io::Result<Self> {
        let listener = TcpListener::bind("127.0.0.1:0")?;
        let endpoint = format!("http://{}", listener.local_addr()?);
        let spans: Arc<Mutex<Vec<ReceivedSpan>>> = Arc::default();
        let held: Arc<Hold> = Arc::default();
        let served = Arc::clone(&spans);
        let served_hold = Arc::clone(&held);
        std::thread::Builder::new()
            .name("otlp-receiver".into())
            .spawn(move || {
                for stream in listener.incoming().flatten() {
                    let spans = Arc::clone(&served);
                    let hold = Arc::clone(&served_hold);
                    let _ = std::thread::Builder::new()
                        .name("otlp-receiver-connection".into())
                        .spawn(move || serve(stream, &spans, &hold, keep));
                }
            })?;
        Ok(Self {
            endpoint,
            spans,
            held,
        })
    }

    /// From now on, requests are read but neither kept nor answered until [`release`]
    /// (a collector that hangs).
    ///
    /// [`release`]: OtlpReceiver::release
    pub fn hold(&self) {
        self.held.set(true);
    }

    /// Answers the held requests, and the next ones at once.
    pub fn release(&self) {
        self.held.set(false);
    }

    /// The base URL to export to (`http://127.0.0.1:<port>`).
    pub fn endpoint(&self) -> &str {
        &self.endpoint
    }

    /// Every span received so far, in arrival order.
    pub fn spans(&self) -> Vec<ReceivedSpan> {
        self.spans
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }

    /// The spans received so far of one trace (32 hex digits).
    pub fn trace(&self, trace_id: &str) -> Vec<ReceivedSpan> {
        self.spans()
            .into_iter()
            .filter(|span| span.trace_id == trace_id)
            .collect()
    }
}

/// Serves one connection's requests until it closes or breaks the protocol.
fn serve(stream: TcpStream, spans: &Mutex<Vec<ReceivedSpan>>, hold: &Hold, keep: Keep) {
    let Ok(mut writer) = stream.try_clone() else {
        return;
    };
    let mut reader = BufReader::new(stream);
    loop {
        let Some((request_line, content_length)) = read_head(&mut reader) else {
            return;
        };
        if content_length > MAX_BODY_BYTES {
            let _ = writer.write_all(
                b"HTTP/1.1 413 Payload Too Large\r\ncontent-length: 0\r\nconnection: close\r\n\r\n",
            );
            return;
        }
        let mut body = vec![0; content_length];
        if reader.read_exact(&mut body).is_err() {
            return;
        }
        hold.wait_released();
        let traces = request_line.starts_with("POST ") && request_line.contains(" /v1/traces");
        let decoded = match keep {
            Keep::Decoded => ExportTraceServiceRequest::decode(body.as_slice()),
            Keep::Nothing => Ok(ExportTraceServiceRequest::default()),
        };
        let status = match decoded {
            Ok(request) if traces => {
                spans
                    .lock()
                    .unwrap_or_else(PoisonError::into_inner)
                    .extend(received(request));
                "200 OK"
            }
            Ok(_) => "404 Not Found",
            Err(_) => "400 Bad Request",
        };
        let answer = format!(
            "HTTP/1.1 {status}\r\ncontent-type: application/x-protobuf\r\ncontent-length: 0\r\n\r\n"
        );
        if writer.write_all(answer.as_bytes()).is_err() {
            return;
        }
    }
}

/// Reads a request head: its request line and `Content-Length` (0 when absent).
fn read_head(reader: &mut impl BufRead) -> Option<(String, usize)> {
    let mut request_line = String::new();
    let mut content_length = 0;
    let mut first = true;
    loop {
        let mut line = String::new();
        let read = reader
            .by_ref()
            .take(MAX_LINE_BYTES as u64)
            .read_line(&mut line)
            .ok()?;
        if read == 0 {
            return None;
        }
        let line = line.trim_end();
        if first {
            request_line = line.to_owned();
            first = false;
            continue;
        }
        if line.is_empty() {
            return Some((request_line, content_length));
        }
        if let Some((name, value)) = line.split_once(':')
            && name.trim().eq_ignore_ascii_case("content-length")
        {
            content_length = value.trim().parse().ok()?;
        }
    }
}

fn received(request: ExportTraceServiceRequest) -> Vec<ReceivedSpan> {
    let mut spans = Vec::new();
    for resource_spans in request.resource_spans {
        let service_name = resource_spans
            .resource
            .iter()
            .flat_map(|resource| &resource.attributes)
            .find(|attribute| attribute.key == "service.name")
            .and_then(|attribute| attribute.value.as_ref())
            .and_then(|value| value.value.as_ref())
            .map(text)
            .unwrap_or_default();
        for scope_spans in resource_spans.scope_spans {
            for span in scope_spans.spans {
                let attributes = span
                    .attributes
                    .iter()
                    .filter_map(|attribute| {
                        let value = attribute.value.as_ref()?.value.as_ref()?;
                        Some((attribute.key.clone(), text(value)))
                    })
                    .collect();
                spans.push(ReceivedSpan {
                    name: span.name,
                    trace_id: hex(&span.trace_id),
                    span_id: hex(&span.span_id),
                    parent_span_id: hex(&span.parent_span_id),
                    attributes,
                    linked_trace_ids: span.links.iter().map(|link| hex(&link.trace_id)).collect(),
                    service_name: service_name.clone(),
                });
            }
        }
    }
    spans
}

fn text(value: &AnyValue) -> String {
    match value {
        AnyValue::StringValue(text) => text.clone(),
        AnyValue::BoolValue(flag) => flag.to_string(),
        AnyValue::IntValue(number) => number.to_string(),
        AnyValue::DoubleValue(number) => number.to_string(),
        other => format!("{other:?}"),
    }
}

fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|byte| format!("{byte:02x}")).collect()
}
