//! The statements of the SQLite store: each store call is one job on the connection, run by
//! [`crate::sqlite`] in the calling task or on a blocking thread.

use rusqlite::{Connection, OptionalExtension, Transaction, TransactionBehavior, params};

use crate::schema::{RUN_TABLES, as_i64, as_u64};
use crate::{
    Batch, Event, Journal, MAX_JOURNALED_RUNS, Reading, Receipt, ReceiptKey, ReceiptState,
    RunRecord, Scope,
};

/// Why a job failed: SQLite's error, a row no version of the store wrote, or a panic; or why
/// it stopped: it is too long for the calling thread (it wrote nothing).
pub(crate) enum Failure {
    Sql(rusqlite::Error),
    Corrupt,
    Panicked,
    Later,
}

impl From<rusqlite::Error> for Failure {
    fn from(error: rusqlite::Error) -> Self {
        match error {
            // A value of the wrong type or range in a stored row.
            rusqlite::Error::FromSqlConversionFailure(..)
            | rusqlite::Error::IntegralValueOutOfRange(..)
            | rusqlite::Error::InvalidColumnType(..) => Failure::Corrupt,
            error => Failure::Sql(error),
        }
    }
}

/// What a job answers.
pub(crate) type Done<T> = Result<T, Failure>;

/// A write transaction (it takes the file's write lock at once).
pub(crate) fn immediate(connection: &mut Connection) -> rusqlite::Result<Transaction<'_>> {
    connection.transaction_with_behavior(TransactionBehavior::Immediate)
}

/// What [`append`] writes.
pub(crate) struct Append {
    pub(crate) run_id: String,
    pub(crate) epoch: u64,
    pub(crate) batch: Batch,
}

/// Appends a batch fenced by the run's epoch: `false` when the run is not at that epoch (or
/// gone), and nothing is written. Rows are written in order, so the last of each key wins.
pub(crate) fn append(connection: &mut Connection, input: &AppendRef<'_>) -> Done<bool> {
    let AppendRef {
        run_id,
        epoch,
        batch,
    } = *input;
    let tx = immediate(connection)?;
    let held = tx
        .prepare_cached(
            "UPDATE codemode_runs SET delivered = COALESCE(?3, delivered), \
             bytes = COALESCE(?4, bytes) WHERE run_id = ?1 AND epoch = ?2",
        )?
        .execute(params![
            run_id,
            as_i64(epoch),
            batch.delivered.map(as_i64),
            batch.bytes.map(as_i64)
        ])?;
    if held == 0 {
        return Ok(false);
    }
    if !batch.receipts.is_empty() {
        let mut insert = tx.prepare_cached(
            "INSERT INTO codemode_receipts (run_id, method, ordinal, catalog_id, input_hash, \
             side_effecting, state, payload) VALUES (?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8) \
             ON CONFLICT (run_id, method, ordinal) DO UPDATE SET \
             catalog_id = excluded.catalog_id, input_hash = excluded.input_hash, \
             side_effecting = excluded.side_effecting, state = excluded.state, \
             payload = excluded.payload",
        )?;
        for receipt in &batch.receipts {
            insert.execute(params![
                run_id,
                receipt.key.method,
                as_i64(receipt.key.ordinal),
                receipt.catalog_id,
                receipt.input_hash,
                i64::from(receipt.side_effecting),
                receipt.state.name(),
                receipt.state.payload(),
            ])?;
        }
    }
    if !batch.events.is_empty() {
        let mut insert = tx.prepare_cached(
            "INSERT INTO codemode_events (run_id, seq, kind, method, number) \
             VALUES (?1, ?2, ?3, ?4, ?5) ON CONFLICT (run_id, seq) DO UPDATE SET \
             kind = excluded.kind, method = excluded.method, number = excluded.number",
        )?;
        for (seq, event) in &batch.events {
            let (kind, method, number) = event.to_stored();
            insert.execute(params![run_id, as_i64(*seq), kind, method, as_i64(number)])?;
        }
    }
    if !batch.readings.is_empty() {
        let mut insert = tx.prepare_cached(
            "INSERT INTO codemode_readings (run_id, kind, ordinal, value) \
             VALUES (?1, ?2, ?3, ?4) ON CONFLICT (run_id, kind, ordinal) DO UPDATE SET \
             value = excluded.value",
        )?;
        for reading in &batch.readings {
            insert.execute(params![
                run_id,
                i64::from(reading.kind),
                as_i64(reading.ordinal),
                reading.value
            ])?;
        }
    }
    tx.commit()?;
    Ok(true)
}

