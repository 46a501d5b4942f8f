//! Integration tests of the journal stores, each run against every store this machine has: the
//! memory store, a SQLite file in a temporary folder, and Postgres when
//! `CODEMODE_TEST_POSTGRES_URL` names one (`cargo xtask ci` and `cargo xtask test` start one;
//! each test gets a database of its own there, so tests running at once never see each other's
//! runs).

mod fencing;
mod hostile;
mod lifetime;
mod receipts;
mod redaction;
mod sessions;
mod upgrade;

use std::sync::Arc;

use codemode_journal::{JournalStore, RunRecord, Scope};
use sqlx::Connection;

/// The variable naming a Postgres server for the tests.
const POSTGRES_URL_VAR: &str = "CODEMODE_TEST_POSTGRES_URL";

/// A point in time well inside every test run's life.
const NOW: i64 = 1_000_000;

/// Which store a [`Backend`] is.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Kind {
    Memory,
    Sqlite,
    Postgres,
}

/// One store under test, and what to throw away after it.
struct Backend {
    kind: Kind,
    store: Arc<dyn JournalStore>,
    /// The address it was opened at (`sqlite:PATH`, a Postgres URL), for raw SQL on its rows.
    address: Option<String>,
    cleanup: Cleanup,
}

enum Cleanup {
    Nothing,
    Folder(std::path::PathBuf),
    /// The server's admin URL and the test's database.
    Database(String, String),
}

fn unique(name: &str) -> String {
    format!(
        "{name}_{}_{}",
        std::process::id(),
        std::time::SystemTime::now()
            .duration_since(std::time::UNIX_EPOCH)
            .map_or(0, |d| d.as_nanos())
    )
}

/// `url` with its database path replaced by `database`.
fn with_database(url: &str, database: &str) -> String {
    let (scheme, rest) = url.split_once("://").expect("a URL");
    let authority_end = rest.find(['/', '?']).unwrap_or(rest.len());
    let query = rest[authority_end..]
        .find('?')
        .map_or("", |at| &rest[authority_end + at..]);
    format!("{scheme}://{}/{database}{query}", &rest[..authority_end])
}

/// Every store this machine has, fresh and empty, for the test `name`.
async fn backends(name: &str) -> Vec<Backend> {
    let mut backends = vec![Backend {
        kind: Kind::Memory,
        store: codemode_journal::open("memory").await.expect("memory"),
        address: None,
        cleanup: Cleanup::Nothing,
    }];
    let folder = std::env::temp_dir().join(unique(&format!("codemode-journal-{name}")));
    std::fs::create_dir_all(&folder).expect("a temp folder");
    let address = format!("sqlite:{}", folder.join("state.db").display());
    backends.push(Backend {
        kind: Kind::Sqlite,
        store: codemode_journal::open(&address).await.expect("sqlite"),
        address: Some(address),
        cleanup: Cleanup::Folder(folder),
    });
    match std::env::var(POSTGRES_URL_VAR) {
        Ok(admin) => {
            let database = unique(&format!("cm_{name}")).to_lowercase();
            let mut connection = sqlx::PgConnection::connect(&admin)
                .await
                .expect("the test Postgres answers");
            sqlx::raw_sql(&format!("CREATE DATABASE \"{database}\""))
                .execute(&mut connection)
                .await
                .expect("CREATE DATABASE");
            let _ = connection.close().await;
            let address = with_database(&admin, &database);
            backends.push(Backend {
                kind: Kind::Postgres,
                store: codemode_journal::open(&address).await.expect("postgres"),
                address: Some(address),
                cleanup: Cleanup::Database(admin, database),
            });
        }
        Err(_) => {
            #[allow(clippy::print_stderr, reason = "a skipped store says why")]
            {
                eprintln!("{name}: Postgres skipped: {POSTGRES_URL_VAR} is not set");
            }
        }
    }
    backends
}

impl Backend {
    /// Runs raw SQL against the store's own rows (SQL stores only).
    async fn execute(&self, statement: &str) {
        let address = self.address.as_deref().expect("a SQL store");
        if let Some(path) = address.strip_prefix("sqlite:") {
            let connection = rusqlite::Connection::open(path).expect("a raw connection");
            connection.execute_batch(statement).expect("raw SQL");
            return;
        }
        let mut connection = sqlx::PgConnection::connect(address)
            .await
            .expect("a raw connection");
        sqlx::raw_sql(statement)
            .execute(&mut connection)
            .await
            .expect("raw SQL");
        let _ = connection.close().await;
    }

    async fn finish(self) {
        drop(self.store);
        match self.cleanup {
            Cleanup::Nothing => {}
            Cleanup::Folder(folder) => {
                let _ = std::fs::remove_dir_all(folder);
            }
            Cleanup::Database(admin, database) => {
                if let Ok(mut connection) = sqlx::PgConnection::connect(&admin).await {
                    let _ = sqlx::raw_sql(&format!(
                        "DROP DATABASE IF EXISTS \"{database}\" WITH (FORCE)"
                    ))
                    .execute(&mut connection)
                    .await;
                    let _ = connection.close().await;
                }
            }
        }
    }
}

/// A run record expiring at `expires_at_ms`.
fn record(run_id: &str, scope: Scope, expires_at_ms: i64) -> RunRecord {
    RunRecord {
        run_id: run_id.to_owned(),
        scope,
        program: "const a = await tools.append({ line: 'x' }); return a;".to_owned(),
        parent_call_id: "call_1".to_owned(),
        restart_safe: true,
        ttl_ms: 60_000,
        expires_at_ms,
        trace_context: None,
        started_at_ms: Some(1_764_000_000_000),
    }
}

fn scope(agent_run: &str, session: &str, key: &str) -> Scope {
    Scope {
        agent_run_id: Some(agent_run.to_owned()),
        session_id: Some(session.to_owned()),
        session_key: Some(key.to_owned()),
    }
}
