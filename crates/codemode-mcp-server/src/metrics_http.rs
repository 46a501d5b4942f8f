//! The metrics endpoint: `GET /metrics` over plain HTTP/1.1, one request per connection,
//! written by hand (a request line and headers in, one answer out, then close) so that it holds
//! nothing for a client: a connection has [`MetricsOptions::read_timeout`] to send its request
//! head (at most [`MAX_HEAD_BYTES`]) and as long to take the answer, and at most
//! [`MetricsOptions::max_connections`] may be reading their head at once: a newcomer past that
//! closes the oldest of them. Loopback only unless the host asks
//! ([`MetricsOptions::allow_non_loopback`]); a `Host` other than an IP literal or `localhost`
//! is refused (421), so a web page cannot read it through a DNS name rebound to this host.

use std::collections::VecDeque;
use std::net::SocketAddr;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncReadExt as _, AsyncWriteExt as _};
use tokio::net::{TcpListener, TcpStream};
use tokio_util::sync::CancellationToken;

use crate::{ServeError, ServerState};

/// The path metrics are served at.
pub const METRICS_PATH: &str = "/metrics";

/// The largest request head the endpoint reads.
pub const MAX_HEAD_BYTES: usize = 8 * 1024;

/// Default of [`MetricsOptions::read_timeout`].
pub const DEFAULT_METRICS_TIMEOUT: Duration = Duration::from_secs(5);

/// Default of [`MetricsOptions::max_connections`].
pub const DEFAULT_MAX_METRICS_CONNECTIONS: usize = 16;

/// How long the endpoint waits after a failed accept (out of descriptors) before the next.
const ACCEPT_BACKOFF: Duration = Duration::from_millis(10);

/// How the metrics endpoint is served ([`CodeModeServer::serve_metrics`](crate::CodeModeServer::serve_metrics)).
#[derive(Debug, Clone)]
pub struct MetricsOptions {
    allow_non_loopback: bool,
    read_timeout: Duration,
    max_connections: usize,
}

impl Default for MetricsOptions {
    fn default() -> Self {
        MetricsOptions {
            allow_non_loopback: false,
            read_timeout: DEFAULT_METRICS_TIMEOUT,
            max_connections: DEFAULT_MAX_METRICS_CONNECTIONS,
        }
    }
}

impl MetricsOptions {
    /// Serves on a non-loopback address too (refused otherwise). The endpoint has no token:
    /// only do this on a network where whoever can reach the port may read the counts.
    #[must_use]
    pub fn allow_non_loopback(mut self, allow: bool) -> Self {
        self.allow_non_loopback = allow;
        self
    }

    /// How long a connection has to send its request head, and again to take the answer
    /// (default [`DEFAULT_METRICS_TIMEOUT`]).
    #[must_use]
    pub fn read_timeout(mut self, timeout: Duration) -> Self {
        self.read_timeout = timeout;
        self
    }

    /// Most connections reading their request head at once (default
    /// [`DEFAULT_MAX_METRICS_CONNECTIONS`], at least 1): a newcomer past it closes the oldest.
    #[must_use]
    pub fn max_connections(mut self, max: usize) -> Self {
        self.max_connections = max.max(1);
        self
    }
}

/// The connections reading their head, oldest first.
#[derive(Default)]
struct Reading(Mutex<VecDeque<(u64, CancellationToken)>>);

impl Reading {
    fn admit(&self, id: u64, close: CancellationToken, max: usize) {
        let mut queue = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        while queue.len() >= max {
            if let Some((_, oldest)) = queue.pop_front() {
                oldest.cancel();
            }
        }
        queue.push_back((id, close));
    }

    fn close_oldest(&self) {
        let oldest = self
            .0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .pop_front();
        if let Some((_, close)) = oldest {
            close.cancel();
        }
    }

    fn remove(&self, id: u64) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .retain(|(queued, _)| *queued != id);
    }
}

