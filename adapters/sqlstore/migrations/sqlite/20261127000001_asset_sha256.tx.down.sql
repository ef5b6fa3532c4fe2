DROP INDEX assets_account_sha256;
--bun:split
ALTER TABLE assets DROP COLUMN sha256;
