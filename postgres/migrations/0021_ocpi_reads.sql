-- What the OCPI Locations list reads on every page, kept cheap to read.
--
-- The number of locations, deleted ones included: the OCPI Locations list's
-- X-Total-Count without a date filter, which a count(*) would read the whole table for
-- on every page. Statement triggers keep it, once per statement (an import's COPY
-- included); nothing else writes it. A transaction that adds locations holds its row
-- until it commits, so such transactions take turns; locations are seldom added.
CREATE TABLE location_total (
    id smallint PRIMARY KEY CHECK (id = 1),
    n  bigint NOT NULL
);
INSERT INTO location_total (id, n) SELECT 1, count(*) FROM locations;

CREATE FUNCTION location_total_add() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE location_total SET n = n + (SELECT count(*) FROM added) WHERE id = 1;
    RETURN NULL;
END $$;

CREATE FUNCTION location_total_remove() RETURNS trigger LANGUAGE plpgsql AS $$
BEGIN
    UPDATE location_total SET n = n - (SELECT count(*) FROM removed) WHERE id = 1;
    RETURN NULL;
END $$;

CREATE TRIGGER location_total_insert AFTER INSERT ON locations
    REFERENCING NEW TABLE AS added FOR EACH STATEMENT EXECUTE FUNCTION location_total_add();
CREATE TRIGGER location_total_delete AFTER DELETE ON locations
    REFERENCING OLD TABLE AS removed FOR EACH STATEMENT EXECUTE FUNCTION location_total_remove();

-- The list's order with each location's version: a page's versions (ListSiteVersions)
-- can be read from the index alone. It replaces locations_updated, whose order it has.
CREATE INDEX locations_updated_version ON locations (last_updated, id) INCLUDE (version);
DROP INDEX locations_updated;
