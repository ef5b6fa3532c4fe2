-- The work queue: a job goes back to waiting once when its runner is lost before its compute
-- began (requeues), and billing reads when the compute began (exec_started_at).
ALTER TABLE jobs ADD COLUMN requeues integer NOT NULL DEFAULT 0;
--bun:split
ALTER TABLE jobs ADD COLUMN exec_started_at timestamptz;
