DROP TABLE batch_counts;
--bun:split
DROP TABLE batches;
--bun:split
ALTER TABLE jobs DROP COLUMN batch_id;
