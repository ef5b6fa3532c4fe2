-- Webhook endpoints of accounts, and the deliveries of events to them with their history.
CREATE TABLE webhook_endpoints (
    id              TEXT PRIMARY KEY,
    account_id      TEXT NOT NULL,
    name            TEXT NOT NULL,
    url             TEXT NOT NULL,
    events          TEXT NOT NULL,
    enabled         BOOLEAN NOT NULL,
    secret          TEXT NOT NULL,
    previous_secret TEXT NOT NULL DEFAULT '',
    previous_until  TIMESTAMP,
    created_at      TIMESTAMP NOT NULL,
    updated_at      TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at, id);
--bun:split
CREATE TABLE webhook_deliveries (
    id               TEXT PRIMARY KEY,
    key              TEXT NOT NULL UNIQUE,
    endpoint_id      TEXT NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    account_id       TEXT NOT NULL,
    event            TEXT NOT NULL,
    job_id           TEXT NOT NULL DEFAULT '',
    body             BLOB NOT NULL,
    state            TEXT NOT NULL,
    attempts         INTEGER NOT NULL DEFAULT 0,
    next_attempt_at  TIMESTAMP,
    last_status_code INTEGER NOT NULL DEFAULT 0,
    last_error       TEXT NOT NULL DEFAULT '',
    history          TEXT NOT NULL DEFAULT '[]',
    redelivery_of    TEXT NOT NULL DEFAULT '',
    created_at       TIMESTAMP NOT NULL
);
--bun:split
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
--bun:split
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, id);
