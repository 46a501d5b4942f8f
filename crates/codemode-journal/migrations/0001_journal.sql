-- The journal of code-mode runs. One schema for SQLite and Postgres: only types and statements
-- both accept (TEXT, BIGINT, DOUBLE PRECISION; ON CONFLICT ... DO UPDATE; RETURNING).
CREATE TABLE IF NOT EXISTS codemode_runs (
    run_id TEXT PRIMARY KEY,
    agent_run_id TEXT,
    session_id TEXT,
    session_key TEXT,
    program TEXT NOT NULL,
    parent_call_id TEXT NOT NULL,
    restart_safe BIGINT NOT NULL,
    ttl_ms BIGINT NOT NULL,
    expires_at_ms BIGINT NOT NULL,
    epoch BIGINT NOT NULL,
    holder TEXT,
    held_until_ms BIGINT NOT NULL,
    live_on TEXT NOT NULL,
    delivered BIGINT NOT NULL,
    bytes BIGINT NOT NULL
);
CREATE INDEX IF NOT EXISTS codemode_runs_expiry ON codemode_runs (expires_at_ms);
CREATE TABLE IF NOT EXISTS codemode_receipts (
    run_id TEXT NOT NULL,
    method TEXT NOT NULL,
    ordinal BIGINT NOT NULL,
    catalog_id TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    side_effecting BIGINT NOT NULL,
    state TEXT NOT NULL,
    payload TEXT,
    PRIMARY KEY (run_id, method, ordinal)
);
CREATE TABLE IF NOT EXISTS codemode_events (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    method TEXT,
    number BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
);
CREATE TABLE IF NOT EXISTS codemode_readings (
    run_id TEXT NOT NULL,
    kind BIGINT NOT NULL,
    ordinal BIGINT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, kind, ordinal)
);
