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

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn stored_rows_read_back_as_written_or_not_at_all() {
        // Found by the fuzz target `journal_rows`: a stored answer's double came back one unit
        // in the last place off before serde_json's `float_roundtrip`.
        let value = serde_json::json!([-2.474782374934037e143, 9.184467440737095e19]);
        let state = ReceiptState::Ok(value);
        let payload = state.payload();
        assert_eq!(
            ReceiptState::from_stored(state.name(), payload.as_deref()),
            Some(state)
        );
        let readings = decode_readings(r#"[[0, 1, "Infinity"], [1, 2, "-0"], [2, 3, "NaN"]]"#)
            .expect("Postgres's spellings of doubles");
        assert_eq!(readings[0].value, f64::INFINITY);
        assert!(readings[1].value.is_sign_negative() && readings[2].value.is_nan());
        for damaged in ["", "[", "[[1]]", r#"[["m", 0, "c", "h", 0, "ok", "{"]]"#] {
            assert!(decode_receipts(damaged).is_none(), "{damaged}");
        }
        // A kind that is no `u32` is no reading.
        assert!(decode_readings(r#"[[-1, 0, "1"]]"#).is_none());
        assert!(decode_readings(r#"[[0, 0, "one"]]"#).is_none());
        assert_eq!(
            decode_events(r#"[[0, "timer", null, -5]]"#),
            Some(vec![(0, Event::Timer(0))])
        );
        assert_eq!(decode_events(r#"[[0, "settled", null, 1]]"#), None);
    }
}
