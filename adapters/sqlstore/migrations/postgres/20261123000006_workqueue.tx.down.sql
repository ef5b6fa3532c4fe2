ALTER TABLE jobs DROP COLUMN exec_started_at;
--bun:split
ALTER TABLE jobs DROP COLUMN requeues;
