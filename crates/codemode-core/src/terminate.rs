//! `wait({ runId, terminate: true })`: the run ends now. Its VM is dropped and its in-flight
//! nested calls are cancelled (each call's `CancellationToken` fires and its future is dropped,
//! which for an MCP tool sends `notifications/cancelled` upstream); a journaled run's journal is
//! deleted under a fresh claim, so no replay starts it again. The result is `failed` with code
//! `terminated` and the run's telemetry.

use std::sync::Arc;

use codemode_journal::Claim;
use codemode_sandbox::{DEADLINE_GRACE, RunError, StoreError};

use crate::CodeModeSession;
use crate::outcome;
use crate::result::CodeModeResult;
use crate::run_life::RunLife;
use codemode_durable::Durable;

impl CodeModeSession {
    /// Ends the run `run_id` of this session now (`wait` with `terminate: true`).
    ///
    /// A run parked here is dropped at once. A run another `wait` is driving right now ends
    /// that `wait`'s leg at once (that `wait` answers `terminated` with the leg's output; this
    /// call answers `terminated` too). A journaled run this process does not hold is claimed and
    /// its journal deleted. Unknown runs, runs of another session or agent run, and runs that
    /// already ended (completed, failed, terminated) get the failure a `wait` would get.
    pub(crate) async fn terminate(&self, run_id: &str) -> CodeModeResult {
        tracing::debug!(target: "codemode", %run_id, "terminate");
        match self.store.resume(run_id, &self.scope()) {
            Ok(resumption) => {
                let host = Arc::clone(&resumption.extra().host);
                host.life.terminate();
                let telemetry = self.telemetry(&host.counters);
                if let (Some(durable), Some(journal)) = (&self.durable, host.journal.clone()) {
                    // Fence out any other host before the end is written.
                    let claim = durable.claim(run_id, DEADLINE_GRACE).await;
                    // The VM and its host work go first: nothing runs while the journal goes.
                    resumption.finish();
                    match claim {
                        Ok(Claim::Held {
                            live_here: true, ..
                        }) => journal.finish().await,
                        Ok(Claim::Held { epoch, .. }) => delete(durable, run_id, epoch).await,
                        Ok(Claim::Busy) => {
                            // Another host resumes it right now: only that host can end it.
                            self.forget_run(run_id);
                            return self.wait_failure(run_id, StoreError::AlreadyResuming);
                        }
                        Ok(Claim::Missing) | Err(_) => {}
                    }
                } else {
                    resumption.finish();
                }
                self.forget_run(run_id);
                outcome::failed_run(RunError::Terminated, Vec::new(), telemetry)
            }
            Err(StoreError::AlreadyResuming) => {
                self.end_driven(run_id, self.inner.lives.get(run_id))
            }
            Err(StoreError::Unavailable) if self.inner.lives.outlived(run_id).is_none() => {
                match &self.durable {
                    Some(durable) => self.terminate_journaled(durable, run_id).await,
                    None => self.wait_failure(run_id, StoreError::Unavailable),
                }
            }
            Err(error) => self.wait_failure(run_id, error),
        }
    }

    /// Ends a journaled run whose VM this process does not hold (a restart, another host):
    /// checks its scope, claims it (fencing out its last holder) and deletes its journal.
    async fn terminate_journaled(&self, durable: &Arc<Durable>, run_id: &str) -> CodeModeResult {
        match self.claim_journaled(durable, run_id, DEADLINE_GRACE).await {
            Ok(epoch) => {
                delete(durable, run_id, epoch).await;
                self.forget_run(run_id);
                outcome::failed_run(
                    RunError::Terminated,
                    Vec::new(),
                    self.inner.telemetry.clone(),
                )
            }
            // Claimed by a replay: this session's (its `wait` ends it), or another host's.
            Err(StoreError::AlreadyResuming) => {
                self.end_driven(run_id, self.inner.replaying.get(run_id))
            }
            Err(error) => self.wait_failure(run_id, error),
        }
    }

    /// Ends a run a `wait` of this session drives right now, given its `life`: that `wait` sees
    /// the end at once and ends the run. Without a life here, another host drives it, and only
    /// that host can end it.
    fn end_driven(&self, run_id: &str, life: Option<Arc<RunLife>>) -> CodeModeResult {
        match life {
            Some(life) => {
                life.terminate();
                outcome::failed_run(
                    RunError::Terminated,
                    Vec::new(),
                    self.inner.telemetry.clone(),
                )
            }
            None => self.wait_failure(run_id, StoreError::AlreadyResuming),
        }
    }

    /// Forgets what the session remembers of a run that ended.
    fn forget_run(&self, run_id: &str) {
        self.inner.park_deadlines.forget(run_id);
        self.inner.lives.forget(run_id);
    }
}

/// Deletes a run's journal under the epoch this host now holds.
async fn delete(durable: &Durable, run_id: &str, epoch: u64) {
    if let Err(error) = durable.store.delete(run_id, Some(epoch)).await {
        tracing::warn!(target: "codemode", %error, "journal delete failed");
    }
}
