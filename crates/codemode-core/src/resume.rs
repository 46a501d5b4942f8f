//! The legs of a `wait`, and resuming a journaled run: with its live VM when this process still
//! holds it and nobody took the run over, else by replaying its journal (codemode-durable).

use std::sync::Arc;
use std::time::{Duration, Instant};

use codemode_journal::{Claim, JournalError};
use codemode_sandbox::{DEADLINE_GRACE, LegEnd, Run, RunError, RunId, StoreError, WaitReason};
use tokio_util::sync::CancellationToken;
use tracing::Instrument;

use crate::bridge::RunHost;
use crate::result::{CodeModeResult, ErrorCode};
use crate::run_life::{RunLife, RunLives};
use crate::session::Parked;
use crate::state::Counters;
use crate::{CodeModeSession, outcome};
use codemode_durable::{Durable, RunJournal, journal_admits, now_ms};

/// A step with `earlier` output in front of its own.
fn with_output_before(earlier: Vec<crate::OutputItem>, step: LegEnd) -> LegEnd {
    if earlier.is_empty() {
        return step;
    }
    step.map_output(|output| {
        let mut all = earlier;
        all.extend(output);
        all
    })
}

/// A leg's step as the client must see it: a run the journal aborted fails, output a replay made
/// again is dropped, and a yield is remembered for the next leg.
pub(crate) fn journaled_step(journal: &RunJournal, step: LegEnd) -> LegEnd {
    let step = match (journal.aborted(), step) {
        (Some(message), LegEnd::Completed { output, .. } | LegEnd::Suspended { output, .. }) => {
            LegEnd::Failed {
                error: RunError::Aborted(message),
                output,
            }
        }
        (_, step) => step,
    };
    journal.leg_ended(matches!(
        step,
        LegEnd::Suspended {
            reason: WaitReason::Yield,
            ..
        }
    ));
    step.map_output(|output| journal.deliverable(output))
}

fn journal_failure(error: JournalError) -> StoreError {
    match error {
        JournalError::TooManyRuns => StoreError::TooManySuspendedRuns,
        _ => StoreError::Unavailable,
    }
}

impl CodeModeSession {
    /// Drives a run leg after leg while the guest only waits on host work: each leg has the full
    /// `timeoutMs` for guest code, until the run ends, yields or prints, or the next leg would
    /// pass `idle_budget`. A journaled run being replayed goes on through the yields its journal
    /// resumed, and fails as diverged when it waits on host work its journal already answered.
    /// A run terminated or past its life fails before its next leg, and during one the moment
    /// that happens (`life`).
    pub(crate) async fn legs(
        &self,
        run: &mut Run,
        journal: Option<&RunJournal>,
        life: &Arc<RunLife>,
        idle_budget: Duration,
        span: &tracing::Span,
    ) -> LegEnd {
        let leg = self.inner.config.timeout().min(idle_budget);
        let started = Instant::now();
        let mut carried = Vec::new();
        let mut first_leg = true;
        loop {
            if let Some(error) = life.ended() {
                return LegEnd::Failed {
                    error,
                    output: carried,
                };
            }
            if let Some(journal) = journal
                && let Err(message) = journal.resuming()
            {
                return LegEnd::Failed {
                    error: RunError::Aborted(message),
                    output: carried,
                };
            }
            // Whether this leg starts inside the recorded part: a yield it reaches is then one
            // the journal has (resumed, if more events follow), or the yield the run parked in
            // when the journal ends there, which this `wait` resumes as a live one would. The
            // first leg of a replay is one even when the journal has no events at all (a run
            // that yielded before anything was recorded).
            let replayed_leg = journal
                .is_some_and(|journal| journal.replaying() || (first_leg && journal.is_replay()));
            first_leg = false;
            let deadline = Instant::now() + leg;
            let step = life.drive_leg(run, deadline).instrument(span.clone()).await;
            let step = with_output_before(std::mem::take(&mut carried), step);
            let replaying = journal.is_some_and(|journal| journal.replaying());
            let aborted = journal.and_then(RunJournal::aborted);
            match step {
                LegEnd::Suspended { .. } | LegEnd::Completed { .. } if aborted.is_some() => {
                    return step;
                }
                LegEnd::Suspended {
                    reason: WaitReason::Yield,
                    output,
                    ..
                } if replayed_leg => {
                    if let Some(journal) = journal {
                        journal.leg_ended(true);
                    }
                    carried = output;
                }
                LegEnd::Suspended {
                    reason: WaitReason::PendingTools,
                    output,
                    ..
                } if replaying => {
                    let message = journal.map(RunJournal::stuck).unwrap_or_default();
                    return LegEnd::Failed {
                        error: RunError::Aborted(message),
                        output,
                    };
                }
                LegEnd::Suspended {
                    reason: WaitReason::PendingTools,
                    output,
                    ..
                } if output.is_empty() && started.elapsed() + leg <= idle_budget => {}
                step => return step,
            }
        }
    }

