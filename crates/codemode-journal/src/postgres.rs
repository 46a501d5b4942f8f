//! The Postgres store, shared by several hosts: a pool of sqlx connections; every write is one
//! statement (its data-modifying `WITH` parts commit together), so one round trip.

use std::collections::HashSet;
use std::hash::Hash;
use std::str::FromStr;
use std::time::Duration;

use async_trait::async_trait;
use sqlx::pool::PoolConnection;
use sqlx::postgres::{PgArguments, PgConnectOptions, PgPoolOptions, PgRow};
use sqlx::{Arguments, Connection, PgPool, Postgres, Row};

use crate::error::scrub;
use crate::schema::{MIGRATIONS, RUN_TABLES, as_i64, as_u64, migration_number};
use crate::store::epoch_after_claim;
use crate::stored::{decode_events, decode_readings, decode_receipts};
use crate::{
    Batch, Claim, Event, Journal, JournalError, JournalStore, MAX_JOURNALED_RUNS, Reading, Receipt,
    RunRecord, Scope,
};

/// Connections of the pool.
const POSTGRES_CONNECTIONS: u32 = 8;

/// Bound parameters of one statement at most (Postgres allows 65,535): a larger append is split
/// into statements run in one transaction.
const MAX_PARAMETERS: usize = 30_000;

/// A journal store in a Postgres database, which several hosts may share (their writes are
/// fenced by the run's epoch). Opened by [`PostgresJournal::open`].
pub struct PostgresJournal {
    pool: PgPool,
    /// The address with any password redacted: the only form that is ever shown.
    address: String,
    /// The password, scrubbed from every error message.
    secret: Option<String>,
}

impl std::fmt::Debug for PostgresJournal {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PostgresJournal")
            .field("address", &self.address)
            .finish_non_exhaustive()
    }
}

/// One statement's SQL and its arguments; placeholders are numbered in binding order.
struct Statement {
    sql: String,
    arguments: PgArguments,
    count: usize,
}

impl Statement {
    fn new() -> Self {
        Self {
            sql: String::new(),
            arguments: PgArguments::default(),
            count: 0,
        }
    }

    /// Binds `value` as the next parameter, for SQL written with its number.
    fn add<T>(&mut self, value: T) -> Result<(), sqlx::Error>
    where
        T: 'static + sqlx::Encode<'static, Postgres> + sqlx::Type<Postgres> + Send,
    {
        self.arguments.add(value).map_err(sqlx::Error::Encode)?;
        self.count += 1;
        Ok(())
    }

    /// Binds `value` as the next parameter and writes its placeholder into the SQL.
    fn bind<T>(&mut self, value: T) -> Result<(), sqlx::Error>
    where
        T: 'static + sqlx::Encode<'static, Postgres> + sqlx::Type<Postgres> + Send,
    {
        self.add(value)?;
        self.sql.push('$');
        self.sql.push_str(&self.count.to_string());
        Ok(())
    }

