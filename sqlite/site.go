package sqlite

import (
	"context"
	"database/sql"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
)

// siteColumns are the columns of a location joined with one of its EVSEs and one of
// that EVSE's connectors (NULL where it has none); see scanSites.
const siteColumns = `l.id, l.name, l.address, l.city, l.postal_code, l.country, l.latitude, l.longitude, l.time_zone, ` +
	`l.last_updated, l.version, l.deleted_at, ` + evseRowColumns

// siteJoin joins the locations l to their EVSEs e and connectors c.
const siteJoin = ` LEFT JOIN evses e ON e.location_id = l.id LEFT JOIN connectors c ON c.evse_uid = e.uid `

const siteByIDQuery = `SELECT ` + siteColumns + ` FROM locations l` + siteJoin + `WHERE l.id = ? ORDER BY e.uid, c.id`

// listSitesQuery returns the read of one page of sites in (last_updated, id) order, in
// one statement. Its parameters are, in this order, from (when from), to (when to), the
// position's last_updated and id (when after), the limit and the offset.
func listSitesQuery(from, to, after bool) string {
	return `WITH page AS (SELECT * FROM locations` + seekWhere(from, to, after) + ` ORDER BY last_updated, id LIMIT ? OFFSET ?) ` +
		`SELECT ` + siteColumns + ` FROM page l` + siteJoin + `ORDER BY l.last_updated, l.id, e.uid, c.id`
}

// listSiteVersionsQuery returns the read of the versions of the page listSitesQuery
// reads, with the same parameters.
func listSiteVersionsQuery(from, to, after bool) string {
	return `SELECT id, version, last_updated FROM locations` + seekWhere(from, to, after) + ` ORDER BY last_updated, id LIMIT ? OFFSET ?`
}

// seekWhere returns the WHERE clause of a read of locations between the bounds given
// and after a position (nothing when there are none).
func seekWhere(from, to, after bool) string {
	var conds []string
	if from {
		conds = append(conds, `last_updated >= ?`)
	}
	if to {
		conds = append(conds, `last_updated < ?`)
	}
	if after {
		conds = append(conds, `(last_updated, id) > (?, ?)`)
	}
	if len(conds) == 0 {
		return ""
	}
	return ` WHERE ` + strings.Join(conds, ` AND `)
}

// countSitesQuery counts the locations between the bounds given (see listSitesQuery);
// without bounds it reads the total the triggers of migration 0024 keep.
func countSitesQuery(from, to bool) string {
	if !from && !to {
		return `SELECT n FROM location_total WHERE id = 1`
	}
	return `SELECT count(*) FROM locations` + seekWhere(from, to, false)
}

// scanSites reads site rows (see siteColumns), grouped by location and EVSE in the order
// they come. It closes rows.
func scanSites(rows *sql.Rows, capacity int) ([]chargenet.Site, error) {
	defer func() { _ = rows.Close() }()
	out := make([]chargenet.Site, 0, capacity)
	var (
		l                chargenet.Location
		updated          string
		deleted          sql.NullString
		uid, chargebox   sql.NullInt64
		version          sql.NullInt64
		evseID, status   sql.NullString
		evseUpdated, loc sql.NullString
	)
	r := newEVSERow()
	dest := []any{&l.ID, &l.Name, &l.Address, &l.City, &l.PostalCode, &l.Country, &l.Latitude, &l.Longitude, &l.TimeZone,
		&updated, &l.Version, &deleted, &uid, &evseID, &chargebox, &loc, &status, &evseUpdated, &version}
	dest = append(dest, r.dest[7:]...) // the connector's columns
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].Location.ID != l.ID {
			loc, err := locationOf(l, updated, sql.NullString{}, deleted)
			if err != nil {
				return nil, err
			}
			out = append(out, chargenet.Site{Location: loc, EVSEs: []chargenet.EVSE{}})
		}
		site := &out[len(out)-1]
		if !uid.Valid {
			continue
		}
		if n := len(site.EVSEs); n == 0 || site.EVSEs[n-1].UID != uid.Int64 {
			at, err := parseTime(evseUpdated.String)
			if err != nil {
				return nil, err
			}
			site.EVSEs = append(site.EVSEs, chargenet.EVSE{UID: uid.Int64, EvseID: evseID.String, ChargeboxID: chargebox.Int64,
				LocationID: loc.String, Status: chargenet.EvseStatus(status.String), Connectors: []chargenet.Connector{},
				LastUpdated: at, Version: version.Int64})
			site.Location.EvseUIDs = append(site.Location.EvseUIDs, uid.Int64)
		}
		if !r.connectorID.Valid {
			continue
		}
		r.uid = uid.Int64
		e := &site.EVSEs[len(site.EVSEs)-1]
		c, err := r.connector(e.LastUpdated)
		if err != nil {
			return nil, err
		}
		e.Connectors = append(e.Connectors, c)
	}
	return out, rows.Err()
}

