-- The runners the control plane has heard from (workqueue.Registry): every claim records its
-- runner, so that every replica can tell whether a compute class has capacity.
CREATE TABLE workers (
    name      text PRIMARY KEY,
    class     text NOT NULL,
    last_seen timestamptz NOT NULL
);
--bun:split
CREATE INDEX workers_seen ON workers (last_seen);
