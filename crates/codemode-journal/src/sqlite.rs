//! The SQLite store: a local file in WAL mode, through rusqlite, with no thread hop on a commit.
//!
//! Why not a driver with a worker thread (sqlx's SQLite driver ran every statement on a thread
//! of its own, blocked on a channel between commands): on a small machine waking a sleeping
//! thread costs 50 to 90 µs, and the contract's one commit per side-effecting call paid it on
//! the way there and back. Here a short write (an append, a release) runs in the calling task
//! under the connection's lock: a WAL commit with `synchronous=NORMAL` only writes to the log
//! (no sync), tens of microseconds. It never waits there: the lock is only tried, and the
//! connection's busy timeout is zero for it, so when another call holds the connection or
//! another process holds the file's write lock, the write goes to a blocking thread instead
//! (where it waits up to [`BUSY_TIMEOUT`]). Every other call (create, load, claim, deletes,
//! migrations) may take milliseconds and runs on a blocking thread. Checkpoints of the log run
//! on a second connection on a thread of their own, so their syncs never hold up a commit.

use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::{Arc, Mutex, MutexGuard, PoisonError, TryLockError};
use std::time::Duration;

use async_trait::async_trait;
use rusqlite::{Connection, ErrorCode, OptionalExtension, TransactionBehavior, params};

use crate::schema::{MIGRATIONS, as_i64, as_u64, migration_number};
use crate::sqlite_jobs::{
    Append, AppendRef, Done, Failure, append, create, delete_run, delete_where, immediate, load,
    release,
};
use crate::store::epoch_after_claim;
use crate::{Batch, Claim, Journal, JournalError, JournalStore, RunRecord, Scope};

/// Store calls between two checkpoints of the write-ahead log.
const CHECKPOINT_EVERY: u64 = 256;

/// How long a call on a blocking thread waits for the file's write lock before failing.
pub(crate) const BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// Prepared statements kept per connection (the store uses about 20).
const STATEMENT_CACHE: usize = 64;

/// A journal store in a local SQLite file. Opened by [`SqliteJournal::open`].
pub struct SqliteJournal {
    shared: Arc<Shared>,
}

impl std::fmt::Debug for SqliteJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqliteJournal")
            .field("address", &self.shared.address)
            .finish_non_exhaustive()
    }
}

/// What the store's calls share with its blocking threads.
struct Shared {
    /// `sqlite:PATH`, as errors show it.
    address: String,
    writer: Mutex<Writer>,
    /// Asks the checkpointing thread for a checkpoint (it ends when this is dropped).
    checkpoints: crossbeam_channel::Sender<()>,
}

/// The one connection that reads and writes, and how many calls it served.
struct Writer {
    connection: Connection,
    uses: u64,
}

impl Shared {
    /// The error of a failed job about `subject` (a run or session id, for a corrupt row).
    fn error(&self, failure: Failure, subject: &str) -> JournalError {
        match failure {
            Failure::Sql(error) => self.store_error(&error.to_string()),
            Failure::Corrupt => JournalError::Corrupt(subject.to_owned()),
            Failure::Panicked => self.store_error(PANICKED),
            Failure::Later => self.store_error("a journal write was never run"),
        }
    }

    fn store_error(&self, message: &str) -> JournalError {
        JournalError::Store {
            address: self.address.clone(),
            message: message.to_owned(),
        }
    }

