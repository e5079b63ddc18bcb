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
