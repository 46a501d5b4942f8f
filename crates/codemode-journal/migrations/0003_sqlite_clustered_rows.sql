-- SQLite only (Postgres keeps its tables): receipts, events and readings clustered on their keys
-- (WITHOUT ROWID), so an append writes one B-tree page per table where a rowid table and its
-- primary-key index wrote two.
CREATE TABLE codemode_receipts_clustered (
    run_id TEXT NOT NULL,
    method TEXT NOT NULL,
    ordinal BIGINT NOT NULL,
    catalog_id TEXT NOT NULL,
    input_hash TEXT NOT NULL,
    side_effecting BIGINT NOT NULL,
    state TEXT NOT NULL,
    payload TEXT,
    PRIMARY KEY (run_id, method, ordinal)
) WITHOUT ROWID;
INSERT INTO codemode_receipts_clustered
    SELECT run_id, method, ordinal, catalog_id, input_hash, side_effecting, state, payload
    FROM codemode_receipts;
DROP TABLE codemode_receipts;
ALTER TABLE codemode_receipts_clustered RENAME TO codemode_receipts;
CREATE TABLE codemode_events_clustered (
    run_id TEXT NOT NULL,
    seq BIGINT NOT NULL,
    kind TEXT NOT NULL,
    method TEXT,
    number BIGINT NOT NULL,
    PRIMARY KEY (run_id, seq)
) WITHOUT ROWID;
INSERT INTO codemode_events_clustered
    SELECT run_id, seq, kind, method, number FROM codemode_events;
DROP TABLE codemode_events;
ALTER TABLE codemode_events_clustered RENAME TO codemode_events;
CREATE TABLE codemode_readings_clustered (
    run_id TEXT NOT NULL,
    kind BIGINT NOT NULL,
    ordinal BIGINT NOT NULL,
    value DOUBLE PRECISION NOT NULL,
    PRIMARY KEY (run_id, kind, ordinal)
) WITHOUT ROWID;
INSERT INTO codemode_readings_clustered
    SELECT run_id, kind, ordinal, value FROM codemode_readings;
DROP TABLE codemode_readings;
ALTER TABLE codemode_readings_clustered RENAME TO codemode_readings;
