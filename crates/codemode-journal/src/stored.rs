//! How the Postgres store reads a run's receipts, events and readings back: one JSON array of
//! each, aggregated by the query that loads the run. Anything a damaged or foreign row holds
//! decodes to `None` (the store reports the journal as corrupt), never a panic. Outside the
//! `postgres` feature only the fuzz targets use these (`fuzzing`).

use crate::record::{Event, Reading, Receipt, ReceiptKey, ReceiptState};

/// A `BIGINT` as the journal's unsigned number (a negative one is 0).
pub(crate) fn as_u64(value: i64) -> u64 {
    u64::try_from(value).unwrap_or(0)
}

/// A receipt as `load` aggregates it: method, ordinal, catalog id, input hash, side-effecting
/// (0 or 1), state, payload.
type StoredReceipt = (String, i64, String, String, i64, String, Option<String>);

/// Receipts from their aggregated JSON; `None` for a row no version wrote.
pub(crate) fn decode_receipts(json: &str) -> Option<Vec<Receipt>> {
    let stored: Vec<StoredReceipt> = serde_json::from_str(json).ok()?;
    stored
        .into_iter()
        .map(
            |(method, ordinal, catalog_id, input_hash, side_effecting, state, payload)| {
                Some(Receipt {
                    key: ReceiptKey {
                        method,
                        ordinal: as_u64(ordinal),
                    },
                    catalog_id,
                    input_hash,
                    side_effecting: side_effecting != 0,
                    state: ReceiptState::from_stored(&state, payload.as_deref())?,
                })
            },
        )
        .collect()
}

/// Events (sequence number, kind, method, number) from their aggregated JSON.
pub(crate) fn decode_events(json: &str) -> Option<Vec<(u64, Event)>> {
    let stored: Vec<(i64, String, Option<String>, i64)> = serde_json::from_str(json).ok()?;
    stored
        .into_iter()
        .map(|(seq, kind, method, number)| {
            let event = Event::from_stored(&kind, method.as_deref(), as_u64(number))?;
            Some((as_u64(seq), event))
        })
        .collect()
}

/// Readings (kind, ordinal, value as text) from their aggregated JSON.
pub(crate) fn decode_readings(json: &str) -> Option<Vec<Reading>> {
    let stored: Vec<(i64, i64, String)> = serde_json::from_str(json).ok()?;
    stored
        .into_iter()
        .map(|(kind, ordinal, value)| {
            Some(Reading {
                kind: u32::try_from(kind).ok()?,
                ordinal: as_u64(ordinal),
                value: value.parse().ok()?,
            })
        })
        .collect()
}
