-- The read cache learns what a commit changed from the change positions of migration
-- 0011 instead of tables of its own: an EVSE whose evse_changes position is past the
-- one the cache last read has changed (its row or its connectors), and the location
-- pages have changed when the highest location_changes position has moved. Every
-- commit wrote the same facts twice before, and pruning the old record cost pages of
-- every commit.
DROP TRIGGER connectors_inserted_cache;
DROP TRIGGER connectors_updated_cache;
DROP TRIGGER connectors_deleted_cache;
DROP TRIGGER evses_inserted_cache;
DROP TRIGGER evses_updated_cache;
DROP TRIGGER evses_deleted_cache;
DROP TRIGGER locations_inserted_cache;
DROP TRIGGER locations_updated_cache;
DROP TRIGGER locations_deleted_cache;
DROP TABLE cache_changes;
DROP TABLE cache_pages;

-- Rows removed or renumbered by plain SQL (the service never does either) move too,
-- so that the cache drops them; a change list skips a position whose row is gone.
DROP TRIGGER evses_deleted_pos;
CREATE TRIGGER evses_deleted_pos AFTER DELETE ON evses
BEGIN
    INSERT INTO evse_changes (uid, pos, hw) VALUES (OLD.uid, (SELECT coalesce(max(pos), 0) + 1 FROM evse_changes),
        max(OLD.last_updated, coalesce((SELECT max(hw) FROM evse_changes), '')))
        ON CONFLICT (uid) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
    INSERT INTO location_changes (id, pos, hw) SELECT OLD.location_id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(coalesce((SELECT last_updated FROM locations WHERE id = OLD.location_id), ''), coalesce((SELECT max(hw) FROM location_changes), ''))
        WHERE OLD.location_id IS NOT NULL
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER evses_renumbered_pos AFTER UPDATE OF uid ON evses
WHEN OLD.uid IS NOT NEW.uid
BEGIN
    INSERT INTO evse_changes (uid, pos, hw) VALUES (OLD.uid, (SELECT coalesce(max(pos), 0) + 1 FROM evse_changes),
        max(OLD.last_updated, coalesce((SELECT max(hw) FROM evse_changes), '')))
        ON CONFLICT (uid) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
    INSERT INTO location_changes (id, pos, hw) SELECT NEW.location_id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(coalesce((SELECT last_updated FROM locations WHERE id = NEW.location_id), ''), coalesce((SELECT max(hw) FROM location_changes), ''))
        WHERE NEW.location_id IS NOT NULL
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
CREATE TRIGGER locations_deleted_pos AFTER DELETE ON locations
BEGIN
    INSERT INTO location_changes (id, pos, hw) VALUES (OLD.id, (SELECT coalesce(max(pos), 0) + 1 FROM location_changes),
        max(OLD.last_updated, coalesce((SELECT max(hw) FROM location_changes), '')))
        ON CONFLICT (id) DO UPDATE SET pos = excluded.pos, hw = excluded.hw;
END;
