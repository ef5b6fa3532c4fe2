-- The transactional outbox: side effects of job changes, written in the change's transaction.
CREATE TABLE outbox (
    seq          bigserial PRIMARY KEY,
    key          text COLLATE "C" NOT NULL UNIQUE,
    topic        text NOT NULL,
    payload      bytea NOT NULL,
    attempts     integer NOT NULL DEFAULT 0,
    created_at   timestamptz NOT NULL,
    available_at timestamptz NOT NULL
);
--bun:split
CREATE INDEX outbox_available ON outbox (available_at, seq);
