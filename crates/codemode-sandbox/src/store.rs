//! The in-memory snapshot store of suspended runs, which `wait` resumes. Nothing is written to
//! disk.

use std::collections::HashMap;
use std::fmt;
use std::str::FromStr;
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, Weak};
use std::time::{Duration, Instant};

use tokio::sync::Notify;
use uuid::Uuid;

use crate::clock::StoreClock;
use crate::{ManualClock, Run};

mod error;

pub use error::StoreError;

/// The cap on suspended runs per store (one store per `CodeMode`; not configurable).
pub const MAX_SUSPENDED_RUNS: usize = 64;

/// The id of a parked run: `cm_<uuid>`.
///
/// ```
/// use codemode_sandbox::RunId;
/// let id = RunId::new();
/// let text = id.to_string();
/// assert!(text.starts_with("cm_"));
/// assert_eq!(text.parse::<RunId>().unwrap(), id);
/// assert!("cm_not-a-uuid".parse::<RunId>().is_err());
/// ```
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub struct RunId(Uuid);

impl RunId {
    /// A fresh random id.
    pub fn new() -> Self {
        Self(Uuid::new_v4())
    }
}

impl Default for RunId {
    fn default() -> Self {
        Self::new()
    }
}

impl fmt::Display for RunId {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "cm_{}", self.0.hyphenated())
    }
}

impl FromStr for RunId {
    type Err = StoreError;

    /// Accepts exactly `cm_<uuid>`; anything else is [`StoreError::Unavailable`].
    fn from_str(text: &str) -> Result<Self, Self::Err> {
        let uuid = text.strip_prefix("cm_").ok_or(StoreError::Unavailable)?;
        Uuid::try_parse(uuid)
            .map(Self)
            .map_err(|_| StoreError::Unavailable)
    }
}

/// Who may resume a parked run. A field that is `Some` when parking must be matched exactly by
/// the resuming caller; a field that is `None` when parking does not restrict.
#[derive(Debug, Clone, Default, PartialEq, Eq, Hash)]
pub struct RunScope {
    /// The agent run that parked it.
    pub agent_run_id: Option<String>,
    /// The session id that parked it.
    pub session_id: Option<String>,
    /// The session key that parked it.
    pub session_key: Option<String>,
}

impl RunScope {
    /// Whether `caller` may resume or cancel a run parked under this scope.
    ///
    /// # Errors
    /// [`StoreError::DifferentSession`] or [`StoreError::DifferentAgentRun`].
    pub fn admits(&self, caller: &Self) -> Result<(), StoreError> {
        let differs =
            |parked: &Option<String>, caller: &Option<String>| parked.is_some() && parked != caller;
        if differs(&self.session_id, &caller.session_id)
            || differs(&self.session_key, &caller.session_key)
        {
            return Err(StoreError::DifferentSession);
        }
        if differs(&self.agent_run_id, &caller.agent_run_id) {
            return Err(StoreError::DifferentAgentRun);
        }
        Ok(())
    }

    fn in_session(&self, session: &str) -> bool {
        self.session_id.as_deref() == Some(session) || self.session_key.as_deref() == Some(session)
    }
}

enum State<E> {
    Parked {
        run: Box<Run>,
        extra: E,
        expires_at: Instant,
    },
    /// Owned by a live [`Resumption`]; not subject to expiry until reparked.
    Resuming,
}

struct Entry<E> {
    scope: RunScope,
    ttl: Duration,
    max_snapshot_bytes: usize,
    state: State<E>,
}

struct Entries<E> {
    map: HashMap<RunId, Entry<E>>,
    capacity: usize,
    /// The time TTLs are measured against.
    clock: StoreClock,
    /// Wakes the expiry task (started with the first park inside a tokio runtime) when an
    /// entry's expiry may have moved earlier, and when the store is dropped.
    reaper: Option<Arc<Notify>>,
}

impl<E> Drop for Entries<E> {
    fn drop(&mut self) {
        if let Some(reaper) = &self.reaper {
            // The task sees the store gone and ends.
            reaper.notify_one();
        }
    }
}

