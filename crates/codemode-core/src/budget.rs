//! The host memory budget of a [`CodeMode`](crate::CodeMode): each `exec` and `wait` reserves
//! its VM's memory limit (`memoryLimitBytes`) against the budget while it runs, so the VMs
//! running at once never hold more than the budget, however many calls arrive together.
//!
//! A call that finds no room queues. The queue is fair across sessions: a freed reservation
//! goes to the sessions with waiting calls in turn (round robin), so a session that sent many
//! calls at once does not make another session's call wait behind all of them. The queue is
//! bounded ([`MAX_CALLS_WAITING_FOR_MEMORY`]) and so is each wait (the call's own deadline); past either the
//! call fails with `runtime_unavailable`. A call whose VM limit is larger than the whole budget
//! runs alone.

use std::collections::{HashMap, VecDeque};
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::Instant;

use tokio::sync::Notify;

/// At most this many calls wait for room at once, for all sessions together; past it a call
/// fails at once.
pub const MAX_CALLS_WAITING_FOR_MEMORY: usize = 4096;

/// The default budget where the machine's memory cannot be read: 4 GiB.
pub const FALLBACK_MAX_MEMORY_BYTES: u64 = 4 << 30;

/// The default host memory budget: half the machine's memory (`MemTotal` of `/proc/meminfo`
/// on Linux), else [`FALLBACK_MAX_MEMORY_BYTES`].
pub fn default_max_memory_bytes() -> u64 {
    machine_memory_bytes().map_or(FALLBACK_MAX_MEMORY_BYTES, |total| total / 2)
}

fn machine_memory_bytes() -> Option<u64> {
    let text = std::fs::read_to_string("/proc/meminfo").ok()?;
    let line = text.lines().find(|line| line.starts_with("MemTotal:"))?;
    let kib: u64 = line
        .trim_start_matches("MemTotal:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .ok()?;
    kib.checked_mul(1024)
}

/// Why a call got no room.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum NoRoom {
    /// Its deadline passed while it waited.
    Timeout,
    /// [`MAX_CALLS_WAITING_FOR_MEMORY`] calls were already waiting.
    QueueFull,
}

struct Waiter {
    need: u64,
    granted: AtomicBool,
    notify: Notify,
}

#[derive(Default)]
struct Queues {
    available: u64,
    /// Waiting calls, per session, oldest first.
    waiting: HashMap<u64, VecDeque<Arc<Waiter>>>,
    /// Sessions with waiting calls, in turn.
    turn: VecDeque<u64>,
    queued: usize,
}

impl Queues {
    /// Grants waiting calls in turn while the next one fits.
    fn dispatch(&mut self) {
        while let Some(&session) = self.turn.front() {
            let Some(queue) = self.waiting.get_mut(&session) else {
                self.turn.pop_front();
                continue;
            };
            let Some(head) = queue.front() else {
                self.waiting.remove(&session);
                self.turn.pop_front();
                continue;
            };
            if head.need > self.available {
                return;
            }
            self.available -= head.need;
            head.granted.store(true, Ordering::Release);
            head.notify.notify_one();
            queue.pop_front();
            self.queued = self.queued.saturating_sub(1);
            self.turn.pop_front();
            if queue.is_empty() {
                self.waiting.remove(&session);
            } else {
                self.turn.push_back(session);
            }
        }
    }

    fn remove(&mut self, session: u64, waiter: &Arc<Waiter>) {
        if let Some(queue) = self.waiting.get_mut(&session) {
            let before = queue.len();
            queue.retain(|queued| !Arc::ptr_eq(queued, waiter));
            self.queued = self.queued.saturating_sub(before - queue.len());
            if queue.is_empty() {
                self.waiting.remove(&session);
                self.turn.retain(|queued| *queued != session);
            }
        }
        // The head may have been the one blocking smaller calls behind it.
        self.dispatch();
    }
}

/// The budget: bytes reserved by running calls, and the calls waiting for room.
pub(crate) struct MemoryBudget {
    total: u64,
    queues: Mutex<Queues>,
}

