-- Only dispatched and running jobs hold a lease or count against a concurrency cap, so the two
-- indexes that serve those queries keep only them: a submitted (waiting) job, and a finished
-- one, then touches neither, which makes every submit's insert cheaper.
DROP INDEX jobs_lease;
--bun:split
CREATE INDEX jobs_lease ON jobs (lease_until) WHERE status IN ('dispatched', 'running');
--bun:split
DROP INDEX jobs_active;
--bun:split
CREATE INDEX jobs_active ON jobs (account_id) WHERE status IN ('dispatched', 'running');
