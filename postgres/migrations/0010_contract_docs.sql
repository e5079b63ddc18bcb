-- Each EVSE's and each location's contract JSON (chargenet.EVSEJSON, LocationJSON), so
-- that a read is one indexed lookup sending stored bytes. Rows of earlier versions are
-- filled in when the store opens; a row without its JSON is read and encoded instead.
--
-- An EVSE's doc is used only while doc_version equals version: every change of an EVSE
-- or its connectors increments the version, so a change by a program that does not keep
-- the doc retires it. An UPDATE that changes what the doc shows of the row itself
-- without writing doc clears it too (the trigger below), version or not.
ALTER TABLE evses ADD COLUMN doc text, ADD COLUMN doc_version bigint;
CREATE FUNCTION evses_doc_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.doc IS NOT DISTINCT FROM OLD.doc AND
       (NEW.evse_id, NEW.chargebox_id, NEW.location_id, NEW.status, NEW.last_updated, NEW.version) IS DISTINCT FROM
       (OLD.evse_id, OLD.chargebox_id, OLD.location_id, OLD.status, OLD.last_updated, OLD.version) THEN
        NEW.doc := NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER evses_doc_stale BEFORE UPDATE ON evses
    FOR EACH ROW EXECUTE FUNCTION evses_doc_stale();

-- A location's doc lists the uids of its EVSEs, kept in doc_uids. An UPDATE of the row
-- that does not write doc clears it, and so does a change of the location's EVSEs
-- (insert, delete, move) that leaves them other than doc_uids says: the triggers below.
ALTER TABLE locations ADD COLUMN doc text, ADD COLUMN doc_uids bigint[];
CREATE INDEX locations_without_doc ON locations (id) WHERE doc IS NULL;

CREATE FUNCTION locations_doc_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    IF NEW.doc IS NOT DISTINCT FROM OLD.doc THEN
        NEW.doc := NULL;
    END IF;
    RETURN NEW;
END
$$;
CREATE TRIGGER locations_doc_stale BEFORE UPDATE ON locations
    FOR EACH ROW EXECUTE FUNCTION locations_doc_stale();

-- Clears the doc of the locations of the EVSEs in the transition table "changed" whose
-- EVSEs no longer are doc_uids.
CREATE FUNCTION evses_location_docs_stale() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE locations l SET doc = NULL
    WHERE l.id IN (SELECT location_id FROM changed WHERE location_id IS NOT NULL) AND l.doc IS NOT NULL
      AND l.doc_uids IS DISTINCT FROM ARRAY(SELECT e.uid FROM evses e WHERE e.location_id = l.id ORDER BY e.uid);
    RETURN NULL;
END
$$;
CREATE TRIGGER evses_inserted_location_docs AFTER INSERT ON evses
    REFERENCING NEW TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION evses_location_docs_stale();
CREATE TRIGGER evses_deleted_location_docs AFTER DELETE ON evses
    REFERENCING OLD TABLE AS changed FOR EACH STATEMENT EXECUTE FUNCTION evses_location_docs_stale();

-- An EVSE moved to another location: both locations' docs, when they no longer match.
CREATE FUNCTION evses_moved_location_docs() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE locations l SET doc = NULL
    WHERE l.id IN (OLD.location_id, NEW.location_id) AND l.doc IS NOT NULL
      AND l.doc_uids IS DISTINCT FROM ARRAY(SELECT e.uid FROM evses e WHERE e.location_id = l.id ORDER BY e.uid);
    RETURN NULL;
END
$$;
CREATE TRIGGER evses_moved_location_docs AFTER UPDATE OF location_id ON evses
    FOR EACH ROW WHEN (OLD.location_id IS DISTINCT FROM NEW.location_id) EXECUTE FUNCTION evses_moved_location_docs();
