-- Each location's contract JSON (chargenet.LocationJSON), kept up to date by Import, so
-- that a page of locations is sent as stored. Rows of earlier versions are filled in
-- when the store opens.
ALTER TABLE locations ADD COLUMN doc TEXT;
-- Finds the rows still to fill without reading the table.
CREATE INDEX locations_without_doc ON locations (id) WHERE doc IS NULL;