/// Binds `addr` and serves metrics until `shutdown` is cancelled.
pub(crate) async fn serve(
    state: &Arc<ServerState>,
    addr: SocketAddr,
    options: MetricsOptions,
    shutdown: CancellationToken,
    on_bound: impl FnOnce(SocketAddr) + Send,
) -> Result<(), ServeError> {
    if !addr.ip().is_loopback() && !options.allow_non_loopback {
        return Err(ServeError::Options(format!(
            "the metrics address {addr} is not a loopback address; the metrics endpoint has \
             no token, so serving it elsewhere must be asked for explicitly \
             (codemode serve --metrics-public)"
        )));
    }
    let listener = TcpListener::bind(addr)
        .await
        .map_err(|source| ServeError::Http {
            addr: addr.to_string(),
            source,
        })?;
    let bound = listener.local_addr().unwrap_or(addr);
    on_bound(bound);
    let reading = Arc::new(Reading::default());
    let mut next_id = 0u64;
    loop {
        let accepted = tokio::select! {
            () = shutdown.cancelled() => return Ok(()),
            accepted = listener.accept() => accepted,
        };
        let Ok((stream, _)) = accepted else {
            // Out of descriptors (or a connection reset before it was taken): free one by
            // closing the oldest connection still reading its head, and do not spin meanwhile.
            reading.close_oldest();
            tokio::time::sleep(ACCEPT_BACKOFF).await;
            continue;
        };
        next_id += 1;
        let id = next_id;
        let close = shutdown.child_token();
        reading.admit(id, close.clone(), options.max_connections);
        let state = Arc::clone(state);
        let reading = Arc::clone(&reading);
        let timeout = options.read_timeout;
        tokio::spawn(async move {
            tokio::select! {
                () = close.cancelled() => {}
                () = answer(stream, &state, &reading, id, timeout) => {}
            }
            reading.remove(id);
        });
    }
}

/// Reads one request head and answers it.
async fn answer(
    mut stream: TcpStream,
    state: &ServerState,
    reading: &Reading,
    id: u64,
    timeout: Duration,
) {
    let Ok(Some(head)) = tokio::time::timeout(timeout, read_head(&mut stream)).await else {
        return;
    };
    reading.remove(id);
    let (status, body) = route(&head, state);
    let response = format!(
        "HTTP/1.1 {status}\r\nContent-Type: text/plain; version=0.0.4; charset=utf-8\r\n\
         Content-Length: {}\r\nConnection: close\r\nCache-Control: no-store\r\n\r\n{body}",
        body.len()
    );
    let _ = tokio::time::timeout(timeout, async {
        stream.write_all(response.as_bytes()).await?;
        stream.shutdown().await
    })
    .await;
}

/// The request head, up to its blank line; `None` when the connection closed first or the
/// head is past [`MAX_HEAD_BYTES`].
async fn read_head(stream: &mut TcpStream) -> Option<String> {
    let mut head = Vec::with_capacity(1024);
    let mut chunk = [0u8; 1024];
    loop {
        let n = stream.read(&mut chunk).await.ok()?;
        if n == 0 {
            return None;
        }
        head.extend_from_slice(chunk.get(..n)?);
        if let Some(end) = head.windows(4).position(|w| w == b"\r\n\r\n") {
            head.truncate(end);
            return String::from_utf8(head).ok();
        }
        if head.len() > MAX_HEAD_BYTES {
            return None;
        }
    }
}

/// The status line and body for a request head.
fn route(head: &str, state: &ServerState) -> (&'static str, String) {
    let mut lines = head.split("\r\n");
    let mut request = lines.next().unwrap_or_default().split(' ');
    let (method, target) = (request.next(), request.next());
    let host = lines
        .filter_map(|line| line.split_once(':'))
        .find(|(name, _)| name.trim().eq_ignore_ascii_case("host"))
        .map(|(_, value)| value.trim());
    if !host.is_none_or(host_is_literal) {
        return ("421 Misdirected Request", "unknown host\n".into());
    }
    match (method, target) {
        (Some("GET"), Some(METRICS_PATH)) => ("200 OK", crate::metrics::render(state)),
        (Some("GET"), _) => (
            "404 Not Found",
            "not found: metrics are at /metrics\n".into(),
        ),
        _ => ("405 Method Not Allowed", "only GET /metrics\n".into()),
    }
}

/// Whether a `Host` names this host by address (an IP literal, with or without a port) or as
/// `localhost`: never by a DNS name that someone else controls.
fn host_is_literal(host: &str) -> bool {
    let name = match host.strip_prefix('[') {
        Some(rest) => {
            return rest
                .split_once(']')
                .is_some_and(|(ip, _)| ip.parse::<std::net::Ipv6Addr>().is_ok());
        }
        None => host.rsplit_once(':').map_or(host, |(name, _)| name),
    };
    name.eq_ignore_ascii_case("localhost") || name.parse::<std::net::Ipv4Addr>().is_ok()
}

#[cfg(test)]
mod tests {
    use super::host_is_literal;

    #[test]
    fn only_addresses_and_localhost_are_hosts() {
        for host in [
            "127.0.0.1:9090",
            "127.0.0.1",
            "localhost:1",
            "LOCALHOST",
            "[::1]:9",
            "10.0.0.2:80",
        ] {
            assert!(host_is_literal(host), "{host}");
        }
        for host in [
            "evil.example:9090",
            "localhost.evil",
            "[::1",
            "",
            "127.0.0.1.nip.io",
        ] {
            assert!(!host_is_literal(host), "{host}");
        }
    }
}
