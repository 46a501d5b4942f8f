//! The last lines a server wrote on stderr, for error messages and logs.

use std::collections::VecDeque;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::Duration;

use tokio::io::{AsyncBufReadExt as _, AsyncRead, BufReader};
use tokio::sync::watch;

/// Lines kept per server.
const KEPT_LINES: usize = 10;

/// Longest line kept, in bytes (longer lines are cut).
const MAX_LINE_BYTES: usize = 512;

/// How long an error path waits for the stderr of an exiting server to reach
/// its end, so the error (and the host's log) can quote the server's last
/// words. A server that exited closes stderr at once, so this only bounds the
/// odd server whose stderr outlives it (e.g. held by a grandchild); it is
/// generous so that a loaded machine still gets the last words.
const SETTLE_TIMEOUT: Duration = Duration::from_secs(2);

/// A bounded tail of a server's stderr, filled by a background task that also
/// forwards every line to `tracing` at debug level.
#[derive(Debug, Clone)]
pub(crate) struct StderrTail {
    lines: Arc<Mutex<VecDeque<String>>>,
    ended: watch::Receiver<bool>,
}

impl StderrTail {
    /// A tail that never receives anything (stderr not captured).
    pub(crate) fn empty() -> Self {
        let (_sender, ended) = watch::channel(true);
        Self {
            lines: Arc::default(),
            ended,
        }
    }

    /// Starts reading `stderr` in a background task.
    pub(crate) fn spawn(server: String, stderr: impl AsyncRead + Unpin + Send + 'static) -> Self {
        let lines: Arc<Mutex<VecDeque<String>>> = Arc::default();
        let (ended_sender, ended) = watch::channel(false);
        let kept = Arc::clone(&lines);
        tokio::spawn(async move {
            let mut reader = BufReader::new(stderr);
            let mut line = Vec::new();
            loop {
                let (consumed, complete) = match reader.fill_buf().await {
                    Ok([]) | Err(_) => break,
                    Ok(buffer) => match buffer.iter().position(|&byte| byte == b'\n') {
                        Some(newline) => {
                            keep_prefix(&mut line, buffer.get(..newline).unwrap_or_default());
                            (newline + 1, true)
                        }
                        None => {
                            keep_prefix(&mut line, buffer);
                            (buffer.len(), false)
                        }
                    },
                };
                reader.consume(consumed);
                if complete {
                    record(&server, &kept, &line);
                    line.clear();
                }
            }
            if !line.is_empty() {
                record(&server, &kept, &line);
            }
            // The receiver may be gone already; nothing to do then.
            let _ = ended_sender.send(true);
        });
        Self { lines, ended }
    }

    /// The kept lines, oldest first.
    pub(crate) fn lines(&self) -> Vec<String> {
        self.lines
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .iter()
            .cloned()
            .collect()
    }

    /// The kept lines once stderr has ended (the server exited), or after
    /// [`SETTLE_TIMEOUT`] if it has not.
    pub(crate) async fn settled_lines(&self) -> Vec<String> {
        let mut ended = self.ended.clone();
        // Either outcome is fine: we only bound how long we wait.
        let _ = tokio::time::timeout(SETTLE_TIMEOUT, ended.wait_for(|ended| *ended)).await;
        self.lines()
    }
}

fn keep_prefix(line: &mut Vec<u8>, bytes: &[u8]) {
    let room = MAX_LINE_BYTES.saturating_sub(line.len());
    line.extend_from_slice(bytes.get(..room.min(bytes.len())).unwrap_or_default());
}

fn record(server: &str, kept: &Mutex<VecDeque<String>>, line: &[u8]) {
    let text = String::from_utf8_lossy(line);
    let text = text.trim_end_matches('\r');
    tracing::debug!(server, "stderr: {text}");
    if text.trim().is_empty() {
        return;
    }
    let mut kept = kept.lock().unwrap_or_else(PoisonError::into_inner);
    if kept.len() == KEPT_LINES {
        kept.pop_front();
    }
    kept.push_back(text.to_owned());
}

#[cfg(test)]
mod tests {
    use super::*;

    async fn tail_of(input: &'static [u8]) -> Vec<String> {
        StderrTail::spawn("test".to_owned(), input)
            .settled_lines()
            .await
    }

    #[tokio::test]
    async fn keeps_the_last_lines() {
        let input: String = (1..=15).map(|n| format!("line {n}\n")).collect();
        let tail = tail_of(input.leak().as_bytes()).await;
        let expect: Vec<String> = (6..=15).map(|n| format!("line {n}")).collect();
        assert_eq!(tail, expect);
    }

    #[tokio::test]
    async fn cuts_long_lines_and_keeps_an_unfinished_last_line() {
        let long = "y".repeat(10_000);
        let input = format!("{long}\r\n\n   \nlast words").leak().as_bytes();
        let tail = tail_of(input).await;
        assert_eq!(
            tail,
            vec!["y".repeat(MAX_LINE_BYTES), "last words".to_owned()]
        );
    }

    #[tokio::test]
    async fn invalid_utf8_is_replaced() {
        assert_eq!(tail_of(b"caf\xff\n").await, ["caf\u{fffd}"]);
    }
}