    /// The connection, counting the call (every [`CHECKPOINT_EVERY`]th asks for a checkpoint).
    /// A panic of an earlier holder left no transaction open (its `Transaction` rolled back
    /// while unwinding), so a poisoned lock is taken as it is.
    fn counted<'a>(&self, mut writer: MutexGuard<'a, Writer>) -> MutexGuard<'a, Writer> {
        writer.uses += 1;
        if writer.uses.is_multiple_of(CHECKPOINT_EVERY) {
            let _ = self.checkpoints.try_send(());
        }
        writer
    }

    /// Runs `job` on the connection in the calling thread if that never waits: the lock is free
    /// and the file's write lock is too. `None` when it would have waited (nothing was
    /// written: a busy `BEGIN IMMEDIATE` fails before any write, and a failed transaction
    /// rolls back).
    fn try_now<T>(&self, job: impl FnOnce(&mut Connection) -> Done<T>) -> Option<Done<T>> {
        let writer = match self.writer.try_lock() {
            Ok(writer) => writer,
            Err(TryLockError::Poisoned(poisoned)) => poisoned.into_inner(),
            Err(TryLockError::WouldBlock) => return None,
        };
        let mut writer = self.counted(writer);
        if writer.connection.busy_timeout(Duration::ZERO).is_err() {
            return None;
        }
        let done = catch_unwind(AssertUnwindSafe(|| job(&mut writer.connection)))
            .unwrap_or_else(|_| Err(Failure::Panicked));
        let restored = writer.connection.busy_timeout(BUSY_TIMEOUT);
        match (done, restored) {
            (Err(Failure::Later), _) => None,
            (Err(Failure::Sql(error)), _) if is_busy(&error) => None,
            (done, Ok(())) => Some(done),
            (_, Err(error)) => Some(Err(Failure::Sql(error))),
        }
    }

    /// Runs `job` on the connection on a blocking thread. A panic in it is an error, never a
    /// hang.
    async fn later<T: Send + 'static>(
        self: &Arc<Self>,
        job: impl FnOnce(&mut Connection) -> Done<T> + Send + 'static,
    ) -> Done<T> {
        let shared = Arc::clone(self);
        tokio::task::spawn_blocking(move || {
            let writer = shared.writer.lock().unwrap_or_else(PoisonError::into_inner);
            let mut writer = shared.counted(writer);
            job(&mut writer.connection)
        })
        .await
        .unwrap_or_else(|_| Err(Failure::Panicked))
    }
}

/// What a panicking job answers.
const PANICKED: &str = "the journal's SQLite job panicked";

fn is_busy(error: &rusqlite::Error) -> bool {
    matches!(
        error.sqlite_error_code(),
        Some(ErrorCode::DatabaseBusy | ErrorCode::DatabaseLocked)
    )
}

/// Opens `path` with the store's settings: WAL, `synchronous=NORMAL`, the busy timeout, no
/// checkpoint on commit (the checkpointing thread does them).
fn connect(path: &str) -> rusqlite::Result<Connection> {
    let connection = Connection::open(path)?;
    connection.busy_timeout(BUSY_TIMEOUT)?;
    connection.set_prepared_statement_cache_capacity(STATEMENT_CACHE);
    let _: String = connection.query_row("PRAGMA journal_mode = WAL", [], |row| row.get(0))?;
    connection.execute_batch("PRAGMA synchronous = NORMAL; PRAGMA wal_autocheckpoint = 0;")?;
    Ok(connection)
}

/// Applies the migrations the file has not had yet, each in a transaction.
fn migrate(connection: &mut Connection) -> rusqlite::Result<()> {
    connection
        .execute_batch("CREATE TABLE IF NOT EXISTS codemode_schema (version BIGINT NOT NULL)")?;
    let version: i64 = connection.query_row(
        "SELECT COALESCE(MAX(version), 0) FROM codemode_schema",
        [],
        |row| row.get(0),
    )?;
    for (index, migration) in MIGRATIONS.iter().enumerate() {
        let number = migration_number(index);
        if number <= version {
            continue;
        }
        let tx = connection.transaction_with_behavior(TransactionBehavior::Immediate)?;
        if let Some(sql) = migration.sql(true) {
            tx.execute_batch(sql)?;
        }
        tx.execute(
            "INSERT INTO codemode_schema (version) VALUES (?1)",
            [number],
        )?;
        tx.commit()?;
    }
    Ok(())
}

/// Checkpoints the write-ahead log (passive: it never waits for, nor holds up, a writer) each
/// time it is asked, until the store is dropped.
fn checkpointer(connection: &Connection, asked: &crossbeam_channel::Receiver<()>) {
    while asked.recv().is_ok() {
        let done = connection.query_row("PRAGMA wal_checkpoint(PASSIVE)", [], |_| Ok(()));
        if let Err(error) = done {
            tracing::debug!(target: "codemode", %error, "journal checkpoint failed");
        }
    }
}

