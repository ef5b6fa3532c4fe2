DROP INDEX jobs_served;
--bun:split
ALTER TABLE jobs DROP COLUMN priority;
