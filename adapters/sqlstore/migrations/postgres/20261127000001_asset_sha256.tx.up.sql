-- Uploads keep the SHA-256 of their bytes, so that a client can find an upload of its account
-- that holds the same file (GET /uploads?sha256=) instead of sending it again. Uploads stored
-- before have none (NULL) and are found by no hash.
ALTER TABLE assets ADD COLUMN sha256 text;
--bun:split
CREATE INDEX assets_account_sha256 ON assets (account_id, sha256) WHERE sha256 IS NOT NULL;
