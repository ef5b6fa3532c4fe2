-- The transactional outbox: side effects of job changes, written in the change's transaction.
CREATE TABLE outbox (
    seq          INTEGER PRIMARY KEY AUTOINCREMENT,
    key          TEXT NOT NULL UNIQUE,
    topic        TEXT NOT NULL,
    payload      BLOB NOT NULL,
    attempts     INTEGER NOT NULL DEFAULT 0,
    created_at   TIMESTAMP NOT NULL,
    available_at TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX outbox_available ON outbox (available_at, seq);
