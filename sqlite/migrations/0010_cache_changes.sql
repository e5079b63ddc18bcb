-- What each commit changed, for the read caches of the processes on the file (see
-- readcache.go): a cache that sees the WAL-index header move reads the rows after the
-- last one it saw and drops only the EVSEs named there, and its location pages only
-- when pages_gen moved. Triggers write both in the transaction of the change, whoever
-- makes it (this program, an older one, plain SQL). Rows are pruned from the oldest; a
-- cache that finds rows missing after the last one it saw drops everything.
CREATE TABLE cache_changes (
    seq      INTEGER PRIMARY KEY,
    evse_uid INTEGER NOT NULL
);
CREATE TABLE cache_pages (
    gen INTEGER NOT NULL
);
INSERT INTO cache_pages (gen) VALUES (0);

CREATE TRIGGER connectors_inserted_cache AFTER INSERT ON connectors
BEGIN INSERT INTO cache_changes (evse_uid) VALUES (NEW.evse_uid); END;
CREATE TRIGGER connectors_updated_cache AFTER UPDATE ON connectors
BEGIN INSERT INTO cache_changes (evse_uid) VALUES (NEW.evse_uid); END;
CREATE TRIGGER connectors_deleted_cache AFTER DELETE ON connectors
BEGIN INSERT INTO cache_changes (evse_uid) VALUES (OLD.evse_uid); END;

CREATE TRIGGER evses_inserted_cache AFTER INSERT ON evses
BEGIN
    INSERT INTO cache_changes (evse_uid) VALUES (NEW.uid);
    UPDATE cache_pages SET gen = gen + 1 WHERE NEW.location_id IS NOT NULL;
END;
CREATE TRIGGER evses_updated_cache AFTER UPDATE ON evses
BEGIN
    INSERT INTO cache_changes (evse_uid) VALUES (NEW.uid);
    UPDATE cache_pages SET gen = gen + 1 WHERE OLD.location_id IS NOT NEW.location_id OR OLD.uid IS NOT NEW.uid;
END;
CREATE TRIGGER evses_deleted_cache AFTER DELETE ON evses
BEGIN
    INSERT INTO cache_changes (evse_uid) VALUES (OLD.uid);
    UPDATE cache_pages SET gen = gen + 1 WHERE OLD.location_id IS NOT NULL;
END;

CREATE TRIGGER locations_inserted_cache AFTER INSERT ON locations
BEGIN UPDATE cache_pages SET gen = gen + 1; END;
CREATE TRIGGER locations_updated_cache AFTER UPDATE ON locations
BEGIN UPDATE cache_pages SET gen = gen + 1; END;
CREATE TRIGGER locations_deleted_cache AFTER DELETE ON locations
BEGIN UPDATE cache_pages SET gen = gen + 1; END;
