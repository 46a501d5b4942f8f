-- Transport sessions (an HTTP client's session id and what re-creating it needs), kept beside
-- the journals of their runs so a client returning to a restarted server goes on.
CREATE TABLE IF NOT EXISTS codemode_transport_sessions (
    session_id TEXT PRIMARY KEY,
    state TEXT NOT NULL,
    expires_at_ms BIGINT NOT NULL
);
