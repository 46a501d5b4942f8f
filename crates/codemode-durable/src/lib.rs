//! Durable runs: the journal of one code-mode run as it records (a live run) or replays (a run
//! resumed without its VM), and the sandbox [`Tape`] through which the run's nondeterministic
//! inputs (clock, random, answer order, timers) are recorded and replayed.
//!
//! Recording: every nested call gets a receipt keyed by (bridge method, ordinal of that
//! method's call). A side-effecting call's receipt is written `started`, durably, before the
//! executor runs it; every receipt is written settled after. Writes are group-committed: whoever
//! flushes commits everything buffered so far. A settled receipt is not a commit of its own: it
//! goes with the run's next commit (the next side effect's `started` receipt, or the park), or
//! on its own once it has waited `SETTLE_LINGER` (2 ms) for one. A crash before that leaves the
//! call `started`: its outcome is unknown to the replay, and the call is not run again.
//! The run's row is created at its first side effect or when it parks, whichever comes first: a
//! run that only reads and completes in its `exec` writes nothing.
//!
//! Replaying: the program runs again in a fresh VM; each call with a receipt is checked (catalog
//! id and input hash) and answered from it, in the recorded order of answers, timers and
//! resumed yields. A side-effecting call still `started` is never run again: the guest gets a
//! catchable "outcome unknown" error. A read-only one runs again. Once the recorded events run
//! out the run goes on live. Anything that does not match fails the run:
//! "code mode run diverged during replay: ...".
//!
//! This crate knows nothing of sessions, activation, catalogs, tool executors or the config: a
//! nested call is a bridge method, a catalog id, an input and an answer. It speaks the sandbox's
//! [`Tape`] and scope types and writes through `codemode-journal`'s [`JournalStore`]; only
//! `codemode-core` uses it, which tells it through [`JournalHooks`] how to report a commit's
//! latency and in which span a deferred commit runs, so that it needs no metrics or telemetry
//! crate of its own. Its spans and events use the `codemode` target. No feature flags.
#![forbid(unsafe_code)]

use std::collections::{HashMap, VecDeque};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError};
use std::time::{Duration, SystemTime, UNIX_EPOCH};

mod call_deadline;

use codemode_journal::{
    Batch, Claim, Event, Journal, JournalError, JournalStore, Reading, Receipt, ReceiptKey,
    ReceiptState, RunRecord, Scope, input_hash,
};
use codemode_sandbox::{ReadingKind, RequestId, RunScope, StoreError, Tape};
use serde_json::Value;
use tokio::sync::Notify;
use tracing::{Instrument, Span};

/// What the guest sees for a side-effecting call that a crash interrupted: it may or may not
/// have taken effect, and it is never run again.
pub const OUTCOME_UNKNOWN: &str =
    "code mode call outcome is unknown: the host stopped while it ran; it was not run again.";

/// The prefix of the failure of a replay that does not match its journal.
pub const DIVERGED: &str = "code mode run diverged during replay";

/// How long past a `wait`'s own budget its hold on a run lasts, should the host die holding it.
const HOLD_MARGIN: Duration = Duration::from_secs(5);

/// How long a settled receipt waits for the next commit of its run before it is committed on
/// its own.
const SETTLE_LINGER: Duration = Duration::from_millis(2);

/// Unix milliseconds now.
pub fn now_ms() -> i64 {
    SystemTime::now()
        .duration_since(UNIX_EPOCH)
        .map_or(0, |elapsed| {
            i64::try_from(elapsed.as_millis()).unwrap_or(i64::MAX)
        })
}

fn after(duration: Duration) -> i64 {
    now_ms().saturating_add(i64::try_from(duration.as_millis()).unwrap_or(i64::MAX))
}

