-- The inventory's life over the API: deleted locations, the operator's hold on an EVSE's
-- status, and the answers kept for idempotency keys.
ALTER TABLE locations ADD COLUMN deleted_at TEXT;
-- 1 while the EVSE is INOPERATIVE because the operator set it.
ALTER TABLE evses ADD COLUMN operator_hold INTEGER NOT NULL DEFAULT 0;

-- The first answer to each API key's Idempotency-Key, kept for 24 hours; written in the
-- transaction that created what the answer shows.
CREATE TABLE idempotency_keys (
    owner       TEXT NOT NULL,
    key         TEXT NOT NULL,
    fingerprint BLOB NOT NULL,
    status      INTEGER NOT NULL,
    header      TEXT NOT NULL,
    body        BLOB NOT NULL,
    created_at  TEXT NOT NULL,
    PRIMARY KEY (owner, key)
) WITHOUT ROWID;
CREATE INDEX idempotency_keys_created ON idempotency_keys (created_at);
