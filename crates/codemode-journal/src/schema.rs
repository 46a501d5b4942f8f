//! What the SQL stores share: the schema's migrations, the tables of a run's rows, and the
//! conversions between the journal's unsigned numbers and SQL's signed `BIGINT`.

/// The schema, applied in order on open; `codemode_schema` remembers how far.
pub(crate) const MIGRATIONS: &[Migration] = &[
    Migration::Both(include_str!("../migrations/0001_journal.sql")),
    Migration::Both(include_str!("../migrations/0002_transport_sessions.sql")),
    Migration::SqliteOnly(include_str!("../migrations/0003_sqlite_clustered_rows.sql")),
    Migration::Both(include_str!("../migrations/0004_trace_context.sql")),
    Migration::Both(include_str!("../migrations/0005_run_started.sql")),
];

/// One step of the schema.
pub(crate) enum Migration {
    /// The same SQL for SQLite and Postgres.
    Both(&'static str),
    /// SQL for SQLite; Postgres only counts the step.
    SqliteOnly(&'static str),
}

impl Migration {
    /// The SQL of this step for SQLite (`sqlite`) or Postgres; `None` when the step is only
    /// counted.
    pub(crate) fn sql(&self, sqlite: bool) -> Option<&'static str> {
        match (self, sqlite) {
            (Migration::Both(sql), _) | (Migration::SqliteOnly(sql), true) => Some(sql),
            (Migration::SqliteOnly(_), false) => None,
        }
    }
}

/// The number of the migration at `index` of [`MIGRATIONS`] (1, 2, ...).
pub(crate) fn migration_number(index: usize) -> i64 {
    i64::try_from(index + 1).unwrap_or(i64::MAX)
}

/// The three tables that hold a run's rows besides its own.
pub(crate) const RUN_TABLES: [&str; 3] =
    ["codemode_receipts", "codemode_events", "codemode_readings"];

/// `value` as a `BIGINT` (saturating).
pub(crate) fn as_i64(value: u64) -> i64 {
    i64::try_from(value).unwrap_or(i64::MAX)
}

pub(crate) use crate::stored::as_u64;