impl<E> Entries<E> {
    /// The earliest expiry of a parked entry.
    fn next_expiry(&self) -> Option<Instant> {
        self.map
            .values()
            .filter_map(|entry| match entry.state {
                State::Parked { expires_at, .. } => Some(expires_at),
                State::Resuming => None,
            })
            .min()
    }

    /// Removes expired parked entries; returns them so they are dropped outside the lock.
    fn purge(&mut self, now: Instant) -> Vec<Entry<E>> {
        let expired: Vec<RunId> = self
            .map
            .iter()
            .filter(|(_, entry)| matches!(entry.state, State::Parked { expires_at, .. } if expires_at <= now))
            .map(|(id, _)| *id)
            .collect();
        expired
            .iter()
            .filter_map(|id| self.map.remove(id))
            .collect()
    }
}

type SharedEntries<E> = Arc<Mutex<Entries<E>>>;

/// Evicts parked runs as their TTL passes, so an expired run's VM and host work (pending
/// approvals, MCP calls) end on time even in a quiet host. Holds the store weakly: it never keeps
/// it alive, and ends when the store is dropped.
async fn reap<E: Send + 'static>(entries: Weak<Mutex<Entries<E>>>, wake: Arc<Notify>) {
    loop {
        let (next, clock) = {
            let Some(strong) = entries.upgrade() else {
                return;
            };
            let mut guard = lock(&strong);
            let clock = guard.clock.clone();
            let expired = guard.purge(clock.now());
            let next = guard.next_expiry();
            drop(guard);
            drop(strong);
            // Expired runs are dropped outside the lock: their VMs are released, host work aborted.
            drop(expired);
            (next, clock)
        };
        match next {
            Some(at) => {
                tokio::select! {
                    () = clock.reached(at) => {}
                    () = wake.notified() => {}
                }
            }
            None => wake.notified().await,
        }
    }
}

/// Starts the store's expiry task on the first call inside a tokio runtime with timers, and
/// wakes it for a new expiry. Outside a runtime, expiry stays lazy (every store operation purges).
fn schedule_expiry<E: Send + 'static>(shared: &SharedEntries<E>, entries: &mut Entries<E>) {
    if let Some(reaper) = &entries.reaper {
        reaper.notify_one();
        return;
    }
    let Ok(handle) = tokio::runtime::Handle::try_current() else {
        return;
    };
    let wake = Arc::new(Notify::new());
    let task = reap(Arc::downgrade(shared), Arc::clone(&wake));
    // A runtime without timers would panic in the task's first sleep; stay lazy there.
    let has_timers = std::panic::catch_unwind(|| drop(tokio::time::sleep(Duration::ZERO))).is_ok();
    if has_timers {
        handle.spawn(task);
        entries.reaper = Some(wake);
    }
}

fn lock<E>(entries: &Mutex<Entries<E>>) -> MutexGuard<'_, Entries<E>> {
    entries.lock().unwrap_or_else(PoisonError::into_inner)
}

