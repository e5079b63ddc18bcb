-- Change positions (chargenet.ChangeSeek): every change of an EVSE (its row or its
-- connectors) or of a location (its row, or which EVSEs it holds) moves the item to the
-- next position of its list. SQLite has one writer at a time, so a position taken in the
-- writing transaction orders changes as they were committed. Triggers take it, in the
-- transaction of the change, whoever makes it (the group commit, the inventory
-- operations, import, plain SQL).
--
-- The positions live in side tables keyed by the item: writing them does not write the
-- evses or locations row again (which would fire the read-cache triggers of migration
-- 0010 a second time and rewrite the stored JSON). The index on pos holds (pos, key), so
-- a change list is read in order from the index and costs the same at any depth. The
-- next position is one more than the highest in use, read before the item's old entry
-- is replaced, so a position is never given twice; entries are never deleted (a row
-- deleted by plain SQL leaves its entry, which the reads skip), so the highest never
-- goes back. Updates that only write the stored
-- JSON (doc, doc_version) change nothing a partner sees and take no position.
--
-- hw (high water) is the latest last_updated of the item and of every change before it
-- in the list: it never decreases along the list, so the index on (hw, pos) finds in one
-- seek the first position from which an item can have changed at or after a time (the
-- start of a read with Since), however many changes came before.
CREATE TABLE evse_changes (
    uid INTEGER PRIMARY KEY,
    pos INTEGER NOT NULL,
    hw  TEXT NOT NULL
);
CREATE UNIQUE INDEX evse_changes_pos ON evse_changes (pos);
CREATE INDEX evse_changes_hw ON evse_changes (hw, pos);

CREATE TABLE location_changes (
    id  TEXT PRIMARY KEY,
    pos INTEGER NOT NULL,
    hw  TEXT NOT NULL
) WITHOUT ROWID;
CREATE UNIQUE INDEX location_changes_pos ON location_changes (pos);
CREATE INDEX location_changes_hw ON location_changes (hw, pos);

-- Existing rows, oldest update first (so hw is each one's last_updated).
INSERT INTO evse_changes (uid, pos, hw)
    SELECT uid, row_number() OVER (ORDER BY last_updated, uid), last_updated FROM evses;
INSERT INTO location_changes (id, pos, hw)
    SELECT id, row_number() OVER (ORDER BY last_updated, id), last_updated FROM locations;

CREATE TRIGGER evses_inserted_pos AFTER INSERT ON evses
BEGIN
    INSERT INTO evse_changes (uid, pos, hw) VALUES (NEW.uid, (SELECT coalesce(max(pos), 0) + 1 FROM evse_changes),
        max(NEW.last_updated, coalesce((SELECT max(hw) FROM evse_changes), '')))
        ON CONFLICT (uid) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
    INSERT INTO location_changes (id, pos, hw) SELECT NEW.location_id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(coalesce((SELECT last_updated FROM locations WHERE id = NEW.location_id), ''), coalesce((SELECT max(hw) FROM location_changes), ''))
        WHERE NEW.location_id IS NOT NULL
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER evses_updated_pos
AFTER UPDATE OF uid, evse_id, chargebox_id, location_id, status, last_updated, version, status_at, operator_hold ON evses
BEGIN
    INSERT INTO evse_changes (uid, pos, hw) VALUES (NEW.uid, (SELECT coalesce(max(pos), 0) + 1 FROM evse_changes),
        max(NEW.last_updated, coalesce((SELECT max(hw) FROM evse_changes), '')))
        ON CONFLICT (uid) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER evses_moved_pos AFTER UPDATE OF location_id ON evses
WHEN OLD.location_id IS NOT NEW.location_id
BEGIN
    INSERT INTO location_changes (id, pos, hw) SELECT OLD.location_id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(coalesce((SELECT last_updated FROM locations WHERE id = OLD.location_id), ''), coalesce((SELECT max(hw) FROM location_changes), ''))
        WHERE OLD.location_id IS NOT NULL
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
    INSERT INTO location_changes (id, pos, hw) SELECT NEW.location_id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(coalesce((SELECT last_updated FROM locations WHERE id = NEW.location_id), ''), coalesce((SELECT max(hw) FROM location_changes), ''))
        WHERE NEW.location_id IS NOT NULL
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER evses_deleted_pos AFTER DELETE ON evses
BEGIN
    INSERT INTO location_changes (id, pos, hw) SELECT OLD.location_id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(coalesce((SELECT last_updated FROM locations WHERE id = OLD.location_id), ''), coalesce((SELECT max(hw) FROM location_changes), ''))
        WHERE OLD.location_id IS NOT NULL
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;

CREATE TRIGGER connectors_inserted_pos AFTER INSERT ON connectors
BEGIN
    INSERT INTO evse_changes (uid, pos, hw) VALUES (NEW.evse_uid, (SELECT coalesce(max(pos), 0) + 1 FROM evse_changes),
        max(coalesce((SELECT last_updated FROM evses WHERE uid = NEW.evse_uid), ''), coalesce((SELECT max(hw) FROM evse_changes), '')))
        ON CONFLICT (uid) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER connectors_updated_pos AFTER UPDATE ON connectors
BEGIN
    INSERT INTO evse_changes (uid, pos, hw) VALUES (NEW.evse_uid, (SELECT coalesce(max(pos), 0) + 1 FROM evse_changes),
        max(coalesce((SELECT last_updated FROM evses WHERE uid = NEW.evse_uid), ''), coalesce((SELECT max(hw) FROM evse_changes), '')))
        ON CONFLICT (uid) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER connectors_deleted_pos AFTER DELETE ON connectors
BEGIN
    INSERT INTO evse_changes (uid, pos, hw) VALUES (OLD.evse_uid, (SELECT coalesce(max(pos), 0) + 1 FROM evse_changes),
        max(coalesce((SELECT last_updated FROM evses WHERE uid = OLD.evse_uid), ''), coalesce((SELECT max(hw) FROM evse_changes), '')))
        ON CONFLICT (uid) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;

CREATE TRIGGER locations_inserted_pos AFTER INSERT ON locations
BEGIN
    INSERT INTO location_changes (id, pos, hw) VALUES (NEW.id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(NEW.last_updated, coalesce((SELECT max(hw) FROM location_changes), '')))
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER locations_updated_pos
AFTER UPDATE OF id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated, deleted_at
ON locations
BEGIN
    INSERT INTO location_changes (id, pos, hw) VALUES (NEW.id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(NEW.last_updated, coalesce((SELECT max(hw) FROM location_changes), '')))
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
