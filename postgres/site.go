package postgres

import (
	"context"
	"strconv"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// siteColumns are the columns of a location joined with one of its EVSEs and one of that
// EVSE's connectors (NULL where it has none); see scanSites.
const siteColumns = `l.id, l.name, l.address, l.city, l.postal_code, l.country, l.latitude, l.longitude, l.time_zone, ` +
	`l.last_updated, l.version, l.deleted_at, e.uid, e.evse_id, e.chargebox_id, e.location_id, e.status, e.last_updated, e.version, ` +
	`c.evse_uid, c.id, c.standard, c.format, c.power_type, c.max_electric_power, c.max_amperage, c.max_voltage, ` +
	`c.tariff_ids, c.error_code, c.error_info, c.error_vendor_code, c.deleted_at, c.last_updated`

// siteJoin joins the locations l to their EVSEs e and connectors c.
const siteJoin = ` LEFT JOIN evses e ON e.location_id = l.id LEFT JOIN connectors c ON c.evse_uid = e.uid `

// scanSites reads site rows (see siteColumns), grouped by location and EVSE in the order
// they come. It closes rows.
func scanSites(rows pgx.Rows, capacity int) ([]chargenet.Site, error) {
	defer rows.Close()
	out := make([]chargenet.Site, 0, capacity)
	var (
		l                       chargenet.Location
		deleted                 pgtype.Timestamptz
		uid, chargebox, version pgtype.Int8
		evseID, status, loc     pgtype.Text
		evseUpdated             pgtype.Timestamptz
		cr                      connectorRow
	)
	dest := append([]any{&l.ID, &l.Name, &l.Address, &l.City, &l.PostalCode, &l.Country, &l.Latitude, &l.Longitude,
		&l.TimeZone, &l.LastUpdated, &l.Version, &deleted, &uid, &evseID, &chargebox, &loc, &status, &evseUpdated, &version}, cr.dest()...)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].Location.ID != l.ID {
			site := chargenet.Site{Location: l, EVSEs: []chargenet.EVSE{}}
			site.Location.LastUpdated = l.LastUpdated.UTC()
			site.Location.EvseUIDs = []int64{}
			if deleted.Valid {
				at := deleted.Time.UTC()
				site.Location.DeletedAt = &at
			}
			out = append(out, site)
		}
		site := &out[len(out)-1]
		if !uid.Valid {
			continue
		}
		if n := len(site.EVSEs); n == 0 || site.EVSEs[n-1].UID != uid.Int64 {
			site.EVSEs = append(site.EVSEs, chargenet.EVSE{UID: uid.Int64, EvseID: evseID.String, ChargeboxID: chargebox.Int64,
				LocationID: loc.String, Status: chargenet.EvseStatus(status.String), Connectors: []chargenet.Connector{},
				LastUpdated: evseUpdated.Time.UTC(), Version: version.Int64})
			site.Location.EvseUIDs = append(site.Location.EvseUIDs, uid.Int64)
		}
		e := &site.EVSEs[len(site.EVSEs)-1]
		if c, ok := cr.connector(e.LastUpdated); ok {
			e.Connectors = append(e.Connectors, c)
		}
	}
	return out, rows.Err()
}

// Site returns the location with this id, deleted or not, with its EVSEs and their
// connectors, in one statement. An ErrNotFound *chargenet.Error (Param "id") when there
// is none; other errors are wrapped driver errors.
func (s *Store) Site(ctx context.Context, id string) (*chargenet.Site, error) {
	rows, err := s.pool.Query(ctx, `SELECT `+siteColumns+` FROM locations l`+siteJoin+`WHERE l.id = $1 ORDER BY e.uid, c.id`, id)
	if err != nil {
		return nil, s.wrap("site", err)
	}
	sites, err := scanSites(rows, 1)
	if err != nil {
		return nil, s.wrap("site", err)
	}
	if len(sites) == 0 {
		return nil, locationNotFound(id)
	}
	return &sites[0], nil
}

