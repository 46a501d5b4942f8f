//! The time a [`SnapshotStore`](crate::SnapshotStore) measures its TTLs against: the system's
//! monotonic clock, or a [`ManualClock`] that a test moves by hand, so that a TTL test advances
//! time instead of sleeping past it.

use std::fmt;
use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use tokio::sync::Notify;

/// A clock that stands still until [`advance`](Self::advance) moves it: for tests of TTLs, which
/// then never sleep and never race the machine. Cloning gives another handle to the same clock.
///
/// ```
/// use std::time::Duration;
/// use codemode_sandbox::ManualClock;
///
/// let clock = ManualClock::new();
/// let start = clock.now();
/// clock.advance(Duration::from_secs(900));
/// assert_eq!(clock.now() - start, Duration::from_secs(900));
/// ```
#[derive(Clone, Default)]
pub struct ManualClock {
    inner: Arc<ManualInner>,
}

struct ManualInner {
    /// The instant the clock started at.
    start: Instant,
    /// How far it has been advanced since.
    advanced: Mutex<Duration>,
    /// Wakes whoever waits for an instant (a store's expiry task) when the clock moves.
    moved: Notify,
}

impl Default for ManualInner {
    fn default() -> Self {
        Self {
            start: Instant::now(),
            advanced: Mutex::new(Duration::ZERO),
            moved: Notify::new(),
        }
    }
}

impl fmt::Debug for ManualClock {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("ManualClock")
            .field("advanced", &self.advanced())
            .finish()
    }
}

impl ManualClock {
    /// A clock standing at the present instant.
    pub fn new() -> Self {
        Self::default()
    }

    /// The instant the clock shows.
    pub fn now(&self) -> Instant {
        self.inner.start + self.advanced()
    }

    /// Moves the clock forward by `by`; a store using it expires the runs whose TTL has now
    /// passed (its expiry task, when it has one, is woken).
    pub fn advance(&self, by: Duration) {
        {
            let mut advanced = self
                .inner
                .advanced
                .lock()
                .unwrap_or_else(PoisonError::into_inner);
            *advanced = advanced.saturating_add(by);
        }
        self.inner.moved.notify_waiters();
    }

    fn advanced(&self) -> Duration {
        *self
            .inner
            .advanced
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
    }

    /// Returns once the clock shows `at` or later.
    async fn reached(&self, at: Instant) {
        loop {
            // Registered before the check, so that an advance between the two is not missed.
            let mut moved = std::pin::pin!(self.inner.moved.notified());
            moved.as_mut().enable();
            if self.now() >= at {
                return;
            }
            moved.await;
        }
    }
}

/// The clock of one store.
#[derive(Debug, Clone, Default)]
pub(crate) enum StoreClock {
    /// The system's monotonic clock.
    #[default]
    System,
    /// A clock a test moves.
    Manual(ManualClock),
}

impl StoreClock {
    pub(crate) fn now(&self) -> Instant {
        match self {
            Self::System => Instant::now(),
            Self::Manual(clock) => clock.now(),
        }
    }

    /// Returns once the clock shows `at` or later.
    pub(crate) async fn reached(&self, at: Instant) {
        match self {
            Self::System => tokio::time::sleep_until(at.into()).await,
            Self::Manual(clock) => clock.reached(at).await,
        }
    }
}
