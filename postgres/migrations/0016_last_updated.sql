-- lastUpdated grows with every version (chargenet.NextUpdate): connectors keep the time
-- of their own last change, locations count their changes in version, and a location's
-- last_updated is never earlier than any of its EVSEs' (it moves with every change of
-- its EVSEs from now on).
--
-- A connector's last_updated is NULL for the rows written before and by a program that
-- does not set it: it reads as its EVSE's last_updated, which it never passes. Filling
-- it in here would rewrite every connector row for nothing.
ALTER TABLE connectors ADD COLUMN last_updated timestamptz;
ALTER TABLE locations ADD COLUMN version bigint NOT NULL DEFAULT 1;

-- Locations older than one of their EVSEs move to its time (and, through the triggers,
-- to the end of the change list: their lastUpdated changed).
UPDATE locations l SET last_updated = m.t
FROM (SELECT location_id, max(last_updated) AS t FROM evses WHERE location_id IS NOT NULL GROUP BY location_id) m
WHERE m.location_id = l.id AND m.t > l.last_updated;

-- The stored JSON of every EVSE and location (migration 0010) gains version and shows
-- times with six fractional digits: it is written again when the store opens. Clearing
-- it changes nothing a partner sees, so it moves nothing in the change lists.
ALTER TABLE evses DISABLE TRIGGER evses_updated_change;
UPDATE evses SET doc = NULL, doc_version = NULL WHERE doc IS NOT NULL;
ALTER TABLE evses ENABLE TRIGGER evses_updated_change;
ALTER TABLE locations DISABLE TRIGGER locations_change_xid;
UPDATE locations SET doc = NULL WHERE doc IS NOT NULL;
ALTER TABLE locations ENABLE TRIGGER locations_change_xid;
