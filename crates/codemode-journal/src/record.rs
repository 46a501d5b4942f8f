//! What a journal holds: the run's row, the receipts of its nested calls, the order in which
//! answers reached the guest, and the nondeterministic readings the guest made.

use std::fmt;

use serde_json::Value;
use sha2::{Digest, Sha256};

/// Deepest nesting of a stored answer that reads back: above the 128 levels a value may have to
/// cross the sandbox's bridge (serde_json's own fixed limit stops one level short of those), and
/// shallow enough for a recursive parse on any thread's stack. A deeper payload is a corrupt row.
pub const MAX_PAYLOAD_DEPTH: usize = 256;

/// A stored answer's JSON, its nesting checked by a linear pass before the recursive parse.
fn parse_payload(text: &str) -> Option<Value> {
    if nests_deeper_than(text.as_bytes(), MAX_PAYLOAD_DEPTH) {
        return None;
    }
    let mut deserializer = serde_json::Deserializer::from_str(text);
    deserializer.disable_recursion_limit();
    let value = serde::Deserialize::deserialize(&mut deserializer).ok()?;
    deserializer.end().ok()?;
    Some(value)
}

/// Whether JSON text nests arrays and objects deeper than `max` (one linear pass; strings and
/// their escapes are skipped). The sandbox reads bridge JSON with a check of its own: the journal
/// knows nothing of the sandbox.
fn nests_deeper_than(text: &[u8], max: usize) -> bool {
    let (mut depth, mut in_string, mut escaped) = (0usize, false, false);
    for &byte in text {
        if in_string {
            match byte {
                _ if escaped => escaped = false,
                b'\\' => escaped = true,
                b'"' => in_string = false,
                _ => {}
            }
            continue;
        }
        match byte {
            b'"' => in_string = true,
            b'[' | b'{' => {
                depth += 1;
                if depth > max {
                    return true;
                }
            }
            b']' | b'}' => depth = depth.saturating_sub(1),
            _ => {}
        }
    }
    false
}

/// Who may resume a journaled run: the same rule as a parked run. A field that is `Some` in the
/// journal must be matched exactly by the caller.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct Scope {
    /// The agent run that started the run.
    pub agent_run_id: Option<String>,
    /// The session that started it.
    pub session_id: Option<String>,
    /// The session key that started it.
    pub session_key: Option<String>,
}

/// The row of one run: what a replay needs to start it again.
#[derive(Clone, PartialEq, Eq)]
pub struct RunRecord {
    /// `cm_<uuid>`.
    pub run_id: String,
    /// Who may resume it.
    pub scope: Scope,
    /// The program as the sandbox ran it (JavaScript; TypeScript already stripped).
    pub program: String,
    /// The model's `exec` call id (parent of the nested call ids).
    pub parent_call_id: String,
    /// Whether the run was started `restartSafe`.
    pub restart_safe: bool,
    /// The run's time to live while parked, in milliseconds.
    pub ttl_ms: u64,
    /// When the journal expires (Unix milliseconds); an expired journal is deleted.
    pub expires_at_ms: i64,
    /// The W3C `traceparent` of the run's first leg, when it was traced (OpenTelemetry), so
    /// that its later legs continue the trace. Opaque here; whoever reads it must treat it as
    /// untrusted (a malformed one starts a new trace).
    pub trace_context: Option<String>,
    /// When the run's first `exec` began (Unix milliseconds), which its `maxRunSeconds` counts
    /// from on every host. `None` in a journal an older version wrote. Untrusted like the rest
    /// of the row: a reader clamps it (a start in the future counts as now).
    pub started_at_ms: Option<i64>,
}

impl fmt::Debug for RunRecord {
    // The program is the model's code and may quote tool data: never in a Debug line.
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("RunRecord")
            .field("run_id", &self.run_id)
            .field("scope", &self.scope)
            .field("program_bytes", &self.program.len())
            .field("restart_safe", &self.restart_safe)
            .field("expires_at_ms", &self.expires_at_ms)
            .field("trace_context", &self.trace_context)
            .field("started_at_ms", &self.started_at_ms)
            .finish_non_exhaustive()
    }
}

