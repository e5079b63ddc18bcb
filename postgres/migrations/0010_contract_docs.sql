-- Each EVSE's and each location's contract JSON (chargenet.EVSEJSON, LocationJSON), so
-- that a read is one indexed lookup sending stored bytes. Rows of earlier versions are
-- filled in when the store opens; a row without its JSON is read and encoded instead.
--
-- An EVSE's doc is used only while doc_version equals version: every change of an EVSE
-- or its connectors increments the version, so a change by a program that does not keep
-- the doc retires it.
ALTER TABLE evses ADD COLUMN doc text, ADD COLUMN doc_version bigint;
-- A location's doc is used only while doc_uids equals the uids of its EVSEs (they are
-- in the JSON), and an UPDATE of the row that does not write doc clears it.
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
