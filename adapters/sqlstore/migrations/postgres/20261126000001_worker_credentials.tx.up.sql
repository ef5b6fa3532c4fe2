-- Worker identity: each job's current attempt records the credential that claimed it, and the
-- output files stored under that attempt (checked against the worker's report); operators issue
-- and revoke worker credentials without a restart.
ALTER TABLE jobs ADD COLUMN worker text;
--bun:split
ALTER TABLE jobs ADD COLUMN uploads text;
--bun:split
CREATE INDEX jobs_worker ON jobs (worker) WHERE status IN ('dispatched', 'running');
--bun:split
CREATE TABLE worker_credentials (
    id          text PRIMARY KEY,
    name        text NOT NULL UNIQUE,
    class       text NOT NULL,
    secret_hash text NOT NULL UNIQUE,
    created_at  timestamptz NOT NULL,
    revoked_at  timestamptz,
    last_seen   timestamptz,
    version     text
);
