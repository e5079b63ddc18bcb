package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	sqlite3 "modernc.org/sqlite/lib"
)

// CreateEVSE stores e (checked by chargenet.EVSE.PrepareNew) with the next uid, its
// connectors, its evse.created event, the touch of its location, and idem's answer, in
// one write transaction (see chargenet.Store for the errors).
func (s *Store) CreateEVSE(ctx context.Context, e *chargenet.EVSE, idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	const op = "create evse"
	out := e.Clone()
	err := s.inventoryTx(ctx, op, func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		if err := claimKey(ctx, tx, idem, now); err != nil {
			return err
		}
		if err := checkLocation(ctx, tx, "locationId", out.LocationID); err != nil {
			return err
		}
		if err := tx.QueryRowContext(ctx, `SELECT COALESCE(MAX(uid), 0) + 1 FROM evses`).Scan(&out.UID); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO evses (`+evseColumns+`, operator_hold) VALUES (?, ?, ?, ?, ?, ?, ?, ?)`,
			out.UID, out.EvseID, out.ChargeboxID, out.LocationID, string(out.Status), formatTime(out.LastUpdated), out.Version,
			out.OperatorHold); err != nil {
			if constraintCode(err) == sqlite3.SQLITE_CONSTRAINT_UNIQUE {
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "evseId", "an EVSE with evseId %q already exists", out.EvseID)
			}
			return err
		}
		if err := upsertConnectors(ctx, tx, out); err != nil {
			return err
		}
		if err := touchLocation(ctx, tx, out.LocationID, out.LastUpdated); err != nil {
			return err
		}
		ev := chargenet.NewEVSEEvent(chargenet.EventEVSECreated, out, now)
		ev.Actor = actor
		if err := record(ev); err != nil {
			return err
		}
		return keepAnswer(ctx, tx, idem, out, now)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// ChangeEVSE applies change to EVSE uid in one write transaction (see chargenet.Store).
func (s *Store) ChangeEVSE(ctx context.Context, uid int64, change func(*chargenet.EVSE) ([]chargenet.Event, error), idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	const op = "change evse"
	var out *chargenet.EVSE
	err := s.inventoryTx(ctx, op, func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		if err := claimKey(ctx, tx, idem, now); err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, evseByUIDQuery, uid)
		if err != nil {
			return err
		}
		evses, err := scanEVSEs(rows, 1)
		if err != nil {
			return err
		}
		if len(evses) == 0 {
			return evseNotFound(uid)
		}
		e := &evses[0]
		if err := tx.QueryRowContext(ctx, `SELECT operator_hold FROM evses WHERE uid = ?`, uid).Scan(&e.OperatorHold); err != nil {
			return err
		}
		before := e.Clone()
		events, err := change(e)
		if err != nil {
			return err
		}
		if e.Version == before.Version {
			out = before
			return errNoChange
		}
		out = e
		if e.LocationID != before.LocationID {
			if err := checkLocation(ctx, tx, "locationId", e.LocationID); err != nil {
				return err
			}
		}
		if _, err := tx.ExecContext(ctx, `UPDATE evses SET evse_id = ?, chargebox_id = ?, location_id = ?, status = ?, operator_hold = ?, `+
			`version = ?, last_updated = ? WHERE uid = ?`,
			e.EvseID, e.ChargeboxID, e.LocationID, string(e.Status), e.OperatorHold, e.Version, formatTime(e.LastUpdated),
			e.UID); err != nil {
			return err
		}
		if err := upsertConnectors(ctx, tx, e); err != nil {
			return err
		}
		if err := touchLocation(ctx, tx, e.LocationID, e.LastUpdated); err != nil {
			return err
		}
		if e.LocationID != before.LocationID {
			if err := touchLocation(ctx, tx, before.LocationID, e.LastUpdated); err != nil {
				return err
			}
		}
		for i := range events {
			events[i].Actor = actor
		}
		if err := record(events...); err != nil {
			return err
		}
		return keepAnswer(ctx, tx, idem, e, now)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}

// errNoChange rolls back a transaction that found nothing to write.
var errNoChange = errors.New("no change")

// inventoryTx runs fn in a write transaction and commits it; record writes the change's
// events in the transaction. errNoChange from fn rolls back and is no error. After the
// commit the deliveries the events queued are announced. Errors are wrapped with op.
func (s *Store) inventoryTx(ctx context.Context, op string, fn func(tx *sql.Tx, record func(...chargenet.Event) error) error) error {
	start, queued := time.Now(), false
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		return fn(tx, func(events ...chargenet.Event) error {
			q, err := s.recordEvents(ctx, tx, events...)
			queued = queued || q
			return err
		})
	})
	switch {
	case errors.Is(err, errNoChange):
		return nil
	case err != nil:
		return wrap(op, err)
	}
	s.hooks.Committed(strings.ReplaceAll(op, " ", "_"), start, 1)
	if queued {
		s.hooks.Announce()
	}
	return nil
}

// upsertConnectors writes every connector of e: new ones are inserted, the others
// updated (their status times stay as they are). A connector without a LastUpdated
// keeps none (it reads as its EVSE's).
func upsertConnectors(ctx context.Context, tx *sql.Tx, e *chargenet.EVSE) error {
	for i := range e.Connectors {
		c := &e.Connectors[i]
		tariffs, err := encodeTariffs(c.TariffIDs)
		if err != nil {
			return err
		}
		var code, info, vendor, deleted any
		if c.Error != nil {
			code, info, vendor = string(c.Error.Code), nullText(c.Error.Info), nullText(c.Error.VendorErrorCode)
		}
		if c.DeletedAt != nil {
			deleted = formatTime(*c.DeletedAt)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO connectors (`+connectorColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?) `+
			`ON CONFLICT (evse_uid, id) DO UPDATE SET standard = excluded.standard, format = excluded.format, `+
			`power_type = excluded.power_type, max_electric_power = excluded.max_electric_power, `+
			`max_amperage = excluded.max_amperage, max_voltage = excluded.max_voltage, tariff_ids = excluded.tariff_ids, `+
			`error_code = excluded.error_code, error_info = excluded.error_info, `+
			`error_vendor_code = excluded.error_vendor_code, deleted_at = excluded.deleted_at, last_updated = excluded.last_updated`,
			e.UID, c.ID, string(c.Standard), string(c.Format), string(c.PowerType), c.MaxElectricPower, c.MaxAmperage,
			c.MaxVoltage, tariffs, code, info, vendor, deleted, nullTime(c.LastUpdated)); err != nil {
			return err
		}
	}
	return nil
}

func nullText(s string) any {
	if s == "" {
		return nil
	}
	return s
}

// checkLocation refuses a location that does not exist (ErrInvalid) or is deleted
// (ErrConflict location_deleted), naming param.
func checkLocation(ctx context.Context, tx *sql.Tx, param, id string) error {
	var deleted sql.NullString
	err := tx.QueryRowContext(ctx, `SELECT deleted_at FROM locations WHERE id = ?`, id).Scan(&deleted)
	if errors.Is(err, sql.ErrNoRows) {
		return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, param, "%s: location %q does not exist", param, id)
	}
	if err != nil {
		return err
	}
	if deleted.Valid {
		at, err := parseTime(deleted.String)
		if err != nil {
			return err
		}
		return chargenet.LocationDeletedParam(param, id, at)
	}
	return nil
}

// touchLocation records in tx a change of one of the EVSEs of location id, or of the
// list of them, that gave the EVSE the LastUpdated at: the location is touched
// (chargenet.Location.Touch). An empty id, or one without a row, does nothing.
func touchLocation(ctx context.Context, tx *sql.Tx, id string, at time.Time) error {
	if id == "" {
		return nil
	}
	l := chargenet.Location{ID: id}
	var updated string
	err := tx.QueryRowContext(ctx, locationStateQuery, id).Scan(&l.Version, &updated)
	if errors.Is(err, sql.ErrNoRows) {
		return nil
	}
	if err != nil {
		return err
	}
	if l.LastUpdated, err = parseStamp(updated); err != nil {
		return err
	}
	l.Touch(at)
	_, err = tx.ExecContext(ctx, setLocationQuery, l.Version, formatTime(l.LastUpdated), id)
	return err
}

// locationIn reads location id in tx; nil when there is none.
func locationIn(ctx context.Context, tx *sql.Tx, id string) (*chargenet.Location, error) {
	rows, err := tx.QueryContext(ctx, locationByIDQuery, id)
	if err != nil {
		return nil, err
	}
	locs, err := scanLocations(rows, 1)
	if err != nil || len(locs) == 0 {
		return nil, err
	}
	return &locs[0], nil
}

// PutLocation creates or replaces location l in one write transaction (see
// chargenet.Store).
func (s *Store) PutLocation(ctx context.Context, l *chargenet.Location, actor string, now time.Time) (*chargenet.Location, bool, error) {
	const op = "put location"
	var out *chargenet.Location
	var created bool
	err := s.inventoryTx(ctx, op, func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		old, err := locationIn(ctx, tx, l.ID)
		if err != nil {
			return err
		}
		if old == nil || old.DeletedAt == nil { // a deleted location is location_deleted
			if err := l.CheckVersion(old); err != nil {
				return err
			}
		}
		next := *l
		next.LastUpdated, next.Version, next.DeletedAt, next.EvseUIDs, next.IfVersion = chargenet.Stamp(now), 1, nil, []int64{}, 0
		typ := chargenet.EventLocationCreated
		switch {
		case old == nil:
			created = true
			if _, err := tx.StmtContext(ctx, s.insertLocation).ExecContext(ctx, next.ID, next.Name, next.Address, next.City, next.PostalCode,
				next.Country, next.Latitude, next.Longitude, next.TimeZone, formatTime(next.LastUpdated), next.Version); err != nil {
				return err
			}
		case old.DeletedAt != nil:
			return chargenet.LocationDeleted(l.ID, *old.DeletedAt)
		case old.SameFields(l):
			out = old
			return errNoChange
		default:
			typ = chargenet.EventLocationUpdated
			next.EvseUIDs, next.Version, next.LastUpdated = old.EvseUIDs, old.Version, old.LastUpdated
			next.Touch(now)
			if _, err := tx.ExecContext(ctx, `UPDATE locations SET name = ?, address = ?, city = ?, postal_code = ?, country = ?, `+
				`latitude = ?, longitude = ?, time_zone = ?, last_updated = ?, version = ? WHERE id = ?`,
				next.Name, next.Address, next.City, next.PostalCode, next.Country, next.Latitude, next.Longitude, next.TimeZone,
				formatTime(next.LastUpdated), next.Version, next.ID); err != nil {
				return err
			}
		}
		out = &next
		ev := chargenet.NewLocationEvent(typ, &next, now)
		ev.Actor = actor
		return record(ev)
	})
	if err != nil {
		return nil, false, err
	}
	return out, created, nil
}

// DeleteLocation marks location id deleted in one write transaction (see
// chargenet.Store).
func (s *Store) DeleteLocation(ctx context.Context, id, actor string, now time.Time) (*chargenet.Location, error) {
	const op = "delete location"
	var out *chargenet.Location
	err := s.inventoryTx(ctx, op, func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		l, err := locationIn(ctx, tx, id)
		if err != nil {
			return err
		}
		if l == nil {
			return chargenet.LocationNotFound("id", id)
		}
		out = l
		if l.DeletedAt != nil {
			return errNoChange
		}
		rows, err := tx.QueryContext(ctx, `SELECT uid FROM evses WHERE location_id = ? AND status <> ? ORDER BY uid`, id, string(chargenet.StatusRemoved))
		if err != nil {
			return err
		}
		var inUse []int64
		for rows.Next() {
			var uid int64
			if err := rows.Scan(&uid); err != nil {
				_ = rows.Close()
				return err
			}
			inUse = append(inUse, uid)
		}
		if err := errors.Join(rows.Err(), rows.Close()); err != nil {
			return err
		}
		if len(inUse) > 0 {
			return chargenet.LocationInUse(id, inUse)
		}
		l.Touch(now)
		at := l.LastUpdated
		l.DeletedAt = &at
		if _, err := tx.ExecContext(ctx, `UPDATE locations SET deleted_at = ?, last_updated = ?, version = ? WHERE id = ?`,
			formatTime(at), formatTime(at), l.Version, id); err != nil {
			return err
		}
		ev := chargenet.NewLocationEvent(chargenet.EventLocationDeleted, l, now)
		ev.Actor = actor
		return record(ev)
	})
	if err != nil {
		return nil, err
	}
	return out, nil
}
