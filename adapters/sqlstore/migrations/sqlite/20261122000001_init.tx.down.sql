DROP TABLE jobs;
--bun:split
DROP TABLE assets;
--bun:split
DROP TABLE api_keys;
--bun:split
DROP TABLE accounts;
