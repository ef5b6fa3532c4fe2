-- The credit ledger: append-only, integer credits; key makes every entry idempotent.
CREATE TABLE ledger (
    seq        bigserial PRIMARY KEY,
    key        text COLLATE "C" NOT NULL UNIQUE,
    account_id text COLLATE "C" NOT NULL,
    kind       text NOT NULL,
    amount     bigint NOT NULL,
    job_id     text COLLATE "C",
    note       text NOT NULL DEFAULT '',
    created_at timestamptz NOT NULL
);
--bun:split
CREATE INDEX ledger_account ON ledger (account_id, seq DESC);
--bun:split
CREATE INDEX ledger_spent ON ledger (account_id, kind, created_at);
--bun:split
-- The running balance, changed in the transaction of each entry: the submit gate reads one row.
CREATE TABLE balances (
    account_id text COLLATE "C" PRIMARY KEY,
    balance    bigint NOT NULL
);
--bun:split
-- Concurrency caps count an account's dispatched and running jobs.
CREATE INDEX jobs_active ON jobs (account_id, status);
