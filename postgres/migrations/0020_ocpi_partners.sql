-- OCPI roaming partners, and their Locations RECEIVER as a subscriber of the inventory
-- events (chargenet.PartnerService).
--
-- The tokens chargenet accepts are kept as SHA-256 hashes: the registration token (A)
-- until the partner registers, then the credentials token it was issued. token is the
-- partner's own token, which chargenet sends and must therefore keep as it is.
CREATE TABLE partners (
    id                text COLLATE "C" NOT NULL,
    name              text COLLATE "C" NOT NULL,
    registration_hash bytea,
    token_hash        bytea,
    registered        boolean NOT NULL DEFAULT false,
    token             text NOT NULL DEFAULT '',
    versions_url      text NOT NULL DEFAULT '',
    endpoints         jsonb NOT NULL DEFAULT '[]',
    roles             jsonb NOT NULL DEFAULT '[]',
    created_at        timestamptz NOT NULL,
    updated_at        timestamptz NOT NULL,
    CONSTRAINT partners_pkey PRIMARY KEY (id),
    CONSTRAINT partners_name_key UNIQUE (name),
    CONSTRAINT partners_registration_hash_key UNIQUE (registration_hash),
    CONSTRAINT partners_token_hash_key UNIQUE (token_hash)
);

-- A partner's receiver is a webhook owned by no API key, deleted with the partner.
ALTER TABLE webhooks ADD COLUMN partner_id text COLLATE "C"
    CONSTRAINT webhooks_partner_id_fkey REFERENCES partners (id) ON DELETE CASCADE;

-- The location a push to a partner is about (chargenet.EventSubject): a partner's pushes
-- of one location are claimed one after the other, in outbox order. NULL for webhook
-- deliveries, which are not ordered.
ALTER TABLE outbox ADD COLUMN subject text COLLATE "C";
CREATE INDEX outbox_subject ON outbox (webhook_id, subject, id) WHERE subject IS NOT NULL;

-- The OCPI Locations list: oldest last_updated first, then by id.
CREATE INDEX locations_updated ON locations (last_updated, id);