/// In-memory map of parked runs keyed by [`RunId`], scoped by [`RunScope`], with a TTL per entry
/// and at most [`MAX_SUSPENDED_RUNS`] entries. `E` is extra state the caller parks with the run.
///
/// Expired entries are evicted on time by a task the store starts on the first park inside a
/// tokio runtime (and purged on every store operation besides). Dropping an entry (expiry,
/// [`cancel`](Self::cancel), [`drop_session`](Self::drop_session), [`clear`](Self::clear), or the
/// store itself) releases its VM and aborts its host work. Cloning gives another handle to the
/// same store. TTLs are measured on the system's monotonic clock, or on a [`ManualClock`] given
/// with [`with_manual_clock`](Self::with_manual_clock) (tests that expire runs without waiting).
///
/// ```
/// use std::{sync::Arc, time::{Duration, Instant}};
/// use codemode_sandbox::{BridgeHost, BridgeRequest, GuestSetup, Limits, Placement, Run, RunScope, SnapshotStore, LegEnd};
///
/// struct NoHost;
/// #[async_trait::async_trait]
/// impl BridgeHost for NoHost {
///     async fn call(&self, _: BridgeRequest) -> Result<serde_json::Value, String> { Ok(serde_json::Value::Null) }
/// }
///
/// # tokio::runtime::Builder::new_current_thread().enable_all().build().unwrap().block_on(async {
/// let store: SnapshotStore<&'static str> = SnapshotStore::new();
/// let scope = RunScope { session_id: Some("s1".into()), ..RunScope::default() };
/// let program = "await yield_control('later'); return 'done';";
/// let limits = Limits::default();
/// let mut run = Run::start(program, GuestSetup::default(), &limits, &Placement::Thread, Arc::new(NoHost)).unwrap();
/// let deadline = || Instant::now() + Duration::from_secs(5);
/// assert!(matches!(run.drive(deadline()).await, LegEnd::Suspended { .. }));
///
/// let id = store.park(run, scope.clone(), "extra", Duration::from_secs(900), 10 << 20).unwrap();
/// let mut resumption = store.resume(&id.to_string(), &scope).unwrap();
/// assert_eq!(*resumption.extra(), "extra");
/// match resumption.run_mut().drive(deadline()).await {
///     LegEnd::Completed { value, .. } => assert_eq!(value, "done"),
///     other => panic!("unexpected {other:?}"),
/// }
/// resumption.finish();
/// assert_eq!(store.len(), 0);
/// # });
/// ```
pub struct SnapshotStore<E = ()> {
    entries: SharedEntries<E>,
}

impl<E> Clone for SnapshotStore<E> {
    fn clone(&self) -> Self {
        Self {
            entries: Arc::clone(&self.entries),
        }
    }
}

impl<E: Send + 'static> Default for SnapshotStore<E> {
    fn default() -> Self {
        Self::new()
    }
}

impl<E> fmt::Debug for SnapshotStore<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let entries = lock(&self.entries);
        f.debug_struct("SnapshotStore")
            .field("len", &entries.map.len())
            .field("capacity", &entries.capacity)
            .finish()
    }
}

