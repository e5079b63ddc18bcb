-- OCPI roaming partners, and their Locations RECEIVER as a subscriber of the inventory
-- events (chargenet.PartnerService).
--
-- The tokens chargenet accepts are kept as SHA-256 hashes: the registration token (A)
-- until the partner registers, then the credentials token it was issued. token is the
-- partner's own token, which chargenet sends and must therefore keep as it is.
-- endpoints and roles are JSON arrays.
CREATE TABLE partners (
    id                TEXT PRIMARY KEY,
    name              TEXT NOT NULL UNIQUE,
    registration_hash BLOB UNIQUE,
    token_hash        BLOB UNIQUE,
    registered        INTEGER NOT NULL DEFAULT 0,
    token             TEXT NOT NULL DEFAULT '',
    versions_url      TEXT NOT NULL DEFAULT '',
    endpoints         TEXT NOT NULL DEFAULT '[]',
    roles             TEXT NOT NULL DEFAULT '[]',
    created_at        TEXT NOT NULL,
    updated_at        TEXT NOT NULL
) WITHOUT ROWID;

-- A partner's receiver is a webhook owned by no API key, deleted with the partner.
ALTER TABLE webhooks ADD COLUMN partner_id TEXT REFERENCES partners (id) ON DELETE CASCADE;

-- The location an event is about (chargenet.EventSubject), and on a push to a partner
-- the same: a partner's pushes of one location are claimed one after the other, in
-- outbox order. NULL for webhook deliveries, which are not ordered.
ALTER TABLE events ADD COLUMN subject TEXT NOT NULL DEFAULT '';
ALTER TABLE outbox ADD COLUMN subject TEXT;
CREATE INDEX outbox_subject ON outbox (webhook_id, subject, id) WHERE subject IS NOT NULL;

-- The OCPI Locations list: oldest last_updated first, then by id.
CREATE INDEX locations_updated ON locations (last_updated, id);
