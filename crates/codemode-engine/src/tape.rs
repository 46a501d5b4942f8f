//! The generic hook through which a host records or replays what makes two runs of the same
//! program differ: the values of nondeterministic built-ins, the order in which host answers
//! reach the guest, and which timer fires when. The sandbox knows nothing of journals; it only
//! asks the tape.

use std::fmt;

use crate::RequestId;

/// A nondeterministic source the guest reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum ReadingKind {
    /// Wall-clock milliseconds: `Date.now()`, `new Date()` and `Date()` without arguments.
    Clock,
    /// `Math.random()`.
    Random,
    /// `performance.now()`.
    Monotonic,
}

impl ReadingKind {
    /// The kind's number (stable: journals store it).
    pub fn number(self) -> u32 {
        match self {
            ReadingKind::Clock => 0,
            ReadingKind::Random => 1,
            ReadingKind::Monotonic => 2,
        }
    }

    /// The kind of a number from [`ReadingKind::number`].
    pub fn from_number(number: u32) -> Option<Self> {
        Some(match number {
            0 => ReadingKind::Clock,
            1 => ReadingKind::Random,
            2 => ReadingKind::Monotonic,
            _ => return None,
        })
    }
}

/// Records or replays the nondeterministic inputs of one run; the run's host gives it
/// ([`BridgeHost::tape`](crate::BridgeHost::tape)).
///
/// Called on the VM thread, while the VM is locked: every method must answer at once, without
/// blocking or calling back into the run. Without a tape, a run reads the clock and the random
/// source directly and fires timers by the clock, as always.
pub trait Tape: Send + Sync + fmt::Debug + 'static {
    /// The guest reads `kind`; `live` is what it would see now. Returns what it sees.
    fn reading(&self, kind: ReadingKind, live: f64) -> f64;

    /// The answer of bridge request `id` is about to be settled into the guest (in the order
    /// the guest sees answers).
    fn settling(&self, id: RequestId);

    /// The guest's microtasks are drained: which timer fires now. `due` is the timer the clock
    /// says is due (the earliest, registration order breaking ties), if any; `registered` tells
    /// whether an id is a pending timer. `None` fires none now.
    fn next_timer(&self, due: Option<u64>, registered: &dyn Fn(u64) -> bool) -> Option<u64>;

    /// Set once the host must end the run (e.g. a replay diverged): the run fails with
    /// [`RunError::Aborted`](crate::RunError::Aborted) and this message at the next step.
    fn abort(&self) -> Option<String>;
}