/// [`Append`] borrowed: what the calling thread's try writes without copying the batch.
#[derive(Clone, Copy)]
pub(crate) struct AppendRef<'a> {
    pub(crate) run_id: &'a str,
    pub(crate) epoch: u64,
    pub(crate) batch: &'a Batch,
}

/// Gives a run back fenced by its epoch: `false` when the run is not at that epoch.
pub(crate) fn release(
    connection: &mut Connection,
    input: &(String, u64, i64),
    _now: bool,
) -> Done<bool> {
    let (run_id, epoch, expires_at_ms) = input;
    let released = connection
        .prepare_cached(
            "UPDATE codemode_runs SET holder = NULL, expires_at_ms = ?3 \
             WHERE run_id = ?1 AND epoch = ?2",
        )?
        .execute(params![run_id, as_i64(*epoch), expires_at_ms])?;
    Ok(released > 0)
}

/// What [`create`] writes: the run, its host, now and the end of its hold.
pub(crate) type Create = (RunRecord, String, i64, i64);

/// Writes a new run's row (after deleting the expired journals: then on a blocking thread);
/// how many rows it wrote (none: too many journals).
pub(crate) fn create(connection: &mut Connection, input: &Create, now: bool) -> Done<usize> {
    let (record, host, now_ms, held_until_ms) = input;
    let expired = rusqlite::types::Value::Integer(*now_ms);
    let any_expired: bool = connection
        .prepare_cached("SELECT EXISTS (SELECT 1 FROM codemode_runs WHERE expires_at_ms <= ?1)")?
        .query_row([&expired], |row| row.get(0))?;
    if any_expired {
        if now {
            return Err(Failure::Later);
        }
        delete_where(connection, "expires_at_ms <= ?1", &[expired])?;
    }
    let scope = &record.scope;
    let inserted = connection
        .prepare_cached(
            "INSERT INTO codemode_runs (run_id, agent_run_id, session_id, session_key, program, \
             parent_call_id, restart_safe, ttl_ms, expires_at_ms, epoch, holder, held_until_ms, \
             live_on, delivered, bytes, trace_context, started_at_ms) \
             SELECT ?1, ?2, ?3, ?4, ?5, ?6, ?7, ?8, ?9, 1, ?10, ?11, ?10, 0, 0, ?14, ?15 \
             WHERE (SELECT COUNT(*) FROM codemode_runs WHERE expires_at_ms > ?12) < ?13",
        )?
        .execute(params![
            record.run_id,
            scope.agent_run_id,
            scope.session_id,
            scope.session_key,
            record.program,
            record.parent_call_id,
            i64::from(record.restart_safe),
            as_i64(record.ttl_ms),
            record.expires_at_ms,
            host,
            held_until_ms,
            now_ms,
            as_i64(MAX_JOURNALED_RUNS as u64),
            record.trace_context,
            record.started_at_ms,
        ])?;
    Ok(inserted)
}

/// Receipts a run may have for [`delete_run`] to delete it in the calling thread.
pub(crate) const SHORT_DELETE_RECEIPTS: i64 = 256;

/// Deletes one run's journal (only at `epoch` when given); a long one (more than
/// [`SHORT_DELETE_RECEIPTS`] receipts) on a blocking thread.
pub(crate) fn delete_run(
    connection: &mut Connection,
    input: &(String, Option<u64>),
    now: bool,
) -> Done<u64> {
    use rusqlite::types::Value;
    let (run_id, epoch) = input;
    let id = Value::Text(run_id.clone());
    if now {
        let receipts: i64 = connection
            .prepare_cached(
                "SELECT COUNT(*) FROM (SELECT 1 FROM codemode_receipts WHERE run_id = ?1 \
                 LIMIT ?2)",
            )?
            .query_row(params![&id, SHORT_DELETE_RECEIPTS + 1], |row| row.get(0))?;
        if receipts > SHORT_DELETE_RECEIPTS {
            return Err(Failure::Later);
        }
    }
    match epoch {
        None => delete_where(connection, "run_id = ?1", &[id]),
        // Only the current holder's epoch deletes (a row of another epoch is left alone).
        Some(epoch) => delete_where(
            connection,
            "run_id = ?1 AND epoch = ?2",
            &[id, Value::Integer(as_i64(*epoch))],
        ),
    }
}