// Site returns the location with this id, deleted or not, with its EVSEs and their
// connectors, in one statement. An ErrNotFound *chargenet.Error (Param "id") when there
// is none; other errors are wrapped driver errors.
func (s *Store) Site(ctx context.Context, id string) (*chargenet.Site, error) {
	st, err := s.reads.get(ctx, siteByIDQuery)
	if err != nil {
		return nil, wrap("site", err)
	}
	rows, err := st.QueryContext(ctx, id)
	if err != nil {
		return nil, wrap("site", err)
	}
	sites, err := scanSites(rows, 1)
	if err != nil {
		return nil, wrap("site", err)
	}
	if len(sites) == 0 {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "id", "location with id %q not found", id)
	}
	return &sites[0], nil
}

// seekArgs returns the parameters of listSitesQuery and listSiteVersionsQuery for seek.
func seekArgs(seek chargenet.UpdateSeek) []any {
	args := boundArgs(seek.From, seek.To)
	offset := seek.Offset
	if seek.HasAfter {
		args = append(args, formatTime(seek.After.LastUpdated), seek.After.ID)
		offset = 0
	}
	return append(args, seek.Limit, offset)
}

// ListSiteVersions reads the versions of the page of sites seek selects (see
// chargenet.SiteReader). Errors are wrapped driver or context errors.
func (s *Store) ListSiteVersions(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.SiteVersion, error) {
	out := []chargenet.SiteVersion{}
	if seek.Limit <= 0 {
		return out, nil
	}
	st, err := s.reads.get(ctx, listSiteVersionsQuery(!seek.From.IsZero(), !seek.To.IsZero(), seek.HasAfter))
	if err != nil {
		return nil, wrap("list site versions", err)
	}
	rows, err := st.QueryContext(ctx, seekArgs(seek)...)
	if err != nil {
		return nil, wrap("list site versions", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var v chargenet.SiteVersion
		var updated string
		if err := rows.Scan(&v.ID, &v.Version, &updated); err != nil {
			return nil, wrap("list site versions", err)
		}
		if v.LastUpdated, err = parseTime(updated); err != nil {
			return nil, wrap("list site versions", err)
		}
		out = append(out, v)
	}
	return out, wrap("list site versions", rows.Err())
}

// ListSites reads the page of sites seek selects, in one statement (see
// chargenet.UpdateSeek). Errors are wrapped driver or context errors.
func (s *Store) ListSites(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.Site, error) {
	if seek.Limit <= 0 {
		return []chargenet.Site{}, nil
	}
	st, err := s.reads.get(ctx, listSitesQuery(!seek.From.IsZero(), !seek.To.IsZero(), seek.HasAfter))
	if err != nil {
		return nil, wrap("list sites", err)
	}
	rows, err := st.QueryContext(ctx, seekArgs(seek)...)
	if err != nil {
		return nil, wrap("list sites", err)
	}
	sites, err := scanSites(rows, seek.Limit)
	return sites, wrap("list sites", err)
}

// CountSites counts the locations between the bounds, deleted ones included. Errors
// are wrapped driver or context errors.
func (s *Store) CountSites(ctx context.Context, from, to time.Time) (int, error) {
	st, err := s.reads.get(ctx, countSitesQuery(!from.IsZero(), !to.IsZero()))
	if err != nil {
		return 0, wrap("count sites", err)
	}
	var n int
	err = st.QueryRowContext(ctx, boundArgs(from, to)...).Scan(&n)
	return n, wrap("count sites", err)
}

// boundArgs returns the stored forms of the bounds that are set.
func boundArgs(from, to time.Time) []any {
	var args []any
	if !from.IsZero() {
		args = append(args, formatTime(from))
	}
	if !to.IsZero() {
		args = append(args, formatTime(to))
	}
	return args
}

// Memo returns the value kept under key while nothing changed the locations or the
// EVSEs since it was read, or calls read and keeps what it returns within the read
// cache's bound (see chargenet.ReadMemo). Without a read cache (an in-memory database,
// the cache off) it calls read every time.
func (s *Store) Memo(ctx context.Context, key string, read func(context.Context) (any, int, error)) (any, error) {
	at, cacheable := s.cache.view(ctx)
	if cacheable {
		if v, ok := s.cache.memo(at, key); ok {
			return v, nil
		}
	}
	v, size, err := read(ctx)
	if err != nil {
		return nil, err
	}
	if cacheable {
		s.cache.putMemo(at, key, v, size)
	}
	return v, nil
}
