-- Batches: jobs submitted together, counted once each as they finish (batch_counts).
ALTER TABLE jobs ADD COLUMN batch_id TEXT;
--bun:split
CREATE TABLE batches (
    id           TEXT PRIMARY KEY NOT NULL,
    account_id   TEXT NOT NULL,
    job_ids      TEXT NOT NULL,
    status       TEXT NOT NULL,
    succeeded    INTEGER NOT NULL DEFAULT 0,
    failed       INTEGER NOT NULL DEFAULT 0,
    cancelled    INTEGER NOT NULL DEFAULT 0,
    created_at   TIMESTAMP NOT NULL,
    updated_at   TIMESTAMP NOT NULL,
    completed_at TIMESTAMP
);
--bun:split
CREATE INDEX batches_list ON batches (account_id, created_at DESC, id DESC);
--bun:split
CREATE TABLE batch_counts (
    batch_id TEXT NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    job_id   TEXT NOT NULL,
    PRIMARY KEY (batch_id, job_id)
);