/// Deletes the runs matching `condition` (on `codemode_runs`, with `?1`.. bound to `binds`)
/// with all their rows, in one transaction; returns how many runs.
pub(crate) fn delete_where(
    connection: &mut Connection,
    condition: &str,
    binds: &[rusqlite::types::Value],
) -> Done<u64> {
    let tx = immediate(connection)?;
    let binds = || rusqlite::params_from_iter(binds.iter());
    for table in RUN_TABLES {
        tx.prepare_cached(&format!(
            "DELETE FROM {table} WHERE run_id IN \
             (SELECT run_id FROM codemode_runs WHERE {condition})"
        ))?
        .execute(binds())?;
    }
    let deleted = tx
        .prepare_cached(&format!("DELETE FROM codemode_runs WHERE {condition}"))?
        .execute(binds())?;
    tx.commit()?;
    Ok(deleted as u64)
}

/// The whole journal of an unexpired run, read in one transaction; `Err(Corrupt)` for a row no
/// version wrote.
pub(crate) fn load(
    connection: &mut Connection,
    run_id: &str,
    now_ms: i64,
) -> Done<Option<Journal>> {
    let tx = connection.transaction()?;
    let head = tx
        .prepare_cached(
            "SELECT run_id, agent_run_id, session_id, session_key, program, parent_call_id, \
             restart_safe, ttl_ms, expires_at_ms, epoch, delivered, bytes, trace_context, \
             started_at_ms \
             FROM codemode_runs WHERE run_id = ?1 AND expires_at_ms > ?2",
        )?
        .query_row(params![run_id, now_ms], |row| {
            Ok((
                RunRecord {
                    run_id: row.get(0)?,
                    scope: Scope {
                        agent_run_id: row.get(1)?,
                        session_id: row.get(2)?,
                        session_key: row.get(3)?,
                    },
                    program: row.get(4)?,
                    parent_call_id: row.get(5)?,
                    restart_safe: row.get::<_, i64>(6)? != 0,
                    ttl_ms: as_u64(row.get(7)?),
                    expires_at_ms: row.get(8)?,
                    // Text or nothing: anything else a damaged row holds is no trace.
                    trace_context: row.get::<_, Option<String>>(12).ok().flatten(),
                    // A number or nothing: anything else a damaged row holds is no start.
                    started_at_ms: row.get::<_, Option<i64>>(13).ok().flatten(),
                },
                as_u64(row.get(9)?),
                as_u64(row.get(10)?),
                as_u64(row.get(11)?),
            ))
        })
        .optional()?;
    let Some((record, epoch, delivered, bytes)) = head else {
        return Ok(None);
    };
    let receipts = tx
        .prepare_cached(
            "SELECT method, ordinal, catalog_id, input_hash, side_effecting, state, payload \
             FROM codemode_receipts WHERE run_id = ?1 ORDER BY method, ordinal",
        )?
        .query_map([run_id], |row| {
            let state: String = row.get(5)?;
            let payload: Option<String> = row.get(6)?;
            Ok(
                ReceiptState::from_stored(&state, payload.as_deref()).map(|state| {
                    Ok::<_, rusqlite::Error>(Receipt {
                        key: ReceiptKey {
                            method: row.get(0)?,
                            ordinal: as_u64(row.get(1)?),
                        },
                        catalog_id: row.get(2)?,
                        input_hash: row.get(3)?,
                        side_effecting: row.get::<_, i64>(4)? != 0,
                        state,
                    })
                }),
            )
        })?
        .map(|receipt| receipt?.ok_or(Failure::Corrupt)?.map_err(Failure::from))
        .collect::<Done<Vec<Receipt>>>()?;
    let events = tx
        .prepare_cached(
            "SELECT seq, kind, method, number FROM codemode_events \
             WHERE run_id = ?1 ORDER BY seq",
        )?
        .query_map([run_id], |row| {
            let kind: String = row.get(1)?;
            let method: Option<String> = row.get(2)?;
            let seq = as_u64(row.get(0)?);
            let event = Event::from_stored(&kind, method.as_deref(), as_u64(row.get(3)?));
            Ok(event.map(|event| (seq, event)))
        })?
        .map(|event| event?.ok_or(Failure::Corrupt))
        .collect::<Done<Vec<(u64, Event)>>>()?;
    let readings = tx
        .prepare_cached(
            "SELECT kind, ordinal, value FROM codemode_readings \
             WHERE run_id = ?1 ORDER BY kind, ordinal",
        )?
        .query_map([run_id], |row| {
            let kind = u32::try_from(row.get::<_, i64>(0)?).ok();
            Ok(kind.map(|kind| (kind, row.get::<_, i64>(1), row.get::<_, f64>(2))))
        })?
        .map(|reading| match reading? {
            Some((kind, ordinal, value)) => Ok(Reading {
                kind,
                ordinal: as_u64(ordinal?),
                value: value?,
            }),
            None => Err(Failure::Corrupt),
        })
        .collect::<Done<Vec<Reading>>>()?;
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
