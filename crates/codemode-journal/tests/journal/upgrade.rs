//! A SQLite file written by an earlier version of the schema opens, migrates and keeps its rows.

use codemode_journal::{Batch, Event, Reading, ReceiptKey, ReceiptState};

use crate::{NOW, unique};

/// The schema as version 2 left it, with one run holding a receipt, an event and a reading.
const VERSION_2: &[&str] = &[
    include_str!("../../migrations/0001_journal.sql"),
    include_str!("../../migrations/0002_transport_sessions.sql"),
    "CREATE TABLE codemode_schema (version BIGINT NOT NULL);
     INSERT INTO codemode_schema (version) VALUES (1), (2);
     INSERT INTO codemode_runs VALUES ('cm_old', NULL, NULL, NULL, 'return 1', 'call_1', 0,
         60000, 9000000, 1, NULL, 0, 'host-a', 0, 7);
     INSERT INTO codemode_receipts VALUES ('cm_old', 'tools.call', 0, 'openclaw:core:write',
         'hash', 1, 'ok', '{\"written\":true}');
     INSERT INTO codemode_events VALUES ('cm_old', 1, 'settled', 'tools.call', 0);
     INSERT INTO codemode_readings VALUES ('cm_old', 1, 0, 0.25);",
];

#[tokio::test]
async fn a_version_2_sqlite_file_keeps_its_journals_through_the_migration() {
    let folder = std::env::temp_dir().join(unique("codemode-journal-upgrade"));
    std::fs::create_dir_all(&folder).expect("a temp folder");
    let path = folder.join("state.db");
    let connection = rusqlite::Connection::open(&path).expect("a raw connection");
    for statement in VERSION_2 {
        connection.execute_batch(statement).expect("the old schema");
    }
    drop(connection);
    let store = codemode_journal::open(&format!("sqlite:{}", path.display()))
        .await
        .expect("the old file opens");
    let journal = store
        .load("cm_old", NOW)
        .await
        .unwrap()
        .expect("the old journal");
    let key = ReceiptKey {
        method: "tools.call".to_owned(),
        ordinal: 0,
    };
    assert_eq!(journal.receipts.len(), 1);
    assert_eq!(
        journal.receipts[0].state,
        ReceiptState::Ok(serde_json::json!({ "written": true }))
    );
    assert_eq!(journal.events, [(1, Event::Settled(key))]);
    assert_eq!(
        journal.readings,
        [Reading {
            kind: 1,
            ordinal: 0,
            value: 0.25
        }]
    );
    assert_eq!(journal.bytes, 7);
    // Migration 4 added the trace context: the old row has none.
    assert_eq!(journal.record.trace_context, None);
    // Migration 5 added the run's start: the old row has none (its life counts from a replay).
    assert_eq!(journal.record.started_at_ms, None);
    // And it is written to as before.
    let more = Batch {
        readings: vec![Reading {
            kind: 1,
            ordinal: 1,
            value: 0.5,
        }],
        ..Batch::default()
    };
    store.append("cm_old", 1, &more).await.unwrap();
    let journal = store
        .load("cm_old", NOW)
        .await
        .unwrap()
        .expect("the journal");
    assert_eq!(journal.readings.len(), 2);
    drop(store);
    let _ = std::fs::remove_dir_all(folder);
}

/// A run's start (migration 5) is kept by every store, and a row whose column holds something
/// other than a number reads as no start, never as a failure.
#[tokio::test]
async fn the_run_start_round_trips_and_a_damaged_one_reads_as_none() {
    for backend in crate::backends("started_at").await {
        let store = &backend.store;
        let run = crate::record(
            "cm_started",
            codemode_journal::Scope::default(),
            NOW + 60_000,
        );
        store
            .create(&run, "host-a", NOW, NOW + 5_000)
            .await
            .unwrap();
        let loaded = store
            .load("cm_started", NOW)
            .await
            .unwrap()
            .expect("the journal");
        assert_eq!(
            loaded.record.started_at_ms, run.started_at_ms,
            "{:?}",
            backend.kind
        );
        if backend.kind == crate::Kind::Sqlite {
            // SQLite keeps a value of any type in the column.
            backend
                .execute(
                    "UPDATE codemode_runs SET started_at_ms = 'soon' WHERE run_id = 'cm_started'",
                )
                .await;
            let loaded = store
                .load("cm_started", NOW)
                .await
                .unwrap()
                .expect("the journal");
            assert_eq!(loaded.record.started_at_ms, None);
        }
        backend.finish().await;
    }
}

/// A run's trace context (migration 4) is kept by every store, and a row whose column holds
/// something other than text reads as no trace context, never as a failure.
#[tokio::test]
async fn the_trace_context_round_trips_and_a_damaged_one_reads_as_none() {
    let traceparent = "00-0af7651916cd43dd8448eb211c80319c-b7ad6b7169203331-01";
    for backend in crate::backends("trace_context").await {
        let store = &backend.store;
        let mut run = crate::record(
            "cm_traced",
            codemode_journal::Scope::default(),
            NOW + 60_000,
        );
        run.trace_context = Some(traceparent.to_owned());
        store
            .create(&run, "host-a", NOW, NOW + 5_000)
            .await
            .unwrap();
        let untraced = crate::record(
            "cm_untraced",
            codemode_journal::Scope::default(),
            NOW + 60_000,
        );
        store
            .create(&untraced, "host-a", NOW, NOW + 5_000)
            .await
            .unwrap();
        let loaded = store
            .load("cm_traced", NOW)
            .await
            .unwrap()
            .expect("the journal");
        assert_eq!(
            loaded.record.trace_context.as_deref(),
            Some(traceparent),
            "{:?}",
            backend.kind
        );
        let loaded = store
            .load("cm_untraced", NOW)
            .await
            .unwrap()
            .expect("the journal");
        assert_eq!(loaded.record.trace_context, None, "{:?}", backend.kind);
        if backend.kind != crate::Kind::Memory {
            // Garbage text is the reader's to refuse (core starts a new trace); a value of
            // another type (SQLite keeps what it is given) is no trace context at all.
            let damage = match backend.kind {
                crate::Kind::Sqlite => {
                    "UPDATE codemode_runs SET trace_context = x'00ff' WHERE run_id = 'cm_traced'"
                }
                _ => {
                    "UPDATE codemode_runs SET trace_context = 'not-a-traceparent' WHERE run_id = 'cm_traced'"
                }
            };
            backend.execute(damage).await;
            let loaded = store
                .load("cm_traced", NOW)
                .await
                .unwrap()
                .expect("the journal");
            assert_ne!(
                loaded.record.trace_context.as_deref(),
                Some(traceparent),
                "{:?}",
                backend.kind
            );
        }
        backend.finish().await;
    }
}
