//! The SQL stores: a SQLite file on one host, Postgres shared by several. One schema and one set
//! of statements for both (sqlx's `Any` driver; `$N` placeholders work in both dialects).

use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::any::{AnyConnectOptions, AnyPoolOptions, AnyRow};
use sqlx::{AnyPool, Executor, Row};

use crate::error::scrub;
use crate::{
    Batch, Claim, Event, Journal, JournalError, JournalStore, MAX_JOURNALED_RUNS, Reading, Receipt,
    ReceiptKey, ReceiptState, RunRecord, Scope,
};

/// The schema, applied in order on open; `codemode_schema` remembers how far.
const MIGRATIONS: &[&str] = &[
    include_str!("../migrations/0001_journal.sql"),
    include_str!("../migrations/0002_transport_sessions.sql"),
];

/// Connections of a Postgres pool (SQLite uses one: it has one writer anyway).
const POSTGRES_CONNECTIONS: u32 = 8;

/// How long a connection waits for a locked SQLite file before failing.
const SQLITE_BUSY_TIMEOUT: Duration = Duration::from_secs(5);

/// A journal store in SQL: [`SqlJournal::open_sqlite`] or [`SqlJournal::open_postgres`].
pub struct SqlJournal {
    pool: AnyPool,
    /// The address with any password redacted: the only form that is ever shown.
    address: String,
    /// The password, scrubbed from every error message.
    secret: Option<String>,
}

impl std::fmt::Debug for SqlJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SqlJournal")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

fn password_of(url: &str) -> Option<String> {
    let rest = url.split_once("://")?.1;
    let authority = rest.split(['/', '?', '#']).next()?;
    let userinfo = authority.rsplit_once('@')?.0;
    let from_userinfo = userinfo
        .split_once(':')
        .map(|(_, password)| password.to_owned());
    from_userinfo.or_else(|| {
        url.split_once("password=")
            .map(|(_, rest)| rest.split(['&', '#']).next().unwrap_or_default().to_owned())
    })
}

impl SqlJournal {
    /// Opens (creating it when missing) a SQLite file in WAL mode with `synchronous=NORMAL`:
    /// a commit survives the process being killed; the last commits before a power loss may not.
    ///
    /// # Errors
    /// [`JournalError::Store`] when the file cannot be opened or migrated.
    pub async fn open_sqlite(path: &str) -> Result<Self, JournalError> {
        let address = format!("sqlite:{path}");
        let url = format!("sqlite://{path}?mode=rwc");
        let busy = SQLITE_BUSY_TIMEOUT.as_millis();
        // One local connection that nothing else closes: no ping before each use (a ping is one
        // more hop to sqlx's SQLite worker thread, about a fifth of an append's cost).
        let pool = Self::connect(&address, &url, None, 1, false, move |conn| {
            Box::pin(async move {
                conn.execute(
                    format!(
                        "PRAGMA journal_mode = WAL; PRAGMA synchronous = NORMAL; \
                         PRAGMA busy_timeout = {busy};"
                    )
                    .as_str(),
                )
                .await
                .map(drop)
            })
        })
        .await?;
        Self::migrated(pool, address, None).await
    }

    /// Connects to Postgres (no TLS: a loopback or trusted network). Errors and `Debug` show the
    /// address with its password redacted.
    ///
    /// # Errors
    /// [`JournalError::Store`] when the server cannot be reached or migrated.
    pub async fn open_postgres(url: &str) -> Result<Self, JournalError> {
        let address = crate::redact_address(url);
        let secret = password_of(url);
        let pool = Self::connect(
            &address,
            url,
            secret.as_deref(),
            POSTGRES_CONNECTIONS,
            true,
            |_| Box::pin(async { Ok(()) }),
        )
        .await?;
        Self::migrated(pool, address, secret).await
    }