    /// `wait` with a journal store: the live VM when this process still owns the run, else a
    /// replay of the journal.
    pub(crate) async fn wait_durable(
        &self,
        durable: &Arc<Durable>,
        run_id: &str,
        resumption: Result<codemode_sandbox::Resumption<Parked>, StoreError>,
        idle_budget: Duration,
        span: tracing::Span,
    ) -> CodeModeResult {
        let hold = idle_budget + self.inner.config.timeout() + DEADLINE_GRACE;
        match resumption {
            Ok(mut resumption) => match durable.claim(run_id, hold).await {
                Ok(Claim::Held {
                    live_here: true, ..
                }) => {
                    let host = Arc::clone(&resumption.extra().host);
                    crate::trace::continue_run(&span, resumption.extra().trace.as_deref());
                    let _observing = host.observer.install(self.observer.clone());
                    let Some(journal) = host.journal.clone() else {
                        resumption.finish();
                        return self.wait_failure(run_id, StoreError::Unavailable);
                    };
                    let step = self
                        .legs(
                            resumption.run_mut(),
                            Some(&journal),
                            &host.life,
                            idle_budget,
                            &span,
                        )
                        .await;
                    let step = journaled_step(&journal, step);
                    // The run goes back into the store under the same id, or ends.
                    let (run, parked) = resumption.into_parts();
                    self.conclude(run, parked, &journal, step).await
                }
                Ok(Claim::Held {
                    epoch,
                    live_here: false,
                }) => {
                    // Another host took the run over since: this VM is stale.
                    resumption.finish();
                    self.replay(durable, run_id, epoch, idle_budget, span).await
                }
                Ok(Claim::Busy) => {
                    let life = resumption.extra().host.life.remaining();
                    let _ = resumption.repark_within(life);
                    self.wait_failure(run_id, StoreError::AlreadyResuming)
                }
                Ok(Claim::Missing) | Err(_) => {
                    resumption.finish();
                    self.wait_failure(run_id, StoreError::Unavailable)
                }
            },
            Err(StoreError::Unavailable) => {
                // Only the scope now: the journal is loaded once this host holds the run.
                match self.claim_journaled(durable, run_id, hold).await {
                    Ok(epoch) => self.replay(durable, run_id, epoch, idle_budget, span).await,
                    Err(error) => self.wait_failure(run_id, error),
                }
            }
            Err(error) => self.wait_failure(run_id, error),
        }
    }

    /// Claims a journaled run whose VM this process does not hold (a restart, another host)
    /// for `hold`, fencing out its last holder, once its scope admits this session: the
    /// claimed epoch, or why `wait` cannot have the run.
    pub(crate) async fn claim_journaled(
        &self,
        durable: &Durable,
        run_id: &str,
        hold: Duration,
    ) -> Result<u64, StoreError> {
        let scope = match durable.store.scope(run_id, now_ms()).await {
            Ok(Some(scope)) => scope,
            Ok(None) => return Err(StoreError::Unavailable),
            Err(error) => {
                tracing::warn!(target: "codemode", %error, "journal load failed");
                return Err(StoreError::Unavailable);
            }
        };
        journal_admits(&scope, &self.scope())?;
        match durable.claim(run_id, hold).await {
            Ok(Claim::Held { epoch, .. }) => Ok(epoch),
            Ok(Claim::Busy) => Err(StoreError::AlreadyResuming),
            Ok(Claim::Missing) | Err(_) => Err(StoreError::Unavailable),
        }
    }

