//! Receipts, events and readings written and read back; receipts' states moving on.

use codemode_journal::{
    Batch, Event, Reading, Receipt, ReceiptKey, ReceiptState, Scope, input_hash,
};
use serde_json::json;

use crate::{NOW, backends, record};

fn key(method: &str, ordinal: u64) -> ReceiptKey {
    ReceiptKey {
        method: method.to_owned(),
        ordinal,
    }
}

fn receipt(method: &str, ordinal: u64, state: ReceiptState) -> Receipt {
    Receipt {
        key: key(method, ordinal),
        catalog_id: format!("openclaw:core:tool{ordinal}"),
        input_hash: input_hash(&json!({ "n": ordinal })),
        side_effecting: ordinal.is_multiple_of(2),
        state,
    }
}

#[tokio::test]
async fn receipts_events_and_readings_round_trip() {
    for backend in backends("round_trip").await {
        let store = &backend.store;
        let run = record("cm_round", Scope::default(), NOW + 60_000);
        store
            .create(&run, "host-a", NOW, NOW + 5_000)
            .await
            .unwrap();
        let receipts = vec![
            receipt(
                "mcp.call",
                0,
                ReceiptState::Ok(json!({ "nested": [1, "two", null, { "ü": 3.5 }] })),
            ),
            receipt("tools.call", 0, ReceiptState::Started),
            receipt(
                "tools.call",
                1,
                ReceiptState::Error("boom: ünïcode ✓".to_owned()),
            ),
            receipt("tools.call", 2, ReceiptState::Unknown),
        ];
        let events = vec![
            (0, Event::Settled(key("tools.call", 1))),
            (1, Event::Timer(7)),
            (2, Event::YieldResumed),
            (3, Event::Settled(key("mcp.call", 0))),
        ];
        let readings = vec![
            Reading {
                kind: 0,
                ordinal: 0,
                value: 1_764_000_000_123.0,
            },
            Reading {
                kind: 1,
                ordinal: 0,
                value: 0.123_456_789_012_345_6,
            },
            Reading {
                kind: 1,
                ordinal: 1,
                value: -0.5,
            },
        ];
        // Two batches: the second adds to the first and moves `delivered` and `bytes` on.
        let first = Batch {
            receipts: receipts[..2].to_vec(),
            events: events[..2].to_vec(),
            readings: readings[..1].to_vec(),
            delivered: Some(1),
            bytes: Some(100),
        };
        let second = Batch {
            receipts: receipts[2..].to_vec(),
            events: events[2..].to_vec(),
            readings: readings[1..].to_vec(),
            delivered: Some(3),
            bytes: None,
        };
        store.append("cm_round", 1, &first).await.unwrap();
        store.append("cm_round", 1, &second).await.unwrap();
        let journal = store
            .load("cm_round", NOW)
            .await
            .unwrap()
            .expect("the journal");
        assert_eq!(journal.record, run, "{:?}", backend.kind);
        assert_eq!(journal.epoch, 1);
        assert_eq!(
            journal.receipts, receipts,
            "{:?}: in key order",
            backend.kind
        );
        assert_eq!(journal.events, events, "{:?}", backend.kind);
        assert_eq!(journal.readings, readings, "{:?}", backend.kind);
        assert_eq!(
            (journal.delivered, journal.bytes),
            (3, 100),
            "{:?}",
            backend.kind
        );
        backend.finish().await;
    }
}

#[tokio::test]
async fn a_started_receipt_settles_in_place_and_unknown_is_kept() {
    for backend in backends("settle").await {
        let store = &backend.store;
        let run = record("cm_settle", Scope::default(), NOW + 60_000);
        store
            .create(&run, "host-a", NOW, NOW + 5_000)
            .await
            .unwrap();
        let started = Batch {
            receipts: vec![
                receipt("tools.call", 0, ReceiptState::Started),
                receipt("tools.call", 1, ReceiptState::Started),
            ],
            ..Batch::default()
        };
        store.append("cm_settle", 1, &started).await.unwrap();
        // The first call answers; the second is found `started` by a replay: unknown.
        let settled = Batch {
            receipts: vec![
                receipt("tools.call", 0, ReceiptState::Ok(json!("done"))),
                receipt("tools.call", 1, ReceiptState::Unknown),
            ],
            events: vec![(0, Event::Settled(key("tools.call", 0)))],
            ..Batch::default()
        };
        store.append("cm_settle", 1, &settled).await.unwrap();
        let journal = store
            .load("cm_settle", NOW)
            .await
            .unwrap()
            .expect("the journal");
        let states: Vec<_> = journal.receipts.iter().map(|r| r.state.clone()).collect();
        assert_eq!(
            states,
            [ReceiptState::Ok(json!("done")), ReceiptState::Unknown],
            "{:?}: one receipt per key, in its latest state",
            backend.kind
        );
        backend.finish().await;
    }
}

#[tokio::test]
async fn one_batch_writes_a_key_twice_and_more_rows_than_one_statement_binds() {
    for backend in backends("big_batch").await {
        let store = &backend.store;
        let run = record("cm_big", Scope::default(), NOW + 60_000);
        store
            .create(&run, "host-a", NOW, NOW + 5_000)
            .await
            .unwrap();
        // A failed write kept for the next one: a receipt started and settled in one batch.
        let mut batch = Batch {
            receipts: vec![receipt("tools.call", 0, ReceiptState::Started)],
            events: vec![(1, Event::Timer(7))],
            ..Batch::default()
        };
        batch.merge(Batch {
            receipts: vec![receipt("tools.call", 0, ReceiptState::Ok(json!(0)))],
            events: vec![(1, Event::Settled(key("tools.call", 0)))],
            ..Batch::default()
        });
        // 12,000 readings and 3,000 receipts: more parameters than one SQL statement takes.
        // Values with all 17 digits of a double, as `Math.random()` gives.
        let readings: Vec<Reading> = (0..12_000)
            .map(|ordinal| Reading {
                kind: 1,
                ordinal,
                value: (ordinal as f64 + 0.1) / 3.0,
            })
            .collect();
        let receipts: Vec<Receipt> = (1..=3_000)
            .map(|ordinal| receipt("mcp.call", ordinal, ReceiptState::Ok(json!(ordinal))))
            .collect();
        batch.merge(Batch {
            receipts: receipts.clone(),
            readings: readings.clone(),
            bytes: Some(99),
            ..Batch::default()
        });
        store.append("cm_big", 1, &batch).await.unwrap();
        let journal = store
            .load("cm_big", NOW)
            .await
            .unwrap()
            .expect("the journal");
        let mut expected = receipts;
        expected.sort_by(|a, b| a.key.cmp(&b.key));
        expected.push(receipt("tools.call", 0, ReceiptState::Ok(json!(0))));
        assert_eq!(journal.receipts, expected, "{:?}", backend.kind);
        assert_eq!(
            journal.events,
            [(1, Event::Settled(key("tools.call", 0)))],
            "{:?}: the later write of a sequence number wins",
            backend.kind
        );
        assert_eq!(journal.readings, readings, "{:?}", backend.kind);
        assert_eq!(journal.bytes, 99, "{:?}", backend.kind);
        backend.finish().await;
    }
}
