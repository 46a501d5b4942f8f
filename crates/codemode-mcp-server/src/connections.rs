//! The HTTP connections, accepted here rather than by `axum::serve` so that none is held for
//! free: every connection has a header-read timeout (from accept, or from the end of its last
//! response, to the end of the next request head) and an idle timeout (no byte either way),
//! and the connections that have not yet carried an authenticated request are capped: past
//! the cap, the oldest of them (if it has had [`EVICTION_GRACE`] to send its request) is closed
//! for the newcomer. A connection stops counting toward
//! the cap at its first request that passes the guard (`http.rs`); without a token, its first
//! request with allowed headers.

use std::collections::VecDeque;
use std::pin::Pin;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex, PoisonError};
use std::task::{Context, Poll};
use std::time::{Duration, Instant};

use hyper_util::rt::{TokioIo, TokioTimer};
use tokio::io::{AsyncRead, AsyncWrite, ReadBuf};
use tokio::net::TcpListener;
use tokio_util::sync::CancellationToken;
use tower_service::Service as _;

/// The bounds of every connection (see [`crate::HttpOptions`]).
#[derive(Debug, Clone, Copy)]
pub(crate) struct ConnectionLimits {
    pub(crate) header_timeout: Duration,
    pub(crate) idle_timeout: Duration,
    pub(crate) max_unauthenticated: usize,
}

/// The most a connection may buffer while it reads, and the largest request head: a head past
/// it gets 431 (hyper's default, about 400 KiB, let each connection that trickles a huge head
/// hold that much).
pub(crate) const MAX_READ_BUFFER_BYTES: usize = 64 * 1024;

/// A connection younger than this is not closed for a newcomer (a burst of clients that
/// connect at once all get to send their first request); it still counts toward the cap.
pub(crate) const EVICTION_GRACE: Duration = Duration::from_secs(1);

/// The connections not yet authenticated, oldest first: id, when it was accepted, and the
/// token that closes it.
struct Unauthenticated {
    queue: Mutex<VecDeque<(u64, Instant, CancellationToken)>>,
    max: usize,
}

impl Unauthenticated {
    /// Counts a new connection; past the cap, closes the oldest ones that are older than
    /// [`EVICTION_GRACE`].
    fn admit(&self, id: u64, close: CancellationToken) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        while queue.len() >= self.max.max(1) {
            match queue.front() {
                Some((_, opened, _)) if opened.elapsed() >= EVICTION_GRACE => {
                    if let Some((_, _, oldest)) = queue.pop_front() {
                        tracing::debug!(target: "codemode", "closing the oldest unauthenticated connection");
                        oldest.cancel();
                    }
                }
                _ => break,
            }
        }
        queue.push_back((id, Instant::now(), close));
    }

    /// Closes the oldest connection not yet authenticated, if any, whatever its age (the
    /// process is out of descriptors).
    fn close_oldest(&self) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        if let Some((_, _, oldest)) = queue.pop_front() {
            oldest.cancel();
        }
    }

    fn remove(&self, id: u64) {
        let mut queue = self.queue.lock().unwrap_or_else(PoisonError::into_inner);
        queue.retain(|(queued, _, _)| *queued != id);
    }
}

/// In each request's extensions: the guard marks the connection authenticated with it.
#[derive(Clone)]
pub(crate) struct ConnectionTicket {
    id: u64,
    unauthenticated: Arc<Unauthenticated>,
}

impl ConnectionTicket {
    /// The connection carried a request that passed the guard: it no longer counts toward the
    /// cap and cannot be closed for a newcomer.
    pub(crate) fn authenticated(&self) {
        self.unauthenticated.remove(self.id);
    }
}

/// When a connection last moved a byte, in milliseconds since `start`.
struct Activity {
    start: Instant,
    last_ms: AtomicU64,
}

impl Activity {
    fn new() -> Self {
        Activity {
            start: Instant::now(),
            last_ms: AtomicU64::new(0),
        }
    }

    fn touch(&self) {
        let now = u64::try_from(self.start.elapsed().as_millis()).unwrap_or(u64::MAX);
        self.last_ms.store(now, Ordering::Relaxed);
    }

    /// Ends once no byte has moved for `idle`.
    async fn idle_for(&self, idle: Duration) {
        loop {
            let last = Duration::from_millis(self.last_ms.load(Ordering::Relaxed));
            let deadline = self.start + last + idle;
            if Instant::now() >= deadline {
                return;
            }
            tokio::time::sleep_until(deadline.into()).await;
        }
    }
}

