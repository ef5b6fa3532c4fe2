-- A split job's part counts its failed attempts given another try (retries), apart from the
-- requeues a lost lease or a hand-back spends: a part handed back by a draining worker is
-- still retried once when it then fails.
ALTER TABLE jobs ADD COLUMN retries INTEGER NOT NULL DEFAULT 0;
