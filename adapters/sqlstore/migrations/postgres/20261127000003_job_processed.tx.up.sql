-- A running job shows how much media time it has written (processedMs) when no length of its
-- output is known, so no progress fraction can be.
ALTER TABLE jobs ADD COLUMN processed_ms bigint NOT NULL DEFAULT 0;
