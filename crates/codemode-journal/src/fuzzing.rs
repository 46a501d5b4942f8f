//! Entry points for the fuzz targets (`fuzz/`, `cargo xtask fuzz`); not part of the API.
//!
//! Hidden from the docs, with no stability promise: it hands the fuzz crate the decoders of the
//! rows the Postgres store aggregates as JSON (compiled whatever the features, so that the fuzz
//! crate needs no database). The other decoders of stored rows are public already
//! ([`ReceiptState::from_stored`](crate::ReceiptState::from_stored),
//! [`Event::from_stored`](crate::Event::from_stored)).

use crate::{Event, Reading, Receipt};

/// A run's receipts from their aggregated JSON (method, ordinal, catalog id, input hash,
/// side-effecting, state, payload); `None` for a row no version wrote.
pub fn decode_receipts(json: &str) -> Option<Vec<Receipt>> {
    crate::stored::decode_receipts(json)
}

/// A run's events from their aggregated JSON (sequence number, kind, method, number); `None`
/// for a row no version wrote.
pub fn decode_events(json: &str) -> Option<Vec<(u64, Event)>> {
    crate::stored::decode_events(json)
}

/// A run's readings from their aggregated JSON (kind, ordinal, the value as text); `None` for a
/// row no version wrote.
pub fn decode_readings(json: &str) -> Option<Vec<Reading>> {
    crate::stored::decode_readings(json)
}
