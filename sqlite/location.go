package sqlite

import (
	"context"
	"database/sql"

	"github.com/chargenet/chargenet"
)

const (
	locationColumns = `id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated`

	// locationRowColumns are the columns of a location joined with one of its EVSEs'
	// uid (NULL for a location without EVSEs); see scanLocations.
	locationRowColumns = `l.id, l.name, l.address, l.city, l.postal_code, l.country, l.latitude, l.longitude, ` +
		`l.time_zone, l.last_updated, e.uid`

	locationByIDQuery = `SELECT ` + locationRowColumns + ` FROM locations l LEFT JOIN evses e ON e.location_id = l.id ` +
		`WHERE l.id = ? ORDER BY e.uid`
)

// listLocationsQuery returns the keyset read of one slice of locations with their EVSE
// uids, in one statement. Its parameters are the key (when hasKey) and the limit.
func listLocationsQuery(backward, hasKey bool) string {
	cmp, dir := ">", "ASC"
	if backward {
		cmp, dir = "<", "DESC"
	}
	where := ""
	if hasKey {
		where = "WHERE id " + cmp + " ? "
	}
	return `WITH page AS (SELECT ` + locationColumns + ` FROM locations ` + where + `ORDER BY id ` + dir + ` LIMIT ?) ` +
		`SELECT ` + locationRowColumns + ` FROM page l LEFT JOIN evses e ON e.location_id = l.id ` +
		`ORDER BY l.id ` + dir + `, e.uid`
}

// scanLocations reads location-with-EVSE-uid rows, grouped by location in the order the
// rows come. It closes rows.
func scanLocations(rows *sql.Rows, capacity int) ([]chargenet.Location, error) {
	defer func() { _ = rows.Close() }()
	out := make([]chargenet.Location, 0, capacity)
	var (
		l       chargenet.Location
		updated string
		uid     sql.NullInt64
	)
	dest := []any{&l.ID, &l.Name, &l.Address, &l.City, &l.PostalCode, &l.Country, &l.Latitude, &l.Longitude,
		&l.TimeZone, &updated, &uid}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].ID != l.ID {
			t, err := parseTime(updated)
			if err != nil {
				return nil, err
			}
			loc := l
			loc.LastUpdated = t
			loc.EvseUIDs = []int64{}
			out = append(out, loc)
		}
		if uid.Valid {
			last := &out[len(out)-1]
			last.EvseUIDs = append(last.EvseUIDs, uid.Int64)
		}
	}
	return out, rows.Err()
}

// Location returns the location with the uids of its EVSEs (ascending; empty, not nil,
// when it has none), read in one snapshot. If there is no location with this id it
// returns an ErrNotFound *chargenet.Error with Code not_found and Param "id".
func (s *Store) Location(ctx context.Context, id string) (*chargenet.Location, error) {
	rows, err := s.location.QueryContext(ctx, id)
	if err != nil {
		return nil, wrap("location", err)
	}
	locs, err := scanLocations(rows, 1)
	if err != nil {
		return nil, wrap("location", err)
	}
	if len(locs) == 0 {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "id", "location with id %q not found", id)
	}
	return &locs[0], nil
}

// ListLocations reads one keyset slice of locations with their EVSE uids, in one
// statement (see chargenet.Seek): ascending ids after seek.Key, or descending ids
// before it when seek.Backward. Ids compare byte by byte. The result is empty, not nil,
// past the end. Errors are wrapped driver or context errors.
func (s *Store) ListLocations(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.Location, error) {
	if seek.Limit <= 0 {
		return []chargenet.Location{}, nil
	}
	rows, err := seekRows(ctx, &s.locations, seek)
	if err != nil {
		return nil, wrap("list locations", err)
	}
	locs, err := scanLocations(rows, seek.Limit)
	return locs, wrap("list locations", err)
}
