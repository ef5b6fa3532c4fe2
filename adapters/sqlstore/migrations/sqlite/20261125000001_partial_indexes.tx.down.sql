DROP INDEX jobs_lease;
--bun:split
CREATE INDEX jobs_lease ON jobs (status, lease_until);
--bun:split
DROP INDEX jobs_active;
--bun:split
CREATE INDEX jobs_active ON jobs (account_id, status);