// boundConds returns the conditions and arguments of the bounds that are set, numbered
// from $1.
func boundConds(from, to time.Time) ([]string, []any) {
	var conds []string
	var args []any
	if !from.IsZero() {
		args = append(args, stamp(from))
		conds = append(conds, `last_updated >= $`+strconv.Itoa(len(args)))
	}
	if !to.IsZero() {
		args = append(args, stamp(to))
		conds = append(conds, `last_updated < $`+strconv.Itoa(len(args)))
	}
	return conds, args
}

// ListSiteVersions reads the versions of the page of sites seek selects (see
// chargenet.SiteReader). Errors are wrapped driver or context errors.
func (s *Store) ListSiteVersions(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.SiteVersion, error) {
	out := []chargenet.SiteVersion{}
	if seek.Limit <= 0 {
		return out, nil
	}
	page, args := pageQuery(seek)
	rows, err := s.pool.Query(ctx, `SELECT id, version, last_updated FROM locations`+page, args...)
	if err != nil {
		return nil, s.wrap("list site versions", err)
	}
	defer rows.Close()
	for rows.Next() {
		var v chargenet.SiteVersion
		if err := rows.Scan(&v.ID, &v.Version, &v.LastUpdated); err != nil {
			return nil, s.wrap("list site versions", err)
		}
		v.LastUpdated = v.LastUpdated.UTC()
		out = append(out, v)
	}
	return out, s.wrap("list site versions", rows.Err())
}

// pageQuery returns the end of a read of the locations of the page seek selects, from
// WHERE on, with its arguments; the limit and the offset are written into it (see
// filteredSeek).
func pageQuery(seek chargenet.UpdateSeek) (string, []any) {
	conds, args := boundConds(seek.From, seek.To)
	offset := seek.Offset
	if seek.HasAfter {
		args = append(args, stamp(seek.After.LastUpdated), seek.After.ID)
		conds = append(conds, `(last_updated, id) > ($`+strconv.Itoa(len(args)-1)+`, $`+strconv.Itoa(len(args))+`)`)
		offset = 0
	}
	q := ""
	if len(conds) > 0 {
		q = ` WHERE ` + strings.Join(conds, ` AND `)
	}
	q += ` ORDER BY last_updated, id LIMIT ` + strconv.Itoa(seek.Limit)
	if offset > 0 {
		q += ` OFFSET ` + strconv.Itoa(offset)
	}
	return q, args
}

// ListSites reads the page of sites seek selects, in one statement (see
// chargenet.UpdateSeek); the limit and the offset are written into the statement (see
// filteredSeek). Errors are wrapped driver or context errors.
func (s *Store) ListSites(ctx context.Context, seek chargenet.UpdateSeek) ([]chargenet.Site, error) {
	if seek.Limit <= 0 {
		return []chargenet.Site{}, nil
	}
	page, args := pageQuery(seek)
	q := `WITH page AS (SELECT * FROM locations` + page + `) SELECT ` + siteColumns + ` FROM page l` + siteJoin +
		`ORDER BY l.last_updated, l.id, e.uid, c.id`
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap("list sites", err)
	}
	sites, err := scanSites(rows, seek.Limit)
	return sites, s.wrap("list sites", err)
}

// CountSites counts the locations between the bounds, deleted ones included. Errors are
// wrapped driver or context errors.
func (s *Store) CountSites(ctx context.Context, from, to time.Time) (int, error) {
	conds, args := boundConds(from, to)
	q := `SELECT count(*) FROM locations`
	if len(conds) > 0 {
		q += ` WHERE ` + strings.Join(conds, ` AND `)
	} else {
		q = `SELECT n FROM location_total WHERE id = 1` // kept by the triggers of migration 0021
	}
	var n int
	err := s.pool.QueryRow(ctx, q, args...).Scan(&n)
	return n, s.wrap("count sites", err)
}

// Memo calls read: PostgreSQL replicas keep no read cache (see chargenet.ReadMemo).
func (s *Store) Memo(ctx context.Context, _ string, read func(context.Context) (any, int, error)) (any, error) {
	v, _, err := read(ctx)
	return v, err
}
