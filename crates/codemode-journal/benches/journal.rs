//! `cargo xtask bench` rows for codemode-journal: one append of a settled receipt and its event
//! (one commit) and the load of a 1,000-receipt journal (what a replay
//! reads first), in memory, in a SQLite file (WAL) and in Postgres on loopback when
//! `CODEMODE_TEST_POSTGRES_URL` names one (`cargo xtask bench` starts one).

use std::sync::Arc;

use codemode_journal::{
    Batch, Event, JournalStore, Receipt, ReceiptKey, ReceiptState, RunRecord, Scope, input_hash,
};
use serde_json::json;

fn main() {
    divan::main();
}

/// A far-off expiry: every journal lives through the benchmark.
const LATER: i64 = i64::MAX / 2;

fn stores() -> Vec<&'static str> {
    let mut stores = vec!["memory", "sqlite"];
    if std::env::var_os("CODEMODE_TEST_POSTGRES_URL").is_some() {
        stores.push("postgres");
    }
    stores
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .expect("runtime")
}

/// An empty store of `kind` (Postgres: the journals of earlier runs deleted first), and the
/// folder to delete after.
fn open(
    rt: &tokio::runtime::Runtime,
    kind: &str,
) -> (Arc<dyn JournalStore>, Option<std::path::PathBuf>) {
    let (address, folder) = match kind {
        "memory" => ("memory".to_owned(), None),
        "sqlite" => {
            let folder = std::env::temp_dir().join(format!(
                "codemode-bench-store-{}-{:?}",
                std::process::id(),
                std::time::SystemTime::now()
            ));
            std::fs::create_dir_all(&folder).expect("a temp folder");
            let address = format!("sqlite:{}", folder.join("state.db").display());
            (address, Some(folder))
        }
        _ => (
            std::env::var("CODEMODE_TEST_POSTGRES_URL").expect("a Postgres URL"),
            None,
        ),
    };
    let store = rt
        .block_on(codemode_journal::open(&address))
        .expect("opens");
    rt.block_on(store.delete_agent_run("bench"))
        .expect("cleared");
    (store, folder)
}

fn record(run_id: &str) -> RunRecord {
    RunRecord {
        run_id: run_id.to_owned(),
        scope: Scope {
            agent_run_id: Some("bench".to_owned()),
            ..Scope::default()
        },
        program: "for (let i = 0; i < 1000; i++) await tools.write({ i });".to_owned(),
        parent_call_id: "call_1".to_owned(),
        restart_safe: false,
        ttl_ms: 60_000,
        expires_at_ms: LATER,
        trace_context: None,
        started_at_ms: None,
    }
}

fn settled(ordinal: u64) -> Batch {
    let key = ReceiptKey {
        method: "tools.call".to_owned(),
        ordinal,
    };
    Batch {
        receipts: vec![Receipt {
            key: key.clone(),
            catalog_id: "openclaw:core:write".to_owned(),
            input_hash: input_hash(&json!({ "i": ordinal })),
            side_effecting: true,
            state: ReceiptState::Ok(json!({ "i": ordinal })),
        }],
        events: vec![(ordinal, Event::Settled(key))],
        bytes: Some(ordinal * 40),
        ..Batch::default()
    }
}

/// One append of a settled receipt and its event: one transaction.
#[divan::bench(sample_count = 20, args = stores())]
fn append_one_settled_receipt(bencher: divan::Bencher<'_, '_>, kind: &str) {
    let rt = runtime();
    let (store, folder) = open(&rt, kind);
    rt.block_on(store.create(&record("cm_bench_append"), "host", 0, LATER))
        .expect("created");
    let mut ordinal = 0;
    bencher.bench_local(|| {
        ordinal += 1;
        rt.block_on(store.append("cm_bench_append", 1, &settled(ordinal)))
            .expect("appended")
    });
    rt.block_on(store.delete("cm_bench_append", None))
        .expect("deleted");
    if let Some(folder) = folder {
        let _ = std::fs::remove_dir_all(folder);
    }
}

/// The load of a journal of 1,000 settled receipts and events.
#[divan::bench(sample_count = 20, args = stores())]
fn load_1000_receipts(bencher: divan::Bencher<'_, '_>, kind: &str) {
    let rt = runtime();
    let (store, folder) = open(&rt, kind);
    rt.block_on(async {
        store
            .create(&record("cm_bench_load"), "host", 0, LATER)
            .await
            .expect("created");
        let mut batch = Batch::default();
        for ordinal in 0..1000 {
            batch.merge(settled(ordinal));
        }
        store
            .append("cm_bench_load", 1, &batch)
            .await
            .expect("appended");
    });
    bencher.bench_local(|| {
        let journal = rt
            .block_on(store.load("cm_bench_load", 0))
            .expect("loaded")
            .expect("a journal");
        assert_eq!(journal.receipts.len(), 1000);
        journal
    });
    rt.block_on(store.delete("cm_bench_load", None))
        .expect("deleted");
    if let Some(folder) = folder {
        let _ = std::fs::remove_dir_all(folder);
    }
}
