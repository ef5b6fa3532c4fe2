ALTER TABLE jobs DROP COLUMN processed_ms;
