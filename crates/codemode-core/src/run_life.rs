//! How a run ends before its program does: on request (`wait` with `terminate: true`) or when
//! its whole life runs out (`maxRunSeconds`, counted from its first `exec`).
//!
//! Each run has one [`RunLife`], held by its bridge host (so it travels with the parked run) and
//! remembered by its session under the run id ([`RunLives`]), so that a `terminate` reaches a run
//! even while another `wait` drives it, and a `wait` on a run dropped when its life ran out says
//! so. A leg is driven with [`RunLife::ending`] as its stop: the run ends the moment either
//! happens, idle or not.

use std::collections::HashMap;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use codemode_sandbox::{LegEnd, Run, RunError};
use tokio_util::sync::CancellationToken;

/// The end of one run's life.
#[derive(Debug)]
pub(crate) struct RunLife {
    /// First `exec` plus `maxRunSeconds`.
    ends_at: Instant,
    /// `maxRunSeconds`, for the message.
    max_run_seconds: u64,
    /// Fired by `wait({ runId, terminate: true })`.
    terminated: CancellationToken,
}

impl RunLife {
    /// The life of a run starting now.
    pub(crate) fn starting_now(max_run: Duration) -> Arc<Self> {
        let now = Instant::now();
        Arc::new(Self {
            ends_at: now.checked_add(max_run).unwrap_or(now),
            max_run_seconds: max_run.as_secs(),
            terminated: CancellationToken::new(),
        })
    }

    /// The life of a run that started at `started_at_ms` (Unix milliseconds, from its journal:
    /// untrusted), seen at `now_ms`. What is left is `max_run` less the time since then, never
    /// more than `max_run` from now: a start in the future (another host's clock, a damaged
    /// row) or none at all counts as now.
    pub(crate) fn started_at(
        started_at_ms: Option<i64>,
        now_ms: i64,
        max_run: Duration,
    ) -> Arc<Self> {
        let elapsed = started_at_ms
            .and_then(|started| now_ms.checked_sub(started))
            .and_then(|elapsed| u64::try_from(elapsed).ok())
            .map_or(Duration::ZERO, Duration::from_millis);
        let now = Instant::now();
        let left = max_run.saturating_sub(elapsed);
        Arc::new(Self {
            ends_at: now.checked_add(left).unwrap_or(now),
            max_run_seconds: max_run.as_secs(),
            terminated: CancellationToken::new(),
        })
    }

    /// Ends the run on request.
    pub(crate) fn terminate(&self) {
        self.terminated.cancel();
    }

    /// Why the run must not run any more, if it must not: terminated, or past its life.
    pub(crate) fn ended(&self) -> Option<RunError> {
        if self.terminated.is_cancelled() {
            Some(RunError::Terminated)
        } else if Instant::now() >= self.ends_at {
            Some(self.exceeded())
        } else {
            None
        }
    }

    /// Whether the run outlived `maxRunSeconds`.
    pub(crate) fn is_past(&self) -> bool {
        Instant::now() >= self.ends_at
    }

    /// What is left of the run's life (zero once it is over): a parked run expires at the end of
    /// its life even before its TTL.
    pub(crate) fn remaining(&self) -> Duration {
        self.ends_at.saturating_duration_since(Instant::now())
    }

    pub(crate) fn exceeded(&self) -> RunError {
        RunError::LifetimeExceeded {
            seconds: self.max_run_seconds,
        }
    }

    /// Drives one leg of `run` until `deadline`, stopped by [`RunLife::ending`]. A guest still
    /// computing at a deadline that the end of its life came before (or at) was stopped by its
    /// life, whichever timer the runtime fired first: the leg fails with `run_lifetime_exceeded`,
    /// never `timeout`, however busy the machine.
    pub(crate) async fn drive_leg(self: &Arc<Self>, run: &mut Run, deadline: Instant) -> LegEnd {
        match run.drive_until(deadline, Arc::clone(self).ending()).await {
            LegEnd::Failed {
                error: RunError::Timeout,
                output,
            } if self.ends_at <= deadline => LegEnd::Failed {
                error: self.exceeded(),
                output,
            },
            end => end,
        }
    }

    /// Resolves when the run must end, with the error it ends with: the stop of every leg
    /// ([`codemode_sandbox::Run::drive_until`]).
    pub(crate) async fn ending(self: Arc<Self>) -> RunError {
        tokio::select! {
            biased;
            () = self.terminated.cancelled() => RunError::Terminated,
            () = tokio::time::sleep_until(self.ends_at.into()) => self.exceeded(),
        }
    }
}

/// Most runs a session remembers the life of; past it, the entry of a run whose life is over
/// goes first, else the one ending first.
const REMEMBERED_LIVES: usize = 1024;

/// The lives of this session's runs that parked, by run id. Only a register: a parked run
/// carries its own life in its bridge host.
#[derive(Debug, Default)]
pub(crate) struct RunLives(Mutex<HashMap<String, Arc<RunLife>>>);

impl RunLives {
    /// Remembers the life of a run that parked (again).
    pub(crate) fn record(&self, run_id: &str, life: &Arc<RunLife>) {
        let mut map = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        if map.len() >= REMEMBERED_LIVES && !map.contains_key(run_id) {
            let now = Instant::now();
            let evict = map
                .iter()
                .min_by_key(|(_, life)| (life.ends_at > now, life.ends_at))
                .map(|(id, _)| id.clone());
            if let Some(evict) = evict {
                map.remove(&evict);
            }
        }
        map.insert(run_id.to_owned(), Arc::clone(life));
    }

    /// The life of a run, if the session remembers it.
    pub(crate) fn get(&self, run_id: &str) -> Option<Arc<RunLife>> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .cloned()
    }

    /// Forgets a run that ended.
    pub(crate) fn forget(&self, run_id: &str) {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id);
    }

    /// The failure of a `wait` on a run the store no longer has because its life ran out.
    pub(crate) fn outlived(&self, run_id: &str) -> Option<RunError> {
        self.get(run_id)
            .filter(|life| life.is_past())
            .map(|life| life.exceeded())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    const MINUTE: Duration = Duration::from_secs(60);
    const NOW_MS: i64 = 1_764_000_000_000;

    #[test]
    fn a_life_counts_from_the_start_its_journal_keeps() {
        // Started 61 s ago with a minute to live: over.
        let over = RunLife::started_at(Some(NOW_MS - 61_000), NOW_MS, MINUTE);
        assert!(over.is_past());
        assert!(matches!(
            over.ended(),
            Some(RunError::LifetimeExceeded { seconds: 60 })
        ));
        // Started 30 s ago: about half is left, never more.
        let half = RunLife::started_at(Some(NOW_MS - 30_000), NOW_MS, MINUTE);
        assert!(!half.is_past());
        assert!(half.remaining() <= Duration::from_secs(30));
    }

    #[test]
    fn a_start_in_the_future_or_none_counts_as_now() {
        for started in [
            None,
            Some(NOW_MS + 3_600_000),
            Some(i64::MAX),
            Some(i64::MIN),
        ] {
            let life = RunLife::started_at(started, NOW_MS, MINUTE);
            assert!(life.remaining() <= MINUTE, "{started:?}");
            if started != Some(i64::MIN) {
                assert!(!life.is_past(), "{started:?}");
            }
        }
        // i64::MIN: the subtraction overflows and counts as now too.
        assert!(!RunLife::started_at(Some(i64::MIN), NOW_MS, MINUTE).is_past());
    }
}