/// A socket that records its activity.
struct Watched<S> {
    inner: S,
    activity: Arc<Activity>,
}

impl<S: AsyncRead + Unpin> AsyncRead for Watched<S> {
    fn poll_read(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        buf: &mut ReadBuf<'_>,
    ) -> Poll<std::io::Result<()>> {
        let before = buf.filled().len();
        let polled = Pin::new(&mut self.inner).poll_read(cx, buf);
        if buf.filled().len() > before {
            self.activity.touch();
        }
        polled
    }
}

impl<S: AsyncWrite + Unpin> AsyncWrite for Watched<S> {
    fn poll_write(
        mut self: Pin<&mut Self>,
        cx: &mut Context<'_>,
        data: &[u8],
    ) -> Poll<std::io::Result<usize>> {
        let polled = Pin::new(&mut self.inner).poll_write(cx, data);
        if matches!(polled, Poll::Ready(Ok(n)) if n > 0) {
            self.activity.touch();
        }
        polled
    }

    fn poll_flush(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_flush(cx)
    }

    fn poll_shutdown(mut self: Pin<&mut Self>, cx: &mut Context<'_>) -> Poll<std::io::Result<()>> {
        Pin::new(&mut self.inner).poll_shutdown(cx)
    }
}

/// Accepts and serves connections until `shutdown`, then waits for the open ones to finish
/// (each is told to close after its current request).
pub(crate) async fn serve(
    listener: TcpListener,
    app: axum::Router,
    limits: ConnectionLimits,
    shutdown: CancellationToken,
) {
    let unauthenticated = Arc::new(Unauthenticated {
        queue: Mutex::default(),
        max: limits.max_unauthenticated,
    });
    let connections = tokio_util::task::TaskTracker::new();
    let mut next_id = 0u64;
    loop {
        let stream = tokio::select! {
            () = shutdown.cancelled() => break,
            accepted = listener.accept() => match accepted {
                Ok((stream, _)) => stream,
                Err(error) => {
                    // Out of descriptors, most likely: free one held by a connection that has
                    // not authenticated, and try again shortly rather than spin.
                    tracing::warn!(target: "codemode", %error, "accepting a connection failed");
                    unauthenticated.close_oldest();
                    tokio::time::sleep(Duration::from_millis(10)).await;
                    continue;
                }
            },
        };
        let id = next_id;
        next_id = next_id.wrapping_add(1);
        let close = CancellationToken::new();
        unauthenticated.admit(id, close.clone());
        let ticket = ConnectionTicket {
            id,
            unauthenticated: Arc::clone(&unauthenticated),
        };
        let activity = Arc::new(Activity::new());
        let io = TokioIo::new(Watched {
            inner: stream,
            activity: Arc::clone(&activity),
        });
        let app = app.clone();
        let service = hyper::service::service_fn(
            move |mut request: hyper::Request<hyper::body::Incoming>| {
                request.extensions_mut().insert(ticket.clone());
                let mut app = app.clone();
                app.call(request.map(axum::body::Body::new))
            },
        );
        let shutdown = shutdown.clone();
        let unauthenticated = Arc::clone(&unauthenticated);
        connections.spawn(async move {
            let mut builder = hyper::server::conn::http1::Builder::new();
            builder
                .timer(TokioTimer::new())
                .header_read_timeout(limits.header_timeout)
                .max_buf_size(MAX_READ_BUFFER_BYTES)
                .max_header_size(MAX_READ_BUFFER_BYTES);
            let connection = builder.serve_connection(io, service);
            let mut connection = std::pin::pin!(connection);
            let mut draining = false;
            loop {
                tokio::select! {
                    served = connection.as_mut() => {
                        if let Err(error) = served {
                            tracing::debug!(target: "codemode", %error, "HTTP connection ended");
                        }
                        break;
                    }
                    () = close.cancelled() => break,
                    () = activity.idle_for(limits.idle_timeout) => {
                        tracing::debug!(target: "codemode", "closing an idle HTTP connection");
                        break;
                    }
                    () = shutdown.cancelled(), if !draining => {
                        draining = true;
                        connection.as_mut().graceful_shutdown();
                    }
                }
            }
            unauthenticated.remove(id);
        });
    }
    connections.close();
    connections.wait().await;
}
