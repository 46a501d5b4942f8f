//! The journal's decoders of stored rows: a receipt's state from its name and payload, an event
//! from its columns, and the receipts, events and readings of a run as the Postgres store
//! aggregates them into JSON text. Arbitrary text must decode to a value or to `None` (a row
//! no version wrote, which the store reports as a corrupt journal), never a panic; and rows
//! written the way the stores write them must decode to what was written, for every double and
//! every answer of up to `PAYLOAD_DEPTH` levels.
#![no_main]

use arbitrary::Arbitrary;
use codemode_journal::fuzzing::{decode_events, decode_readings, decode_receipts};
use codemode_journal::{Event, MAX_PAYLOAD_DEPTH, Reading, Receipt, ReceiptKey, ReceiptState};
use codemode_sandbox::json_nests_deeper_than;
use libfuzzer_sys::fuzz_target;
use serde_json::{Value, json};

mod json;

use json::Json;

/// The deepest answer a receipt's payload reads back (the bridge lets 128 levels through).
const PAYLOAD_DEPTH: usize = MAX_PAYLOAD_DEPTH;

#[derive(Arbitrary, Debug)]
enum State {
    Started,
    Unknown,
    /// A value, wrapped in this many more arrays (at most `PAYLOAD_DEPTH` levels in all).
    Ok(Json, u8),
    Error(String),
}

#[derive(Arbitrary, Debug)]
struct StoredReceipt {
    method: String,
    ordinal: u64,
    catalog_id: String,
    input_hash: String,
    side_effecting: bool,
    state: State,
}

#[derive(Arbitrary, Debug)]
enum StoredEvent {
    Settled(String, u64),
    Timer(u64),
    Yield,
}

#[derive(Arbitrary, Debug)]
struct Case {
    receipts: Vec<StoredReceipt>,
    events: Vec<StoredEvent>,
    readings: Vec<(u32, u64, f64, bool)>,
    /// Raw columns for every decoder.
    raw: [String; 3],
}

/// A `BIGINT` as the stores write the journal's unsigned numbers (saturating).
fn bigint(number: u64) -> i64 {
    i64::try_from(number).unwrap_or(i64::MAX)
}

/// A double as Postgres's `value::text` spells it (the finite ones either way Rust prints).
fn double_text(value: f64, exponent: bool) -> String {
    if value.is_nan() {
        "NaN".into()
    } else if value.is_infinite() {
        if value > 0.0 { "Infinity" } else { "-Infinity" }.into()
    } else if exponent {
        format!("{value:e}")
    } else {
        format!("{value}")
    }
}

fn state_of(state: State) -> ReceiptState {
    match state {
        State::Started => ReceiptState::Started,
        State::Unknown => ReceiptState::Unknown,
        State::Error(message) => ReceiptState::Error(message),
        State::Ok(json, wraps) => {
            let mut value = json.into_value();
            for _ in 0..usize::from(wraps) % (PAYLOAD_DEPTH + 1) {
                if json_nests_deeper_than(&value, PAYLOAD_DEPTH - 1) {
                    break;
                }
                value = Value::Array(vec![value]);
            }
            if json_nests_deeper_than(&value, PAYLOAD_DEPTH) {
                ReceiptState::Started
            } else {
                ReceiptState::Ok(value)
            }
        }
    }
}

fuzz_target!(|case: Case| {
    // Arbitrary text: a value or `None`, never a panic.
    for raw in &case.raw {
        let _ = decode_receipts(raw);
        let _ = decode_events(raw);
        let _ = decode_readings(raw);
    }
    let [name, payload, kind] = &case.raw;
    let _ = ReceiptState::from_stored(name, Some(payload));
    let _ = ReceiptState::from_stored(name, None);
    let _ = Event::from_stored(kind, Some(payload), 7);
    let _ = Event::from_stored(kind, None, 7);

    // Receipts as written: every state reads back as itself.
    let receipts: Vec<Receipt> = case
        .receipts
        .into_iter()
        .map(|stored| Receipt {
            key: ReceiptKey {
                method: stored.method,
                ordinal: stored.ordinal.min(i64::MAX as u64),
            },
            catalog_id: stored.catalog_id,
            input_hash: stored.input_hash,
            side_effecting: stored.side_effecting,
            state: state_of(stored.state),
        })
        .collect();
    for receipt in &receipts {
        let back =
            ReceiptState::from_stored(receipt.state.name(), receipt.state.payload().as_deref());
        assert!(
            back.as_ref() == Some(&receipt.state),
            "{:?} reads back as {back:?}",
            receipt.state
        );
    }
    let rows: Vec<Value> = receipts
        .iter()
        .map(|receipt| {
            json!([
                receipt.key.method,
                bigint(receipt.key.ordinal),
                receipt.catalog_id,
                receipt.input_hash,
                i64::from(receipt.side_effecting),
                receipt.state.name(),
                receipt.state.payload(),
            ])
        })
        .collect();
    let back = decode_receipts(&Value::Array(rows).to_string());
    assert!(
        back.as_ref() == Some(&receipts),
        "receipts read back as {back:?}"
    );

    // Events as written.
    let events: Vec<(u64, Event)> = case
        .events
        .into_iter()
        .enumerate()
        .map(|(seq, event)| {
            let event = match event {
                StoredEvent::Settled(method, ordinal) => Event::Settled(ReceiptKey {
                    method,
                    ordinal: ordinal.min(i64::MAX as u64),
                }),
                StoredEvent::Timer(id) => Event::Timer(id.min(i64::MAX as u64)),
                StoredEvent::Yield => Event::YieldResumed,
            };
            (seq as u64, event)
        })
        .collect();
    let rows: Vec<Value> = events
        .iter()
        .map(|(seq, event)| {
            let (kind, method, number) = event.to_stored();
            assert!(Event::from_stored(kind, method, number).as_ref() == Some(event));
            json!([bigint(*seq), kind, method, bigint(number)])
        })
        .collect();
    let back = decode_events(&Value::Array(rows).to_string());
    assert!(
        back.as_ref() == Some(&events),
        "events read back as {back:?}"
    );

    // Readings as written, their values as text: every double, bit for bit.
    let readings: Vec<Reading> = case
        .readings
        .iter()
        .map(|&(kind, ordinal, value, _)| Reading {
            kind,
            ordinal: ordinal.min(i64::MAX as u64),
            value,
        })
        .collect();
    let rows: Vec<Value> = readings
        .iter()
        .zip(&case.readings)
        .map(|(reading, &(.., exponent))| {
            json!([
                reading.kind,
                bigint(reading.ordinal),
                double_text(reading.value, exponent)
            ])
        })
        .collect();
    let back = decode_readings(&Value::Array(rows).to_string()).expect("readings decode");
    assert_eq!(back.len(), readings.len());
    for (read, written) in back.iter().zip(&readings) {
        assert!(read.kind == written.kind && read.ordinal == written.ordinal);
        let same = read.value.to_bits() == written.value.to_bits()
            || (read.value.is_nan() && written.value.is_nan());
        assert!(same, "{} reads back as {}", written.value, read.value);
    }
});