/// What a journal reports to the host that uses it as it writes, so that this crate needs no
/// metrics or telemetry crate of its own.
#[derive(Debug, Clone, Copy)]
pub struct JournalHooks {
    /// Called with how long each commit of a batch took, whether it succeeded or not.
    pub committed: fn(Duration),
    /// The span of a commit scheduled for later (after a call settled), made where the call
    /// settled: it should belong to the current span's trace without holding that span open.
    pub linger_span: fn() -> Span,
}

/// The journal store of a `CodeMode` and the identity of this process among its hosts.
#[derive(Debug)]
pub struct Durable {
    /// Where every journal of this host's runs is kept.
    pub store: Arc<dyn JournalStore>,
    /// `host_<uuid>`, fresh per process: a restarted process is another host.
    pub host: String,
    hooks: JournalHooks,
}

impl Durable {
    /// Journals in `store`, reported through `hooks`, under a fresh host identity.
    pub fn new(store: Arc<dyn JournalStore>, hooks: JournalHooks) -> Self {
        Self {
            store,
            host: format!("host_{}", uuid_text()),
            hooks,
        }
    }

    /// Takes a run for one `wait` that lasts at most `budget`.
    pub async fn claim(&self, run_id: &str, budget: Duration) -> Result<Claim, StoreError> {
        self.store
            .claim(run_id, &self.host, now_ms(), after(budget + HOLD_MARGIN))
            .await
            .map_err(|error| {
                tracing::warn!(target: "codemode", %error, "journal claim failed");
                StoreError::Unavailable
            })
    }

    /// Deletes a run's journal in the background (cancel, session end).
    pub fn forget(self: &Arc<Self>, what: Forget) {
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            return;
        };
        let durable = Arc::clone(self);
        handle.spawn(async move {
            let result = match &what {
                Forget::Run(run_id) => durable.store.delete(run_id, None).await,
                Forget::Session(session) => durable.store.delete_session(session).await.map(drop),
                Forget::AgentRun(agent_run) => {
                    durable.store.delete_agent_run(agent_run).await.map(drop)
                }
            };
            if let Err(error) = result {
                tracing::warn!(target: "codemode", %error, "journal delete failed");
            }
        });
    }
}

/// What [`Durable::forget`] deletes.
#[derive(Debug)]
pub enum Forget {
    /// The journal of this run id.
    Run(String),
    /// Every journal of this session id.
    Session(String),
    /// Every journal of this agent run id.
    AgentRun(String),
}

fn uuid_text() -> String {
    codemode_sandbox::RunId::new()
        .to_string()
        .trim_start_matches("cm_")
        .to_owned()
}

/// The journal scope of a sandbox scope, and back.
pub fn journal_scope(scope: &RunScope) -> Scope {
    Scope {
        agent_run_id: scope.agent_run_id.clone(),
        session_id: scope.session_id.clone(),
        session_key: scope.session_key.clone(),
    }
}

fn run_scope(scope: &Scope) -> RunScope {
    RunScope {
        agent_run_id: scope.agent_run_id.clone(),
        session_id: scope.session_id.clone(),
        session_key: scope.session_key.clone(),
    }
}

/// Whether `caller` may resume a journaled run of `scope`: every field must be the caller's.
/// A parked run's scope admits anyone on a field it was parked without; a journal's row is
/// data anyone who writes the store can edit, so there a missing (NULL) field fails closed.
pub fn journal_admits(scope: &Scope, caller: &RunScope) -> Result<(), StoreError> {
    run_scope(scope).admits(caller)?;
    if scope.session_id != caller.session_id || scope.session_key != caller.session_key {
        return Err(StoreError::DifferentSession);
    }
    if scope.agent_run_id != caller.agent_run_id {
        return Err(StoreError::DifferentAgentRun);
    }
    Ok(())
}

/// What a recorded journal still has to give a replay.
struct Replay {
    /// Receipts not used yet, by key.
    receipts: HashMap<ReceiptKey, Receipt>,
    /// Events not delivered yet, in order.
    events: VecDeque<Event>,
    /// Recorded readings by (kind, ordinal).
    readings: HashMap<(u32, u64), f64>,
}