/// The state of one receipt.
#[derive(Debug, Clone, PartialEq)]
pub enum ReceiptState {
    /// Written before a side-effecting call runs; still `Started` after a crash means nobody
    /// knows whether the call took effect.
    Started,
    /// The call answered this value.
    Ok(Value),
    /// The call failed with this message (the guest saw a catchable error).
    Error(String),
    /// A replay found the call `Started`: its outcome is unknown, and the guest was told so.
    Unknown,
}

impl ReceiptState {
    /// The state's name as stored.
    pub fn name(&self) -> &'static str {
        match self {
            ReceiptState::Started => "started",
            ReceiptState::Ok(_) => "ok",
            ReceiptState::Error(_) => "error",
            ReceiptState::Unknown => "unknown",
        }
    }

    /// The stored payload: the value's JSON or the message.
    pub fn payload(&self) -> Option<String> {
        match self {
            ReceiptState::Ok(value) => Some(value.to_string()),
            ReceiptState::Error(message) => Some(message.clone()),
            ReceiptState::Started | ReceiptState::Unknown => None,
        }
    }

    /// The state from its stored name and payload; `None` for a row no version wrote.
    pub fn from_stored(name: &str, payload: Option<&str>) -> Option<Self> {
        Some(match name {
            "started" => ReceiptState::Started,
            "unknown" => ReceiptState::Unknown,
            "ok" => ReceiptState::Ok(parse_payload(payload?)?),
            "error" => ReceiptState::Error(payload?.to_owned()),
            _ => return None,
        })
    }

    /// Bytes the state holds (what counts against the snapshot bound).
    pub fn bytes(&self) -> usize {
        self.payload().map_or(0, |payload| payload.len())
    }
}

/// The identity of a nested call in program order: its bridge method and the ordinal of that
/// method's call within the run (0, 1, ...). `Promise.all` makes its calls in program order, so
/// a replay gives each the same key, whatever order their answers came in.
#[derive(Debug, Clone, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub struct ReceiptKey {
    /// The bridge method (`tools.call`, `mcp.call`, ...).
    pub method: String,
    /// The ordinal of the method's call in the run.
    pub ordinal: u64,
}

/// The receipt of one nested call.
#[derive(Debug, Clone, PartialEq)]
pub struct Receipt {
    /// The call's identity.
    pub key: ReceiptKey,
    /// The exact catalog id it called.
    pub catalog_id: String,
    /// [`input_hash`] of its input.
    pub input_hash: String,
    /// Whether the tool may have side effects (not read-only).
    pub side_effecting: bool,
    /// Where it is.
    pub state: ReceiptState,
}

/// The SHA-256 of a call's input as compact JSON, in hex: what a replay checks a call against.
///
/// ```
/// let hash = codemode_journal::input_hash(&serde_json::json!({ "path": "a.txt" }));
/// assert_eq!(hash.len(), 64);
/// assert_eq!(hash, codemode_journal::input_hash(&serde_json::json!({ "path": "a.txt" })));
/// ```
pub fn input_hash(input: &Value) -> String {
    let digest = Sha256::digest(input.to_string().as_bytes());
    digest.iter().map(|byte| format!("{byte:02x}")).collect()
}

/// Something that reached the guest, in the order it did: a replay delivers the same things in
/// the same order.
#[derive(Debug, Clone, PartialEq, Eq)]
pub enum Event {
    /// The answer of this call was settled into the guest.
    Settled(ReceiptKey),
    /// The timer with this sandbox id fired.
    Timer(u64),
    /// A pending `yield_control()` was resumed by a `wait`.
    YieldResumed,
}

impl Event {
    /// The stored kind, method and number of the event.
    pub fn to_stored(&self) -> (&'static str, Option<&str>, u64) {
        match self {
            Event::Settled(key) => ("settled", Some(key.method.as_str()), key.ordinal),
            Event::Timer(id) => ("timer", None, *id),
            Event::YieldResumed => ("yield", None, 0),
        }
    }

    /// The event from its stored columns; `None` for a row no version wrote.
    pub fn from_stored(kind: &str, method: Option<&str>, number: u64) -> Option<Self> {
        Some(match kind {
            "settled" => Event::Settled(ReceiptKey {
                method: method?.to_owned(),
                ordinal: number,
            }),
            "timer" => Event::Timer(number),
            "yield" => Event::YieldResumed,
            _ => return None,
        })
    }
}

