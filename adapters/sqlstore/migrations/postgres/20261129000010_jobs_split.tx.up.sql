-- Split and stitch: a part job names the split job it belongs to (parent_id), and a split job
-- keeps its plan (split, JSON). Lists filter on parent_id IS NULL, which the existing account
-- indexes answer; a part is found through its parent's plan, never by this column.
ALTER TABLE jobs ADD COLUMN parent_id TEXT;
ALTER TABLE jobs ADD COLUMN split TEXT;
