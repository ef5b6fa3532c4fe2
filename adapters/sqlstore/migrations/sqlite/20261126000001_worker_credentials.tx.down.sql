DROP TABLE worker_credentials;
--bun:split
DROP INDEX jobs_worker;
--bun:split
ALTER TABLE jobs DROP COLUMN uploads;
--bun:split
ALTER TABLE jobs DROP COLUMN worker;