impl std::fmt::Debug for MemoryBudget {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryBudget")
            .field("total", &self.total)
            .finish_non_exhaustive()
    }
}

/// Room held by one running call; dropping it frees the room for the next waiting call.
pub(crate) struct Reservation {
    budget: Arc<MemoryBudget>,
    bytes: u64,
}

impl Drop for Reservation {
    fn drop(&mut self) {
        self.budget.release(self.bytes);
    }
}

/// A queued call's place; if the call is dropped while it waits (its request was cancelled),
/// the place is given up, or the room it was just granted is given back.
struct Place {
    budget: Arc<MemoryBudget>,
    session: u64,
    waiter: Arc<Waiter>,
    settled: bool,
}

impl Drop for Place {
    fn drop(&mut self) {
        if self.settled {
            return;
        }
        let mut queues = self.budget.lock();
        if self.waiter.granted.load(Ordering::Acquire) {
            queues.available = queues.available.saturating_add(self.waiter.need);
            queues.dispatch();
        } else {
            queues.remove(self.session, &self.waiter);
        }
    }
}

impl MemoryBudget {
    /// A budget of `total` bytes (0 is taken as 1: one call at a time).
    pub(crate) fn new(total: u64) -> Arc<Self> {
        let total = total.max(1);
        Arc::new(MemoryBudget {
            total,
            queues: Mutex::new(Queues {
                available: total,
                ..Queues::default()
            }),
        })
    }

    fn lock(&self) -> MutexGuard<'_, Queues> {
        self.queues.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// How many calls wait for room now.
    pub(crate) fn waiting(&self) -> usize {
        self.lock().queued
    }

    /// Bytes reserved now, and the whole budget.
    pub(crate) fn in_use(&self) -> (u64, u64) {
        (self.total.saturating_sub(self.lock().available), self.total)
    }

    fn release(&self, bytes: u64) {
        let mut queues = self.lock();
        queues.available = queues.available.saturating_add(bytes).min(self.total);
        queues.dispatch();
    }

    /// Reserves `bytes` (at most the whole budget) for a call of `session`, waiting in the
    /// session's turn until `deadline`.
    pub(crate) async fn reserve(
        self: &Arc<Self>,
        session: u64,
        bytes: u64,
        deadline: Instant,
    ) -> Result<Reservation, NoRoom> {
        let need = bytes.min(self.total);
        let waiter = {
            let mut queues = self.lock();
            if queues.queued == 0 && queues.available >= need {
                queues.available -= need;
                return Ok(Reservation {
                    budget: Arc::clone(self),
                    bytes: need,
                });
            }
            if queues.queued >= MAX_CALLS_WAITING_FOR_MEMORY {
                return Err(NoRoom::QueueFull);
            }
            let waiter = Arc::new(Waiter {
                need,
                granted: AtomicBool::new(false),
                notify: Notify::new(),
            });
            queues
                .waiting
                .entry(session)
                .or_default()
                .push_back(Arc::clone(&waiter));
            if !queues.turn.contains(&session) {
                queues.turn.push_back(session);
            }
            queues.queued += 1;
            // Room may be free with nobody ahead in this session's turn.
            queues.dispatch();
            waiter
        };
        let mut place = Place {
            budget: Arc::clone(self),
            session,
            waiter,
            settled: false,
        };
        let sleep = tokio::time::sleep_until(deadline.into());
        tokio::pin!(sleep);
        loop {
            if place.waiter.granted.load(Ordering::Acquire) {
                place.settled = true;
                return Ok(Reservation {
                    budget: Arc::clone(self),
                    bytes: need,
                });
            }
            tokio::select! {
                () = place.waiter.notify.notified() => {}
                () = &mut sleep => {
                    // Dropping the place gives it up (or gives back a grant that raced in).
                    if place.waiter.granted.load(Ordering::Acquire) {
                        place.settled = true;
                        return Ok(Reservation {
                            budget: Arc::clone(self),
                            bytes: need,
                        });
                    }
                    return Err(NoRoom::Timeout);
                }
            }
        }
    }
}

