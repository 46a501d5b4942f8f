//! Entry points for the fuzz targets (`fuzz/`, `cargo xtask fuzz`); not part of the API.
//!
//! Hidden from the docs, with no stability promise: it only hands the decoders at the boundary
//! (the worker protocol's frames, from codemode-worker; the bridge's JSON, from codemode-engine)
//! to the fuzz crate, as this crate's host side uses them. Nothing here changes what those
//! decoders do.

use serde_json::Value;

use crate::codec;
use crate::worker::protocol::{
    Done, FrameError, HostRequest, ProgressWire, WorkerMessage, read_frame, write_frame,
};

/// How reading one frame ended when it gave no message.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum FrameRefusal {
    /// The bytes ran out (a closed pipe).
    Closed,
    /// The header announced `bytes`, over the reader's `limit`.
    TooLong {
        /// The announced length.
        bytes: usize,
        /// The reader's bound.
        limit: usize,
    },
    /// The body is not a message of the protocol.
    Malformed(String),
}

impl From<FrameError> for FrameRefusal {
    fn from(error: FrameError) -> Self {
        match error {
            FrameError::Closed => Self::Closed,
            FrameError::TooLong { bytes, limit } => Self::TooLong { bytes, limit },
            FrameError::Malformed(message) => Self::Malformed(message),
        }
    }
}

/// Reads worker-to-host frames from `bytes` as the host does (each bounded by `limit`) until
/// one is refused, and returns the messages read (their `Debug` text) and the refusal. Each
/// message also goes through what the host does with it first (a failure becomes its
/// `RunError`, output is measured), and is written again and read back, which must give the
/// same message: `Err` says how that round trip broke.
pub fn read_worker_frames(
    mut bytes: &[u8],
    limit: usize,
) -> Result<(Vec<String>, FrameRefusal), String> {
    let mut buffer = Vec::new();
    let mut messages = Vec::new();
    loop {
        let message = match read_frame::<_, WorkerMessage>(&mut bytes, &mut buffer, limit) {
            Ok(message) => message,
            Err(error) => return Ok((messages, error.into())),
        };
        let text = format!("{message:?}");
        let mut wire = Vec::new();
        let mut scratch = Vec::new();
        write_frame(&mut wire, &mut scratch, &message)
            .map_err(|error| format!("{text} cannot be written again: {error}"))?;
        let again = read_frame::<_, WorkerMessage>(&mut wire.as_slice(), &mut scratch, usize::MAX)
            .map_err(|error| format!("{text} does not read back: {error:?}"))?;
        let again = format!("{again:?}");
        if again != text {
            return Err(format!("{text} reads back as {again}"));
        }
        if let WorkerMessage::Done(done) = message {
            let Done {
                progress, output, ..
            } = *done;
            let _bytes: usize = output.iter().map(codec::output_bytes).sum();
            if let ProgressWire::Failed(failure) = progress {
                let message = failure.into_error().to_string();
                if message.len() > codec::MAX_ERROR_MESSAGE_BYTES + 64 {
                    return Err(format!("a failure of {} bytes was not cut", message.len()));
                }
            }
        }
        messages.push(text);
    }
}

/// Reads host-to-worker frames from `bytes` as a worker does (each bounded by `limit`) until
/// one is refused: how many were read, and the refusal.
pub fn read_host_frames(mut bytes: &[u8], limit: usize) -> (usize, FrameRefusal) {
    let mut buffer = Vec::new();
    let mut count = 0;
    loop {
        match read_frame::<_, HostRequest>(&mut bytes, &mut buffer, limit) {
            Ok(_) => count += 1,
            Err(error) => return (count, error.into()),
        }
    }
}

/// The bridge's decoder of guest JSON (`JSON.stringify` text from the VM).
pub fn parse_bridge_json(text: &str) -> Result<Value, String> {
    codec::parse_bridge_json(text)
}

/// The bridge's encoder of host values (refuses values nested deeper than
/// [`MAX_JSON_DEPTH`](crate::MAX_JSON_DEPTH), without recursion).
pub fn encode_host_value(value: Value) -> Result<String, String> {
    codec::encode_host_value(value)
}
