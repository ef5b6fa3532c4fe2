-- When each API key was last used, to within a minute (account.KeyUseInterval).
ALTER TABLE api_keys ADD COLUMN last_used_at TIMESTAMP;
--bun:split
-- Browser sessions of the console: a cookie token stored as its hash, tied to the key that
-- opened it (revoking the key ends the session).
CREATE TABLE sessions (
    id         TEXT PRIMARY KEY,
    account_id TEXT NOT NULL REFERENCES accounts (id),
    key_id     TEXT NOT NULL REFERENCES api_keys (id),
    hash       TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    expires_at TIMESTAMP NOT NULL
);
--bun:split
CREATE UNIQUE INDEX sessions_hash ON sessions (hash);
--bun:split
CREATE INDEX sessions_expires ON sessions (expires_at);