/// A nondeterministic value the guest read (`Date.now()`, `Math.random()`, ...): the
/// `ordinal`-th reading of `kind` in the run.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct Reading {
    /// The source, as the sandbox numbers it.
    pub kind: u32,
    /// The ordinal of the reading of that source.
    pub ordinal: u64,
    /// The value the guest saw.
    pub value: f64,
}

/// Writes to one run's journal, committed together in one transaction.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct Batch {
    /// Receipts to write (insert or replace by key).
    pub receipts: Vec<Receipt>,
    /// Events with their sequence numbers.
    pub events: Vec<(u64, Event)>,
    /// Readings.
    pub readings: Vec<Reading>,
    /// Output items delivered to the client so far, when it changed.
    pub delivered: Option<u64>,
    /// The journal's size in bytes, when it changed.
    pub bytes: Option<u64>,
}

impl Batch {
    /// Whether the batch writes nothing.
    pub fn is_empty(&self) -> bool {
        self.receipts.is_empty()
            && self.events.is_empty()
            && self.readings.is_empty()
            && self.delivered.is_none()
            && self.bytes.is_none()
    }

    /// Appends `later`, keeping the later value of each field written twice.
    pub fn merge(&mut self, later: Batch) {
        self.receipts.extend(later.receipts);
        self.events.extend(later.events);
        self.readings.extend(later.readings);
        self.delivered = later.delivered.or(self.delivered);
        self.bytes = later.bytes.or(self.bytes);
    }
}

/// A run's whole journal, as loaded for a replay.
#[derive(Debug, Clone, PartialEq)]
pub struct Journal {
    /// The run's row.
    pub record: RunRecord,
    /// The fencing epoch: bumped each time another process takes the run over.
    pub epoch: u64,
    /// Every receipt, in key order.
    pub receipts: Vec<Receipt>,
    /// Events in sequence order.
    pub events: Vec<(u64, Event)>,
    /// Readings.
    pub readings: Vec<Reading>,
    /// Output items already delivered to the client.
    pub delivered: u64,
    /// The journal's size in bytes.
    pub bytes: u64,
}

/// The answer to [`JournalStore::claim`](crate::JournalStore::claim).
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Claim {
    /// The caller holds the run until it releases it (or the hold passes) under this epoch;
    /// `live_here` says the live VM, if any, is this caller's (nobody took the run over since
    /// this caller last held it).
    Held {
        /// The epoch every write of the holder carries.
        epoch: u64,
        /// Whether the caller's own live VM is still the run's truth.
        live_here: bool,
    },
    /// Another process is resuming it.
    Busy,
    /// No such journal (never written, finished, expired or deleted).
    Missing,
}

#[cfg(test)]
mod tests {
    use super::*;

    fn nested(levels: usize) -> String {
        format!("{}1{}", "[".repeat(levels), "]".repeat(levels))
    }

    #[test]
    fn an_answer_nested_as_deep_as_the_bridge_allows_reads_back() {
        for levels in [127, 128, 200, MAX_PAYLOAD_DEPTH] {
            let mut value = Value::from(1);
            for _ in 0..levels {
                value = Value::Array(vec![value]);
            }
            let state = ReceiptState::Ok(value);
            let stored = state.payload().unwrap();
            assert_eq!(
                ReceiptState::from_stored("ok", Some(&stored)),
                Some(state),
                "{levels} levels"
            );
        }
    }

    #[test]
    fn a_payload_nested_deeper_is_a_corrupt_row_not_a_stack_overflow() {
        for text in [nested(MAX_PAYLOAD_DEPTH + 1), nested(1_000_000)] {
            assert_eq!(ReceiptState::from_stored("ok", Some(&text)), None);
        }
        // Brackets inside strings do not count, escaped quotes do not end them.
        let text = format!("[\"\\\"{}\"]", "[".repeat(10_000));
        assert!(matches!(
            ReceiptState::from_stored("ok", Some(&text)),
            Some(ReceiptState::Ok(_))
        ));
    }
}
