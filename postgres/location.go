package postgres

import (
	"context"
	"errors"
	"slices"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// selectLocations selects locations with the uids of their EVSEs (REMOVED ones
// included), gathered in the same statement (an index-only scan of evses_location_uid
// per location), so in one snapshot.
const selectLocations = selectLocationColumns + ` FROM locations l`

// selectLocationColumns is selectLocations without its FROM clause.
const selectLocationColumns = `SELECT l.id, l.name, l.address, l.city, l.postal_code, l.country, l.latitude, l.longitude, ` +
	`l.time_zone, l.last_updated, l.version, l.deleted_at, ` +
	`ARRAY(SELECT e.uid FROM evses e WHERE e.location_id = l.id ORDER BY e.uid)`

// scanLocation reads one row of selectLocations.
func scanLocation(row pgx.CollectableRow) (chargenet.Location, error) {
	return scanLocationWith(row)
}

// scanLocationWith reads one row of selectLocationColumns followed by the columns
// scanned into extra.
func scanLocationWith(row pgx.CollectableRow, extra ...any) (chargenet.Location, error) {
	var l chargenet.Location
	var deleted pgtype.Timestamptz
	err := row.Scan(append([]any{&l.ID, &l.Name, &l.Address, &l.City, &l.PostalCode, &l.Country, &l.Latitude, &l.Longitude,
		&l.TimeZone, &l.LastUpdated, &l.Version, &deleted, &l.EvseUIDs}, extra...)...)
	l.LastUpdated = l.LastUpdated.UTC()
	if deleted.Valid {
		at := deleted.Time.UTC()
		l.DeletedAt = &at
	}
	if l.EvseUIDs == nil {
		l.EvseUIDs = []int64{}
	}
	return l, err
}

func locationNotFound(id string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "id", "location with id %q not found", id)
}

// Location returns the location with the uids of its EVSEs (ascending, REMOVED ones
// included; empty, not nil, when it has none), read in one statement; a deleted location
// too, with its DeletedAt. If there is no location with this id it returns an
// ErrNotFound *chargenet.Error with Code not_found, Param "id" and Message `location
// with id "<id>" not found`. Other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) Location(ctx context.Context, id string) (*chargenet.Location, error) {
	rows, err := s.pool.Query(ctx, selectLocations+` WHERE l.id = $1`, id)
	if err != nil {
		return nil, s.wrap("location", err)
	}
	l, err := pgx.CollectExactlyOneRow(rows, scanLocation)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, locationNotFound(id)
	}
	if err != nil {
		return nil, s.wrap("location", err)
	}
	return &l, nil
}

// ListLocations reads one keyset slice of the locations that are not deleted, with their
// EVSE uids, in one statement (see chargenet.Seek): ascending ids after seek.Key, or
// descending ids before it when seek.Backward. Ids compare byte by byte (the column's
// collation is "C"). The
// result is empty, not nil, past the end. Errors are wrapped driver or context errors,
// wrapping chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) ListLocations(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.Location, error) {
	if seek.Limit <= 0 {
		return []chargenet.Location{}, nil
	}
	query, args := filteredSeek(selectLocations, "l.deleted_at IS NULL", `l.id COLLATE "C"`, nil, seek)
	rows, err := s.pool.Query(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("list locations", err)
	}
	out, err := pgx.CollectRows(rows, scanLocation)
	if err != nil {
		return nil, s.wrap("list locations", err)
	}
	if out == nil {
		out = []chargenet.Location{}
	}
	return out, nil
}

// ListLocationDocs reads one keyset slice of the locations that are not deleted (see
// ListLocations) as their stored contract JSON (wire.EncodeLocation), in one
// statement, without decoding them. Concurrent calls are gathered into one round trip,
// identical ones read once (see readGroup). A location whose JSON is missing is read and encoded instead. Errors
// are wrapped driver or context errors, wrapping chargenet.ErrUnavailable if the
// database cannot be reached or the store is closed.
func (s *Store) ListLocationDocs(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, error) {
	const op = "list location docs"
	if seek.Limit <= 0 {
		return []chargenet.LocationDoc{}, nil
	}
	shared, _, err := s.locationDocs.get(ctx, seek)
	if err != nil {
		return nil, s.wrap(op, err)
	}
	out := slices.Clone(shared) // the page may be shared with other callers
	for i := range out {
		if out[i].JSON != nil {
			continue
		}
		l, err := s.Location(ctx, out[i].ID)
		if err != nil {
			return nil, err
		}
		if out[i].JSON, err = wire.EncodeLocation(l); err != nil {
			return nil, s.wrap(op, err)
		}
	}
	if out == nil {
		out = []chargenet.LocationDoc{}
	}
	return out, nil
}