impl<E: Send + 'static> SnapshotStore<E> {
    /// An empty store holding at most [`MAX_SUSPENDED_RUNS`] runs.
    pub fn new() -> Self {
        Self::with_capacity(MAX_SUSPENDED_RUNS)
    }

    /// An empty store holding at most `capacity` runs (tests and embedders with tighter budgets).
    pub fn with_capacity(capacity: usize) -> Self {
        Self {
            entries: Arc::new(Mutex::new(Entries {
                map: HashMap::new(),
                capacity,
                clock: StoreClock::System,
                reaper: None,
            })),
        }
    }

    /// The store measures its TTLs against `clock` instead of the system's clock: for tests,
    /// which then expire a run by advancing the clock instead of sleeping past its TTL.
    #[must_use]
    pub fn with_manual_clock(self, clock: ManualClock) -> Self {
        lock(&self.entries).clock = StoreClock::Manual(clock);
        self
    }

    /// The instant the store's TTLs are measured against: now, on its clock (the system's, or
    /// the [`ManualClock`] it was given). A caller that records when a parked run expires reads
    /// this clock too.
    pub fn now(&self) -> Instant {
        lock(&self.entries).clock.now()
    }

    /// Parks a suspended run under a fresh [`RunId`] for `ttl`.
    ///
    /// # Errors
    /// [`StoreError::SnapshotLimitExceeded`] when [`Run::memory_bytes`] is over
    /// `max_snapshot_bytes`, [`StoreError::TooManySuspendedRuns`] when the store is full,
    /// [`StoreError::Unavailable`] for a run that already completed or failed. On error the run is
    /// dropped (its VM released, its host work aborted).
    pub fn park(
        &self,
        run: Run,
        scope: RunScope,
        extra: E,
        ttl: Duration,
        max_snapshot_bytes: usize,
    ) -> Result<RunId, StoreError> {
        self.park_as(RunId::new(), run, scope, extra, ttl, max_snapshot_bytes)
    }

    /// Parks a suspended run under an id the caller chose (a run whose id was handed out before
    /// it parked, e.g. to a journal); an entry already parked under `id` is replaced.
    ///
    /// # Errors
    /// As [`park`](Self::park).
    pub fn park_as(
        &self,
        id: RunId,
        run: Run,
        scope: RunScope,
        extra: E,
        ttl: Duration,
        max_snapshot_bytes: usize,
    ) -> Result<RunId, StoreError> {
        if !run.is_alive() {
            return Err(StoreError::Unavailable);
        }
        if run.memory_bytes() > max_snapshot_bytes {
            return Err(StoreError::SnapshotLimitExceeded);
        }
        let mut entries = lock(&self.entries);
        let now = entries.clock.now();
        let expired = entries.purge(now);
        if entries.map.len() >= entries.capacity && !entries.map.contains_key(&id) {
            drop(entries);
            drop(expired);
            return Err(StoreError::TooManySuspendedRuns);
        }

        let expires_at = now
            .checked_add(ttl)
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        let state = State::Parked {
            run: Box::new(run),
            extra,
            expires_at,
        };
        let replaced = entries.map.insert(
            id,
            Entry {
                scope,
                ttl,
                max_snapshot_bytes,
                state,
            },
        );
        schedule_expiry(&self.entries, &mut entries);
        drop(entries);
        drop(expired);
        drop(replaced);
        Ok(id)
    }

    /// Takes exclusive ownership of a parked run for one `wait` leg.
    ///
    /// # Errors
    /// [`StoreError::Unavailable`] for an unknown, malformed or expired id;
    /// [`StoreError::DifferentSession`] / [`StoreError::DifferentAgentRun`] for a caller outside
    /// the run's scope; [`StoreError::AlreadyResuming`] while another [`Resumption`] holds it.
    pub fn resume(&self, id: &str, scope: &RunScope) -> Result<Resumption<E>, StoreError> {
        let mut entries = lock(&self.entries);
        let now = entries.clock.now();
        let expired = entries.purge(now);
        let result = Self::take(&mut entries, id, scope);
        drop(entries);
        drop(expired);
        let (id, run, extra) = result?;
        Ok(Resumption {
            id,
            run,
            extra,
            guard: ResumeGuard {
                entries: Arc::clone(&self.entries),
                id,
                armed: true,
            },
        })
    }

    fn take(
        entries: &mut Entries<E>,
        id: &str,
        scope: &RunScope,
    ) -> Result<(RunId, Run, E), StoreError> {
        let id: RunId = id.parse()?;
        let entry = entries.map.get_mut(&id).ok_or(StoreError::Unavailable)?;
        entry.scope.admits(scope)?;
        match std::mem::replace(&mut entry.state, State::Resuming) {
            State::Parked { run, extra, .. } => Ok((id, *run, extra)),
            State::Resuming => Err(StoreError::AlreadyResuming),
        }
    }

    /// Drops one run of the caller's scope (parked or being resumed; a resumption in progress
    /// then fails to repark). Returns whether such a run was dropped: an unknown id, or a run of
    /// another session or agent run, is left alone.
    pub fn cancel(&self, id: &str, scope: &RunScope) -> bool {
        let Ok(id) = id.parse::<RunId>() else {
            return false;
        };
        let removed = self
            .remove_where(|entry_id, entry| *entry_id == id && entry.scope.admits(scope).is_ok());
        removed > 0
    }

    /// Drops every run parked by a session (matching its session id or session key). Returns how
    /// many were dropped.
    pub fn drop_session(&self, session: &str) -> usize {
        self.remove_where(|_, entry| entry.scope.in_session(session))
    }

    /// Drops every run parked by an agent run. Returns how many were dropped.
    pub fn drop_agent_run(&self, agent_run_id: &str) -> usize {
        self.remove_where(|_, entry| entry.scope.agent_run_id.as_deref() == Some(agent_run_id))
    }

    /// Drops every run (host shutdown).
    pub fn clear(&self) {
        self.remove_where(|_, _| true);
    }

    /// Runs held (parked or being resumed), after purging expired ones.
    pub fn len(&self) -> usize {
        let mut entries = lock(&self.entries);
        let now = entries.clock.now();
        let expired = entries.purge(now);
        let len = entries.map.len();
        drop(entries);
        drop(expired);
        len
    }

    /// Measured VM memory of every parked run, in bytes (runs being resumed are not counted).
    pub fn memory_bytes(&self) -> usize {
        let mut entries = lock(&self.entries);
        let now = entries.clock.now();
        let expired = entries.purge(now);
        let bytes = entries
            .map
            .values()
            .map(|entry| match &entry.state {
                State::Parked { run, .. } => run.memory_bytes(),
                State::Resuming => 0,
            })
            .sum();
        drop(entries);
        drop(expired);
        bytes
    }

    /// Whether no run is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    fn remove_where(&self, mut matches: impl FnMut(&RunId, &Entry<E>) -> bool) -> usize {
        let mut entries = lock(&self.entries);
        let now = entries.clock.now();
        let expired = entries.purge(now);
        let ids: Vec<RunId> = entries
            .map
            .iter()
            .filter(|(id, entry)| matches(id, entry))
            .map(|(id, _)| *id)
            .collect();
        let removed: Vec<Entry<E>> = ids.iter().filter_map(|id| entries.map.remove(id)).collect();
        drop(entries);
        let count = removed.len();
        drop(removed);
        drop(expired);
        count
    }
}