/// A number for each session, the unit the budget is fair across.
pub(crate) fn next_session() -> u64 {
    static NEXT: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

impl MemoryBudget {
    /// The failure of a call that got no room, in the run result's words.
    pub(crate) fn refusal(&self, why: NoRoom) -> String {
        match why {
            NoRoom::Timeout => format!(
                "code mode runtime unavailable: the host's memory budget ({} bytes) stayed in use \
                 by other runs until this call's deadline; try again",
                self.total
            ),
            NoRoom::QueueFull => format!(
                "code mode runtime unavailable: {MAX_CALLS_WAITING_FOR_MEMORY} calls already wait \
                 for the host's memory budget ({} bytes); try again",
                self.total
            ),
        }
    }
}

#[cfg(test)]
mod tests {
    use std::time::Duration;

    use super::*;

    #[tokio::test]
    async fn room_goes_to_sessions_in_turn() {
        let budget = MemoryBudget::new(10);
        let far = Instant::now() + Duration::from_secs(60);
        let held = budget.reserve(1, 10, far).await.expect("room");
        // Session 1 queues three calls, then session 2 one.
        let mut waiting = Vec::new();
        for session in [1, 1, 1, 2] {
            let budget = Arc::clone(&budget);
            waiting.push(tokio::spawn(async move {
                let reservation = budget.reserve(session, 10, far).await;
                (session, reservation)
            }));
            tokio::task::yield_now().await;
        }
        // Let every call reach its place.
        while budget.lock().queued < 4 {
            tokio::task::yield_now().await;
        }
        drop(held);
        let (first, first_room) = waiting.remove(0).await.expect("task");
        assert_eq!(first, 1);
        drop(first_room);
        // Session 2 is next, ahead of session 1's other two calls.
        let (second, second_room) = waiting.remove(2).await.expect("task");
        assert_eq!(second, 2);
        assert_eq!(budget.lock().queued, 2, "session 1's calls still wait");
        drop(second_room);
        for task in waiting {
            let (_, room) = task.await.expect("task");
            drop(room.expect("room"));
        }
        assert_eq!(budget.lock().available, 10);
    }

    #[tokio::test]
    async fn a_wait_is_bounded_and_a_cancelled_one_gives_its_place_up() {
        let budget = MemoryBudget::new(10);
        let held = budget
            .reserve(1, 10, Instant::now() + Duration::from_secs(60))
            .await
            .expect("room");
        let soon = Instant::now() + Duration::from_millis(50);
        assert_eq!(
            budget.reserve(2, 4, soon).await.err(),
            Some(NoRoom::Timeout)
        );
        assert_eq!(budget.lock().queued, 0);
        let cancelled = {
            let budget = Arc::clone(&budget);
            tokio::spawn(async move {
                let _ = budget
                    .reserve(3, 4, Instant::now() + Duration::from_secs(60))
                    .await;
            })
        };
        while budget.lock().queued < 1 {
            tokio::task::yield_now().await;
        }
        cancelled.abort();
        let _ = cancelled.await;
        assert_eq!(budget.lock().queued, 0);
        drop(held);
        assert_eq!(budget.lock().available, 10);
        // A budget of 0 still lets one call run at a time.
        let none = MemoryBudget::new(0);
        let one = none
            .reserve(5, 100, Instant::now() + Duration::from_secs(60))
            .await
            .expect("room");
        assert_eq!(
            none.reserve(6, 100, Instant::now() + Duration::from_millis(10))
                .await
                .err(),
            Some(NoRoom::Timeout)
        );
        drop(one);
        // A call larger than the budget runs alone.
        let alone = budget
            .reserve(4, 100, Instant::now() + Duration::from_secs(60))
            .await
            .expect("room");
        assert_eq!(budget.lock().available, 0);
        drop(alone);
    }
}
