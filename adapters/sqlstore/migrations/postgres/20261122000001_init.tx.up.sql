-- Identifiers sort by bytes (COLLATE "C") so that keyset pagination agrees with Go's string order.
CREATE TABLE accounts (
    id         text COLLATE "C" PRIMARY KEY,
    plan       text NOT NULL,
    created_at timestamptz NOT NULL
);
--bun:split
CREATE TABLE api_keys (
    id         text COLLATE "C" PRIMARY KEY,
    account_id text COLLATE "C" NOT NULL REFERENCES accounts (id),
    hash       text NOT NULL,
    prefix     text NOT NULL,
    created_at timestamptz NOT NULL,
    revoked_at timestamptz
);
--bun:split
CREATE UNIQUE INDEX api_keys_hash ON api_keys (hash);
--bun:split
CREATE INDEX api_keys_account ON api_keys (account_id);
--bun:split
CREATE TABLE assets (
    id           text COLLATE "C" PRIMARY KEY,
    account_id   text COLLATE "C" NOT NULL,
    name         text NOT NULL,
    content_type text NOT NULL,
    size         bigint NOT NULL,
    created_at   timestamptz NOT NULL
);
--bun:split
CREATE INDEX assets_account ON assets (account_id, created_at DESC);
--bun:split
-- inputs, params and output_data keep the client's JSON byte for byte, hence json, not jsonb.
CREATE TABLE jobs (
    id            text COLLATE "C" PRIMARY KEY,
    account_id    text COLLATE "C" NOT NULL,
    type          text NOT NULL,
    inputs        json,
    params        json,
    class         text NOT NULL,
    timeout_ns    bigint NOT NULL,
    retry_of      text COLLATE "C",
    status        text NOT NULL,
    progress      double precision NOT NULL,
    output        json,
    output_data   json,
    error         json,
    cost          json,
    compute_ms    bigint NOT NULL,
    attempt       integer NOT NULL,
    lease_until   timestamptz,
    created_at    timestamptz NOT NULL,
    updated_at    timestamptz NOT NULL,
    dispatched_at timestamptz,
    started_at    timestamptz,
    finished_at   timestamptz
);
--bun:split
CREATE INDEX jobs_list ON jobs (account_id, created_at DESC, id DESC);
--bun:split
CREATE INDEX jobs_claim ON jobs (status, class, created_at, id);
--bun:split
CREATE INDEX jobs_lease ON jobs (status, lease_until);
