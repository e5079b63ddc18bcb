-- The event log: every event is kept for the retention window, whether or not a webhook
-- subscribes to its type, numbered by seq in commit order. One writer at a time commits,
-- so a number taken in the writing transaction orders events as they were committed: a
-- reader that resumes after the last seq it saw misses none. seq is the rowid: the log
-- reads in seq order straight from the table. AUTOINCREMENT: a number is never given
-- twice, even after every event was pruned.
--
-- The outbox references events(id), so both tables are rebuilt (the new outbox first
-- references the new events table; renaming that one to events renames the reference).
CREATE TABLE events_log (
    seq         INTEGER PRIMARY KEY AUTOINCREMENT,
    id          TEXT NOT NULL UNIQUE,
    type        TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    data        TEXT NOT NULL,
    traceparent TEXT NOT NULL DEFAULT ''
);
INSERT INTO events_log (id, type, occurred_at, data, traceparent)
    SELECT id, type, occurred_at, data, traceparent FROM events ORDER BY occurred_at, id;

CREATE TABLE outbox_log (
    id              INTEGER PRIMARY KEY,
    event_id        TEXT NOT NULL REFERENCES events_log (id),
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    api_version     TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    leased_until    TEXT
);
INSERT INTO outbox_log (id, event_id, webhook_id, api_version, attempts, next_attempt_at, leased_until)
    SELECT id, event_id, webhook_id, api_version, attempts, next_attempt_at, leased_until FROM outbox;
DROP TABLE outbox;
DROP TABLE events;
ALTER TABLE events_log RENAME TO events;
ALTER TABLE outbox_log RENAME TO outbox;
CREATE INDEX outbox_due ON outbox (next_attempt_at, id);
CREATE INDEX outbox_webhook ON outbox (webhook_id);
-- The deliveries of an event: whether it may be pruned, and whether a replay finds it
-- pending for a webhook already.
CREATE INDEX outbox_event ON outbox (event_id, webhook_id);

-- The log read by type (with seq, the rowid, in each), and by time for since and the
-- retention window.
CREATE INDEX events_type ON events (type);
CREATE INDEX events_occurred_at ON events (occurred_at);

-- Attempts by time, for the retention window.
CREATE INDEX delivery_attempts_at ON delivery_attempts (attempted_at);
