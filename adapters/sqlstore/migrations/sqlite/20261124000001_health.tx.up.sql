-- Readiness probes write one row here: a store that cannot be written (its disk full, read-only)
-- is not ready.
CREATE TABLE health (
    id text PRIMARY KEY,
    at TIMESTAMP NOT NULL
);