    async fn connect<F>(
        address: &str,
        url: &str,
        secret: Option<&str>,
        connections: u32,
        ping_before_use: bool,
        after_connect: F,
    ) -> Result<AnyPool, JournalError>
    where
        F: for<'c> Fn(
                &'c mut sqlx::AnyConnection,
            ) -> futures::future::BoxFuture<'c, Result<(), sqlx::Error>>
            + Send
            + Sync
            + 'static,
    {
        sqlx::any::install_default_drivers();
        let failed = |error: sqlx::Error| JournalError::Store {
            address: address.to_owned(),
            message: scrub(&error.to_string(), secret),
        };
        let options = AnyConnectOptions::from_str(url).map_err(failed)?;
        AnyPoolOptions::new()
            .max_connections(connections)
            .test_before_acquire(ping_before_use)
            .acquire_timeout(Duration::from_secs(10))
            .after_connect(move |conn, _meta| after_connect(conn))
            .connect_with(options)
            .await
            .map_err(failed)
    }

    async fn migrated(
        pool: AnyPool,
        address: String,
        secret: Option<String>,
    ) -> Result<Self, JournalError> {
        let store = Self {
            pool,
            address,
            secret,
        };
        // Two hosts opening a fresh Postgres at once may race on `CREATE ... IF NOT EXISTS`;
        // the loser tries again once the winner is done.
        if store.migrate().await.is_err() {
            tokio::time::sleep(Duration::from_millis(300)).await;
            store.migrate().await?;
        }
        Ok(store)
    }

    async fn migrate(&self) -> Result<(), JournalError> {
        sqlx::raw_sql("CREATE TABLE IF NOT EXISTS codemode_schema (version BIGINT NOT NULL)")
            .execute(&self.pool)
            .await
            .map_err(|e| self.failed(e))?;
        let version: i64 = sqlx::query("SELECT COALESCE(MAX(version), 0) FROM codemode_schema")
            .fetch_one(&self.pool)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| self.failed(e))?;
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            let number = i64::try_from(index + 1).unwrap_or(i64::MAX);
            if number <= version {
                continue;
            }
            let mut tx = self.pool.begin().await.map_err(|e| self.failed(e))?;
            sqlx::raw_sql(migration)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.failed(e))?;
            sqlx::query("INSERT INTO codemode_schema (version) VALUES ($1)")
                .bind(number)
                .execute(&mut *tx)
                .await
                .map_err(|e| self.failed(e))?;
            tx.commit().await.map_err(|e| self.failed(e))?;
        }
        Ok(())
    }

    fn failed(&self, error: sqlx::Error) -> JournalError {
        JournalError::Store {
            address: self.address.clone(),
            message: scrub(&error.to_string(), self.secret.as_deref()),
        }
    }

    async fn delete_where(&self, condition: &str, value: Bind<'_>) -> Result<u64, JournalError> {
        let mut tx = self.pool.begin().await.map_err(|e| self.failed(e))?;
        for table in ["codemode_receipts", "codemode_events", "codemode_readings"] {
            let statement = format!(
                "DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM codemode_runs WHERE {condition})"
            );
            value
                .bind(sqlx::query(&statement))
                .execute(&mut *tx)
                .await
                .map_err(|e| self.failed(e))?;
        }
        let statement = format!("DELETE FROM codemode_runs WHERE {condition}");
        let deleted = value
            .bind(sqlx::query(&statement))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.failed(e))?
            .rows_affected();
        tx.commit().await.map_err(|e| self.failed(e))?;
        Ok(deleted)
    }
}

/// The one value a `delete_where` condition binds as `$1`.
#[derive(Clone, Copy)]
enum Bind<'a> {
    Text(&'a str),
    Number(i64),
}

impl Bind<'_> {
    fn bind<'q>(
        self,
        query: sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>>,
    ) -> sqlx::query::Query<'q, sqlx::Any, sqlx::any::AnyArguments<'q>> {
        match self {
            Bind::Text(text) => query.bind(text.to_owned()),
            Bind::Number(number) => query.bind(number),
        }
    }
}

fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

fn as_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

fn record_of(row: &AnyRow) -> Result<(RunRecord, u64, u64, u64), sqlx::Error> {
    Ok((
        RunRecord {
            run_id: row.try_get("run_id")?,
            scope: Scope {
                agent_run_id: row.try_get("agent_run_id")?,
                session_id: row.try_get("session_id")?,
                session_key: row.try_get("session_key")?,
            },
            program: row.try_get("program")?,
            parent_call_id: row.try_get("parent_call_id")?,
            restart_safe: row.try_get::<i64, _>("restart_safe")? != 0,
            ttl_ms: as_u64(row.try_get("ttl_ms")?),
            expires_at_ms: row.try_get("expires_at_ms")?,
        },
        as_u64(row.try_get("epoch")?),
        as_u64(row.try_get("delivered")?),
        as_u64(row.try_get("bytes")?),
    ))
}

