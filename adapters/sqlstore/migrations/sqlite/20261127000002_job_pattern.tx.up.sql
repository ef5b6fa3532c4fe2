-- A job keeps the output pattern its command asks for (an image sequence or a segment command
-- has the set pattern, however many files it writes). Jobs stored before have none: their
-- files decide, as they did.
ALTER TABLE jobs ADD COLUMN pattern text NOT NULL DEFAULT '';
