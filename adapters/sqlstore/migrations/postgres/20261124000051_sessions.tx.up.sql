-- When each API key was last used, to within a minute (account.KeyUseInterval).
ALTER TABLE api_keys ADD COLUMN last_used_at timestamptz;
--bun:split
-- Browser sessions of the console: a cookie token stored as its hash, tied to the key that
-- opened it (revoking the key ends the session).
CREATE TABLE sessions (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL REFERENCES accounts (id),
    key_id     text COLLATE "C" NOT NULL REFERENCES api_keys (id),
    hash       text NOT NULL,
    created_at timestamptz NOT NULL,
    expires_at timestamptz NOT NULL
);
--bun:split
CREATE UNIQUE INDEX sessions_hash ON sessions (hash);
--bun:split
CREATE INDEX sessions_expires ON sessions (expires_at);