/// Creates the state file readable and writable by its owner only (SQLite gives its `-wal` and
/// `-shm` files the mode of the database file), and warns about an existing one that others
/// may read or write: the file holds tool data and who may resume which run.
fn owner_only(path: &str) {
    #[cfg(unix)]
    {
        use std::os::unix::fs::{MetadataExt as _, OpenOptionsExt as _};
        let created = std::fs::OpenOptions::new()
            .write(true)
            .create_new(true)
            .mode(0o600)
            .open(path);
        match created {
            Ok(_) => {}
            Err(error) if error.kind() == std::io::ErrorKind::AlreadyExists => {
                if let Ok(metadata) = std::fs::metadata(path)
                    && metadata.mode() & 0o077 != 0
                {
                    tracing::warn!(
                        target: "codemode",
                        path,
                        mode = format!("{:o}", metadata.mode() & 0o777),
                        "the state file may be read or written by other users; it holds tool data \
                         and run scopes: `chmod 600` it"
                    );
                }
            }
            // SQLite reports what is wrong with the path when it opens it.
            Err(_) => {}
        }
    }
    #[cfg(not(unix))]
    let _ = path;
}

impl SqliteJournal {
    /// Opens (creating it when missing, readable by its owner only: mode 0600, and so its
    /// `-wal` and `-shm` files; an existing file others may read gets a warning) a SQLite file
    /// in WAL mode with `synchronous=NORMAL` and migrates it: a commit survives the process being killed; the last commits before a power
    /// loss may not.
    ///
    /// # Errors
    /// [`JournalError::Store`] when the file cannot be opened or migrated (not a database, no
    /// room, locked past the busy timeout).
    pub async fn open(path: &str) -> Result<Self, JournalError> {
        let address = format!("sqlite:{path}");
        let failed = |message: String| JournalError::Store {
            address: address.clone(),
            message,
        };
        let owned = path.to_owned();
        let opened = tokio::task::spawn_blocking(move || -> rusqlite::Result<_> {
            owner_only(&owned);
            let mut connection = connect(&owned)?;
            migrate(&mut connection)?;
            let checkpointing = connect(&owned)?;
            Ok((connection, checkpointing))
        })
        .await
        .map_err(|_| failed(PANICKED.to_owned()))?;
        let (connection, checkpointing) = opened.map_err(|e| failed(e.to_string()))?;
        let (checkpoints, asked) = crossbeam_channel::bounded(1);
        std::thread::Builder::new()
            .name("codemode-journal-checkpoint".to_owned())
            .spawn(move || checkpointer(&checkpointing, &asked))
            .map_err(|e| failed(e.to_string()))?;
        Ok(Self {
            shared: Arc::new(Shared {
                address,
                writer: Mutex::new(Writer {
                    connection,
                    uses: 0,
                }),
                checkpoints,
            }),
        })
    }

    /// Runs a short write now when that never waits, else on a blocking thread. `job` gets
    /// `input` and whether it runs now (then it may answer [`Failure::Later`] when it finds it
    /// has more to do than a short write); it runs twice when the first try wrote nothing.
    async fn write<I, T>(&self, input: I, job: fn(&mut Connection, &I, bool) -> Done<T>) -> Done<T>
    where
        I: Send + 'static,
        T: Send + 'static,
    {
        if let Some(done) = self
            .shared
            .try_now(|connection| job(connection, &input, true))
        {
            return done;
        }
        self.shared
            .later(move |connection| job(connection, &input, false))
            .await
    }
}

