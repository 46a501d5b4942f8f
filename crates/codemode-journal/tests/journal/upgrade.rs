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
