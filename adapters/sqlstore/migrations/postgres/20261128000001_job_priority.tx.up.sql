-- A job's priority orders the waiting jobs of its class: -1 low, 0 normal, 1 high (job.Priority
-- Rank). Jobs saved before it are normal.
ALTER TABLE jobs ADD COLUMN priority smallint NOT NULL DEFAULT 0;
--bun:split
-- Claim ranks an account's waiting jobs by its latest dispatch of the class (fair share): one
-- index lookup per account, not a scan of its history.
CREATE INDEX jobs_served ON jobs (account_id, class, dispatched_at);
