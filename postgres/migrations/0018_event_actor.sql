-- Each event records its actor: the name of the API key that made the change, or
-- chargebox:<identity>; '' for the events recorded before (unknown). The event log is
-- filtered on it, in log order.
ALTER TABLE events ADD COLUMN actor text NOT NULL DEFAULT '';
CREATE INDEX events_actor_xid_seq ON events (actor, xid, seq);