struct State {
    /// The run's row exists in the store.
    created: bool,
    epoch: u64,
    /// Written by nobody yet.
    buffer: Batch,
    /// Entries appended to the buffer so far, and committed so far (group commit).
    appended: u64,
    committed: u64,
    ordinals: HashMap<String, u64>,
    /// Bridge request id -> receipt key, for the calls whose answers are on their way.
    requests: HashMap<u64, ReceiptKey>,
    next_seq: u64,
    reading_ordinals: [u64; 3],
    bytes: u64,
    /// Output items delivered to the client over the whole run.
    delivered: u64,
    /// Output items a replay produces again and must not deliver twice.
    skip_output: u64,
    /// A leg ended in `yield_control()`: the next leg's first event resumes it.
    yield_pending: bool,
    replay: Option<Replay>,
    /// Why the run must end (divergence, another host took it over).
    aborted: Option<String>,
    /// A commit of what settled is scheduled [`SETTLE_LINGER`] from now.
    lingering: bool,
    /// The run ended and its journal is deleted: nothing more is written.
    finished: bool,
}

/// The journal of one run, shared by its bridge host and its VM's tape.
pub struct RunJournal {
    durable: Arc<Durable>,
    record: RunRecord,
    state: Mutex<State>,
    flush: tokio::sync::Mutex<()>,
    /// Wakes replayed answers waiting for their turn.
    turn: Notify,
}

impl std::fmt::Debug for RunJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("RunJournal")
            .field("run_id", &self.record.run_id)
            .finish_non_exhaustive()
    }
}

/// What a journaled call does.
pub enum Before {
    /// Answer the guest with this, without running the call.
    Answer(Result<Value, String>),
    /// Run it, then settle its receipt with [`RunJournal::after_call`] or
    /// [`RunJournal::after_timeout`].
    Live(LiveCall),
}

/// A call the journal lets run: the receipt its answer will settle (key, catalog id, input hash,
/// and whether it is side-effecting).
pub struct LiveCall(Receipt);

impl RunJournal {
    fn with_state(durable: Arc<Durable>, record: RunRecord, state: State) -> Arc<Self> {
        Arc::new(Self {
            durable,
            record,
            state: Mutex::new(state),
            flush: tokio::sync::Mutex::new(()),
            turn: Notify::new(),
        })
    }

    /// The journal of a new run (nothing written until its first side effect or park).
    pub fn recording(durable: Arc<Durable>, record: RunRecord) -> Arc<Self> {
        Self::with_state(durable, record, fresh_state(1, false))
    }

    /// The journal of a run resumed without its VM, held under `epoch`.
    pub fn for_replay(durable: Arc<Durable>, journal: Journal, epoch: u64) -> Arc<Self> {
        let mut state = fresh_state(epoch, true);
        state.next_seq = journal
            .events
            .last()
            .map_or(1, |(seq, _)| seq.saturating_add(1));
        state.bytes = journal.bytes;
        state.delivered = journal.delivered;
        state.skip_output = journal.delivered;
        state.replay = Some(Replay {
            receipts: journal
                .receipts
                .into_iter()
                .map(|receipt| (receipt.key.clone(), receipt))
                .collect(),
            events: journal.events.into_iter().map(|(_, event)| event).collect(),
            readings: journal
                .readings
                .iter()
                .map(|reading| ((reading.kind, reading.ordinal), reading.value))
                .collect(),
        });
        Self::with_state(durable, journal.record, state)
    }

