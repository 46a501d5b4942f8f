//! Rows nobody should have written (another program, a bad disk, a hostile operator with write
//! access to the store): loading them gives a clear error naming the run, never a panic.

use codemode_journal::{Batch, JournalError, Receipt, ReceiptKey, ReceiptState, Scope};
use serde_json::json;

use crate::{Backend, Kind, NOW, backends, record};

async fn with_one_receipt(backend: &Backend, run_id: &str, state: ReceiptState) {
    backend
        .store
        .create(
            &record(run_id, Scope::default(), NOW + 60_000),
            "h",
            NOW,
            NOW,
        )
        .await
        .unwrap();
    let batch = Batch {
        receipts: vec![Receipt {
            key: ReceiptKey {
                method: "tools.call".to_owned(),
                ordinal: 0,
            },
            catalog_id: "openclaw:core:read".to_owned(),
            input_hash: codemode_journal::input_hash(&json!({})),
            side_effecting: false,
            state,
        }],
        ..Batch::default()
    };
    backend.store.append(run_id, 1, &batch).await.unwrap();
}

fn is_corrupt(
    result: &Result<Option<codemode_journal::Journal>, JournalError>,
    run_id: &str,
) -> bool {
    match result {
        Err(error @ JournalError::Corrupt(run)) => {
            run == run_id
                && error.to_string() == format!("state store row of run {run_id} is corrupt")
        }
        _ => false,
    }
}

#[tokio::test]
async fn corrupt_rows_are_a_clear_error_and_never_a_panic() {
    for backend in backends("hostile").await {
        if backend.kind == Kind::Memory {
            // No rows to corrupt: the memory store holds typed values.
            backend.finish().await;
            continue;
        }
        let kind = backend.kind;
        // A result that is not JSON.
        with_one_receipt(&backend, "cm_json", ReceiptState::Ok(json!({ "a": 1 }))).await;
        backend
            .execute("UPDATE codemode_receipts SET payload = '{\"a\": 1' WHERE run_id = 'cm_json'")
            .await;
        let loaded = backend.store.load("cm_json", NOW).await;
        assert!(is_corrupt(&loaded, "cm_json"), "{kind:?}: {loaded:?}");
        // A state no version wrote.
        with_one_receipt(&backend, "cm_state", ReceiptState::Started).await;
        backend
            .execute("UPDATE codemode_receipts SET state = 'exploded' WHERE run_id = 'cm_state'")
            .await;
        let loaded = backend.store.load("cm_state", NOW).await;
        assert!(is_corrupt(&loaded, "cm_state"), "{kind:?}: {loaded:?}");
        // A settled event without its method; a reading of a negative source.
        with_one_receipt(&backend, "cm_event", ReceiptState::Started).await;
        backend
            .execute(
                "INSERT INTO codemode_events (run_id, seq, kind, method, number) \
                 VALUES ('cm_event', 0, 'settled', NULL, 0)",
            )
            .await;
        let loaded = backend.store.load("cm_event", NOW).await;
        assert!(is_corrupt(&loaded, "cm_event"), "{kind:?}: {loaded:?}");
        with_one_receipt(&backend, "cm_reading", ReceiptState::Started).await;
        backend
            .execute(
                "INSERT INTO codemode_readings (run_id, kind, ordinal, value) \
                 VALUES ('cm_reading', -1, 0, 1.5)",
            )
            .await;
        let loaded = backend.store.load("cm_reading", NOW).await;
        assert!(is_corrupt(&loaded, "cm_reading"), "{kind:?}: {loaded:?}");
        // A row with a program of the wrong type (SQLite keeps what it is given).
        if kind == Kind::Sqlite {
            with_one_receipt(&backend, "cm_type", ReceiptState::Started).await;
            backend
                .execute("UPDATE codemode_runs SET epoch = 'many' WHERE run_id = 'cm_type'")
                .await;
            let loaded = backend.store.load("cm_type", NOW).await;
            assert!(is_corrupt(&loaded, "cm_type"), "{kind:?}: {loaded:?}");
        }
        // The other runs' journals are untouched by one run's bad rows.
        with_one_receipt(&backend, "cm_fine", ReceiptState::Ok(json!(true))).await;
        assert!(
            backend.store.load("cm_fine", NOW).await.unwrap().is_some(),
            "{kind:?}"
        );
        backend.finish().await;
    }
}

