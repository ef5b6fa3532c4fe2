-- Webhook endpoints of accounts, and the deliveries of events to them with their history.
CREATE TABLE webhook_endpoints (
    id              text COLLATE "C" PRIMARY KEY,
    account_id      text NOT NULL,
    name            text NOT NULL,
    url             text NOT NULL,
    events          text NOT NULL,
    enabled         boolean NOT NULL,
    secret          text NOT NULL,
    previous_secret text NOT NULL DEFAULT '',
    previous_until  timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
--bun:split
CREATE INDEX webhook_endpoints_account ON webhook_endpoints (account_id, created_at, id);
--bun:split
CREATE TABLE webhook_deliveries (
    id               text COLLATE "C" PRIMARY KEY,
    key              text COLLATE "C" NOT NULL UNIQUE,
    endpoint_id      text COLLATE "C" NOT NULL REFERENCES webhook_endpoints (id) ON DELETE CASCADE,
    account_id       text NOT NULL,
    event            text NOT NULL,
    job_id           text NOT NULL DEFAULT '',
    body             bytea NOT NULL,
    state            text NOT NULL,
    attempts         integer NOT NULL DEFAULT 0,
    next_attempt_at  timestamptz,
    last_status_code integer NOT NULL DEFAULT 0,
    last_error       text NOT NULL DEFAULT '',
    history          text NOT NULL DEFAULT '[]',
    redelivery_of    text NOT NULL DEFAULT '',
    created_at       timestamptz NOT NULL
);
--bun:split
CREATE INDEX webhook_deliveries_due ON webhook_deliveries (state, next_attempt_at);
--bun:split
CREATE INDEX webhook_deliveries_endpoint ON webhook_deliveries (endpoint_id, created_at, id);
