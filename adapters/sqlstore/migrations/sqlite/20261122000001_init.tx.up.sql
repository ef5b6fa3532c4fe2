-- Timestamps are TEXT in Bun's UTC format ('2006-01-02 15:04:05.999999+00:00'), which sorts as
-- the instants do. Text compares by bytes, as Go's strings do.
CREATE TABLE accounts (
    id         TEXT PRIMARY KEY NOT NULL,
    plan       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL
);
--bun:split
CREATE TABLE api_keys (
    id         TEXT PRIMARY KEY NOT NULL,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    hash       TEXT NOT NULL,
    prefix     TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    revoked_at TIMESTAMP
);
--bun:split
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
--bun:split
CREATE INDEX api_keys_account ON api_keys (account_id);
--bun:split
CREATE TABLE assets (
    id           TEXT PRIMARY KEY NOT NULL,
    account_id   TEXT NOT NULL,
    name         TEXT NOT NULL,
    content_type TEXT NOT NULL,
    size         INTEGER NOT NULL,
    created_at   TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX assets_account ON assets (account_id, created_at DESC);
--bun:split
CREATE TABLE jobs (
    id            TEXT PRIMARY KEY NOT NULL,
    account_id    TEXT NOT NULL,
    type          TEXT NOT NULL,
    inputs        TEXT,
    params        TEXT,
    class         TEXT NOT NULL,
    timeout_ns    INTEGER NOT NULL,
    retry_of      TEXT,
    status        TEXT NOT NULL,
    progress      REAL NOT NULL,
    output        TEXT,
    output_data   TEXT,
    error         TEXT,
    cost          TEXT,
    compute_ms    INTEGER NOT NULL,
    attempt       INTEGER NOT NULL,
    lease_until   TIMESTAMP,
    created_at    TIMESTAMP NOT NULL,
    updated_at    TIMESTAMP NOT NULL,
    dispatched_at TIMESTAMP,
    started_at    TIMESTAMP,
    finished_at   TIMESTAMP
);
--bun:split
CREATE INDEX jobs_list ON jobs (account_id, created_at DESC, id DESC);
--bun:split
CREATE INDEX jobs_claim ON jobs (status, class, created_at, id);
--bun:split
CREATE INDEX jobs_lease ON jobs (status, lease_until);