#[tokio::test]
async fn an_oversized_row_loads_whole_without_a_panic() {
    for backend in backends("oversized").await {
        let kind = backend.kind;
        // 8 MiB of tool result in one receipt, 8 MiB of program in the run row.
        let big = "x".repeat(8 << 20);
        let mut run = record("cm_big", Scope::default(), NOW + 60_000);
        run.program = format!("return '{big}';");
        backend.store.create(&run, "h", NOW, NOW).await.unwrap();
        let batch = Batch {
            receipts: vec![Receipt {
                key: ReceiptKey {
                    method: "tools.call".to_owned(),
                    ordinal: u64::MAX,
                },
                catalog_id: "c".repeat(64 << 10),
                input_hash: codemode_journal::input_hash(&json!(big)),
                side_effecting: true,
                state: ReceiptState::Ok(json!({ "text": big })),
            }],
            delivered: Some(u64::MAX),
            ..Batch::default()
        };
        backend.store.append("cm_big", 1, &batch).await.unwrap();
        let journal = backend
            .store
            .load("cm_big", NOW)
            .await
            .unwrap()
            .expect("stored");
        assert_eq!(journal.record.program.len(), run.program.len(), "{kind:?}");
        assert_eq!(journal.receipts.len(), 1, "{kind:?}");
        let receipt = &journal.receipts[0];
        assert_eq!(receipt.state, batch.receipts[0].state, "{kind:?}");
        assert_eq!(receipt.catalog_id.len(), 64 << 10, "{kind:?}");
        // u64 values past i64 are clamped to i64::MAX by the SQL stores, not wrapped negative.
        let clamped = if kind == Kind::Memory {
            u64::MAX
        } else {
            i64::MAX as u64
        };
        assert_eq!(receipt.key.ordinal, clamped, "{kind:?}");
        assert_eq!(journal.delivered, clamped, "{kind:?}");
        backend.finish().await;
    }
}

/// Another process holding the SQLite file's write lock: an append neither fails at once nor
/// blocks the async task; it waits on a blocking thread and commits once the lock is gone, and a
/// file that is not a database is a clear error on open.
#[tokio::test]
async fn a_locked_sqlite_file_delays_a_write_and_a_foreign_file_is_refused() {
    for backend in backends("locked").await {
        if backend.kind != Kind::Sqlite {
            backend.finish().await;
            continue;
        }
        with_one_receipt(&backend, "cm_locked", ReceiptState::Started).await;
        let address = backend.address.clone().expect("a file");
        let path = address.strip_prefix("sqlite:").expect("a path").to_owned();
        let locker = rusqlite::Connection::open(&path).expect("a raw connection");
        locker
            .execute_batch("BEGIN IMMEDIATE")
            .expect("the write lock");
        let settled = Batch {
            receipts: vec![Receipt {
                key: ReceiptKey {
                    method: "tools.call".to_owned(),
                    ordinal: 0,
                },
                catalog_id: "openclaw:core:read".to_owned(),
                input_hash: codemode_journal::input_hash(&json!({})),
                side_effecting: false,
                state: ReceiptState::Ok(json!(1)),
            }],
            ..Batch::default()
        };
        let store = std::sync::Arc::clone(&backend.store);
        let append = tokio::spawn(async move { store.append("cm_locked", 1, &settled).await });
        // The runtime goes on while the write waits.
        tokio::time::sleep(std::time::Duration::from_millis(200)).await;
        assert!(!append.is_finished());
        locker.execute_batch("COMMIT").expect("the lock goes");
        drop(locker);
        append.await.expect("no panic").expect("the append commits");
        let journal = backend.store.load("cm_locked", NOW).await.unwrap().unwrap();
        assert_eq!(journal.receipts[0].state, ReceiptState::Ok(json!(1)));

        let foreign = format!("{path}.foreign");
        std::fs::write(&foreign, vec![0x5a_u8; 8192]).expect("a foreign file");
        let opened = codemode_journal::open(&format!("sqlite:{foreign}")).await;
        assert!(
            matches!(opened, Err(JournalError::Store { .. })),
            "{opened:?}"
        );
        backend.finish().await;
    }
}
