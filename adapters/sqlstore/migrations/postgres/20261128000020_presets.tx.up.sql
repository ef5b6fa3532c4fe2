-- An account's presets: named FFmpeg templates. definition is the preset's JSON (description,
-- command or steps, keep, variables, inputs); version grows by one with each update.
CREATE TABLE presets (
    account_id text COLLATE "C" NOT NULL,
    name       text COLLATE "C" NOT NULL,
    version    integer NOT NULL,
    definition text NOT NULL,
    created_at timestamptz NOT NULL,
    updated_at timestamptz NOT NULL,
    PRIMARY KEY (account_id, name)
);
