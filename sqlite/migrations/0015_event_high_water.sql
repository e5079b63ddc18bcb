-- The event log's high water: hw is the latest occurred_at of the event and of every
-- event before it in seq order, so it never decreases along the log, and every event
-- before the first whose hw is at or after a time happened before that time. A search
-- over seq on it (firstSeqAt) starts the reads, replays and prunes that select by time,
-- which the index on occurred_at served before: that index was written by every event,
-- in every commit. The service writes hw with each event; the trigger fills it in for
-- rows written by plain SQL.
ALTER TABLE events ADD COLUMN hw TEXT NOT NULL DEFAULT '';
UPDATE events SET hw = r.hw
    FROM (SELECT seq, max(occurred_at) OVER (ORDER BY seq) AS hw FROM events) AS r
    WHERE r.seq = events.seq;
DROP INDEX events_occurred_at;
CREATE TRIGGER events_high_water AFTER INSERT ON events WHEN NEW.hw = ''
BEGIN
    UPDATE events SET hw = max(NEW.occurred_at,
        coalesce((SELECT hw FROM events WHERE seq < NEW.seq ORDER BY seq DESC LIMIT 1), ''))
        WHERE seq = NEW.seq;
END;