    /// Runs the journaled program again in a fresh VM, answered from its receipts, then live.
    async fn replay(
        &self,
        durable: &Arc<Durable>,
        run_id: &str,
        epoch: u64,
        idle_budget: Duration,
        span: tracing::Span,
    ) -> CodeModeResult {
        // Loaded again now that this host holds it: nobody writes to it any more.
        let loaded = match durable.store.load(run_id, now_ms()).await {
            Ok(Some(journal)) => journal,
            _ => return self.wait_failure(run_id, StoreError::Unavailable),
        };
        tracing::debug!(target: "codemode", %run_id, receipts = loaded.receipts.len(), "replaying a journaled run");
        crate::trace::continue_run(&span, loaded.record.trace_context.as_deref());
        let span = tracing::debug_span!(target: "codemode", parent: &span, "replay", %run_id, receipts = loaded.receipts.len(), epoch);
        let journal = RunJournal::for_replay(Arc::clone(durable), loaded, epoch);
        let record = journal.record().clone();
        let counters = Arc::new(Counters::default());
        let cancellation = CancellationToken::new();
        // The life this session gave the run, if it remembers it; a run new to this process
        // counts its life from the start its journal keeps (from the replay for a journal an
        // older version wrote).
        let life = self.inner.lives.get(run_id).unwrap_or_else(|| {
            RunLife::started_at(record.started_at_ms, now_ms(), self.inner.config.max_run())
        });
        let host = Arc::new(RunHost {
            session: Arc::clone(&self.inner),
            parent_call_id: record.parent_call_id.clone(),
            nested_prefix: record.parent_call_id.clone(),
            restart_safe: record.restart_safe,
            counters: Arc::clone(&counters),
            cancellation: cancellation.clone(),
            in_flight: Default::default(),
            journal: Some(Arc::clone(&journal)),
            life: Arc::clone(&life),
            observer: Default::default(),
        });
        let _observing = host.observer.install(self.observer.clone());
        // The host's tape is the journal: the replay reads its clock and answers from it.
        let mut run = match self.start_run(&record.program, host.clone()) {
            Ok(run) => run,
            Err(error) => {
                journal.finish().await;
                return outcome::failed_run(error, Vec::new(), self.telemetry(&counters));
            }
        };
        let step = {
            let _replaying = Replaying::register(&self.inner.replaying, run_id, &life);
            self.legs(&mut run, Some(&journal), &life, idle_budget, &span)
                .await
        };
        let step = journaled_step(&journal, step);
        let parked = Parked {
            host,
            _cancel_on_drop: cancellation.drop_guard(),
            trace: record.trace_context.clone(),
        };
        self.conclude(run, parked, &journal, step).await
    }

    /// Ends a journaled leg: a suspended run parks (here, and in the journal, released until its
    /// TTL); a finished one deletes its journal.
    pub(crate) async fn conclude(
        &self,
        run: Run,
        parked: Parked,
        journal: &Arc<RunJournal>,
        step: LegEnd,
    ) -> CodeModeResult {
        let telemetry = self.telemetry(&parked.host.counters);
        let restart_safe = parked.host.restart_safe;
        let run_id = journal.record().run_id.clone();
        match step {
            LegEnd::Suspended {
                reason,
                pending,
                output,
            } => {
                let pending = parked.host.pending(pending);
                let config = &self.inner.config;
                // The run expires parked at the end of its life at the latest.
                let ttl = Duration::from_secs(config.snapshot_ttl_seconds())
                    .min(parked.host.life.remaining());
                let life = Arc::clone(&parked.host.life);
                let Ok(id) = run_id.parse::<RunId>() else {
                    return outcome::store_failed(StoreError::Unavailable, output, telemetry);
                };
                // The journal counts against the snapshot bound.
                let max_bytes = config.max_snapshot_bytes() as usize;
                let budget = max_bytes.saturating_sub(journal.bytes());
                if journal.bytes() > max_bytes {
                    journal.finish().await;
                    return outcome::store_failed(
                        StoreError::SnapshotLimitExceeded,
                        output,
                        telemetry,
                    );
                }
                if let Err(error) = self
                    .store
                    .park_as(id, run, self.scope(), parked, ttl, budget)
                {
                    journal.finish().await;
                    return outcome::store_failed(error, output, telemetry);
                }
                if let Err(error) = journal.park(ttl).await {
                    tracing::warn!(target: "codemode", %error, "journal park failed");
                    let message = error.to_string();
                    self.store.cancel(&run_id, &self.scope());
                    return match journal_failure(error) {
                        StoreError::TooManySuspendedRuns => outcome::store_failed(
                            StoreError::TooManySuspendedRuns,
                            output,
                            telemetry,
                        ),
                        _ => CodeModeResult::Failed {
                            error: message,
                            code: Some(ErrorCode::InternalError),
                            reason: None,
                            output,
                            telemetry,
                        },
                    };
                }
                self.inner.lives.record(&run_id, &life);
                outcome::waiting(run_id, reason, pending, output, restart_safe, telemetry)
            }
            other => {
                drop(run);
                drop(parked);
                journal.finish().await;
                self.inner.lives.forget(&run_id);
                outcome::finished(other, restart_safe, telemetry)
            }
        }
    }
}

/// A replay in progress, registered with its session for as long as its legs run (also when the
/// `wait` driving it is dropped), so that `terminate` can end it.
struct Replaying<'a> {
    registry: &'a RunLives,
    run_id: &'a str,
}

impl<'a> Replaying<'a> {
    fn register(registry: &'a RunLives, run_id: &'a str, life: &Arc<RunLife>) -> Self {
        registry.record(run_id, life);
        Self { registry, run_id }
    }
}

impl Drop for Replaying<'_> {
    fn drop(&mut self) {
        self.registry.forget(self.run_id);
    }
}
