//! The worker protocol: length-prefixed JSON frames on the worker's stdin (host to worker) and
//! stdout (worker to host). A frame is a 4-byte little-endian length and that many bytes of one
//! JSON message. The worker asks and the host answers: during a step the worker sends the host
//! calls and synchronous calls the guest makes and waits for each answer, then ends the step with
//! `Done`.
//!
//! The host trusts nothing the worker writes: every frame it reads is refused past a length it
//! computed from the run's limits before reading the body, and every value is checked on the
//! host side (host_side.rs). The worker trusts the host.

use std::io::{self, Read, Write};
use std::time::{Duration, Instant};

use serde::de::DeserializeOwned;
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::codec::nests_deeper_than;
use crate::install::{PlanWire, PlanWireRef};
use crate::{BridgeRequest, Limits, MAX_JSON_DEPTH, OutputItem, PendingCall, RunError, Truncation};

/// Bumped on every incompatible change; a worker of another version is refused.
pub const PROTOCOL_VERSION: u32 = 3;

/// Largest greeting the host reads from a fresh worker.
pub const MAX_HELLO_BYTES: usize = 4096;

/// Largest frame a worker reads from its host (the host is trusted; this only keeps a broken
/// pipe from asking for an absurd allocation).
pub const MAX_HOST_FRAME_BYTES: usize = 1 << 30;

/// A host answer to one bridge call, as it settles into the VM.
pub type Settlement = (u64, Result<Value, String>);

/// Host to worker, as the host writes it.
#[derive(Serialize)]
pub enum HostMessage<'a> {
    /// Run one step; with `build`, first drop any VM and build a fresh one.
    Step {
        build: Option<BuildRef<'a>>,
        settlements: &'a [Settlement],
        resume_yields: bool,
        /// Time left until the leg's deadline.
        remaining_nanos: u64,
        /// Stop signals sent to this worker before this frame: one more ends the step.
        stop_baseline: u64,
    },
    /// The answer to a `Sync` request.
    SyncAnswer(Result<Value, String>),
    /// The answer to a `Call` request: `None` while the host call is still pending (it is
    /// settled by a later step).
    CallAnswer(Option<Result<Value, String>>),
    /// What the guest sees for a `Reading` (the run's tape decides).
    ReadingAnswer(f64),
    /// During a `NextTimer` request: is this timer id pending in the VM?
    IsTimer(u64),
    /// The answer to a `NextTimer` request: which timer fires now, if any.
    TimerChoice(Option<u64>),
    /// The answer to an `Abort` request: the message the run must end with, if any.
    AbortAnswer(Option<String>),
}

/// What builds a VM, as the host writes it.
#[derive(Serialize)]
pub struct BuildRef<'a> {
    pub program: &'a str,
    pub plan: PlanWireRef<'a>,
    pub limits: &'a Limits,
    /// The run has a tape (tape.rs): the worker asks the host for its nondeterministic inputs.
    pub tape: bool,
}

/// Host to worker, as the worker reads it.
#[derive(Deserialize)]
pub enum HostRequest {
    Step {
        /// Boxed: the other requests are small.
        build: Option<Box<Build>>,
        settlements: Vec<Settlement>,
        resume_yields: bool,
        remaining_nanos: u64,
        stop_baseline: u64,
    },
    SyncAnswer(Result<Value, String>),
    CallAnswer(Option<Result<Value, String>>),
    ReadingAnswer(f64),
    IsTimer(u64),
    TimerChoice(Option<u64>),
    AbortAnswer(Option<String>),
}

/// [`BuildRef`] as the worker reads it.
#[derive(Deserialize)]
pub struct Build {
    pub program: String,
    pub plan: PlanWire,
    pub limits: Limits,
    pub tape: bool,
}

/// Worker to host.
#[derive(Debug, Serialize, Deserialize)]
pub enum WorkerMessage {
    /// The first frame of a worker: it is ready (and locked down where the platform allows).
    Hello { protocol: u32, locked_down: bool },
    /// The guest made a synchronous call (`Callable::Sync`); the host answers it at once.
    Sync(BridgeRequest),
    /// The guest made a bridge call; the host polls it once and answers.
    Call(BridgeRequest),
    /// The guest reads a nondeterministic source (`ReadingKind::number`) whose live value is
    /// `live`; the host answers with what the run's tape says it sees.
    Reading { kind: u32, live: f64 },
    /// The answer of this bridge call is being settled into the guest (for the tape; the host
    /// does not answer).
    Settling(u64),
    /// Microtasks are drained: which timer fires now (`due` is the one the clock says)? The host
    /// may ask `IsTimer` any number of times before its `TimerChoice`.
    NextTimer { due: Option<u64> },
    /// The answer to `IsTimer`.
    TimerRegistered(bool),
    /// Must the run end now (the tape aborted it)? Asked at the start of every step.
    Abort,
    /// The step is over.
    Done(Box<Done>),
}