    fn push(&mut self, sql: &str) {
        self.sql.push_str(sql);
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

impl PostgresJournal {
    /// Connects to Postgres (no TLS: a loopback or trusted network) and migrates its schema.
    /// Errors and `Debug` show the address with its password redacted.
    ///
    /// # Errors
    /// [`JournalError::Store`] when the server cannot be reached or migrated.
    pub async fn open(url: &str) -> Result<Self, JournalError> {
        let address = crate::redact_address(url);
        let secret = password_of(url);
        let failed = |error: sqlx::Error| JournalError::Store {
            address: address.clone(),
            message: scrub(&error.to_string(), secret.as_deref()),
        };
        let options = PgConnectOptions::from_str(url).map_err(failed)?;
        let pool = PgPoolOptions::new()
            .max_connections(POSTGRES_CONNECTIONS)
            .test_before_acquire(true)
            .acquire_timeout(Duration::from_secs(10))
            .connect_with(options)
            .await
            .map_err(failed)?;
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
        let mut lease = self.lease().await?;
        sqlx::raw_sql("CREATE TABLE IF NOT EXISTS codemode_schema (version BIGINT NOT NULL)")
            .execute(&mut *lease)
            .await
            .map_err(|e| self.failed(e))?;
        let version: i64 = sqlx::query("SELECT COALESCE(MAX(version), 0) FROM codemode_schema")
            .fetch_one(&mut *lease)
            .await
            .and_then(|row| row.try_get(0))
            .map_err(|e| self.failed(e))?;
        for (index, migration) in MIGRATIONS.iter().enumerate() {
            let number = migration_number(index);
            if number <= version {
                continue;
            }
            let mut tx = lease.begin().await.map_err(|e| self.failed(e))?;
            if let Some(sql) = migration.sql(false) {
                sqlx::raw_sql(sql)
                    .execute(&mut *tx)
                    .await
                    .map_err(|e| self.failed(e))?;
            }
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

    /// A connection of the pool for one store call.
    async fn lease(&self) -> Result<PoolConnection<Postgres>, JournalError> {
        self.pool.acquire().await.map_err(|e| self.failed(e))
    }

    /// Runs one statement (its `WITH` parts commit together) and returns its rows.
    async fn write_at_once(&self, statement: Statement) -> Result<Vec<PgRow>, JournalError> {
        let mut lease = self.lease().await?;
        sqlx::query_with(&statement.sql, statement.arguments)
            .fetch_all(&mut *lease)
            .await
            .map_err(|e| self.failed(e))
    }

    /// Deletes the runs matching `condition` (on `codemode_runs`, with `$1`.. bound to `binds`)
    /// with all their rows, in one statement; returns how many runs.
    async fn delete_where(&self, condition: &str, binds: &[Bind<'_>]) -> Result<u64, JournalError> {
        let mut statement = Statement::new();
        for bind in binds {
            bind.add_to(&mut statement).map_err(|e| self.failed(e))?;
        }
        statement.sql =
            format!("WITH runs AS (DELETE FROM codemode_runs WHERE {condition} RETURNING run_id)");
        for (index, table) in RUN_TABLES.iter().enumerate() {
            statement.sql.push_str(&format!(
                ", rows_{index} AS (DELETE FROM {table} WHERE run_id IN (SELECT run_id FROM runs))"
            ));
        }
        statement.sql.push_str(" SELECT run_id FROM runs");
        let deleted = self.write_at_once(statement).await?;
        Ok(deleted.len() as u64)
    }

    /// The statement that writes `rows` of a run's journal fenced by `epoch`: the run's row is
    /// updated first (returning its epoch: no row back means fenced), and every insert only
    /// happens if the run is still at `epoch`.
    fn append_statement(
        run_id: &str,
        epoch: u64,
        batch: &Batch,
        rows: &Rows<'_>,
    ) -> Result<Statement, sqlx::Error> {
        let mut statement = Statement::new();
        statement.add(run_id.to_owned())?;
        statement.add(as_i64(epoch))?;
        statement.add(batch.delivered.map(as_i64))?;
        statement.add(batch.bytes.map(as_i64))?;
        let update = "UPDATE codemode_runs SET delivered = COALESCE($3, delivered), \
                      bytes = COALESCE($4, bytes) WHERE run_id = $1 AND epoch = $2 RETURNING epoch";
        let guard = "EXISTS (SELECT 1 FROM run)";
        // `WITH run AS (UPDATE ...), receipts AS (INSERT ...), ... SELECT epoch FROM run`.
        let open = |statement: &mut Statement, name: &str| {
            statement.push(&format!(", {name} AS ("));
        };
        let close = |statement: &mut Statement| statement.push(")");
        statement.push("WITH run AS (");
        statement.push(update);
        statement.push(")");
        if !rows.receipts.is_empty() {
            open(&mut statement, "receipts");
            statement.push(
                "INSERT INTO codemode_receipts (run_id, method, ordinal, catalog_id, input_hash, \
                 side_effecting, state, payload) SELECT $1, v.* FROM (VALUES ",
            );
            for (index, receipt) in rows.receipts.iter().enumerate() {
                statement.push(if index == 0 { "(" } else { ", (" });
                statement.bind(receipt.key.method.clone())?;
                statement.push(", ");
                statement.bind(as_i64(receipt.key.ordinal))?;
                statement.push(", ");
                statement.bind(receipt.catalog_id.clone())?;
                statement.push(", ");
                statement.bind(receipt.input_hash.clone())?;
                statement.push(", ");
                statement.bind(i64::from(receipt.side_effecting))?;
                statement.push(", ");
                statement.bind(receipt.state.name())?;
                statement.push(", ");
                statement.bind(receipt.state.payload())?;
                statement.push(")");
            }
            statement.push(&format!(
                ") AS v WHERE {guard} ON CONFLICT (run_id, method, ordinal) DO UPDATE SET \
                 catalog_id = excluded.catalog_id, input_hash = excluded.input_hash, \
                 side_effecting = excluded.side_effecting, state = excluded.state, \
                 payload = excluded.payload"
            ));
            close(&mut statement);
        }
        if !rows.events.is_empty() {
            open(&mut statement, "events");
            statement.push(
                "INSERT INTO codemode_events (run_id, seq, kind, method, number) \
                 SELECT $1, v.* FROM (VALUES ",
            );
            for (index, (seq, event)) in rows.events.iter().enumerate() {
                let (kind, method, number) = event.to_stored();
                statement.push(if index == 0 { "(" } else { ", (" });
                statement.bind(as_i64(*seq))?;
                statement.push(", ");
                statement.bind(kind)?;
                statement.push(", ");
                statement.bind(method.map(str::to_owned))?;
                statement.push(", ");
                statement.bind(as_i64(number))?;
                statement.push(")");
            }
            statement.push(&format!(
                ") AS v WHERE {guard} ON CONFLICT (run_id, seq) DO UPDATE SET \
                 kind = excluded.kind, method = excluded.method, number = excluded.number"
            ));
            close(&mut statement);
        }
        if !rows.readings.is_empty() {
            open(&mut statement, "readings");
            statement.push(
                "INSERT INTO codemode_readings (run_id, kind, ordinal, value) \
                 SELECT $1, v.* FROM (VALUES ",
            );
            for (index, reading) in rows.readings.iter().enumerate() {
                statement.push(if index == 0 { "(" } else { ", (" });
                statement.bind(i64::from(reading.kind))?;
                statement.push(", ");
                statement.bind(as_i64(reading.ordinal))?;
                statement.push(", ");
                statement.bind(reading.value)?;
                statement.push(")");
            }
            statement.push(&format!(
                ") AS v WHERE {guard} ON CONFLICT (run_id, kind, ordinal) DO UPDATE SET \
                 value = excluded.value"
            ));
            close(&mut statement);
        }
        statement.push(" SELECT epoch FROM run");
        Ok(statement)
    }
}

/// The rows of a batch as they are written: one per key (the last written wins, as it would
/// row by row), split into parts of at most [`MAX_PARAMETERS`] parameters.
#[derive(Default)]
struct Rows<'a> {
    receipts: Vec<&'a Receipt>,
    events: Vec<&'a (u64, Event)>,
    readings: Vec<&'a Reading>,
    parameters: usize,
}

impl<'a> Rows<'a> {
    fn parts(batch: &'a Batch) -> Vec<Rows<'a>> {
        let receipts = last_of_each(&batch.receipts, |receipt| {
            (receipt.key.method.as_str(), receipt.key.ordinal)
        });
        let events = last_of_each(&batch.events, |(seq, _)| *seq);
        let readings = last_of_each(&batch.readings, |reading| (reading.kind, reading.ordinal));
        let mut parts = vec![Rows::default()];
        let room = |parts: &mut Vec<Rows<'a>>, parameters: usize| -> usize {
            let last = parts.len() - 1;
            if parts[last].parameters + parameters > MAX_PARAMETERS {
                parts.push(Rows::default());
            }
            let last = parts.len() - 1;
            parts[last].parameters += parameters;
            last
        };
        for receipt in receipts {
            let part = room(&mut parts, 7);
            parts[part].receipts.push(receipt);
        }
        for event in events {
            let part = room(&mut parts, 4);
            parts[part].events.push(event);
        }
        for reading in readings {
            let part = room(&mut parts, 3);
            parts[part].readings.push(reading);
        }
        parts
    }
}

/// The last item of each key, in the order of those last items.
fn last_of_each<'a, T, K: Hash + Eq>(items: &'a [T], key: impl Fn(&'a T) -> K) -> Vec<&'a T> {
    let mut seen = HashSet::new();
    let mut kept: Vec<&T> = items
        .iter()
        .rev()
        .filter(|item| seen.insert(key(*item)))
        .collect();
    kept.reverse();
    kept
}

/// A value a `delete_where` condition binds.
#[derive(Clone, Copy)]
enum Bind<'a> {
    Text(&'a str),
    Number(i64),
}

impl Bind<'_> {
    fn add_to(self, statement: &mut Statement) -> Result<(), sqlx::Error> {
        match self {
            Bind::Text(text) => statement.add(text.to_owned()),
            Bind::Number(number) => statement.add(number),
        }
    }
}

fn record_of(row: &PgRow) -> Result<(RunRecord, u64, u64, u64), sqlx::Error> {
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
            // Text or nothing: anything else a damaged row holds is no trace.
            trace_context: row
                .try_get::<Option<String>, _>("trace_context")
                .ok()
                .flatten(),
            // A number or nothing: anything else a damaged row holds is no start.
            started_at_ms: row
                .try_get::<Option<i64>, _>("started_at_ms")
                .ok()
                .flatten(),
        },
        as_u64(row.try_get("epoch")?),
        as_u64(row.try_get("delivered")?),
        as_u64(row.try_get("bytes")?),
    ))
}

#[async_trait]
impl JournalStore for PostgresJournal {
    async fn create(
        &self,
        record: &RunRecord,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<(), JournalError> {
        self.delete_expired(now_ms).await?;
        let mut lease = self.lease().await?;
        let scope = &record.scope;
        let inserted = sqlx::query(
            "INSERT INTO codemode_runs (run_id, agent_run_id, session_id, session_key, program, \
             parent_call_id, restart_safe, ttl_ms, expires_at_ms, epoch, holder, held_until_ms, \
             live_on, delivered, bytes, trace_context, started_at_ms) \
             SELECT $1, $2, $3, $4, $5, $6, $7, $8, $9, 1, $10, $11, $10, 0, 0, $14, $15 \
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
        .bind(record.trace_context.clone())
        .bind(record.started_at_ms)
        .execute(&mut *lease)
        .await
        .map_err(|e| self.failed(e))?
        .rows_affected();
        if inserted == 0 {
            return Err(JournalError::TooManyRuns);
        }
        Ok(())
    }

    async fn append(&self, run_id: &str, epoch: u64, batch: &Batch) -> Result<(), JournalError> {
        let parts = Rows::parts(batch);
        let statement = |rows: &Rows<'_>| {
            Self::append_statement(run_id, epoch, batch, rows).map_err(|e| self.failed(e))
        };
        let held = if let [rows] = parts.as_slice() {
            // The usual case: one round trip.
            !self.write_at_once(statement(rows)?).await?.is_empty()
        } else {
            let mut lease = self.lease().await?;
            let mut tx = lease.begin().await.map_err(|e| self.failed(e))?;
            let mut held = true;
            for rows in &parts {
                let part = statement(rows)?;
                held &= !sqlx::query_with(&part.sql, part.arguments)
                    .fetch_all(&mut *tx)
                    .await
                    .map_err(|e| self.failed(e))?
                    .is_empty();
                if !held {
                    break;
                }
            }
            if held {
                tx.commit().await.map_err(|e| self.failed(e))?;
            }
            held
        };
        if held {
            Ok(())
        } else {
            Err(JournalError::Fenced)
        }
    }

    async fn load(&self, run_id: &str, now_ms: i64) -> Result<Option<Journal>, JournalError> {
        let corrupt = |_| JournalError::Corrupt(run_id.to_owned());
        // One round trip and one row: the receipts, events and readings come aggregated as JSON
        // arrays. Readings travel as text that round-trips every double.
        let aggregated = "(SELECT COALESCE(json_agg(json_build_array(method, ordinal, catalog_id, \
             input_hash, side_effecting, state, payload) ORDER BY method, ordinal), '[]')::text \
             FROM codemode_receipts WHERE run_id = $1) AS receipts, \
             (SELECT COALESCE(json_agg(json_build_array(seq, kind, method, number) \
             ORDER BY seq), '[]')::text FROM codemode_events WHERE run_id = $1) AS events, \
             (SELECT COALESCE(json_agg(json_build_array(kind, ordinal, value::text) \
             ORDER BY kind, ordinal), '[]')::text FROM codemode_readings WHERE run_id = $1) \
             AS readings";
        let mut lease = self.lease().await?;
        let Some(row) = sqlx::query(&format!(
            "SELECT run_id, agent_run_id, session_id, session_key, program, parent_call_id, \
             restart_safe, ttl_ms, expires_at_ms, epoch, delivered, bytes, trace_context, \
             started_at_ms, \
             {aggregated} \
             FROM codemode_runs WHERE run_id = $1 AND expires_at_ms > $2"
        ))
        .bind(run_id.to_owned())
        .bind(now_ms)
        .fetch_optional(&mut *lease)
        .await
        .map_err(|e| self.failed(e))?
        else {
            return Ok(None);
        };
        drop(lease);
        let (record, epoch, delivered, bytes) = record_of(&row).map_err(corrupt)?;
        let column = |name: &str| -> Result<String, JournalError> {
            row.try_get::<String, _>(name)
                .map_err(|_| JournalError::Corrupt(run_id.to_owned()))
        };
        let receipts = decode_receipts(&column("receipts")?);
        let events = decode_events(&column("events")?);
        let readings = decode_readings(&column("readings")?);
        match (receipts, events, readings) {
            (Some(receipts), Some(events), Some(readings)) => Ok(Some(Journal {
                record,
                epoch,
                receipts,
                events,
                readings,
                delivered,
                bytes,
            })),
            _ => Err(JournalError::Corrupt(run_id.to_owned())),
        }
    }

    async fn scope(&self, run_id: &str, now_ms: i64) -> Result<Option<Scope>, JournalError> {
        let mut lease = self.lease().await?;
        let Some(row) = sqlx::query(
            "SELECT agent_run_id, session_id, session_key FROM codemode_runs \
             WHERE run_id = $1 AND expires_at_ms > $2",
        )
        .bind(run_id.to_owned())
        .bind(now_ms)
        .fetch_optional(&mut *lease)
        .await
        .map_err(|e| self.failed(e))?
        else {
            return Ok(None);
        };
        let scope = (|| -> Result<Scope, sqlx::Error> {
            Ok(Scope {
                agent_run_id: row.try_get("agent_run_id")?,
                session_id: row.try_get("session_id")?,
                session_key: row.try_get("session_key")?,
            })
        })()
        .map_err(|_| JournalError::Corrupt(run_id.to_owned()))?;
        Ok(Some(scope))
    }

    async fn claim(
        &self,
        run_id: &str,
        host: &str,
        now_ms: i64,
        held_until_ms: i64,
    ) -> Result<Claim, JournalError> {
        // Optimistic: read the row, then take it only if nobody changed it in between.
        let mut lease = self.lease().await?;
        let Some(row) = sqlx::query(
            "SELECT epoch, holder, held_until_ms, live_on FROM codemode_runs \
             WHERE run_id = $1 AND expires_at_ms > $2",
        )
        .bind(run_id.to_owned())
        .bind(now_ms)
        .fetch_optional(&mut *lease)
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
        let live_here = live_on == host;
        let held = holder.is_some() && held_until > now_ms;
        let Some(new_epoch) = epoch_after_claim(as_u64(epoch), held, live_here).map(as_i64) else {
            return Ok(Claim::Busy);
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
        .execute(&mut *lease)
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
        let mut lease = self.lease().await?;
        let released = sqlx::query(
            "UPDATE codemode_runs SET holder = NULL, expires_at_ms = $3 \
             WHERE run_id = $1 AND epoch = $2",
        )
        .bind(run_id.to_owned())
        .bind(as_i64(epoch))
        .bind(expires_at_ms)
        .execute(&mut *lease)
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
            None => {
                self.delete_where("run_id = $1", &[Bind::Text(run_id)])
                    .await?
            }
            // Only the current holder's epoch deletes (a row of another epoch is left alone).
            Some(epoch) => {
                self.delete_where(
                    "run_id = $1 AND epoch = $2",
                    &[Bind::Text(run_id), Bind::Number(as_i64(epoch))],
                )
                .await?
            }
        };
        Ok(())
    }

    async fn delete_session(&self, session: &str) -> Result<u64, JournalError> {
        self.delete_where(
            "session_id = $1 OR session_key = $1",
            &[Bind::Text(session)],
        )
        .await
    }

    async fn delete_agent_run(&self, agent_run_id: &str) -> Result<u64, JournalError> {
        self.delete_where("agent_run_id = $1", &[Bind::Text(agent_run_id)])
            .await
    }

    async fn delete_expired(&self, now_ms: i64) -> Result<u64, JournalError> {
        self.delete_where("expires_at_ms <= $1", &[Bind::Number(now_ms)])
            .await
    }

    async fn count(&self, now_ms: i64) -> Result<u64, JournalError> {
        let mut lease = self.lease().await?;
        let count: i64 = sqlx::query("SELECT COUNT(*) FROM codemode_runs WHERE expires_at_ms > $1")
            .bind(now_ms)
            .fetch_one(&mut *lease)
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
        let mut lease = self.lease().await?;
        let mut tx = lease.begin().await.map_err(|e| self.failed(e))?;
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
        let mut lease = self.lease().await?;
        sqlx::query(
            "SELECT state FROM codemode_transport_sessions \
             WHERE session_id = $1 AND expires_at_ms > $2",
        )
        .bind(session_id.to_owned())
        .bind(now_ms)
        .fetch_optional(&mut *lease)
        .await
        .map_err(|e| self.failed(e))?
        .map(|row| row.try_get::<String, _>(0))
        .transpose()
        .map_err(|_| JournalError::Corrupt(session_id.to_owned()))
    }

    async fn delete_transport_session(&self, session_id: &str) -> Result<(), JournalError> {
        let mut lease = self.lease().await?;
        sqlx::query("DELETE FROM codemode_transport_sessions WHERE session_id = $1")
            .bind(session_id.to_owned())
            .execute(&mut *lease)
            .await
            .map_err(|e| self.failed(e))?;
        Ok(())
    }
}