    fn lock(&self) -> MutexGuard<'_, State> {
        self.state.lock().unwrap_or_else(PoisonError::into_inner)
    }

    /// The run's row as it was recorded.
    pub fn record(&self) -> &RunRecord {
        &self.record
    }

    /// The journal's size in bytes (it counts against `maxSnapshotBytes`).
    pub fn bytes(&self) -> usize {
        usize::try_from(self.lock().bytes).unwrap_or(usize::MAX)
    }

    /// Whether this journal is a replay's (its run started again from its journal), recorded
    /// events left or not.
    pub fn is_replay(&self) -> bool {
        self.lock().replay.is_some()
    }

    /// Whether the run is still being replayed from its journal (recorded events are left).
    pub fn replaying(&self) -> bool {
        self.lock()
            .replay
            .as_ref()
            .is_some_and(|replay| !replay.events.is_empty())
    }

    /// Why the run must end, if it must.
    pub fn aborted(&self) -> Option<String> {
        self.lock().aborted.clone()
    }

    fn abort_with(&self, state: &mut State, message: String) {
        if state.aborted.is_none() {
            tracing::debug!(target: "codemode", run_id = %self.record.run_id, %message, "run aborted");
            state.aborted = Some(message);
        }
        self.turn.notify_waiters();
    }

    fn diverge(&self, state: &mut State, detail: &str) -> String {
        let message = format!("{DIVERGED}: {detail}");
        self.abort_with(state, message.clone());
        message
    }

    fn push_receipt(state: &mut State, receipt: Receipt) {
        state.bytes = state.bytes.saturating_add(receipt.state.bytes() as u64);
        state.buffer.receipts.push(receipt);
        state.buffer.bytes = Some(state.bytes);
        state.appended += 1;
    }

    fn push_event(state: &mut State, event: Event) {
        let seq = state.next_seq;
        state.next_seq += 1;
        state.buffer.events.push((seq, event));
        state.appended += 1;
    }

    /// Output items of a leg as the client must see them: what a replay made again and the
    /// client already has is dropped.
    pub fn deliverable<T>(&self, mut output: Vec<T>) -> Vec<T> {
        let mut state = self.lock();
        let skip = usize::try_from(state.skip_output)
            .unwrap_or(usize::MAX)
            .min(output.len());
        state.skip_output -= skip as u64;
        output.drain(..skip);
        state.delivered = state.delivered.saturating_add(output.len() as u64);
        if !output.is_empty() {
            state.buffer.delivered = Some(state.delivered);
            state.appended += 1;
        }
        output
    }

    /// A leg ended in a yield (`true`) or not.
    pub fn leg_ended(&self, yielded: bool) {
        self.lock().yield_pending = yielded;
    }

    /// A new leg starts: a yield the last leg ended in is resumed now. In a replay, the journal
    /// must say so too. Returns whether the run may go on.
    pub fn resuming(&self) -> Result<(), String> {
        let mut state = self.lock();
        if !std::mem::take(&mut state.yield_pending) {
            return Ok(());
        }
        let head = state
            .replay
            .as_mut()
            .and_then(|replay| replay.events.front().cloned());
        match head {
            Some(Event::YieldResumed) => {
                if let Some(replay) = state.replay.as_mut() {
                    replay.events.pop_front();
                }
                self.turn.notify_waiters();
                Ok(())
            }
            Some(other) => Err(self.diverge(
                &mut state,
                &format!(
                    "the program yielded where the journal has {}",
                    describe(&other)
                ),
            )),
            None => {
                Self::push_event(&mut state, Event::YieldResumed);
                Ok(())
            }
        }
    }

    /// A replay leg ended waiting on host work while recorded events were still due: the
    /// program is not making the calls its journal has.
    pub fn stuck(&self) -> String {
        let mut state = self.lock();
        let head = state
            .replay
            .as_ref()
            .and_then(|replay| replay.events.front().cloned());
        let detail = match head {
            Some(event) => format!("the program never reached {}", describe(&event)),
            None => "the program stopped short of its journal".to_owned(),
        };
        self.diverge(&mut state, &detail)
    }

    /// Assigns a call its receipt key (program order) and decides what it does.
    pub async fn before_call(
        &self,
        request: u64,
        method: &str,
        catalog_id: &str,
        input: &Value,
        side_effecting: bool,
    ) -> Result<Before, String> {
        let hash = input_hash(input);
        let (key, recorded) = {
            let mut state = self.lock();
            if let Some(message) = &state.aborted {
                return Err(message.clone());
            }
            let ordinal = state.ordinals.entry(method.to_owned()).or_insert(0);
            let key = ReceiptKey {
                method: method.to_owned(),
                ordinal: *ordinal,
            };
            *ordinal += 1;
            state.requests.insert(request, key.clone());
            let recorded = state
                .replay
                .as_mut()
                .and_then(|replay| replay.receipts.remove(&key));
            if let Some(receipt) = &recorded
                && (receipt.catalog_id != catalog_id || receipt.input_hash != hash)
            {
                let detail = format!(
                    "call {} of {} went to {} with input {}, the journal has {} with input {}",
                    key.ordinal,
                    key.method,
                    catalog_id,
                    short(&hash),
                    receipt.catalog_id,
                    short(&receipt.input_hash),
                );
                return Err(self.diverge(&mut state, &detail));
            }
            (key, recorded)
        };
        match recorded {
            Some(receipt) => {
                let recorded_turn = matches!(
                    receipt.state,
                    ReceiptState::Ok(_) | ReceiptState::Error(_) | ReceiptState::Unknown
                );
                self.wait_turn(&key, recorded_turn).await?;
                let answer = match receipt.state {
                    ReceiptState::Ok(value) => Before::Answer(Ok(value)),
                    ReceiptState::Error(message) => Before::Answer(Err(message)),
                    ReceiptState::Unknown => Before::Answer(Err(OUTCOME_UNKNOWN.to_owned())),
                    ReceiptState::Started if receipt.side_effecting => {
                        Self::push_receipt(
                            &mut self.lock(),
                            Receipt {
                                state: ReceiptState::Unknown,
                                ..receipt
                            },
                        );
                        self.flush().await.map_err(|error| error.to_string())?;
                        Before::Answer(Err(OUTCOME_UNKNOWN.to_owned()))
                    }
                    // A read-only call the crash interrupted: run it again.
                    ReceiptState::Started => Before::Live(LiveCall(receipt)),
                };
                Ok(answer)
            }
            None => {
                self.wait_turn(&key, false).await?;
                let started = Receipt {
                    key,
                    catalog_id: catalog_id.to_owned(),
                    input_hash: hash,
                    side_effecting,
                    state: ReceiptState::Started,
                };
                if side_effecting {
                    Self::push_receipt(&mut self.lock(), started.clone());
                    // Durable before the executor runs: creates the run's row if needed.
                    self.ensure_created().await.map_err(|e| e.to_string())?;
                    self.flush().await.map_err(|error| error.to_string())?;
                }
                Ok(Before::Live(LiveCall(started)))
            }
        }
    }

    /// Waits until the recorded events reach this call's answer (`recorded_turn`) or, for a
    /// call the journal has no answer for, until they run out.
    async fn wait_turn(&self, key: &ReceiptKey, recorded_turn: bool) -> Result<(), String> {
        // An answer the journal never delivered (its event was lost with a crash) cannot be
        // due before the recorded events end.
        let recorded_turn = recorded_turn
            && self.lock().replay.as_ref().is_some_and(|replay| {
                replay
                    .events
                    .iter()
                    .any(|event| matches!(event, Event::Settled(k) if k == key))
            });
        loop {
            let notified = self.turn.notified();
            tokio::pin!(notified);
            notified.as_mut().enable();
            {
                let state = self.lock();
                if let Some(message) = &state.aborted {
                    return Err(message.clone());
                }
                match state
                    .replay
                    .as_ref()
                    .and_then(|replay| replay.events.front())
                {
                    None => return Ok(()),
                    Some(Event::Settled(head)) if recorded_turn && head == key => return Ok(()),
                    Some(_) => {}
                }
            }
            notified.await;
        }
    }

    /// The settled receipt of a call that ran: committed with the run's next commit, or on its
    /// own after `SETTLE_LINGER`.
    pub fn after_call(self: &Arc<Self>, call: LiveCall, result: &Result<Value, String>) {
        let state_of = match result {
            Ok(value) => ReceiptState::Ok(value.clone()),
            Err(message) => ReceiptState::Error(message.clone()),
        };
        let schedule = {
            let mut state = self.lock();
            Self::push_receipt(
                &mut state,
                Receipt {
                    state: state_of,
                    ..call.0
                },
            );
            state.created && !std::mem::replace(&mut state.lingering, true)
        };
        if !schedule {
            return;
        }
        let Ok(handle) = tokio::runtime::Handle::try_current() else {
            self.lock().lingering = false;
            return;
        };
        let journal = Arc::clone(self);
        // Its commit belongs to the trace of the call that settled (the current span), without
        // holding that span open for the linger.
        let span = (self.durable.hooks.linger_span)();
        handle.spawn(
            async move {
                tokio::time::sleep(SETTLE_LINGER).await;
                journal.lock().lingering = false;
                if let Err(error) = journal.flush().await {
                    tracing::warn!(target: "codemode", %error, "journal write failed");
                }
            }
            .instrument(span),
        );
    }

    /// Creates the run's row if it does not exist yet (held by this host, epoch 1).
    pub async fn ensure_created(&self) -> Result<(), JournalError> {
        let _flushing = self.flush.lock().await;
        if self.lock().created {
            return Ok(());
        }
        let now = now_ms();
        self.durable
            .store
            .create(
                &self.record,
                &self.durable.host,
                now,
                self.record.expires_at_ms,
            )
            .instrument(journal_commit_span("create", &self.record.run_id))
            .await?;
        self.lock().created = true;
        Ok(())
    }

    /// Commits everything buffered so far (nothing while the row does not exist: the first
    /// side effect or the park creates it). Concurrent callers share one commit.
    pub async fn flush(&self) -> Result<(), JournalError> {
        let target = self.lock().appended;
        let _flushing = self.flush.lock().await;
        let (batch, upto, epoch) = {
            let mut state = self.lock();
            if !state.created || state.finished || state.committed >= target {
                return Ok(());
            }
            (
                std::mem::take(&mut state.buffer),
                state.appended,
                state.epoch,
            )
        };
        if batch.is_empty() {
            self.lock().committed = upto;
            return Ok(());
        }
        let committing = std::time::Instant::now();
        let appended = self
            .durable
            .store
            .append(&self.record.run_id, epoch, &batch)
            .instrument(journal_commit_span("append", &self.record.run_id))
            .await;
        (self.durable.hooks.committed)(committing.elapsed());
        match appended {
            Ok(()) => {
                self.lock().committed = upto;
                Ok(())
            }
            Err(error) => {
                let mut state = self.lock();
                if matches!(error, JournalError::Fenced) {
                    self.abort_with(&mut state, error.to_string());
                } else {
                    // Keep the batch for the next flush, ahead of what came since.
                    let later = std::mem::take(&mut state.buffer);
                    state.buffer = batch;
                    state.buffer.merge(later);
                }
                Err(error)
            }
        }
    }

    /// The run parks: its row exists, everything is written, and it is released until `ttl`.
    pub async fn park(&self, ttl: Duration) -> Result<(), JournalError> {
        self.ensure_created().await?;
        self.flush().await?;
        let epoch = self.lock().epoch;
        self.durable
            .store
            .release(&self.record.run_id, epoch, after(ttl))
            .instrument(journal_commit_span("release", &self.record.run_id))
            .await
    }

    /// The run ended: its journal is deleted.
    pub async fn finish(&self) {
        let (created, epoch) = {
            let mut state = self.lock();
            state.finished = true;
            (state.created, state.epoch)
        };
        if created
            && let Err(error) = self
                .durable
                .store
                .delete(&self.record.run_id, Some(epoch))
                .await
        {
            tracing::warn!(target: "codemode", %error, "journal delete failed");
        }
    }
}

