-- The credit ledger: append-only, integer credits; key makes every entry idempotent.
CREATE TABLE ledger (
    seq        INTEGER PRIMARY KEY AUTOINCREMENT,
    key        TEXT NOT NULL UNIQUE,
    account_id TEXT NOT NULL,
    kind       TEXT NOT NULL,
    amount     INTEGER NOT NULL,
    job_id     TEXT,
    note       TEXT NOT NULL DEFAULT '',
    created_at TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX ledger_account ON ledger (account_id, seq DESC);
--bun:split
CREATE INDEX ledger_spent ON ledger (account_id, kind, created_at);
--bun:split
-- The running balance, changed in the transaction of each entry: the submit gate reads one row.
CREATE TABLE balances (
    account_id TEXT PRIMARY KEY NOT NULL,
    balance    INTEGER NOT NULL
);
--bun:split
-- Concurrency caps count an account's dispatched and running jobs.
CREATE INDEX jobs_active ON jobs (account_id, status);
