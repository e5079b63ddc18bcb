-- The inventory's life over the API: deleted locations, the operator's hold on an EVSE's
-- status, and the answers kept for idempotency keys.

-- Set when the location was deleted; the row stays, so that its id is never used again.
ALTER TABLE locations ADD COLUMN deleted_at timestamptz;
-- True while the EVSE is INOPERATIVE because the operator set it.
ALTER TABLE evses ADD COLUMN operator_hold boolean NOT NULL DEFAULT false;

-- The first answer to each API key's Idempotency-Key, kept for 24 hours; written in the
-- transaction that created what the answer shows. header is a JSON object of header
-- names and values; body comes back byte for byte.
CREATE TABLE idempotency_keys (
    owner       text NOT NULL,
    key         text NOT NULL,
    fingerprint bytea NOT NULL,
    status      integer NOT NULL,
    header      jsonb NOT NULL,
    body        bytea NOT NULL,
    created_at  timestamptz NOT NULL,
    CONSTRAINT idempotency_keys_pkey PRIMARY KEY (owner, key)
);
-- The oldest answers first, for pruning the expired ones.
CREATE INDEX idempotency_keys_created_at ON idempotency_keys (created_at);
