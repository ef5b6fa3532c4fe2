-- A claim reads each account's oldest waiting jobs of each priority of a class (sqlstore's
-- candidates), not every waiting job: this index holds the waiting jobs in that order.
CREATE INDEX jobs_waiting ON jobs (class, account_id, priority, created_at, id) WHERE status = 'waiting';
