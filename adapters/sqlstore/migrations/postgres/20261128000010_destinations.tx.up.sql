-- An account's own S3-compatible buckets. The secret access key is kept sealed (AES-256-GCM)
-- under the server key secret_key_id names; secret_box is the nonce and the ciphertext.
CREATE TABLE destinations (
    id            text COLLATE "C" PRIMARY KEY,
    account_id    text COLLATE "C" NOT NULL,
    name          text NOT NULL,
    endpoint      text NOT NULL,
    bucket        text NOT NULL,
    region        text NOT NULL,
    prefix        text NOT NULL DEFAULT '',
    path_style    boolean NOT NULL DEFAULT FALSE,
    access_key_id text NOT NULL,
    secret_key_id text NOT NULL,
    secret_box    bytea NOT NULL,
    created_at    timestamptz NOT NULL
);
--bun:split
CREATE INDEX destinations_account ON destinations (account_id, created_at, id);
--bun:split
-- One job's delivery to a destination. No foreign key to destinations: a finished delivery
-- keeps naming a destination that was deleted since.
CREATE TABLE destination_deliveries (
    job_id          text COLLATE "C" PRIMARY KEY,
    account_id      text COLLATE "C" NOT NULL,
    destination_id  text COLLATE "C" NOT NULL,
    path            text NOT NULL,
    preset          text NOT NULL DEFAULT '',
    state           text NOT NULL,
    files           text NOT NULL DEFAULT '[]',
    error           text NOT NULL DEFAULT '',
    attempts        integer NOT NULL DEFAULT 0,
    round           integer NOT NULL DEFAULT 1,
    next_attempt_at timestamptz,
    created_at      timestamptz NOT NULL,
    updated_at      timestamptz NOT NULL
);
--bun:split
CREATE INDEX destination_deliveries_due ON destination_deliveries (state, next_attempt_at);
--bun:split
CREATE INDEX destination_deliveries_destination ON destination_deliveries (destination_id, state);
