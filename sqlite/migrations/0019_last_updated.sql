-- lastUpdated grows with every version (chargenet.NextUpdate): connectors keep the time
-- of their own last change, locations count their changes in version, and a location's
-- last_updated is never earlier than any of its EVSEs' (it moves with every change of
-- its EVSEs from now on).
--
-- A connector's last_updated is NULL for the rows written before and by a program that
-- does not set it: it reads as its EVSE's last_updated, which it never passes. Filling
-- it in here would write every connector row, and the triggers of migration 0011 would
-- move every EVSE to the end of the change list.
ALTER TABLE connectors ADD COLUMN last_updated TEXT;
ALTER TABLE locations ADD COLUMN version INTEGER NOT NULL DEFAULT 1;
-- Locations older than one of their EVSEs move to its time (and, through the triggers,
-- to the end of the change list: their lastUpdated changed).
UPDATE locations SET last_updated = (SELECT max(e.last_updated) FROM evses e WHERE e.location_id = locations.id)
WHERE last_updated < (SELECT max(e.last_updated) FROM evses e WHERE e.location_id = locations.id);
