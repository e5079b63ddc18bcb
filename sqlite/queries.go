package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"time"

	"github.com/chargenet/chargenet"
)

const (
	evseColumns      = `uid, evse_id, chargebox_id, location_id, status, last_updated, version`
	connectorColumns = `evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage, tariff_ids, error_code, error_info, error_vendor_code, deleted_at`
	locationColumns  = `id, name, address, city, postal_code, country, latitude, longitude, time_zone, last_updated`
)

// statements are the read queries, prepared once on the read pool.
type statements struct {
	evse, connectors, connectorRange       *sql.Stmt
	location, locationEvses, evsesInRange  *sql.Stmt
	evsesFirst, evsesAfter                 *sql.Stmt
	evsesLast, evsesBefore                 *sql.Stmt
	locationsFirst, locationsAfter         *sql.Stmt
	locationsLast, locationsBefore, apiKey *sql.Stmt
}

func (s *Store) prepare(ctx context.Context) error {
	queries := []struct {
		dst **sql.Stmt
		sql string
	}{
		{&s.stmts.evse, `SELECT ` + evseColumns + ` FROM evses WHERE uid = ?`},
		{&s.stmts.connectors, `SELECT ` + connectorColumns + ` FROM connectors WHERE evse_uid = ? ORDER BY id`},
		{&s.stmts.connectorRange, `SELECT ` + connectorColumns + ` FROM connectors WHERE evse_uid BETWEEN ? AND ? ORDER BY evse_uid, id`},
		{&s.stmts.location, `SELECT ` + locationColumns + ` FROM locations WHERE id = ?`},
		{&s.stmts.locationEvses, `SELECT location_id, uid FROM evses WHERE location_id = ? ORDER BY uid`},
		{&s.stmts.evsesInRange, `SELECT location_id, uid FROM evses WHERE location_id BETWEEN ? AND ? ORDER BY location_id, uid`},
		{&s.stmts.evsesFirst, `SELECT ` + evseColumns + ` FROM evses ORDER BY uid LIMIT ?`},
		{&s.stmts.evsesAfter, `SELECT ` + evseColumns + ` FROM evses WHERE uid > ? ORDER BY uid LIMIT ?`},
		{&s.stmts.evsesLast, `SELECT ` + evseColumns + ` FROM evses ORDER BY uid DESC LIMIT ?`},
		{&s.stmts.evsesBefore, `SELECT ` + evseColumns + ` FROM evses WHERE uid < ? ORDER BY uid DESC LIMIT ?`},
		{&s.stmts.locationsFirst, `SELECT ` + locationColumns + ` FROM locations ORDER BY id LIMIT ?`},
		{&s.stmts.locationsAfter, `SELECT ` + locationColumns + ` FROM locations WHERE id > ? ORDER BY id LIMIT ?`},
		{&s.stmts.locationsLast, `SELECT ` + locationColumns + ` FROM locations ORDER BY id DESC LIMIT ?`},
		{&s.stmts.locationsBefore, `SELECT ` + locationColumns + ` FROM locations WHERE id < ? ORDER BY id DESC LIMIT ?`},
		{&s.stmts.apiKey, `SELECT name, hash, scope, created_at FROM api_keys WHERE hash = ? AND revoked_at IS NULL`},
	}
	for _, q := range queries {
		st, err := s.read.PrepareContext(ctx, q.sql)
		if err != nil {
			return fmt.Errorf("sqlite: preparing %q: %w", q.sql, err)
		}
		*q.dst = st
	}
	return nil
}

func (st *statements) close() {
	for _, p := range []*sql.Stmt{st.evse, st.connectors, st.connectorRange, st.location, st.locationEvses,
		st.evsesInRange, st.evsesFirst, st.evsesAfter, st.evsesLast, st.evsesBefore, st.locationsFirst,
		st.locationsAfter, st.locationsLast, st.locationsBefore, st.apiKey} {
		if p != nil {
			p.Close()
		}
	}
}

type scanner interface{ Scan(dest ...any) error }

func scanEVSE(r scanner) (chargenet.EVSE, error) {
	var (
		e       chargenet.EVSE
		loc     sql.NullString
		updated string
		status  string
	)
	if err := r.Scan(&e.UID, &e.EvseID, &e.ChargeboxID, &loc, &status, &updated, &e.Version); err != nil {
		return e, err
	}
	e.LocationID, e.Status = loc.String, chargenet.EvseStatus(status)
	t, err := parseTime(updated)
	e.LastUpdated = t
	e.Connectors = []chargenet.Connector{}
	return e, err
}