#[async_trait]
impl JournalStore for SqlJournal {
    async fn create(
        &self,
        record: &RunRecord,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<(), JournalError> {
        self.delete_expired(now_ms).await?;
        let scope = &record.scope;
        let inserted = sqlx::query(
            "INSERT INTO codemode_runs (run_id, agent_run_id, session_id, session_key, program, \
             parent_call_id, restart_safe, ttl_ms, expires_at_ms, epoch, holder, held_until_ms, \
             live_on, delivered, bytes) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $11, $10, 0, 0 \
             WHERE (SELECT COUNT(*) FROM codemode_runs WHERE expires_at_ms > $12) < $13",
        )
        .bind(record.run_id.clone())
        .bind(scope.agent_run_id.clone())
        .bind(scope.session_id.clone())
        .bind(scope.session_key.clone())
        .bind(record.program.clone())
        .bind(record.parent_call_id.clone())
        .bind(i64::from(record.restart_safe))
        .bind(as_i64(record.ttl_ms))
        .bind(record.expires_at_ms)
        .bind(host.to_owned())
        .bind(held_until_ms)
        .bind(now_ms)
        .bind(as_i64(MAX_JOURNALED_RUNS as u64))
        .execute(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        .rows_affected();
        if inserted == 0 {
            return Err(JournalError::TooManyRuns);
        }
        Ok(())
    }

    async fn append(&self, run_id: &str, epoch: u64, batch: &Batch) -> Result<(), JournalError> {
        let mut tx = self.pool.begin().await.map_err(|e| self.failed(e))?;
        // First a write to the run's row, fenced by the epoch: it also takes SQLite's write lock
        // at once, so the transaction never has to upgrade a read lock.
        let fenced = sqlx::query(
            "UPDATE codemode_runs SET delivered = COALESCE($3, delivered), \
             bytes = COALESCE($4, bytes) WHERE run_id = $1 AND epoch = $2",
        )
        .bind(run_id.to_owned())
        .bind(as_i64(epoch))
        .bind(batch.delivered.map(as_i64))
        .bind(batch.bytes.map(as_i64))
        .execute(&mut *tx)
        .await
        .map_err(|e| self.failed(e))?
        .rows_affected()
            == 0;
        if fenced {
            return Err(JournalError::Fenced);
        }
        for receipt in &batch.receipts {
            sqlx::query(
                "INSERT INTO codemode_receipts (run_id, method, ordinal, catalog_id, input_hash, \
                 side_effecting, state, payload) VALUES ($1, $2, $3, $4, $5, $6, $7, $8) \
                 ON CONFLICT (run_id, method, ordinal) DO UPDATE SET \
                 catalog_id = excluded.catalog_id, input_hash = excluded.input_hash, \
                 side_effecting = excluded.side_effecting, state = excluded.state, \
                 payload = excluded.payload",
            )
            .bind(run_id.to_owned())
            .bind(receipt.key.method.clone())
            .bind(as_i64(receipt.key.ordinal))
            .bind(receipt.catalog_id.clone())
            .bind(receipt.input_hash.clone())
            .bind(i64::from(receipt.side_effecting))
            .bind(receipt.state.name())
            .bind(receipt.state.payload())
            .execute(&mut *tx)
            .await
            .map_err(|e| self.failed(e))?;
        }
        for (seq, event) in &batch.events {
            let (kind, method, number) = event.to_stored();
            sqlx::query(
                "INSERT INTO codemode_events (run_id, seq, kind, method, number) \
                 VALUES ($1, $2, $3, $4, $5) ON CONFLICT (run_id, seq) DO UPDATE SET \
                 kind = excluded.kind, method = excluded.method, number = excluded.number",
            )
            .bind(run_id.to_owned())
            .bind(as_i64(*seq))
            .bind(kind)
            .bind(method.map(str::to_owned))
            .bind(as_i64(number))
            .execute(&mut *tx)
            .await
            .map_err(|e| self.failed(e))?;
        }
        for reading in &batch.readings {
            sqlx::query(
                "INSERT INTO codemode_readings (run_id, kind, ordinal, value) \
                 VALUES ($1, $2, $3, $4) ON CONFLICT (run_id, kind, ordinal) DO UPDATE SET \
                 value = excluded.value",
            )
            .bind(run_id.to_owned())
            .bind(i64::from(reading.kind))
            .bind(as_i64(reading.ordinal))
            .bind(reading.value)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.failed(e))?;
        }
        tx.commit().await.map_err(|e| self.failed(e))
    }

    async fn load(&self, run_id: &str, now_ms: i64) -> Result<Option<Journal>, JournalError> {
        let corrupt = |_| JournalError::Corrupt(run_id.to_owned());
        let Some(row) = sqlx::query(
            "SELECT run_id, agent_run_id, session_id, session_key, program, parent_call_id, \
             restart_safe, ttl_ms, expires_at_ms, epoch, delivered, bytes FROM codemode_runs \
             WHERE run_id = $1 AND expires_at_ms > $2",
        )
        .bind(run_id.to_owned())
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        else {
            return Ok(None);
        };
        let (record, epoch, delivered, bytes) = record_of(&row).map_err(corrupt)?;
        let receipts = sqlx::query(
            "SELECT method, ordinal, catalog_id, input_hash, side_effecting, state, payload \
             FROM codemode_receipts WHERE run_id = $1 ORDER BY method, ordinal",
        )
        .bind(run_id.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        .iter()
        .map(|row| -> Option<Receipt> {
            let state: String = row.try_get("state").ok()?;
            let payload: Option<String> = row.try_get("payload").ok()?;
            Some(Receipt {
                key: ReceiptKey {
                    method: row.try_get("method").ok()?,
                    ordinal: as_u64(row.try_get("ordinal").ok()?),
                },
                catalog_id: row.try_get("catalog_id").ok()?,
                input_hash: row.try_get("input_hash").ok()?,
                side_effecting: row.try_get::<i64, _>("side_effecting").ok()? != 0,
                state: ReceiptState::from_stored(&state, payload.as_deref())?,
            })
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| JournalError::Corrupt(run_id.to_owned()))?;
        let events = sqlx::query(
            "SELECT seq, kind, method, number FROM codemode_events WHERE run_id = $1 ORDER BY seq",
        )
        .bind(run_id.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        .iter()
        .map(|row| -> Option<(u64, Event)> {
            let kind: String = row.try_get("kind").ok()?;
            let method: Option<String> = row.try_get("method").ok()?;
            let number = as_u64(row.try_get("number").ok()?);
            let event = Event::from_stored(&kind, method.as_deref(), number)?;
            Some((as_u64(row.try_get("seq").ok()?), event))
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| JournalError::Corrupt(run_id.to_owned()))?;
        let readings = sqlx::query(
            "SELECT kind, ordinal, value FROM codemode_readings WHERE run_id = $1 \
             ORDER BY kind, ordinal",
        )
        .bind(run_id.to_owned())
        .fetch_all(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        .iter()
        .map(|row| -> Option<Reading> {
            Some(Reading {
                kind: u32::try_from(row.try_get::<i64, _>("kind").ok()?).ok()?,
                ordinal: as_u64(row.try_get("ordinal").ok()?),
                value: row.try_get("value").ok()?,
            })
        })
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| JournalError::Corrupt(run_id.to_owned()))?;
        Ok(Some(Journal {
            record,
            epoch,
            receipts,
            events,
            readings,
            delivered,
            bytes,
        }))
    }

    async fn claim(
        &self,
        run_id: &str,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<Claim, JournalError> {
        // Optimistic: read the row, then take it only if nobody changed it in between.
        let Some(row) = sqlx::query(
            "SELECT epoch, holder, held_until_ms, live_on FROM codemode_runs \
             WHERE run_id = $1 AND expires_at_ms > $2",
        )
        .bind(run_id.to_owned())
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        else {
            return Ok(Claim::Missing);
        };
        let corrupt = |_| JournalError::Corrupt(run_id.to_owned());
        let epoch: i64 = row.try_get("epoch").map_err(corrupt)?;
        let holder: Option<String> = row.try_get("holder").map_err(corrupt)?;
        let held_until: i64 = row.try_get("held_until_ms").map_err(corrupt)?;
        let live_on: String = row.try_get("live_on").map_err(corrupt)?;
        if holder.is_some() && held_until > now_ms {
            return Ok(Claim::Busy);
        }
        let live_here = live_on == host;
        let new_epoch = if live_here {
            epoch
        } else {
            epoch.saturating_add(1)
        };
        let taken = sqlx::query(
            "UPDATE codemode_runs SET holder = $1, held_until_ms = $2, epoch = $3, live_on = $1 \
             WHERE run_id = $4 AND epoch = $5 AND live_on = $6 \
             AND (holder IS NULL OR held_until_ms <= $7)",
        )
        .bind(host.to_owned())
        .bind(held_until_ms)
        .bind(new_epoch)
        .bind(run_id.to_owned())
        .bind(epoch)
        .bind(live_on)
        .bind(now_ms)
        .execute(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        .rows_affected();
        Ok(if taken == 0 {
            // Somebody else took it between the read and the write.
            Claim::Busy
        } else {
            Claim::Held {
                epoch: as_u64(new_epoch),
                live_here,
            }
        })
    }

    async fn release(
        &self,
        run_id: &str,
        epoch: u64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError> {
        let released = sqlx::query(
            "UPDATE codemode_runs SET holder = NULL, expires_at_ms = $3 \
             WHERE run_id = $1 AND epoch = $2",
        )
        .bind(run_id.to_owned())
        .bind(as_i64(epoch))
        .bind(expires_at_ms)
        .execute(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        .rows_affected();
        if released == 0 {
            return Err(JournalError::Fenced);
        }
        Ok(())
    }

    async fn delete(&self, run_id: &str, epoch: Option<u64>) -> Result<(), JournalError> {
        match epoch {
            None => self.delete_where("run_id = $1", Bind::Text(run_id)).await?,
            Some(epoch) => {
                // Only the current holder's epoch deletes: check it in the same transaction as
                // the deletes (a row of another epoch is left alone).
                let current: Option<i64> =
                    sqlx::query("SELECT epoch FROM codemode_runs WHERE run_id = $1")
                        .bind(run_id.to_owned())
                        .fetch_optional(&self.pool)
                        .await
                        .map_err(|e| self.failed(e))?
                        .map(|row| row.try_get(0))
                        .transpose()
                        .map_err(|_| JournalError::Corrupt(run_id.to_owned()))?;
                if current != Some(as_i64(epoch)) {
                    return Ok(());
                }
                self.delete_where("run_id = $1", Bind::Text(run_id)).await?
            }
        };
        Ok(())
    }

    async fn delete_session(&self, session: &str) -> Result<u64, JournalError> {
        self.delete_where("session_id = $1 OR session_key = $1", Bind::Text(session))
            .await
    }

    async fn delete_agent_run(&self, agent_run_id: &str) -> Result<u64, JournalError> {
        self.delete_where("agent_run_id = $1", Bind::Text(agent_run_id))
            .await
    }

    async fn delete_expired(&self, now_ms: i64) -> Result<u64, JournalError> {
        self.delete_where("expires_at_ms <= $1", Bind::Number(now_ms))
            .await
    }

    async fn count(&self, now_ms: i64) -> Result<u64, JournalError> {
        let count: i64 = sqlx::query("SELECT COUNT(*) FROM codemode_runs WHERE expires_at_ms > $1")
            .bind(now_ms)
            .fetch_one(&self.pool)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| self.failed(e))?;
        Ok(as_u64(count))
    }

    async fn save_transport_session(
        &self,
        session_id: &str,
        state: &str,
        now_ms: i64,
        expires_at_ms: i64,
    ) -> Result<(), JournalError> {
        let mut tx = self.pool.begin().await.map_err(|e| self.failed(e))?;
        sqlx::query("DELETE FROM codemode_transport_sessions WHERE expires_at_ms <= $1")
            .bind(now_ms)
            .execute(&mut *tx)
            .await
            .map_err(|e| self.failed(e))?;
        sqlx::query(
            "INSERT INTO codemode_transport_sessions (session_id, state, expires_at_ms) \
             VALUES ($1, $2, $3) ON CONFLICT (session_id) DO UPDATE SET \
             state = excluded.state, expires_at_ms = excluded.expires_at_ms",
        )
        .bind(session_id.to_owned())
        .bind(state.to_owned())
        .bind(expires_at_ms)
        .execute(&mut *tx)
        .await
        .map_err(|e| self.failed(e))?;
        tx.commit().await.map_err(|e| self.failed(e))
    }

    async fn load_transport_session(
        &self,
        session_id: &str,
        now_ms: i64,
    ) -> Result<Option<String>, JournalError> {
        sqlx::query(
            "SELECT state FROM codemode_transport_sessions \
             WHERE session_id = $1 AND expires_at_ms > $2",
        )
        .bind(session_id.to_owned())
        .bind(now_ms)
        .fetch_optional(&self.pool)
        .await
        .map_err(|e| self.failed(e))?
        .map(|row| row.try_get::<String, _>(0))
        .transpose()
        .map_err(|_| JournalError::Corrupt(session_id.to_owned()))
    }

    async fn delete_transport_session(&self, session_id: &str) -> Result<(), JournalError> {
        sqlx::query("DELETE FROM codemode_transport_sessions WHERE session_id = $1")
            .bind(session_id.to_owned())
            .execute(&self.pool)
            .await
            .map_err(|e| self.failed(e))?;
        Ok(())
    }
}
