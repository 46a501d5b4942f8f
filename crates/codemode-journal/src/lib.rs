//! Durable journals of code-mode runs, so that a run survives the loss of its live VM (a
//! restart, a deploy, another replica) without repeating a side effect.
//!
//! A journal holds a run's row (program, scope, expiry), a [`Receipt`] per nested call keyed by
//! its identity in program order ([`ReceiptKey`]: bridge method and ordinal), the order in which
//! answers, timers and resumed yields reached the guest ([`Event`]), and the nondeterministic
//! values the guest read ([`Reading`]). One trait, [`JournalStore`], with three implementations:
//! [`MemoryJournal`] (this process only), [`SqliteJournal`] over a local SQLite file (rusqlite),
//! and [`PostgresJournal`] over a Postgres database shared by several hosts (sqlx) ([`open`] picks one from a `--state` address). The schema
//! lives in `migrations/` and is applied on open.
//!
//! A journal stores tool inputs' hashes and tool RESULTS: the state store holds tool data and
//! must be protected like it. Passwords in Postgres addresses are redacted from every error and
//! `Debug` output ([`redact_address`]).
//!
//! This crate knows nothing about QuickJS, catalogs or MCP: it stores what `codemode-durable`
//! hands it. It needs a tokio runtime (for Postgres, and for the SQLite store's
//! blocking threads).
//!
//! Feature flags, both on by default (codemode-core takes this crate without them, so that a
//! host keeping runs in memory compiles no database): `sqlite` ([`SqliteJournal`], SQLite compiled in) and `postgres`
//! ([`PostgresJournal`], sqlx). [`open`] refuses an address whose store is not compiled in, and
//! says which feature it needs.
#![forbid(unsafe_code)]

mod error;
#[doc(hidden)]
pub mod fuzzing;
mod memory;
#[cfg(feature = "postgres")]
mod postgres;
mod record;
#[cfg(any(feature = "sqlite", feature = "postgres"))]
mod schema;
#[cfg(feature = "sqlite")]
mod sqlite;
#[cfg(feature = "sqlite")]
mod sqlite_jobs;
mod store;
mod stored;

pub use error::{JournalError, redact_address};
pub use memory::MemoryJournal;
#[cfg(feature = "postgres")]
pub use postgres::PostgresJournal;
pub use record::{
    Batch, Claim, Event, Journal, MAX_PAYLOAD_DEPTH, Reading, Receipt, ReceiptKey, ReceiptState,
    RunRecord, Scope, input_hash,
};
#[cfg(feature = "sqlite")]
pub use sqlite::SqliteJournal;
pub use store::{JournalStore, MAX_JOURNALED_RUNS, open};
