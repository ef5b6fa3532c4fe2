-- An account's own S3-compatible buckets. The secret access key is kept sealed (AES-256-GCM)
-- under the server key secret_key_id names; secret_box is the nonce and the ciphertext.
CREATE TABLE destinations (
    id            TEXT PRIMARY KEY,
    account_id    TEXT NOT NULL,
    name          TEXT NOT NULL,
    endpoint      TEXT NOT NULL,
    bucket        TEXT NOT NULL,
    region        TEXT NOT NULL,
    prefix        TEXT NOT NULL DEFAULT '',
    path_style    BOOLEAN NOT NULL DEFAULT FALSE,
    access_key_id TEXT NOT NULL,
    secret_key_id TEXT NOT NULL,
    secret_box    BLOB NOT NULL,
    created_at    TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX destinations_account ON destinations (account_id, created_at, id);
--bun:split
-- One job's delivery to a destination. No foreign key to destinations: a finished delivery
-- keeps naming a destination that was deleted since.
CREATE TABLE destination_deliveries (
    job_id          TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    destination_id  TEXT NOT NULL,
    path            TEXT NOT NULL,
    preset          TEXT NOT NULL DEFAULT '',
    state           TEXT NOT NULL,
    files           TEXT NOT NULL DEFAULT '[]',
    error           TEXT NOT NULL DEFAULT '',
    attempts        INTEGER NOT NULL DEFAULT 0,
    round           INTEGER NOT NULL DEFAULT 1,
    next_attempt_at TIMESTAMP,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX destination_deliveries_due ON destination_deliveries (state, next_attempt_at);
--bun:split
CREATE INDEX destination_deliveries_destination ON destination_deliveries (destination_id, state);
