-- Each event records its actor: the name of the API key that made the change, or
-- chargebox:<identity>; '' for the events recorded before (unknown). The event log is
-- filtered on it, in log order (the index holds the seq).
ALTER TABLE events ADD COLUMN actor TEXT NOT NULL DEFAULT '';
CREATE INDEX events_actor ON events (actor);
