-- The event log: every event is kept for the retention window, whether or not a webhook
-- subscribes to its type. Its place in the log is (xid, seq): xid is the id of the
-- transaction that wrote it (taken when the row is inserted), seq a number from a
-- sequence. Transaction ids are assigned in the order transactions start writing, not in
-- the order they commit, so the log is read only below the oldest transaction still
-- running (pg_snapshot_xmin(pg_current_snapshot())): nothing can later commit there, and
-- a reader that resumes after the last (xid, seq) it saw misses no event.
ALTER TABLE events ADD COLUMN seq bigint;
ALTER TABLE events ADD COLUMN xid xid8 NOT NULL DEFAULT pg_current_xact_id();
-- Events stored before: in time order, all of this migration's transaction.
UPDATE events e SET seq = o.n
    FROM (SELECT id, row_number() OVER (ORDER BY occurred_at, id) AS n FROM events) o WHERE e.id = o.id;
ALTER TABLE events ALTER COLUMN seq SET NOT NULL;
ALTER TABLE events ALTER COLUMN seq ADD GENERATED ALWAYS AS IDENTITY;
SELECT setval(pg_get_serial_sequence('events', 'seq'), (SELECT max(seq) FROM events)) WHERE EXISTS (SELECT 1 FROM events);

-- The log read in order, by type, and by time (since, and the retention window).
CREATE UNIQUE INDEX events_xid_seq ON events (xid, seq);
CREATE INDEX events_type_xid_seq ON events (type, xid, seq);
CREATE INDEX events_occurred_at ON events (occurred_at);

-- The deliveries of an event: whether it may be pruned (and the foreign key's check when
-- it is), and whether a replay finds it pending for a webhook already.
CREATE INDEX outbox_event_id ON outbox (event_id, webhook_id);
-- Attempts by time, for the retention window.
CREATE INDEX delivery_attempts_attempted_at ON delivery_attempts (attempted_at);
