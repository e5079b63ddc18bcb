-- The contract JSON of EVSEs and locations is no longer kept beside their rows: the
-- read cache keeps what is read often, and a read it does not answer encodes the rows
-- (chargenet.EVSEJSON, chargenet.LocationJSON). Every write rewrote the JSON of the
-- EVSE it changed and of the locations whose EVSEs changed.
DROP INDEX locations_without_doc;
DROP INDEX evses_stale_doc;
ALTER TABLE locations DROP COLUMN doc;
ALTER TABLE evses DROP COLUMN doc_version;
ALTER TABLE evses DROP COLUMN doc;
