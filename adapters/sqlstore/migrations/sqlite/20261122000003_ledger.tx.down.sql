DROP INDEX jobs_active;
--bun:split
DROP TABLE balances;
--bun:split
DROP TABLE ledger;