/// The end of a step: the engine's `StepOutput` and what the host needs to know of the VM.
#[derive(Debug, Serialize, Deserialize)]
pub struct Done {
    pub progress: ProgressWire,
    pub output: Vec<OutputItem>,
    /// Time from the end of the step until the earliest timer is due.
    pub next_timer_nanos: Option<u64>,
    /// Calls not settled into the VM yet (only while the run is alive).
    pub pending: Vec<PendingCall>,
    pub memory_bytes: u64,
    pub output_bytes: u64,
    /// The worker process's peak resident memory so far (0 where unknown).
    pub peak_rss_bytes: u64,
}

/// `engine::Progress` on the wire.
#[derive(Debug, Serialize, Deserialize)]
pub enum ProgressWire {
    Completed {
        value: Value,
        truncated: Option<Truncation>,
    },
    Failed(FailureWire),
    Yielded,
    Idle,
}

/// A [`RunError`] on the wire. Only the failures a step can produce cross; anything else
/// becomes `Internal`.
#[derive(Debug, Serialize, Deserialize)]
pub enum FailureWire {
    Syntax(String),
    RuntimeUnavailable(String),
    Timeout,
    OutputLimitExceeded,
    MemoryLimitExceeded,
    PendingWithoutHostWork,
    Guest(String),
    Finished,
    Aborted(String),
    Internal(String),
}

impl From<RunError> for FailureWire {
    fn from(error: RunError) -> Self {
        match error {
            RunError::Syntax(message) => Self::Syntax(message),
            RunError::RuntimeUnavailable(message) => Self::RuntimeUnavailable(message),
            RunError::Timeout => Self::Timeout,
            RunError::OutputLimitExceeded => Self::OutputLimitExceeded,
            RunError::MemoryLimitExceeded => Self::MemoryLimitExceeded,
            RunError::PendingWithoutHostWork => Self::PendingWithoutHostWork,
            RunError::Guest(message) => Self::Guest(message),
            RunError::Finished => Self::Finished,
            RunError::Aborted(message) => Self::Aborted(message),
            other => Self::Internal(other.to_string()),
        }
    }
}

impl FailureWire {
    /// The error, with every message the worker wrote cut to the usual bound.
    pub fn into_error(self) -> RunError {
        use crate::codec::truncate;
        match self {
            Self::Syntax(message) => RunError::Syntax(truncate(message)),
            Self::RuntimeUnavailable(message) => RunError::RuntimeUnavailable(truncate(message)),
            Self::Timeout => RunError::Timeout,
            Self::OutputLimitExceeded => RunError::OutputLimitExceeded,
            Self::MemoryLimitExceeded => RunError::MemoryLimitExceeded,
            Self::PendingWithoutHostWork => RunError::PendingWithoutHostWork,
            Self::Guest(message) => RunError::Guest(truncate(message)),
            Self::Finished => RunError::Finished,
            Self::Aborted(message) => RunError::Aborted(truncate(message)),
            Self::Internal(message) => RunError::Internal(truncate(message)),
        }
    }
}

/// A duration as nanoseconds on the wire (saturating).
pub fn nanos(duration: Duration) -> u64 {
    u64::try_from(duration.as_nanos()).unwrap_or(u64::MAX)
}

/// `now + nanos`, saturating at a far future instead of overflowing.
pub fn instant_in(nanos: u64) -> Instant {
    let now = Instant::now();
    // A year is later than any deadline or timer this crate deals with.
    let capped = Duration::from_nanos(nanos).min(Duration::from_secs(365 * 24 * 3600));
    now.checked_add(capped).unwrap_or(now)
}

/// Why no message could be read.
#[derive(Debug)]
pub enum FrameError {
    /// The other side closed the pipe (or it broke).
    Closed,
    /// The announced length is over the reader's bound; nothing more was read.
    TooLong { bytes: usize, limit: usize },
    /// The body is not a message of the protocol.
    Malformed(String),
}

/// Writes one message as one frame and flushes it.
pub fn write_frame<W: Write>(
    writer: &mut W,
    buffer: &mut Vec<u8>,
    message: &impl Serialize,
) -> io::Result<()> {
    buffer.clear();
    buffer.extend_from_slice(&[0; 4]);
    serde_json::to_writer(&mut *buffer, message).map_err(io::Error::other)?;
    let length = u32::try_from(buffer.len() - 4)
        .map_err(|_| io::Error::other("a code mode worker message over 4 GiB"))?;
    buffer[..4].copy_from_slice(&length.to_le_bytes());
    writer.write_all(buffer)?;
    writer.flush()
}