fn fresh_state(epoch: u64, created: bool) -> State {
    State {
        created,
        epoch,
        buffer: Batch::default(),
        appended: 0,
        committed: 0,
        ordinals: HashMap::new(),
        requests: HashMap::new(),
        next_seq: 1,
        reading_ordinals: [0; 3],
        bytes: 0,
        delivered: 0,
        skip_output: 0,
        yield_pending: false,
        replay: None,
        aborted: None,
        lingering: false,
        finished: false,
    }
}

/// The span of one write of a run's journal (`operation`: `create`, `append`, `release`).
fn journal_commit_span(operation: &'static str, run_id: &str) -> Span {
    tracing::debug_span!(target: "codemode", "journal_commit", operation, run_id)
}

fn short(hash: &str) -> &str {
    hash.get(..12).unwrap_or(hash)
}

fn describe(event: &Event) -> String {
    match event {
        Event::Settled(key) => format!("the answer of call {} of {}", key.ordinal, key.method),
        Event::Timer(id) => format!("timer {id}"),
        Event::YieldResumed => "a resumed yield_control()".to_owned(),
    }
}

impl Tape for RunJournal {
    fn reading(&self, kind: ReadingKind, live: f64) -> f64 {
        let number = kind.number();
        let mut state = self.lock();
        let Some(slot) = state.reading_ordinals.get_mut(number as usize) else {
            return live;
        };
        let ordinal = *slot;
        *slot += 1;
        let recorded = state
            .replay
            .as_ref()
            .and_then(|replay| replay.readings.get(&(number, ordinal)).copied());
        match recorded {
            Some(value) => value,
            None => {
                state.buffer.readings.push(Reading {
                    kind: number,
                    ordinal,
                    value: live,
                });
                state.bytes = state.bytes.saturating_add(24);
                state.buffer.bytes = Some(state.bytes);
                state.appended += 1;
                live
            }
        }
    }

