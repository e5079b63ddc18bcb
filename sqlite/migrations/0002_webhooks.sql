-- Webhook subscriptions, the outbox of events to deliver, and the record of attempts.

-- The last status notification applied to an EVSE and to a connector (NULL before the
-- first), so that older notifications arriving late are ignored.
ALTER TABLE evses ADD COLUMN status_at TEXT;
ALTER TABLE connectors ADD COLUMN status_at TEXT;
CREATE INDEX evses_chargebox ON evses (chargebox_id, uid);

CREATE TABLE webhooks (
    id                    TEXT PRIMARY KEY,
    owner                 TEXT NOT NULL,
    url                   TEXT NOT NULL,
    description           TEXT NOT NULL DEFAULT '',
    enabled               INTEGER NOT NULL,
    disabled_reason       TEXT NOT NULL DEFAULT '',
    secret                TEXT NOT NULL,
    previous_secret       TEXT NOT NULL DEFAULT '',
    previous_secret_until TEXT,
    created_at            TEXT NOT NULL,
    updated_at            TEXT NOT NULL
) WITHOUT ROWID;
CREATE INDEX webhooks_owner ON webhooks (owner, id);

CREATE TABLE webhook_event_types (
    webhook_id  TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    type        TEXT NOT NULL,
    api_version TEXT NOT NULL,
    PRIMARY KEY (webhook_id, type)
) WITHOUT ROWID;
CREATE INDEX webhook_event_types_type ON webhook_event_types (type, webhook_id);

-- An event is stored only when some webhook subscribes to its type.
CREATE TABLE events (
    id          TEXT PRIMARY KEY,
    type        TEXT NOT NULL,
    occurred_at TEXT NOT NULL,
    data        TEXT NOT NULL
) WITHOUT ROWID;

-- One row per event and subscribed webhook, until it is delivered or given up.
CREATE TABLE outbox (
    id              INTEGER PRIMARY KEY,
    event_id        TEXT NOT NULL REFERENCES events (id),
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    api_version     TEXT NOT NULL,
    attempts        INTEGER NOT NULL DEFAULT 0,
    next_attempt_at TEXT NOT NULL,
    leased_until    TEXT
);
CREATE INDEX outbox_due ON outbox (next_attempt_at, id);
CREATE INDEX outbox_webhook ON outbox (webhook_id);

CREATE TABLE delivery_attempts (
    id              INTEGER PRIMARY KEY,
    webhook_id      TEXT NOT NULL REFERENCES webhooks (id) ON DELETE CASCADE,
    event_id        TEXT NOT NULL,
    event_type      TEXT NOT NULL,
    attempt         INTEGER NOT NULL,
    attempted_at    TEXT NOT NULL,
    outcome         TEXT NOT NULL,
    http_status     INTEGER,
    error           TEXT NOT NULL DEFAULT '',
    duration_ms     INTEGER NOT NULL,
    next_attempt_at TEXT
);
CREATE INDEX delivery_attempts_webhook ON delivery_attempts (webhook_id, id);
