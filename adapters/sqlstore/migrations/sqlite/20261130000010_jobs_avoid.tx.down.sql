ALTER TABLE jobs DROP COLUMN avoid_until;
ALTER TABLE jobs DROP COLUMN avoid_runner;
ALTER TABLE jobs DROP COLUMN runner;