func scanConnector(r scanner) (int64, chargenet.Connector, error) {
	var (
		c                       chargenet.Connector
		uid                     int64
		standard, format, power string
		tariffs                 string
		code, info, vendor, del sql.NullString
	)
	if err := r.Scan(&uid, &c.ID, &standard, &format, &power, &c.MaxElectricPower, &c.MaxAmperage, &c.MaxVoltage,
		&tariffs, &code, &info, &vendor, &del); err != nil {
		return 0, c, err
	}
	c.Standard, c.Format, c.PowerType = chargenet.Standard(standard), chargenet.Format(format), chargenet.PowerType(power)
	if err := json.Unmarshal([]byte(tariffs), &c.TariffIDs); err != nil {
		return 0, c, fmt.Errorf("sqlite: tariff_ids of connector %d/%d: %w", uid, c.ID, err)
	}
	if c.TariffIDs == nil {
		c.TariffIDs = []string{}
	}
	if code.Valid {
		c.Error = &chargenet.ConnectorError{Code: chargenet.ErrorCode(code.String), Info: info.String, VendorErrorCode: vendor.String}
	}
	if del.Valid {
		t, err := parseTime(del.String)
		if err != nil {
			return 0, c, err
		}
		c.DeletedAt = &t
	}
	return uid, c, nil
}

func scanLocation(r scanner) (chargenet.Location, error) {
	var (
		l       chargenet.Location
		updated string
	)
	if err := r.Scan(&l.ID, &l.Name, &l.Address, &l.City, &l.PostalCode, &l.Country, &l.Latitude, &l.Longitude, &l.TimeZone, &updated); err != nil {
		return l, err
	}
	t, err := parseTime(updated)
	l.LastUpdated = t
	l.EvseUIDs = []int64{}
	return l, err
}

// EVSE returns the EVSE with all its connectors, or an ErrNotFound *chargenet.Error.
func (s *Store) EVSE(ctx context.Context, uid int64) (*chargenet.EVSE, error) {
	e, err := loadEVSE(ctx, s.stmts.evse, s.stmts.connectors, uid)
	return e, wrap(err)
}

// loadEVSE reads an EVSE and its connectors through the given statements (the read
// pool's, or a transaction's copies of them).
func loadEVSE(ctx context.Context, evse, connectors *sql.Stmt, uid int64) (*chargenet.EVSE, error) {
	e, err := scanEVSE(evse.QueryRowContext(ctx, uid))
	if err == sql.ErrNoRows {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "EVSE with uid %d not found", uid)
	}
	if err != nil {
		return nil, err
	}
	rows, err := connectors.QueryContext(ctx, uid)
	if err != nil {
		return nil, err
	}
	defer rows.Close()
	for rows.Next() {
		_, c, err := scanConnector(rows)
		if err != nil {
			return nil, err
		}
		e.Connectors = append(e.Connectors, c)
	}
	return &e, rows.Err()
}

// ListEVSEs reads one keyset slice of EVSEs with their connectors (see chargenet.Seek).
func (s *Store) ListEVSEs(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.EVSE, error) {
	var rows *sql.Rows
	var err error
	switch {
	case !seek.Backward && !seek.HasKey:
		rows, err = s.stmts.evsesFirst.QueryContext(ctx, seek.Limit)
	case !seek.Backward:
		rows, err = s.stmts.evsesAfter.QueryContext(ctx, seek.Key, seek.Limit)
	case !seek.HasKey:
		rows, err = s.stmts.evsesLast.QueryContext(ctx, seek.Limit)
	default:
		rows, err = s.stmts.evsesBefore.QueryContext(ctx, seek.Key, seek.Limit)
	}
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	out := make([]chargenet.EVSE, 0, seek.Limit)
	index := map[int64]int{}
	lo, hi := int64(0), int64(0)
	for rows.Next() {
		e, err := scanEVSE(rows)
		if err != nil {
			return nil, wrap(err)
		}
		if len(out) == 0 || e.UID < lo {
			lo = e.UID
		}
		if len(out) == 0 || e.UID > hi {
			hi = e.UID
		}
		index[e.UID] = len(out)
		out = append(out, e)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err)
	}
	if len(out) == 0 {
		return out, nil
	}
	// The page is a contiguous uid range, so its connectors are one range scan.
	crows, err := s.stmts.connectorRange.QueryContext(ctx, lo, hi)
	if err != nil {
		return nil, wrap(err)
	}
	defer crows.Close()
	for crows.Next() {
		uid, c, err := scanConnector(crows)
		if err != nil {
			return nil, wrap(err)
		}
		if i, ok := index[uid]; ok { // an EVSE inserted since the page was read is not in it
			out[i].Connectors = append(out[i].Connectors, c)
		}
	}
	return out, wrap(crows.Err())
}

// Location returns the location with its EVSE uids, or an ErrNotFound *chargenet.Error.
func (s *Store) Location(ctx context.Context, id string) (*chargenet.Location, error) {
	l, err := scanLocation(s.stmts.location.QueryRowContext(ctx, id))
	if err == sql.ErrNoRows {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "id", "location with id %q not found", id)
	}
	if err != nil {
		return nil, wrap(err)
	}
	rows, err := s.stmts.locationEvses.QueryContext(ctx, id)
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	for rows.Next() {
		var loc string
		var uid int64
		if err := rows.Scan(&loc, &uid); err != nil {
			return nil, wrap(err)
		}
		l.EvseUIDs = append(l.EvseUIDs, uid)
	}
	return &l, wrap(rows.Err())
}