/// Exclusive ownership of a parked run for one leg, from [`SnapshotStore::resume`].
///
/// End it with [`repark`](Self::repark) (the run suspended again) or [`finish`](Self::finish)
/// (it completed or failed); dropping it is the same as `finish`: the entry is removed and the VM
/// released.
pub struct Resumption<E = ()> {
    id: RunId,
    run: Run,
    extra: E,
    guard: ResumeGuard<E>,
}

impl<E> fmt::Debug for Resumption<E> {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.debug_struct("Resumption")
            .field("id", &self.id)
            .field("run", &self.run)
            .finish_non_exhaustive()
    }
}

/// Removes the store entry when a resumption ends without being reparked.
struct ResumeGuard<E> {
    entries: SharedEntries<E>,
    id: RunId,
    armed: bool,
}

impl<E> Drop for ResumeGuard<E> {
    fn drop(&mut self) {
        if self.armed {
            let removed = lock(&self.entries).map.remove(&self.id);
            drop(removed);
        }
    }
}

impl<E: Send + 'static> Resumption<E> {
    /// The run's id.
    pub fn id(&self) -> RunId {
        self.id
    }

    /// The run, to [`drive`](Run::drive) it.
    pub fn run_mut(&mut self) -> &mut Run {
        &mut self.run
    }

    /// The run.
    pub fn run(&self) -> &Run {
        &self.run
    }

    /// The extra state parked with the run.
    pub fn extra(&self) -> &E {
        &self.extra
    }

    /// The extra state parked with the run, mutably.
    pub fn extra_mut(&mut self) -> &mut E {
        &mut self.extra
    }

    /// Parks the run again under the same id with a fresh TTL (the one given to
    /// [`SnapshotStore::park`]).
    ///
    /// # Errors
    /// [`StoreError::SnapshotLimitExceeded`] when the run grew past its `max_snapshot_bytes`;
    /// [`StoreError::Unavailable`] when the run was cancelled or its session dropped meanwhile, or
    /// the run is no longer alive. On error the run is dropped and the entry removed.
    pub fn repark(self) -> Result<(), StoreError> {
        self.repark_within(Duration::MAX)
    }

    /// [`repark`](Self::repark) with a TTL of at most `max_ttl`: a run whose host bounds its
    /// whole life expires parked when that life ends, even before its usual TTL.
    ///
    /// # Errors
    /// As [`repark`](Self::repark).
    pub fn repark_within(self, max_ttl: Duration) -> Result<(), StoreError> {
        let Self {
            id,
            run,
            extra,
            mut guard,
        } = self;
        if !run.is_alive() {
            return Err(StoreError::Unavailable);
        }
        let size = run.memory_bytes();
        let mut entries = lock(&guard.entries);
        let now = entries.clock.now();
        let expired = entries.purge(now);
        let Some(entry) = entries.map.get_mut(&id) else {
            guard.armed = false;
            drop(entries);
            drop(expired);
            return Err(StoreError::Unavailable);
        };
        if size > entry.max_snapshot_bytes {
            drop(entries);
            drop(expired);
            return Err(StoreError::SnapshotLimitExceeded);
        }
        let expires_at = now
            .checked_add(entry.ttl.min(max_ttl))
            .unwrap_or(now + Duration::from_secs(86_400 * 365));
        entry.state = State::Parked {
            run: Box::new(run),
            extra,
            expires_at,
        };
        guard.armed = false;
        schedule_expiry(&guard.entries, &mut entries);
        drop(entries);
        drop(expired);
        Ok(())
    }

    /// Ends the run: removes its entry and releases the VM and host work.
    pub fn finish(self) {
        drop(self);
    }

    /// Takes the run and its extra state out of the store: the entry is removed, the run stays
    /// alive in the caller's hands (to park it again with [`SnapshotStore::park_as`]).
    pub fn into_parts(self) -> (Run, E) {
        let Self {
            id: _,
            run,
            extra,
            guard,
        } = self;
        // The guard removes the (resuming) entry when it drops.
        drop(guard);
        (run, extra)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{BridgeHost, BridgeRequest, GuestSetup, LegEnd, Limits, Placement};

    struct NoHost;

    #[async_trait::async_trait]
    impl BridgeHost for NoHost {
        async fn call(&self, _: BridgeRequest) -> Result<serde_json::Value, String> {
            Ok(serde_json::Value::Null)
        }
    }

    #[test]
    fn expiry_while_a_resume_is_in_progress() {
        let runtime = tokio::runtime::Builder::new_current_thread()
            .enable_all()
            .build()
            .unwrap();
        runtime.block_on(async {
            let program = "await yield_control(); await yield_control(); return 1";
            let mut run = Run::start(
                program,
                GuestSetup::default(),
                &Limits::default(),
                &Placement::Thread,
                Arc::new(NoHost),
            )
            .unwrap();
            let deadline = || Instant::now() + Duration::from_secs(5);
            assert!(matches!(
                run.drive(deadline()).await,
                LegEnd::Suspended { .. }
            ));
            let store: SnapshotStore = SnapshotStore::new();
            let id = store
                .park(
                    run,
                    RunScope::default(),
                    (),
                    Duration::from_secs(3600),
                    10 << 20,
                )
                .unwrap()
                .to_string();
            let mut resumption = store.resume(&id, &RunScope::default()).unwrap();

            // The TTL runs out while the run is being resumed: the entry is owned by the
            // resumption, so purging leaves it alone and a queued resume is refused as busy.
            lock(&store.entries)
                .map
                .get_mut(&resumption.id())
                .unwrap()
                .ttl = Duration::ZERO;
            assert_eq!(store.len(), 1);
            assert_eq!(
                store.resume(&id, &RunScope::default()).unwrap_err(),
                StoreError::AlreadyResuming
            );

            assert!(matches!(
                resumption.run_mut().drive(deadline()).await,
                LegEnd::Suspended { .. }
            ));
            // Reparking starts a fresh TTL, here zero: the next resume finds it expired.
            resumption.repark().unwrap();
            assert_eq!(
                store.resume(&id, &RunScope::default()).unwrap_err(),
                StoreError::Unavailable
            );
            assert!(store.is_empty());
        });
    }

    #[test]
    fn scope_fields_that_were_none_do_not_restrict() {
        let open = RunScope::default();
        assert_eq!(
            open.admits(&RunScope {
                session_id: Some("any".into()),
                ..RunScope::default()
            }),
            Ok(())
        );
        let owned = RunScope {
            session_id: Some("s".into()),
            agent_run_id: Some("r".into()),
            session_key: None,
        };
        assert_eq!(
            owned.admits(&RunScope {
                session_key: Some("k".into()),
                ..owned.clone()
            }),
            Ok(())
        );
        assert_eq!(
            owned.admits(&RunScope::default()),
            Err(StoreError::DifferentSession)
        );
    }
}