#[async_trait]
impl JournalStore for SqliteJournal {
    async fn create(
        &self,
        record: &RunRecord,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<(), JournalError> {
        let record = record.clone();
        let run_id = record.run_id.clone();
        let host = host.to_owned();
        let inserted = self
            .write((record, host, now_ms, held_until_ms), create)
            .await
            .map_err(|failure| self.shared.error(failure, &run_id))?;
        if inserted == 0 {
            return Err(JournalError::TooManyRuns);
        }
        Ok(())
    }

    async fn append(&self, run_id: &str, epoch: u64, batch: &Batch) -> Result<(), JournalError> {
        let borrowed = AppendRef {
            run_id,
            epoch,
            batch,
        };
        let done = match self
            .shared
            .try_now(|connection| append(connection, &borrowed))
        {
            Some(done) => done,
            None => {
                let owned = Append {
                    run_id: run_id.to_owned(),
                    epoch,
                    batch: batch.clone(),
                };
                self.shared
                    .later(move |connection| {
                        let Append {
                            run_id,
                            epoch,
                            batch,
                        } = &owned;
                        append(
                            connection,
                            &AppendRef {
                                run_id,
                                epoch: *epoch,
                                batch,
                            },
                        )
                    })
                    .await
            }
        };
        match done.map_err(|failure| self.shared.error(failure, run_id))? {
            true => Ok(()),
            false => Err(JournalError::Fenced),
        }
    }

    async fn load(&self, run_id: &str, now_ms: i64) -> Result<Option<Journal>, JournalError> {
        let owned = run_id.to_owned();
        self.shared
            .later(move |connection| load(connection, &owned, now_ms))
            .await
            .map_err(|failure| self.shared.error(failure, run_id))
    }

    async fn scope(&self, run_id: &str, now_ms: i64) -> Result<Option<Scope>, JournalError> {
        let owned = run_id.to_owned();
        self.shared
            .later(move |connection| {
                Ok(connection
                    .prepare_cached(
                        "SELECT agent_run_id, session_id, session_key FROM codemode_runs \
                         WHERE run_id = ?1 AND expires_at_ms > ?2",
                    )?
                    .query_row(params![owned, now_ms], |row| {
                        Ok(Scope {
                            agent_run_id: row.get(0)?,
                            session_id: row.get(1)?,
                            session_key: row.get(2)?,
                        })
                    })
                    .optional()?)
            })
            .await
            .map_err(|failure| self.shared.error(failure, run_id))
    }

    async fn claim(
        &self,
        run_id: &str,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<Claim, JournalError> {
        let owned = run_id.to_owned();
        let host = host.to_owned();
        self.shared
            .later(move |connection| {
                // One write transaction: nobody changes the row between the read and the write.
                let tx = immediate(connection)?;
                let row = tx
                    .prepare_cached(
                        "SELECT epoch, holder, held_until_ms, live_on FROM codemode_runs \
                         WHERE run_id = ?1 AND expires_at_ms > ?2",
                    )?
                    .query_row(params![owned, now_ms], |row| {
                        Ok((
                            row.get::<_, i64>(0)?,
                            row.get::<_, Option<String>>(1)?,
                            row.get::<_, i64>(2)?,
                            row.get::<_, String>(3)?,
                        ))
                    })
                    .optional()?;
                let Some((epoch, holder, held_until, live_on)) = row else {
                    return Ok(Claim::Missing);
                };
                let live_here = live_on == host;
                let held = holder.is_some() && held_until > now_ms;
                let Some(new_epoch) = epoch_after_claim(as_u64(epoch), held, live_here).map(as_i64)
                else {
                    return Ok(Claim::Busy);
                };
                tx.prepare_cached(
                    "UPDATE codemode_runs SET holder = ?1, held_until_ms = ?2, epoch = ?3, \
                     live_on = ?1 WHERE run_id = ?4",
                )?
                .execute(params![host, held_until_ms, new_epoch, owned])?;
                tx.commit()?;
                Ok(Claim::Held {
                    epoch: as_u64(new_epoch),
                    live_here,
                })
            })
            .await
            .map_err(|failure| self.shared.error(failure, run_id))
    }

    async fn release(
        &self,
        run_id: &str,
        epoch: u64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError> {
        let released = self
            .write((run_id.to_owned(), epoch, expires_at_ms), release)
            .await
            .map_err(|failure| self.shared.error(failure, run_id))?;
        if released {
            Ok(())
        } else {
            Err(JournalError::Fenced)
        }
    }

    async fn delete(&self, run_id: &str, epoch: Option<u64>) -> Result<(), JournalError> {
        self.write((run_id.to_owned(), epoch), delete_run)
            .await
            .map_err(|failure| self.shared.error(failure, run_id))?;
        Ok(())
    }

    async fn delete_session(&self, session: &str) -> Result<u64, JournalError> {
        self.delete_matching(
            "session_id = ?1 OR session_key = ?1",
            vec![rusqlite::types::Value::Text(session.to_owned())],
        )
        .await
    }

    async fn delete_agent_run(&self, agent_run_id: &str) -> Result<u64, JournalError> {
        self.delete_matching(
            "agent_run_id = ?1",
            vec![rusqlite::types::Value::Text(agent_run_id.to_owned())],
        )
        .await
    }

    async fn delete_expired(&self, now_ms: i64) -> Result<u64, JournalError> {
        self.delete_matching(
            "expires_at_ms <= ?1",
            vec![rusqlite::types::Value::Integer(now_ms)],
        )
        .await
    }

    async fn count(&self, now_ms: i64) -> Result<u64, JournalError> {
        self.shared
            .later(move |connection| {
                let count: i64 = connection
                    .prepare_cached("SELECT COUNT(*) FROM codemode_runs WHERE expires_at_ms > ?1")?
                    .query_row([now_ms], |row| row.get(0))?;
                Ok(as_u64(count))
            })
            .await
            .map_err(|failure| self.shared.error(failure, "count"))
    }

    async fn save_transport_session(
        &self,
        session_id: &str,
        state: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError> {
        let (id, state) = (session_id.to_owned(), state.to_owned());
        self.shared
            .later(move |connection| {
                let tx = immediate(connection)?;
                tx.prepare_cached(
                    "DELETE FROM codemode_transport_sessions WHERE expires_at_ms <= ?1",
                )?
                .execute([now_ms])?;
                tx.prepare_cached(
                    "INSERT INTO codemode_transport_sessions (session_id, state, expires_at_ms) \
                     VALUES (?1, ?2, ?3) ON CONFLICT (session_id) DO UPDATE SET \
                     state = excluded.state, expires_at_ms = excluded.expires_at_ms",
                )?
                .execute(params![id, state, expires_at_ms])?;
                tx.commit()?;
                Ok(())
            })
            .await
            .map_err(|failure| self.shared.error(failure, session_id))
    }

    async fn load_transport_session(
        &self,
        session_id: &str,
        now_ms: i64,
    ) -> Result<Option<String>, JournalError> {
        let id = session_id.to_owned();
        self.shared
            .later(move |connection| {
                Ok(connection
                    .prepare_cached(
                        "SELECT state FROM codemode_transport_sessions \
                         WHERE session_id = ?1 AND expires_at_ms > ?2",
                    )?
                    .query_row(params![id, now_ms], |row| row.get(0))
                    .optional()?)
            })
            .await
            .map_err(|failure| self.shared.error(failure, session_id))
    }

    async fn delete_transport_session(&self, session_id: &str) -> Result<(), JournalError> {
        let id = session_id.to_owned();
        self.shared
            .later(move |connection| {
                connection
                    .prepare_cached(
                        "DELETE FROM codemode_transport_sessions WHERE session_id = ?1",
                    )?
                    .execute([id])?;
                Ok(())
            })
            .await
            .map_err(|failure| self.shared.error(failure, session_id))
    }
}

impl SqliteJournal {
    /// [`delete_where`] on a blocking thread.
    async fn delete_matching(
        &self,
        condition: &'static str,
        binds: Vec<rusqlite::types::Value>,
    ) -> Result<u64, JournalError> {
        self.shared
            .later(move |connection| delete_where(connection, condition, &binds))
            .await
            .map_err(|failure| self.shared.error(failure, condition))
    }
}
