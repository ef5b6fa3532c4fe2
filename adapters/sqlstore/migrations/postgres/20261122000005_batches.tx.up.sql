-- Batches: jobs submitted together, counted once each as they finish (batch_counts).
ALTER TABLE jobs ADD COLUMN batch_id text COLLATE "C";
--bun:split
CREATE TABLE batches (
    id           text COLLATE "C" PRIMARY KEY,
    account_id   text COLLATE "C" NOT NULL,
    job_ids      text NOT NULL,
    status       text NOT NULL,
    succeeded    integer NOT NULL DEFAULT 0,
    failed       integer NOT NULL DEFAULT 0,
    cancelled    integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL,
    updated_at   timestamptz NOT NULL,
    completed_at timestamptz
);
--bun:split
CREATE INDEX batches_list ON batches (account_id, created_at DESC, id DESC);
--bun:split
CREATE TABLE batch_counts (
    batch_id text COLLATE "C" NOT NULL REFERENCES batches (id) ON DELETE CASCADE,
    job_id   text COLLATE "C" NOT NULL,
    PRIMARY KEY (batch_id, job_id)
);
