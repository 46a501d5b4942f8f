//! Restart recovery a host can rely on: the host keeps the input of every restart-safe `exec`
//! that parked, in a [`RecoveryStore`] of its choice (a file, a database row), and
//! [`CodeModeSession::wait_or_recover`] re-runs it when the run a `wait` names is gone.

use std::collections::HashMap;
use std::sync::{Mutex, PoisonError};

use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::result::{CodeModeResult, WaitFailure};
use crate::session::CodeModeSession;
use crate::{ExecInput, WaitInput};

/// What restart recovery needs to re-run a restart-safe `exec`: its call id, its input and the
/// agent run and session that made it. Plain data, serializable for a durable store.
#[derive(Debug, Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "camelCase")]
pub struct RecoveryRecord {
    /// The model's tool-call id of the `exec`.
    pub call_id: String,
    /// The `exec` input, as [`ExecInput::to_json`] writes it.
    pub input: Value,
    /// The agent run that made it; only the same agent run may recover it.
    pub agent_run_id: Option<String>,
    /// The session that made it; only the same session may recover it.
    pub session_id: Option<String>,
}

/// Where a host keeps [`RecoveryRecord`]s by run id, so that they outlive the process (the
/// parked runs themselves never do). Called from async code: keep each call short (write to a
/// file, a map, a database with a short timeout).
pub trait RecoveryStore: Send + Sync {
    /// Keeps `record` for `run_id` (replacing any record of that id).
    fn save(&self, run_id: &str, record: &RecoveryRecord);
    /// The record of `run_id`, if kept.
    fn load(&self, run_id: &str) -> Option<RecoveryRecord>;
    /// Forgets `run_id` (its run finished, or was recovered under a new id).
    fn remove(&self, run_id: &str);
}

/// A [`RecoveryStore`] in memory: for tests and examples, or a host that restarts code mode
/// without restarting its process. Bounded by [`MemoryRecoveryStore::MAX_RECORDS`]: a save
/// beyond it is dropped (that run simply cannot be recovered).
#[derive(Debug, Default)]
pub struct MemoryRecoveryStore {
    records: Mutex<HashMap<String, RecoveryRecord>>,
}

impl MemoryRecoveryStore {
    /// Most records held.
    pub const MAX_RECORDS: usize = 4096;

    /// An empty store.
    pub fn new() -> Self {
        Self::default()
    }

    /// Records held.
    pub fn len(&self) -> usize {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .len()
    }

    /// Whether no record is held.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

impl RecoveryStore for MemoryRecoveryStore {
    fn save(&self, run_id: &str, record: &RecoveryRecord) {
        let mut records = self.records.lock().unwrap_or_else(PoisonError::into_inner);
        if records.len() < Self::MAX_RECORDS || records.contains_key(run_id) {
            records.insert(run_id.to_owned(), record.clone());
        }
    }

    fn load(&self, run_id: &str) -> Option<RecoveryRecord> {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .get(run_id)
            .cloned()
    }

    fn remove(&self, run_id: &str) {
        self.records
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .remove(run_id);
    }
}

impl CodeModeSession {
    /// [`CodeModeSession::exec`], keeping the input in `store` when a restart-safe run parks,
    /// so that [`CodeModeSession::wait_or_recover`] can re-run it if the parked run is lost.
    pub async fn exec_recoverable(
        &self,
        call_id: &str,
        input: &Value,
        store: &dyn RecoveryStore,
    ) -> CodeModeResult {
        let result = self.exec(call_id, input).await;
        if let (Some(run_id), true) = (result.run_id(), result.replay_safe())
            && let Ok(input) = ExecInput::from_json(input)
        {
            store.save(run_id, &self.recovery_record(call_id, &input));
        }
        result
    }

    /// [`CodeModeSession::wait`], and, when the run is gone (`unknown`: lost with a host
    /// restart; `expired`), the restart recovery of its restart-safe input kept in `store`.
    ///
    /// A recovered run starts again from the beginning with fresh nested call ids (see
    /// [`CodeModeSession::recover`]); if it parks, its result carries a NEW `runId`, kept in
    /// `store` in place of the old one. The store is kept current: a run that finishes is
    /// forgotten. A record of another agent run or session is never used, and a `wait` that
    /// failed for another reason (another session, already resuming) is returned as it is. A
    /// `wait` with `terminate: true` never recovers: its record is forgotten.
    pub async fn wait_or_recover(
        &self,
        input: &Value,
        store: &dyn RecoveryStore,
    ) -> CodeModeResult {
        let Ok(wait) = WaitInput::from_json(input) else {
            return self.wait(input).await;
        };
        let result = self.wait_input(&wait).await;
        if wait.terminate {
            // A run asked to end is never started again, lost or not.
            store.remove(&wait.run_id);
            return result;
        }
        let lost = matches!(
            result.wait_failure(),
            Some(WaitFailure::Unknown | WaitFailure::Expired)
        );
        if !lost {
            if result.run_id().is_none() && result.wait_failure().is_none() {
                // Completed or failed for good: nothing left to recover.
                store.remove(&wait.run_id);
            }
            return result;
        }
        let Some(record) = store.load(&wait.run_id).filter(|record| self.owns(record)) else {
            return result;
        };
        store.remove(&wait.run_id);
        let recovered = self.recover(&record.call_id, &record.input).await;
        if let (Some(run_id), true) = (recovered.run_id(), recovered.replay_safe()) {
            store.save(run_id, &record);
        }
        recovered
    }

    fn recovery_record(&self, call_id: &str, input: &ExecInput) -> RecoveryRecord {
        let agent_run = &self.inner.agent_run;
        RecoveryRecord {
            call_id: call_id.to_owned(),
            input: input.to_json(),
            agent_run_id: agent_run.agent_run_id.clone(),
            session_id: agent_run.session_id.clone(),
        }
    }

    /// Whether `record` was made by this session's agent run and session.
    fn owns(&self, record: &RecoveryRecord) -> bool {
        let agent_run = &self.inner.agent_run;
        record.agent_run_id == agent_run.agent_run_id && record.session_id == agent_run.session_id
    }
}
