//! The in-memory store: journals in this process only.

use std::collections::{BTreeMap, HashMap};
use std::sync::{Mutex, MutexGuard, PoisonError};

use async_trait::async_trait;

use crate::store::epoch_after_claim;
use crate::{
    Batch, Claim, Event, Journal, JournalError, JournalStore, MAX_JOURNALED_RUNS, Reading, Receipt,
    ReceiptKey, RunRecord, Scope,
};

struct Run {
    record: RunRecord,
    epoch: u64,
    holder: Option<String>,
    held_until_ms: i64,
    live_on: String,
    receipts: BTreeMap<ReceiptKey, Receipt>,
    events: BTreeMap<u64, Event>,
    readings: BTreeMap<(u32, u64), Reading>,
    delivered: u64,
    bytes: u64,
}

/// Journals in a map in this process: what survives the loss of a live VM (eviction) but not
/// of the process. Cheap; the in-process baseline of the benchmarks.
#[derive(Default)]
pub struct MemoryJournal {
    runs: Mutex<HashMap<String, Run>>,
    /// Transport sessions: their state and expiry.
    transport_sessions: Mutex<HashMap<String, (String, i64)>>,
}

impl std::fmt::Debug for MemoryJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MemoryJournal")
            .field("runs", &self.lock().len())
            .finish()
    }
}

impl MemoryJournal {
    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    fn lock(&self) -> MutexGuard<'_, HashMap<String, Run>> {
        self.runs.lock().unwrap_or_else(PoisonError::into_inner)
    }
}

#[async_trait]
impl JournalStore for MemoryJournal {
    async fn create(
        &self,
        record: &RunRecord,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<(), JournalError> {
        let mut runs = self.lock();
        runs.retain(|_, run| run.record.expires_at_ms > now_ms);
        if runs.len() >= MAX_JOURNALED_RUNS {
            return Err(JournalError::TooManyRuns);
        }
        runs.insert(
            record.run_id.clone(),
            Run {
                record: record.clone(),
                epoch: 1,
                holder: Some(host.to_owned()),
                held_until_ms,
                live_on: host.to_owned(),
                receipts: BTreeMap::new(),
                events: BTreeMap::new(),
                readings: BTreeMap::new(),
                delivered: 0,
                bytes: 0,
            },
        );
        Ok(())
    }

    async fn append(&self, run_id: &str, epoch: u64, batch: &Batch) -> Result<(), JournalError> {
        let mut runs = self.lock();
        let run = runs
            .get_mut(run_id)
            .filter(|run| run.epoch == epoch)
            .ok_or(JournalError::Fenced)?;
        for receipt in &batch.receipts {
            run.receipts.insert(receipt.key.clone(), receipt.clone());
        }
        for (seq, event) in &batch.events {
            run.events.insert(*seq, event.clone());
        }
        for reading in &batch.readings {
            run.readings
                .insert((reading.kind, reading.ordinal), *reading);
        }
        if let Some(delivered) = batch.delivered {
            run.delivered = delivered;
        }
        if let Some(bytes) = batch.bytes {
            run.bytes = bytes;
        }
        Ok(())
    }

    async fn load(&self, run_id: &str, now_ms: i64) -> Result<Option<Journal>, JournalError> {
        let runs = self.lock();
        Ok(runs
            .get(run_id)
            .filter(|run| run.record.expires_at_ms > now_ms)
            .map(|run| Journal {
                record: run.record.clone(),
                epoch: run.epoch,
                receipts: run.receipts.values().cloned().collect(),
                events: run
                    .events
                    .iter()
                    .map(|(seq, event)| (*seq, event.clone()))
                    .collect(),
                readings: run.readings.values().copied().collect(),
                delivered: run.delivered,
                bytes: run.bytes,
            }))
    }

    async fn scope(&self, run_id: &str, now_ms: i64) -> Result<Option<Scope>, JournalError> {
        Ok(self
            .lock()
            .get(run_id)
            .filter(|run| run.record.expires_at_ms > now_ms)
            .map(|run| run.record.scope.clone()))
    }

    async fn claim(
        &self,
        run_id: &str,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<Claim, JournalError> {
        let mut runs = self.lock();
        let Some(run) = runs
            .get_mut(run_id)
            .filter(|run| run.record.expires_at_ms > now_ms)
        else {
            return Ok(Claim::Missing);
        };
        let live_here = run.live_on == host;
        let held = run.holder.is_some() && run.held_until_ms > now_ms;
        let Some(epoch) = epoch_after_claim(run.epoch, held, live_here) else {
            return Ok(Claim::Busy);
        };
        run.epoch = epoch;
        run.live_on = host.to_owned();
        run.holder = Some(host.to_owned());
        run.held_until_ms = held_until_ms;
        Ok(Claim::Held {
            epoch: run.epoch,
            live_here,
        })
    }

    async fn release(
        &self,
        run_id: &str,
        epoch: u64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError> {
        let mut runs = self.lock();
        let run = runs
            .get_mut(run_id)
            .filter(|run| run.epoch == epoch)
            .ok_or(JournalError::Fenced)?;
        run.holder = None;
        run.record.expires_at_ms = expires_at_ms;
        Ok(())
    }

    async fn delete(&self, run_id: &str, epoch: Option<u64>) -> Result<(), JournalError> {
        let mut runs = self.lock();
        if runs
            .get(run_id)
            .is_some_and(|run| epoch.is_none_or(|epoch| run.epoch == epoch))
        {
            runs.remove(run_id);
        }
        Ok(())
    }

    async fn delete_session(&self, session: &str) -> Result<u64, JournalError> {
        let mut runs = self.lock();
        let before = runs.len();
        runs.retain(|_, run| {
            let scope = &run.record.scope;
            scope.session_id.as_deref() != Some(session)
                && scope.session_key.as_deref() != Some(session)
        });
        Ok((before - runs.len()) as u64)
    }

    async fn delete_agent_run(&self, agent_run_id: &str) -> Result<u64, JournalError> {
        let mut runs = self.lock();
        let before = runs.len();
        runs.retain(|_, run| run.record.scope.agent_run_id.as_deref() != Some(agent_run_id));
        Ok((before - runs.len()) as u64)
    }

    async fn delete_expired(&self, now_ms: i64) -> Result<u64, JournalError> {
        let mut runs = self.lock();
        let before = runs.len();
        runs.retain(|_, run| run.record.expires_at_ms > now_ms);
        Ok((before - runs.len()) as u64)
    }

    async fn count(&self, now_ms: i64) -> Result<u64, JournalError> {
        Ok(self
            .lock()
            .values()
            .filter(|run| run.record.expires_at_ms > now_ms)
            .count() as u64)
    }

    async fn save_transport_session(
        &self,
        session_id: &str,
        state: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError> {
        let mut sessions = self
            .transport_sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner);
        sessions.retain(|_, (_, expires)| *expires > now_ms);
        sessions.insert(session_id.to_owned(), (state.to_owned(), expires_at_ms));
        Ok(())
    }

    async fn load_transport_session(
        &self,
        session_id: &str,
        now_ms: i64,
    ) -> Result<Option<String>, JournalError> {
        Ok(self
            .transport_sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(session_id)
            .filter(|(_, expires)| *expires > now_ms)
            .map(|(state, _)| state.clone()))
    }

    async fn delete_transport_session(&self, session_id: &str) -> Result<(), JournalError> {
        self.transport_sessions
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(session_id);
        Ok(())
    }
}
