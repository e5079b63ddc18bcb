-- EVSE change positions (migration 0011) move to a table of their own, evse_changes, with
-- the change time the lists filter on. A change of an EVSE then writes no column that an
-- index of evses covers, so PostgreSQL updates the row in place (a heap-only tuple): no
-- new entry in each of the six indexes of evses, and no index that grows with every
-- status report until vacuum catches up. Only evse_changes' small row is written with
-- its indexes.
--
-- As before, every change of an EVSE (its row or its connectors), whoever writes it,
-- sets the position to the id of the writing transaction: the statement triggers below.
CREATE TABLE evse_changes (
    uid bigint PRIMARY KEY,
    change_xid xid8 NOT NULL,
    last_updated timestamptz NOT NULL
);
INSERT INTO evse_changes (uid, change_xid, last_updated) SELECT uid, change_xid, last_updated FROM evses;
CREATE INDEX evse_changes_change ON evse_changes (change_xid, uid);
CREATE INDEX evse_changes_last_updated ON evse_changes (last_updated);

DROP TRIGGER evses_change_xid ON evses;
DROP TRIGGER connectors_change_xid ON connectors;
DROP FUNCTION connectors_change_xid;
DROP INDEX evses_change, evses_last_updated;
ALTER TABLE evses DROP COLUMN change_xid;
-- Room on each page for the next version of its rows, so that the update in place finds
-- it there (rows written from now on).
ALTER TABLE evses SET (fillfactor = 90);

-- The EVSEs in "changed" (inserted or updated) take this transaction's position and
-- their change time; EVSEs whose uid an UPDATE changed ("gone" holds the rows before it)
-- leave the list under the old uid.
CREATE FUNCTION evses_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF TG_OP = 'UPDATE' THEN
        DELETE FROM evse_changes WHERE uid IN (SELECT uid FROM gone EXCEPT SELECT uid FROM changed);
    END IF;
    INSERT INTO evse_changes (uid, change_xid, last_updated)
    SELECT uid, pg_current_xact_id(), last_updated FROM changed
    ON CONFLICT (uid) DO UPDATE SET change_xid = excluded.change_xid, last_updated = excluded.last_updated;
    RETURN NULL;
END
$$;
CREATE FUNCTION evses_deleted() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    DELETE FROM evse_changes WHERE uid IN (SELECT uid FROM gone);
    RETURN NULL;
END
$$;
CREATE TRIGGER evses_inserted_change AFTER INSERT ON evses
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION evses_changed();
CREATE TRIGGER evses_updated_change AFTER UPDATE ON evses
    REFERENCING OLD TABLE AS gone NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION evses_changed();
CREATE TRIGGER evses_deleted_change AFTER DELETE ON evses
    REFERENCING OLD TABLE AS gone FOR EACH STATEMENT EXECUTE FUNCTION evses_deleted();

-- A connector's change moves its EVSE (before and after the change, for an UPDATE that
-- moves the connector), unless the transaction already did (every write of this program
-- writes the EVSE's row first): then nothing more is written.
CREATE FUNCTION connectors_changed() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE evse_changes SET change_xid = pg_current_xact_id()
    WHERE uid IN (SELECT evse_uid FROM changed) AND change_xid <> pg_current_xact_id();
    RETURN NULL;
END
$$;
CREATE FUNCTION connectors_updated() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE evse_changes SET change_xid = pg_current_xact_id()
    WHERE uid IN (SELECT evse_uid FROM changed UNION SELECT evse_uid FROM gone) AND change_xid <> pg_current_xact_id();
    RETURN NULL;
END
$$;
CREATE TRIGGER connectors_inserted_change AFTER INSERT ON connectors
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION connectors_changed();
CREATE TRIGGER connectors_updated_change AFTER UPDATE ON connectors
    REFERENCING OLD TABLE AS gone NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION connectors_updated();
CREATE TRIGGER connectors_deleted_change AFTER DELETE ON connectors
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION connectors_changed();

-- The trigger that retires a stale doc (migration 0010) is called only for an UPDATE
-- that leaves doc as it was: one that writes the doc (every write of this program) costs
-- no call.
DROP TRIGGER evses_doc_stale ON evses;
CREATE TRIGGER evses_doc_stale BEFORE UPDATE ON evses
    FOR EACH ROW WHEN (NEW.doc IS NOT DISTINCT FROM OLD.doc) EXECUTE FUNCTION evses_doc_stale();
