-- An account's presets: named FFmpeg templates. definition is the preset's JSON (description,
-- command or steps, keep, variables, inputs); version grows by one with each update.
CREATE TABLE presets (
    account_id TEXT NOT NULL,
    name       TEXT NOT NULL,
    version    INTEGER NOT NULL,
    definition TEXT NOT NULL,
    created_at TIMESTAMP NOT NULL,
    updated_at TIMESTAMP NOT NULL,
    PRIMARY KEY (account_id, name)
);
