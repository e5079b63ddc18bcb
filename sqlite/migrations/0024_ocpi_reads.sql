-- What the OCPI Locations list reads on every page, kept cheap to read.
--
-- The number of locations, deleted ones included: the OCPI Locations list's
-- X-Total-Count without a date filter, which a count(*) would read the whole table for
-- on every page. Triggers keep it; nothing else writes it.
CREATE TABLE location_total (
    id INTEGER PRIMARY KEY CHECK (id = 1),
    n  INTEGER NOT NULL
);
INSERT INTO location_total (id, n) SELECT 1, count(*) FROM locations;

CREATE TRIGGER location_total_insert AFTER INSERT ON locations
BEGIN
    UPDATE location_total SET n = n + 1 WHERE id = 1;
END;

CREATE TRIGGER location_total_delete AFTER DELETE ON locations
BEGIN
    UPDATE location_total SET n = n - 1 WHERE id = 1;
END;

-- The list's order with each location's version: a page's versions (ListSiteVersions)
-- are read from the index alone. It replaces locations_updated, whose order it has.
CREATE INDEX locations_updated_version ON locations (last_updated, id, version);
DROP INDEX locations_updated;
