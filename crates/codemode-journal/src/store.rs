//! The one store trait and how a `--state` address picks an implementation.

use std::sync::Arc;

use async_trait::async_trait;

use crate::{Batch, Claim, Journal, JournalError, MemoryJournal, RunRecord, Scope};

/// At most this many journals live in one store at once (the same cap as parked runs; expired
/// journals do not count).
pub const MAX_JOURNALED_RUNS: usize = 64;

/// Where journals live. Every method is one transaction; a run's writes are fenced by the
/// epoch of its holder, so a process whose run was taken over by another cannot write to it.
///
/// Times are Unix milliseconds given by the caller, so every host of a shared store compares
/// its own clock with the rows: hosts sharing a store should keep their clocks in sync.
#[async_trait]
pub trait JournalStore: Send + Sync + std::fmt::Debug + 'static {
    /// Writes a new run's row, held by `host` until `held_until_ms` under epoch 1.
    ///
    /// # Errors
    /// [`JournalError::TooManyRuns`] when [`MAX_JOURNALED_RUNS`] unexpired journals exist.
    async fn create(
        &self,
        record: &RunRecord,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<(), JournalError>;

    /// Appends `batch` to the run's journal, in one transaction.
    ///
    /// # Errors
    /// [`JournalError::Fenced`] when the run's epoch is not `epoch` (another process took it
    /// over) or the run is gone.
    async fn append(&self, run_id: &str, epoch: u64, batch: &Batch) -> Result<(), JournalError>;

    /// The whole journal of an unexpired run.
    async fn load(&self, run_id: &str, now_ms: i64) -> Result<Option<Journal>, JournalError>;

    /// The scope of an unexpired run: what a `wait` checks before it claims the run (and loads
    /// its journal once it holds it).
    async fn scope(&self, run_id: &str, now_ms: i64) -> Result<Option<Scope>, JournalError> {
        Ok(self
            .load(run_id, now_ms)
            .await?
            .map(|journal| journal.record.scope))
    }

    /// Takes the run for a `wait` by `host` until `held_until_ms`: refused while another
    /// holder's hold lasts. Taking it from another host bumps the epoch.
    async fn claim(
        &self,
        run_id: &str,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<Claim, JournalError>;

    /// Gives the run back after a leg (it stays `live_on` the holder) and sets its new expiry.
    async fn release(
        &self,
        run_id: &str,
        epoch: u64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError>;

    /// Deletes a run's journal if its epoch is still `epoch` (`None`: whatever the epoch).
    async fn delete(&self, run_id: &str, epoch: Option<u64>) -> Result<(), JournalError>;

    /// Deletes every journal whose session id or session key is `session`; returns how many.
    async fn delete_session(&self, session: &str) -> Result<u64, JournalError>;

    /// Deletes every journal of an agent run; returns how many.
    async fn delete_agent_run(&self, agent_run_id: &str) -> Result<u64, JournalError>;

    /// Deletes every expired journal; returns how many.
    async fn delete_expired(&self, now_ms: i64) -> Result<u64, JournalError>;

    /// Unexpired journals in the store.
    async fn count(&self, now_ms: i64) -> Result<u64, JournalError>;

    /// Keeps the opaque `state` of a transport session (for an HTTP server: what re-creating
    /// the client's session after a restart needs) until `expires_at_ms`, replacing any earlier
    /// state of the same id; sessions expired at `now_ms` are deleted on the way. Sessions do
    /// not count against [`MAX_JOURNALED_RUNS`].
    async fn save_transport_session(
        &self,
        session_id: &str,
        state: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError>;

    /// The state of an unexpired transport session.
    async fn load_transport_session(
        &self,
        session_id: &str,
        now_ms: i64,
    ) -> Result<Option<String>, JournalError>;

    /// Forgets a transport session (its runs' journals are not touched).
    async fn delete_transport_session(&self, session_id: &str) -> Result<(), JournalError>;
}

/// Opens the store a `--state` address names:
///
/// - `memory`: [`MemoryJournal`], in this process only (what `wait` finds after a restart: nothing);
/// - `sqlite:PATH` (or `sqlite://PATH`): a local file, created when missing, in WAL mode
///   (feature `sqlite`);
/// - `postgres://USER[:PASSWORD]@HOST[:PORT]/DB` (or `postgresql://`): shared by several hosts
///   (feature `postgres`).
///
/// Migrations (`migrations/` of this crate) run on open. Errors never show a password.
///
/// # Errors
/// [`JournalError::Address`] for an address of another kind, [`JournalError::NotCompiledIn`]
/// for a store whose feature is off, [`JournalError::Store`] when the store cannot be opened.
pub async fn open(address: &str) -> Result<Arc<dyn JournalStore>, JournalError> {
    let address = address.trim();
    if address == "memory" {
        return Ok(Arc::new(MemoryJournal::new()));
    }
    if let Some(path) = address
        .strip_prefix("sqlite://")
        .or_else(|| address.strip_prefix("sqlite:"))
    {
        if path.is_empty() {
            return Err(JournalError::Address(address.to_owned()));
        }
        #[cfg(feature = "sqlite")]
        return Ok(Arc::new(crate::SqliteJournal::open(path).await?));
        #[cfg(not(feature = "sqlite"))]
        return Err(JournalError::NotCompiledIn {
            address: address.to_owned(),
            feature: "sqlite",
        });
    }
    if address.starts_with("postgres://") || address.starts_with("postgresql://") {
        #[cfg(feature = "postgres")]
        return Ok(Arc::new(crate::PostgresJournal::open(address).await?));
        #[cfg(not(feature = "postgres"))]
        return Err(JournalError::NotCompiledIn {
            address: crate::redact_address(address),
            feature: "postgres",
        });
    }
    Err(JournalError::Address(crate::redact_address(address)))
}

/// The claim rule every store applies to a run: while a hold on it is live (`held`, by any
/// host) the claim is refused (`None`); otherwise the claiming host takes it, keeping the epoch
/// when the run's VM lives on that host (`live_here`: it parked there) and bumping it when the
/// run moves, so that the previous host's writes are fenced from now on.
pub(crate) fn epoch_after_claim(epoch: u64, held: bool, live_here: bool) -> Option<u64> {
    if held {
        None
    } else if live_here {
        Some(epoch)
    } else {
        Some(epoch.saturating_add(1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Every address either opens its store or says why not; a store whose feature this build
    /// leaves out is refused by name (`cargo xtask ci` also runs these tests without features).
    #[tokio::test]
    async fn an_address_opens_its_store_or_names_the_feature_it_needs() {
        assert!(open("memory").await.is_ok());
        assert!(matches!(
            open("sqlite:").await,
            Err(JournalError::Address(_))
        ));
        assert!(matches!(
            open("redis://x").await,
            Err(JournalError::Address(_))
        ));
        let dir = std::env::temp_dir().join(format!("codemode-open-{}", std::process::id()));
        let sqlite = format!("sqlite:{}", dir.join("state.db").display());
        std::fs::create_dir_all(&dir).expect("a temporary folder");
        let opened = open(&sqlite).await;
        if cfg!(feature = "sqlite") {
            assert!(opened.is_ok(), "{:?}", opened.err());
        } else {
            let Err(error) = opened else {
                panic!("a store left out was opened")
            };
            assert!(matches!(
                error,
                JournalError::NotCompiledIn {
                    feature: "sqlite",
                    ..
                }
            ));
            assert!(error.to_string().contains("`sqlite` feature"), "{error}");
        }
        drop(std::fs::remove_dir_all(&dir));
        if !cfg!(feature = "postgres") {
            let Err(error) = open("postgres://u:secret@localhost/db").await else {
                panic!("a store left out was opened")
            };
            assert!(matches!(
                error,
                JournalError::NotCompiledIn {
                    feature: "postgres",
                    ..
                }
            ));
            assert!(!error.to_string().contains("secret"), "{error}");
        }
    }
}
