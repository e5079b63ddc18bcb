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

-- An UPDATE that writes only the stored JSON (doc, doc_version, doc_uids; migration
-- 0010) changes nothing a partner sees: it no longer moves the row in its change list
-- (migrations 0011 and 0014), as on SQLite. The store writes JSON alone when it opens
-- (rows without it), which otherwise moved every such row to the end of the lists.
CREATE OR REPLACE FUNCTION evses_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM evse_changes WHERE uid IN (SELECT uid FROM gone EXCEPT SELECT uid FROM changed);
        INSERT INTO evse_changes (uid, change_xid, last_updated)
        SELECT c.uid, pg_current_xact_id(), c.last_updated FROM changed c LEFT JOIN gone g ON g.uid = c.uid
        WHERE g.uid IS NULL
           OR (c.evse_id, c.chargebox_id, c.location_id, c.status, c.last_updated, c.version, c.operator_hold, c.status_at)
              IS DISTINCT FROM
              (g.evse_id, g.chargebox_id, g.location_id, g.status, g.last_updated, g.version, g.operator_hold, g.status_at)
        ON CONFLICT (uid) DO UPDATE SET change_xid = excluded.change_xid, last_updated = excluded.last_updated;
    ELSE
        INSERT INTO evse_changes (uid, change_xid, last_updated)
        SELECT uid, pg_current_xact_id(), last_updated FROM changed
        ON CONFLICT (uid) DO UPDATE SET change_xid = excluded.change_xid, last_updated = excluded.last_updated;
    END IF;
    RETURN NULL;
END
$$;
DROP TRIGGER locations_change_xid ON locations;
CREATE TRIGGER locations_inserted_change_xid BEFORE INSERT ON locations
    FOR EACH ROW EXECUTE FUNCTION set_change_xid();
CREATE TRIGGER locations_updated_change_xid BEFORE UPDATE ON locations
    FOR EACH ROW WHEN ((OLD.id, OLD.name, OLD.address, OLD.city, OLD.postal_code, OLD.country, OLD.latitude, OLD.longitude,
                        OLD.time_zone, OLD.last_updated, OLD.version, OLD.deleted_at)
                       IS DISTINCT FROM
                       (NEW.id, NEW.name, NEW.address, NEW.city, NEW.postal_code, NEW.country, NEW.latitude, NEW.longitude,
                        NEW.time_zone, NEW.last_updated, NEW.version, NEW.deleted_at))
    EXECUTE FUNCTION set_change_xid();

-- Locations older than one of their EVSEs move to its time (and to the end of the
-- location change list: their lastUpdated changed).
UPDATE locations l SET last_updated = m.t
FROM (SELECT location_id, max(last_updated) AS t FROM evses WHERE location_id IS NOT NULL GROUP BY location_id) m
WHERE m.location_id = l.id AND m.t > l.last_updated;

-- The stored JSON of every EVSE and location gains version and shows times with six
-- fractional digits: it is written again when the store opens.
UPDATE evses SET doc = NULL, doc_version = NULL WHERE doc IS NOT NULL;
UPDATE locations SET doc = NULL WHERE doc IS NOT NULL;