    fn settling(&self, id: RequestId) {
        let mut state = self.lock();
        let Some(key) = state.requests.remove(&id.0) else {
            return;
        };
        let head_matches = state
            .replay
            .as_ref()
            .and_then(|replay| replay.events.front())
            == Some(&Event::Settled(key.clone()));
        if head_matches {
            if let Some(replay) = state.replay.as_mut() {
                replay.events.pop_front();
            }
            drop(state);
            self.turn.notify_waiters();
            return;
        }
        if state
            .replay
            .as_ref()
            .is_some_and(|replay| !replay.events.is_empty())
        {
            // An answer out of the recorded order: only a refusal (the call was never made in
            // the first run) gets here; the recorded ones wait for their turn.
            let detail = format!(
                "call {} of {} answered out of order",
                key.ordinal, key.method
            );
            self.diverge(&mut state, &detail);
            return;
        }
        Self::push_event(&mut state, Event::Settled(key));
    }

    fn next_timer(&self, due: Option<u64>, registered: &dyn Fn(u64) -> bool) -> Option<u64> {
        let mut state = self.lock();
        let head = state
            .replay
            .as_ref()
            .and_then(|replay| replay.events.front().cloned());
        match head {
            Some(Event::Timer(id)) if registered(id) => {
                if let Some(replay) = state.replay.as_mut() {
                    replay.events.pop_front();
                }
                drop(state);
                self.turn.notify_waiters();
                Some(id)
            }
            Some(Event::Timer(id)) => {
                self.diverge(&mut state, &format!("timer {id} was never set"));
                None
            }
            Some(_) => None,
            None => {
                let id = due?;
                Self::push_event(&mut state, Event::Timer(id));
                Some(id)
            }
        }
    }

    fn abort(&self) -> Option<String> {
        self.lock().aborted.clone()
    }
}
