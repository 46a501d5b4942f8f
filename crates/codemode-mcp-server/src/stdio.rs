//! The stdio transport (newline-delimited JSON-RPC over any byte stream pair): rmcp's own
//! reads lines in the same bounded way, but says nothing to a line that is not JSON or is too
//! long. This one screens every line (`message.rs`) and answers a malformed one with its
//! JSON-RPC error, and an oversized one with an invalid request naming the bound.

use std::sync::Arc;

use rmcp::RoleServer;
use rmcp::model::{ClientJsonRpcMessage, ServerJsonRpcMessage};
use rmcp::transport::Transport;
use tokio::io::{AsyncBufReadExt as _, AsyncRead, AsyncWrite, AsyncWriteExt as _, BufReader};
use tokio::sync::Mutex;

use crate::message::{self, INVALID_REQUEST};

/// Largest line of the stdio transport: 16 MiB, as rmcp's own (a payload acceptable over HTTP
/// with the largest `--max-body-bytes` is acceptable here).
pub(crate) const MAX_LINE_BYTES: usize = 16 * 1024 * 1024;

pub(crate) struct ScreenedIo<R, W> {
    read: BufReader<R>,
    /// The line read so far; never longer than `max_line_bytes`.
    line: Vec<u8>,
    max_line_bytes: usize,
    /// Set while the rest of an oversized line is skipped.
    discarding: bool,
    write: Arc<Mutex<Option<W>>>,
    /// Bounds the error answers not yet written: a peer that floods malformed lines and never
    /// reads its answers gets no more than this many queued, the rest are dropped.
    answers: Arc<tokio::sync::Semaphore>,
}

/// How many error answers may wait for the writer at once.
const MAX_QUEUED_ANSWERS: usize = 64;

enum LineRead {
    Line,
    Oversized,
    Eof,
}

impl<R, W> ScreenedIo<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    pub(crate) fn new(read: R, write: W, max_line_bytes: usize) -> Self {
        ScreenedIo {
            read: BufReader::new(read),
            line: Vec::new(),
            max_line_bytes,
            discarding: false,
            write: Arc::new(Mutex::new(Some(write))),
            answers: Arc::new(tokio::sync::Semaphore::new(MAX_QUEUED_ANSWERS)),
        }
    }

    /// Writes one line, whole, under the writer's lock (a write of its own task, so that a
    /// cancelled `receive` never leaves half a line).
    fn write_line(
        &self,
        mut bytes: Vec<u8>,
    ) -> impl Future<Output = std::io::Result<()>> + use<R, W> {
        bytes.push(b'\n');
        let write = Arc::clone(&self.write);
        async move {
            let mut guard = write.lock().await;
            let Some(writer) = guard.as_mut() else {
                return Err(std::io::Error::new(
                    std::io::ErrorKind::NotConnected,
                    "the transport is closed",
                ));
            };
            writer.write_all(&bytes).await?;
            writer.flush().await
        }
    }

    fn answer(&self, response: &serde_json::Value) {
        let Ok(permit) = Arc::clone(&self.answers).try_acquire_owned() else {
            tracing::debug!(target: "codemode", "too many error answers queued; one was dropped");
            return;
        };
        let bytes = serde_json::to_vec(response).unwrap_or_default();
        let write = self.write_line(bytes);
        tokio::spawn(async move {
            let _permit = permit;
            if let Err(error) = write.await {
                tracing::debug!(target: "codemode", %error, "could not answer a malformed message");
            }
        });
    }

    /// Reads one line into `self.line`, never holding more than the bound. Cancel-safe: the
    /// bytes taken from the reader are moved into `self.line` with no await in between.
    async fn read_line(&mut self) -> std::io::Result<LineRead> {
        loop {
            let available = self.read.fill_buf().await?;
            if available.is_empty() {
                return Ok(LineRead::Eof);
            }
            let newline = available.iter().position(|b| *b == b'\n');
            let take = newline.map_or(available.len(), |at| at + 1);
            let mut outcome = None;
            if self.discarding {
                if newline.is_some() {
                    self.discarding = false;
                }
            } else if self.line.len().saturating_add(take) > self.max_line_bytes.saturating_add(1) {
                self.line.clear();
                self.discarding = newline.is_none();
                outcome = Some(LineRead::Oversized);
            } else {
                self.line.extend_from_slice(&available[..take]);
                if newline.is_some() {
                    outcome = Some(LineRead::Line);
                }
            }
            self.read.consume(take);
            if let Some(outcome) = outcome {
                return Ok(outcome);
            }
        }
    }
}

impl<R, W> Transport<RoleServer> for ScreenedIo<R, W>
where
    R: AsyncRead + Send + Unpin + 'static,
    W: AsyncWrite + Send + Unpin + 'static,
{
    type Error = std::io::Error;

    fn send(
        &mut self,
        item: ServerJsonRpcMessage,
    ) -> impl Future<Output = Result<(), Self::Error>> + Send + 'static {
        let bytes = serde_json::to_vec(&item).map_err(std::io::Error::other);
        let write = bytes.map(|bytes| self.write_line(bytes));
        async move { write?.await }
    }

    async fn receive(&mut self) -> Option<ClientJsonRpcMessage> {
        loop {
            match self.read_line().await {
                Ok(LineRead::Line) => {}
                Ok(LineRead::Oversized) => {
                    tracing::warn!(target: "codemode", max = self.max_line_bytes, "an oversized message was refused");
                    self.answer(&message::error_response(
                        serde_json::Value::Null,
                        INVALID_REQUEST,
                        &format!(
                            "invalid request: the message is longer than {} bytes, the most \
                             one line may hold",
                            self.max_line_bytes
                        ),
                    ));
                    continue;
                }
                Ok(LineRead::Eof) => return None,
                Err(error) => {
                    tracing::debug!(target: "codemode", %error, "stdio read failed");
                    return None;
                }
            }
            let line = std::mem::take(&mut self.line);
            let text = line.strip_suffix(b"\n").unwrap_or(&line);
            let text = text.strip_suffix(b"\r").unwrap_or(text);
            let screened = if text.iter().all(u8::is_ascii_whitespace) {
                None
            } else {
                Some(message::screen(text))
            };
            // Keep the buffer's capacity for the next line.
            self.line = line;
            self.line.clear();
            match screened {
                None => {}
                Some(Ok(message)) => return Some(message),
                Some(Err(refusal)) => {
                    tracing::debug!(target: "codemode", error = %refusal.response, "a malformed message was refused");
                    if refusal.answered {
                        self.answer(&refusal.response);
                    }
                }
            }
        }
    }

    async fn close(&mut self) -> Result<(), Self::Error> {
        let mut write = self.write.lock().await;
        if let Some(mut writer) = write.take() {
            writer.shutdown().await?;
        }
        Ok(())
    }
}
