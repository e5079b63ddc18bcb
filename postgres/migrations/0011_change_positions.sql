-- Change positions (chargenet.ChangeSeek): every change of an EVSE (its row or its
-- connectors) or of a location (its row, or which EVSEs it holds) sets the row's
-- change_xid to the id of the writing transaction, whoever writes (the group commit,
-- the inventory operations, import, plain SQL). Transaction ids are given in the order
-- transactions start writing, not in commit order: a change list returns only rows whose
-- change_xid is below the xmin of its snapshot (every transaction below it has ended),
-- so that no change can later commit with a position at or before one already read.
--
-- Existing rows take the id of this migration's transaction; the columns are added with
-- it as their default, which writes no row through the triggers (an UPDATE would clear
-- the stored JSON of every location, see migration 0010).
ALTER TABLE evses ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE evses ALTER COLUMN change_xid DROP DEFAULT;
ALTER TABLE locations ADD COLUMN change_xid xid8 NOT NULL DEFAULT pg_current_xact_id();
ALTER TABLE locations ALTER COLUMN change_xid DROP DEFAULT;

-- The change lists in order, from the index: a page deep in the list costs what the
-- first one does. With a Since later than most changes, the planner reads the few rows
-- changed since from the index on last_updated instead of walking past the others.
CREATE INDEX evses_change ON evses (change_xid, uid);
CREATE INDEX locations_change ON locations (change_xid, id);
CREATE INDEX evses_last_updated ON evses (last_updated);
CREATE INDEX locations_last_updated ON locations (last_updated);

CREATE FUNCTION set_change_xid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    NEW.change_xid := pg_current_xact_id();
    RETURN NEW;
END
$$;
CREATE TRIGGER evses_change_xid BEFORE INSERT OR UPDATE ON evses
    FOR EACH ROW EXECUTE FUNCTION set_change_xid();
CREATE TRIGGER locations_change_xid BEFORE INSERT OR UPDATE ON locations
    FOR EACH ROW EXECUTE FUNCTION set_change_xid();

-- A connector's change moves its EVSE, unless the transaction already wrote the EVSE's
-- row (every write of this program does, before its connectors): then nothing more is
-- written.
CREATE FUNCTION connectors_change_xid() RETURNS trigger LANGUAGE plpgsql AS $$
DECLARE
    evse bigint := CASE WHEN TG_OP = 'DELETE' THEN OLD.evse_uid ELSE NEW.evse_uid END;
BEGIN
    UPDATE evses SET change_xid = pg_current_xact_id()
    WHERE uid = evse AND change_xid <> pg_current_xact_id();
    RETURN NULL;
END
$$;
CREATE TRIGGER connectors_change_xid AFTER INSERT OR UPDATE OR DELETE ON connectors
    FOR EACH ROW EXECUTE FUNCTION connectors_change_xid();

-- An EVSE inserted at, moved between or deleted from locations moves them (their
-- evseUids changed), unless the transaction already wrote their rows.
CREATE FUNCTION evses_location_change_xid() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE locations SET change_xid = pg_current_xact_id()
    WHERE id IN (CASE WHEN TG_OP <> 'INSERT' THEN OLD.location_id END, CASE WHEN TG_OP <> 'DELETE' THEN NEW.location_id END)
      AND change_xid <> pg_current_xact_id();
    RETURN NULL;
END
$$;
CREATE TRIGGER evses_inserted_location_change AFTER INSERT ON evses
    FOR EACH ROW WHEN (NEW.location_id IS NOT NULL) EXECUTE FUNCTION evses_location_change_xid();
CREATE TRIGGER evses_moved_location_change AFTER UPDATE OF location_id ON evses
    FOR EACH ROW WHEN (OLD.location_id IS DISTINCT FROM NEW.location_id) EXECUTE FUNCTION evses_location_change_xid();
CREATE TRIGGER evses_deleted_location_change AFTER DELETE ON evses
    FOR EACH ROW WHEN (OLD.location_id IS NOT NULL) EXECUTE FUNCTION evses_location_change_xid();
