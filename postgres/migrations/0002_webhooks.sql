-- Webhook subscriptions, the outbox of events to deliver, and the record of attempts.
-- Webhook and event ids and event types are COLLATE "C", like location ids: webhook ids
-- are keyset cursors and subscriptions are listed in type order, so both must compare
-- byte by byte, as in Go and in the SQLite store.

-- The last status notification applied to an EVSE and to a connector (NULL before the
-- first), so that older notifications arriving late are ignored.
ALTER TABLE evses ADD COLUMN status_at timestamptz;
ALTER TABLE connectors ADD COLUMN status_at timestamptz;
-- A charge box's EVSEs in uid order, the order in which status notifications lock them.
CREATE INDEX evses_chargebox_uid ON evses (chargebox_id, uid);

CREATE TABLE webhooks (
    id                    text COLLATE "C" NOT NULL,
    owner                 text NOT NULL,
    url                   text NOT NULL,
    description           text NOT NULL DEFAULT '',
    enabled               boolean NOT NULL,
    disabled_reason       text NOT NULL DEFAULT '',
    secret                text NOT NULL,
    previous_secret       text NOT NULL DEFAULT '',
    previous_secret_until timestamptz,
    created_at            timestamptz NOT NULL,
    updated_at            timestamptz NOT NULL,
    CONSTRAINT webhooks_pkey PRIMARY KEY (id)
);
-- An owner's webhooks in id order, from the index alone.
CREATE INDEX webhooks_owner_id ON webhooks (owner, id);

CREATE TABLE webhook_event_types (
    webhook_id  text COLLATE "C" NOT NULL,
    type        text COLLATE "C" NOT NULL,
    api_version text NOT NULL,
    CONSTRAINT webhook_event_types_pkey PRIMARY KEY (webhook_id, type),
    CONSTRAINT webhook_event_types_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES webhooks (id) ON DELETE CASCADE
);
-- The webhooks subscribed to a type, for queuing an event.
CREATE INDEX webhook_event_types_type ON webhook_event_types (type, webhook_id);

-- An event is stored only when some webhook subscribes to its type. data is text, not
-- jsonb, so that the payload comes back byte for byte as it was recorded.
CREATE TABLE events (
    id          text COLLATE "C" NOT NULL,
    type        text NOT NULL,
    occurred_at timestamptz NOT NULL,
    data        text NOT NULL,
    CONSTRAINT events_pkey PRIMARY KEY (id)
);

-- One row per event and subscribed webhook, until it is delivered or given up.
CREATE TABLE outbox (
    id              bigint GENERATED ALWAYS AS IDENTITY,
    event_id        text COLLATE "C" NOT NULL,
    webhook_id      text COLLATE "C" NOT NULL,
    api_version     text NOT NULL,
    attempts        integer NOT NULL DEFAULT 0,
    next_attempt_at timestamptz NOT NULL,
    leased_until    timestamptz,
    CONSTRAINT outbox_pkey PRIMARY KEY (id),
    CONSTRAINT outbox_event_id_fkey FOREIGN KEY (event_id) REFERENCES events (id),
    CONSTRAINT outbox_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES webhooks (id) ON DELETE CASCADE
);
-- The due deliveries, oldest first.
CREATE INDEX outbox_due ON outbox (next_attempt_at, id);
-- For the cascade when a webhook is deleted.
CREATE INDEX outbox_webhook_id ON outbox (webhook_id);

CREATE TABLE delivery_attempts (
    id              bigint GENERATED ALWAYS AS IDENTITY,
    webhook_id      text COLLATE "C" NOT NULL,
    event_id        text COLLATE "C" NOT NULL,
    event_type      text NOT NULL,
    attempt         integer NOT NULL,
    attempted_at    timestamptz NOT NULL,
    outcome         text NOT NULL,
    http_status     integer,
    error           text NOT NULL DEFAULT '',
    duration_ms     bigint NOT NULL,
    next_attempt_at timestamptz,
    CONSTRAINT delivery_attempts_pkey PRIMARY KEY (id),
    CONSTRAINT delivery_attempts_webhook_id_fkey FOREIGN KEY (webhook_id) REFERENCES webhooks (id) ON DELETE CASCADE
);
-- A webhook's attempts in id order, and the cascade when it is deleted.
CREATE INDEX delivery_attempts_webhook_id ON delivery_attempts (webhook_id, id);