/// Reads one frame of at most `limit` bytes into `buffer` and parses it. The length is checked
/// before anything is allocated or read.
pub fn read_frame<R: Read, T: DeserializeOwned>(
    reader: &mut R,
    buffer: &mut Vec<u8>,
    limit: usize,
) -> Result<T, FrameError> {
    let mut header = [0u8; 4];
    reader
        .read_exact(&mut header)
        .map_err(|_| FrameError::Closed)?;
    let bytes = usize::try_from(u32::from_le_bytes(header)).unwrap_or(usize::MAX);
    if bytes > limit {
        return Err(FrameError::TooLong { bytes, limit });
    }
    buffer.clear();
    buffer.resize(bytes, 0);
    reader.read_exact(buffer).map_err(|_| FrameError::Closed)?;
    if nests_deeper_than(buffer, MAX_FRAME_DEPTH) {
        return Err(FrameError::Malformed(format!(
            "JSON nested deeper than {MAX_FRAME_DEPTH} levels"
        )));
    }
    // The nesting is bounded above, so serde_json's own fixed limit (which a bridge value of
    // the allowed depth inside a message would pass) is not needed.
    let mut deserializer = serde_json::Deserializer::from_slice(buffer);
    deserializer.disable_recursion_limit();
    let message = T::deserialize(&mut deserializer)
        .and_then(|message| deserializer.end().map(|()| message))
        .map_err(|error| FrameError::Malformed(error.to_string()))?;
    Ok(message)
}

/// Deepest nesting of a frame: a bridge value at [`MAX_JSON_DEPTH`] inside a message.
const MAX_FRAME_DEPTH: usize = MAX_JSON_DEPTH + 8;

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn frames_round_trip_and_lengths_are_checked_before_reading() {
        let mut wire = Vec::new();
        let mut buffer = Vec::new();
        let message = WorkerMessage::Sync(BridgeRequest {
            id: crate::RequestId(0),
            method: "m".into(),
            args: vec![1.into()],
        });
        write_frame(&mut wire, &mut buffer, &message).unwrap();
        let read: WorkerMessage = read_frame(&mut wire.as_slice(), &mut buffer, 64).unwrap();
        assert!(
            matches!(read, WorkerMessage::Sync(ref request) if request.args == [Value::from(1)])
        );
        // The same frame against a smaller bound: refused by its header alone.
        let refused = read_frame::<_, WorkerMessage>(&mut wire.as_slice(), &mut buffer, 8);
        assert!(matches!(refused, Err(FrameError::TooLong { limit: 8, .. })));
        // A header announcing 4 GiB costs nothing.
        let huge = [0xff_u8; 4];
        let refused = read_frame::<_, WorkerMessage>(&mut huge.as_slice(), &mut buffer, 1 << 20);
        assert!(matches!(refused, Err(FrameError::TooLong { .. })));
        // Garbage of a valid length.
        let mut garbage = 5u32.to_le_bytes().to_vec();
        garbage.extend_from_slice(b"hello");
        let refused = read_frame::<_, WorkerMessage>(&mut garbage.as_slice(), &mut buffer, 64);
        assert!(matches!(refused, Err(FrameError::Malformed(_))));
        // Nesting is checked before parsing; strings do not count.
        let deep = format!(
            "{{\"Sync\":{{\"id\":0,\"method\":\"m\",\"args\":[{}]}}}}",
            "[".repeat(200) + &"]".repeat(200)
        );
        let mut frame = u32::try_from(deep.len()).unwrap().to_le_bytes().to_vec();
        frame.extend_from_slice(deep.as_bytes());
        let refused = read_frame::<_, WorkerMessage>(&mut frame.as_slice(), &mut buffer, 1 << 20);
        assert!(matches!(refused, Err(FrameError::Malformed(ref m)) if m.contains("deeper")));
        assert!(!nests_deeper_than(br#"["[[[[", {"a": "\"[["}]"#, 2));
        let mut allowed = Value::Array(Vec::new());
        for _ in 1..MAX_JSON_DEPTH {
            allowed = Value::Array(vec![allowed]);
        }
        let message = WorkerMessage::Sync(BridgeRequest {
            id: crate::RequestId(0),
            method: "m".into(),
            args: vec![allowed],
        });
        let mut deep_wire = Vec::new();
        write_frame(&mut deep_wire, &mut buffer, &message).unwrap();
        // serde_json's own limit would refuse this message (a 128-deep value inside it).
        let read = read_frame::<_, WorkerMessage>(&mut deep_wire.as_slice(), &mut buffer, 1 << 20);
        assert!(read.is_ok());
        // A truncated frame is a closed pipe.
        let refused = read_frame::<_, WorkerMessage>(&mut &wire[..6], &mut buffer, 64);
        assert!(matches!(refused, Err(FrameError::Closed)));
    }
}
