-- Retry elsewhere: a job records the runner holding its attempt (runner: the name its claim
-- gave), and a requeued job the runner whose attempt ended (avoid_runner), which its claims
-- skip until avoid_until. Read only on rows a claim has already chosen by status and class.
ALTER TABLE jobs ADD COLUMN runner TEXT;
ALTER TABLE jobs ADD COLUMN avoid_runner TEXT;
ALTER TABLE jobs ADD COLUMN avoid_until TIMESTAMPTZ;