// ListLocations reads one keyset slice of locations with their EVSE uids (see
// chargenet.Seek).
func (s *Store) ListLocations(ctx context.Context, seek chargenet.Seek[string]) ([]chargenet.Location, error) {
	var rows *sql.Rows
	var err error
	switch {
	case !seek.Backward && !seek.HasKey:
		rows, err = s.stmts.locationsFirst.QueryContext(ctx, seek.Limit)
	case !seek.Backward:
		rows, err = s.stmts.locationsAfter.QueryContext(ctx, seek.Key, seek.Limit)
	case !seek.HasKey:
		rows, err = s.stmts.locationsLast.QueryContext(ctx, seek.Limit)
	default:
		rows, err = s.stmts.locationsBefore.QueryContext(ctx, seek.Key, seek.Limit)
	}
	if err != nil {
		return nil, wrap(err)
	}
	defer rows.Close()
	out := make([]chargenet.Location, 0, seek.Limit)
	index := map[string]int{}
	var lo, hi string
	for rows.Next() {
		l, err := scanLocation(rows)
		if err != nil {
			return nil, wrap(err)
		}
		if len(out) == 0 || l.ID < lo {
			lo = l.ID
		}
		if len(out) == 0 || l.ID > hi {
			hi = l.ID
		}
		index[l.ID] = len(out)
		out = append(out, l)
	}
	if err := rows.Err(); err != nil {
		return nil, wrap(err)
	}
	if len(out) == 0 {
		return out, nil
	}
	erows, err := s.stmts.evsesInRange.QueryContext(ctx, lo, hi)
	if err != nil {
		return nil, wrap(err)
	}
	defer erows.Close()
	for erows.Next() {
		var loc string
		var uid int64
		if err := erows.Scan(&loc, &uid); err != nil {
			return nil, wrap(err)
		}
		if i, ok := index[loc]; ok {
			out[i].EvseUIDs = append(out[i].EvseUIDs, uid)
		}
	}
	return out, wrap(erows.Err())
}

// UpdateConnector applies patch in one write transaction: it reads the EVSE, lets
// chargenet.EVSE.UpdateConnector check it (ErrNotFound, ErrPreconditionFailed,
// ErrConflict, ErrInvalid), writes only the patched columns, and bumps the version.
func (s *Store) UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch string, now time.Time) (*chargenet.EVSE, error) {
	tx, err := s.write.BeginTx(ctx, nil) // BEGIN IMMEDIATE: the write lock is taken now
	if err != nil {
		return nil, wrap(err)
	}
	defer tx.Rollback()
	evse, err := tx.PrepareContext(ctx, `SELECT `+evseColumns+` FROM evses WHERE uid = ?`)
	if err != nil {
		return nil, wrap(err)
	}
	conns, err := tx.PrepareContext(ctx, `SELECT `+connectorColumns+` FROM connectors WHERE evse_uid = ? ORDER BY id`)
	if err != nil {
		return nil, wrap(err)
	}
	e, err := loadEVSE(ctx, evse, conns, uid)
	if err != nil {
		return nil, wrap(err)
	}
	if _, err := e.UpdateConnector(connectorID, patch, ifMatch); err != nil {
		return nil, err
	}
	set, args := patchColumns(patch)
	args = append(args, uid, connectorID)
	if _, err := tx.ExecContext(ctx, `UPDATE connectors SET `+set+` WHERE evse_uid = ? AND id = ?`, args...); err != nil {
		return nil, wrap(err)
	}
	now = now.UTC()
	if _, err := tx.ExecContext(ctx, `UPDATE evses SET version = version + 1, last_updated = ? WHERE uid = ?`, formatTime(now), uid); err != nil {
		return nil, wrap(err)
	}
	if err := tx.Commit(); err != nil {
		return nil, wrap(err)
	}
	e.Version++
	e.LastUpdated = now
	return e, nil
}

// patchColumns returns the SET clause and arguments for the fields a patch sends.
func patchColumns(p chargenet.ConnectorPatch) (string, []any) {
	var set string
	var args []any
	add := func(col string, v any) {
		if set != "" {
			set += ", "
		}
		set += col + " = ?"
		args = append(args, v)
	}
	if p.Standard != nil {
		add("standard", string(*p.Standard))
	}
	if p.Format != nil {
		add("format", string(*p.Format))
	}
	if p.MaxElectricPower != nil {
		add("max_electric_power", *p.MaxElectricPower)
	}
	if p.MaxAmperage != nil {
		add("max_amperage", *p.MaxAmperage)
	}
	if p.MaxVoltage != nil {
		add("max_voltage", *p.MaxVoltage)
	}
	return set, args
}
