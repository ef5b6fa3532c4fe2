DROP INDEX jobs_waiting;
