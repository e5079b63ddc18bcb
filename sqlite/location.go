package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"strconv"
	"strings"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
)

const (
	locationColumns = `id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated, version`

	// locationRowColumns are a location's columns and the ascending uids of its EVSEs as
	// one comma-separated text (NULL when it has none): one row per location, so a page
	// reads no more rows than it returns and needs no sort; see scanLocations.
	locationRowColumns = `l.id, l.name, l.address, l.city, l.postal_code, l.country, l.latitude, l.longitude, ` +
		`l.time_zone, l.last_updated, l.version, ` +
		`(SELECT group_concat(e.uid, ',' ORDER BY e.uid) FROM evses e WHERE e.location_id = l.id), l.deleted_at`

	locationByIDQuery = `SELECT ` + locationRowColumns + ` FROM locations l WHERE l.id = ?`
)

// listLocationsQuery returns the keyset read of one slice of locations that are not
// deleted, with their EVSE uids, in one statement. Its parameters are the key (when
// mode has one) and the limit.
func listLocationsQuery(backward bool, mode keyMode) string {
	where, dir := keyset("l.id", "l.deleted_at IS NULL", backward, mode)
	return `SELECT ` + locationRowColumns + ` FROM locations l ` + where + `ORDER BY l.id ` + dir + ` LIMIT ?`
}

// scanLocations reads location rows (see locationRowColumns) in the order they come. It
// closes rows.
func scanLocations(rows *sql.Rows, capacity int) ([]chargenet.Location, error) {
	defer func() { _ = rows.Close() }()
	out := make([]chargenet.Location, 0, min(capacity, 1000))
	var (
		l       chargenet.Location
		updated string
		uids    sql.NullString
		deleted sql.NullString
	)
	dest := []any{&l.ID, &l.Name, &l.Address, &l.City, &l.PostalCode, &l.Country, &l.Latitude, &l.Longitude,
		&l.TimeZone, &updated, &l.Version, &uids, &deleted}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		loc, err := locationOf(l, updated, uids, deleted)
		if err != nil {
			return nil, err
		}
		out = append(out, loc)
	}
	return out, rows.Err()
}

// locationOf returns l with the columns of a location row that need parsing.
func locationOf(l chargenet.Location, updated string, uids, deleted sql.NullString) (chargenet.Location, error) {
	t, err := parseStamp(updated)
	if err != nil {
		return l, err
	}
	l.LastUpdated = t
	if l.EvseUIDs, err = parseUIDs(uids); err != nil {
		return l, err
	}
	if deleted.Valid {
		at, err := parseStamp(deleted.String)
		if err != nil {
			return l, err
		}
		l.DeletedAt = &at
	}
	return l, nil
}

// parseUIDs reads group_concat's comma-separated uids; NULL is none (an empty slice).
func parseUIDs(s sql.NullString) ([]int64, error) {
	if !s.Valid || s.String == "" {
		return []int64{}, nil
	}
	uids := make([]int64, 0, strings.Count(s.String, ",")+1)
	for part := range strings.SplitSeq(s.String, ",") {
		uid, err := strconv.ParseInt(part, 10, 64)
		if err != nil {
			return nil, fmt.Errorf("evse uid %q: %w", part, err)
		}
		uids = append(uids, uid)
	}
	return uids, nil
}

// Location returns the location with the uids of its EVSEs (ascending; empty, not nil,
// when it has none), read in one snapshot; a deleted location too, with DeletedAt. If there is no location with this id it
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

// ListLocations reads one keyset slice of the locations that are not deleted, with their EVSE uids, in one
// statement (see chargenet.Seek): ascending ids after seek.Key, or descending ids
// before it when seek.Backward. Ids compare byte by byte. The result is empty, not nil,
// past the end. Errors are wrapped driver or context errors.
func (s *Store) ListLocations(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.Location, error) {
	if seek.Limit <= 0 {
		return []chargenet.Location{}, nil
	}
	rows, err := seekRows(ctx, &s.reads, listLocationsQuery, seek)
	if err != nil {
		return nil, wrap("list locations", err)
	}
	locs, err := scanLocations(rows, seek.Limit)
	return locs, wrap("list locations", err)
}

// ListLocationDocs reads one keyset slice of locations (see ListLocations) as their
// contract JSON (wire.EncodeLocation): the locations read in one statement and
// encoded. Errors are wrapped driver or context errors.
//
// The answer may come from the read cache (see SetReadCacheSize) while nothing has been
// committed since it was read; of a cached page whose ids no commit changed, only the
// locations a commit changed are read and encoded again. The returned JSON must not be
// modified.
func (s *Store) ListLocationDocs(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, error) {
	if seek.Limit <= 0 {
		return []chargenet.LocationDoc{}, nil
	}
	at, cacheable := s.cache.view(ctx)
	if cacheable {
		if docs, ok := s.cache.page(at, seek); ok {
			return docs, nil
		}
	}
	locs, err := s.ListLocations(ctx, seek)
	if err != nil {
		return nil, err
	}
	docs := make([]chargenet.LocationDoc, len(locs))
	for i := range locs {
		doc, err := wire.EncodeLocation(&locs[i])
		if err != nil {
			return nil, wrap("list location docs", err)
		}
		docs[i] = chargenet.LocationDoc{ID: locs[i].ID, JSON: clip(doc)}
	}
	if cacheable {
		s.cache.putPage(at, seek, docs)
	}
	return docs, nil
}

// encodeLocations reads the locations ids and returns the JSON of each by id: the read
// cache's locationEncoder.
func (s *Store) encodeLocations(ctx context.Context, ids []string) (map[string][]byte, error) {
	out := make(map[string][]byte, len(ids))
	for _, id := range ids {
		l, err := s.Location(ctx, id)
		if err != nil {
			return nil, err
		}
		doc, err := wire.EncodeLocation(l)
		if err != nil {
			return nil, err
		}
		out[id] = clip(doc)
	}
	return out, nil
}
