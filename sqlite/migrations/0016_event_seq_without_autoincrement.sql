-- The event log without AUTOINCREMENT: every commit that logged an event also rewrote
-- the page of sqlite_sequence that held the log's last number. The service now numbers
-- events itself (Store.insertEvents): one past the newest in the log or, when the newest
-- were pruned, past the highest number PruneEvents removed, kept in events_pruned. So a
-- number is still never given twice; the table is written only by the pruner.
--
-- The outbox references events(id), so both tables are rebuilt, as in migration 0012.
CREATE TABLE events_pruned (
    id       INTEGER PRIMARY KEY CHECK (id = 1),
    last_seq INTEGER NOT NULL
);
INSERT INTO events_pruned (id, last_seq) SELECT 1, seq FROM sqlite_sequence WHERE name = 'events';

CREATE TABLE events_log (
    seq         INTEGER PRIMARY KEY,
    id          TEXT NOT NULL UNIQUE,
    type        TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    data        TEXT NOT NULL,
    traceparent TEXT NOT NULL DEFAULT '',
    hw          TEXT NOT NULL DEFAULT ''
);
INSERT INTO events_log (seq, id, type, occurred_at, data, traceparent, hw)
    SELECT seq, id, type, occurred_at, data, traceparent, hw FROM events ORDER BY seq;

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
CREATE INDEX outbox_event ON outbox (event_id, webhook_id);
CREATE INDEX outbox_webhook_due ON outbox (webhook_id, next_attempt_at);
CREATE INDEX events_type ON events (type);
CREATE TRIGGER events_high_water AFTER INSERT ON events WHEN NEW.hw = ''
BEGIN
    UPDATE events SET hw = max(NEW.occurred_at,
        coalesce((SELECT hw FROM events WHERE seq < NEW.seq ORDER BY seq DESC LIMIT 1), ''))
        WHERE seq = NEW.seq;
END;
