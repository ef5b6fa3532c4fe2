-- Idempotency-Key records (idempotency.Store): one per account and key, holding the first
-- response of the request for a day.
CREATE TABLE idempotency_keys (
    account_id  text NOT NULL,
    idem_key    text NOT NULL,
    operation   text NOT NULL,
    fingerprint text NOT NULL,
    state       text NOT NULL,
    owner       text NOT NULL,
    response    BLOB,
    created_at  TIMESTAMP NOT NULL,
    expires_at  TIMESTAMP NOT NULL,
    lease_until TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, idem_key)
);
--bun:split
CREATE INDEX idempotency_keys_expiry ON idempotency_keys (expires_at);
