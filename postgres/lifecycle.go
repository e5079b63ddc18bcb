package postgres

import (
	"context"
	"errors"
	"slices"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// The writes of the inventory's life cycle take their locks in one order, so that they
// cannot deadlock: CreateEVSE inventoryLock first; then the row of the idempotency key
// (claimKey); then ChangeEVSE the EVSE's row; then the locations, in id order. The group
// commit (group.go) locks EVSE rows in uid order, then their locations in id order;
// Import locks the existing locations it touches in id order. PutLocation and
// DeleteLocation lock only their location. A write that puts an EVSE at
// a location locks the location's row (FOR NO KEY UPDATE) before checking it, so a
// location cannot be deleted between the check and the commit of the EVSE.

const upsertConnectorQuery = `INSERT INTO connectors (` + connectorColumns + `) ` +
	`VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12, $13, $14) ON CONFLICT (evse_uid, id) DO UPDATE SET ` +
	`standard = EXCLUDED.standard, format = EXCLUDED.format, power_type = EXCLUDED.power_type, ` +
	`max_electric_power = EXCLUDED.max_electric_power, max_amperage = EXCLUDED.max_amperage, ` +
	`max_voltage = EXCLUDED.max_voltage, tariff_ids = EXCLUDED.tariff_ids, error_code = EXCLUDED.error_code, ` +
	`error_info = EXCLUDED.error_info, error_vendor_code = EXCLUDED.error_vendor_code, deleted_at = EXCLUDED.deleted_at, ` +
	`last_updated = EXCLUDED.last_updated`

// writeConnectors inserts or overwrites every connector of e (its status times stay as
// they are), in one round trip.
func writeConnectors(ctx context.Context, tx pgx.Tx, e *chargenet.EVSE) error {
	var b pgx.Batch
	for i := range e.Connectors {
		c := &e.Connectors[i]
		tariffs := c.TariffIDs
		if tariffs == nil {
			tariffs = []string{} // NOT NULL
		}
		var code, info, vendor pgtype.Text
		if c.Error != nil {
			code = pgtype.Text{String: string(c.Error.Code), Valid: true}
			info = pgtype.Text{String: c.Error.Info, Valid: true}
			vendor = pgtype.Text{String: c.Error.VendorErrorCode, Valid: true}
		}
		var deleted pgtype.Timestamptz
		if c.DeletedAt != nil {
			deleted = pgtype.Timestamptz{Time: chargenet.Stamp(*c.DeletedAt), Valid: true}
		}
		b.Queue(upsertConnectorQuery, e.UID, c.ID, string(c.Standard), string(c.Format), string(c.PowerType),
			c.MaxElectricPower, c.MaxAmperage, c.MaxVoltage, tariffs, code, info, vendor, deleted, nullTime(c.LastUpdated))
	}
	return tx.SendBatch(ctx, &b).Close()
}

// stampEVSE sets e's times as they are stored: UTC, to the microsecond.
func stampEVSE(e *chargenet.EVSE) {
	e.LastUpdated = chargenet.Stamp(e.LastUpdated)
	for i := range e.Connectors {
		c := &e.Connectors[i]
		if !c.LastUpdated.IsZero() {
			c.LastUpdated = chargenet.Stamp(c.LastUpdated)
		}
		if d := c.DeletedAt; d != nil {
			t := chargenet.Stamp(*d)
			c.DeletedAt = &t
		}
	}
}

// lockLocationRef locks location id, which a new or changed EVSE refers to, and checks
// that it exists and is not deleted. Errors: an ErrInvalid *chargenet.Error with Param
// "locationId" when there is no such location; an ErrConflict one with Code
// location_deleted and Param "locationId" when it is deleted; driver errors, unwrapped.
func lockLocationRef(ctx context.Context, tx pgx.Tx, id string) error {
	var deleted pgtype.Timestamptz
	err := tx.QueryRow(ctx, `SELECT deleted_at FROM locations WHERE id = $1 FOR NO KEY UPDATE`, id).Scan(&deleted)
	if errors.Is(err, pgx.ErrNoRows) {
		return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, "locationId",
			"locationId: location %q does not exist", id)
	}
	if err != nil {
		return err
	}
	if deleted.Valid {
		return chargenet.LocationDeletedParam("locationId", id, deleted.Time)
	}
	return nil
}

// touchLocations records a change of the EVSEs of the locations ids (empty ones and
// ones without a row skipped), or of the list of them, that gave an EVSE the
// LastUpdated at: each location is locked (in id order), read, touched
// (chargenet.Location.Touch) and stored with its JSON as it is now.
func touchLocations(ctx context.Context, tx pgx.Tx, at time.Time, ids ...string) error {
	ids = slices.DeleteFunc(slices.Clone(ids), func(id string) bool { return id == "" })
	slices.Sort(ids) // locations are locked in id order
	for _, id := range slices.Compact(ids) {
		l, ok, err := lockLocation(ctx, tx, id)
		if err != nil || !ok {
			return err
		}
		l.Touch(at)
		if err := writeLocationTouch(ctx, tx, &l); err != nil {
			return err
		}
	}
	return nil
}

// writeLocationTouch stores l's version and last update with its contract JSON and the
// EVSE uids it lists (migration 0010).
func writeLocationTouch(ctx context.Context, tx pgx.Tx, l *chargenet.Location) error {
	doc, uids, err := locationDoc(*l)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE locations SET version = $2, last_updated = $3, doc = $4, doc_uids = $5 WHERE id = $1`,
		l.ID, l.Version, chargenet.Stamp(l.LastUpdated), string(doc), uids)
	return err
}

// storeEVSEDoc stores e's contract JSON for its version, so that reads send it as
// stored (migration 0010).
func storeEVSEDoc(ctx context.Context, tx pgx.Tx, e *chargenet.EVSE) error {
	doc, err := wire.EncodeEVSE(e)
	if err != nil {
		return err
	}
	_, err = tx.Exec(ctx, `UPDATE evses SET doc = $1, doc_version = $2 WHERE uid = $3`, string(doc), e.Version, e.UID)
	return err
}

// storeLocationDoc stores l's contract JSON with the EVSE uids it lists (migration 0010).
func storeLocationDoc(ctx context.Context, tx pgx.Tx, l *chargenet.Location) error {
	doc, err := wire.EncodeLocation(l)
	if err != nil {
		return err
	}
	uids := l.EvseUIDs
	if uids == nil {
		uids = []int64{}
	}
	_, err = tx.Exec(ctx, `UPDATE locations SET doc = $1, doc_uids = $2 WHERE id = $3`, string(doc), uids, l.ID)
	return err
}

// CreateEVSE implements chargenet.EVSEService.CreateEVSE, with its errors. Creates and
// imports take turns through an advisory lock, so that concurrent creates through several
// replicas get distinct UIDs; the location is locked after the EVSE (see touchLocations).
func (s *Store) CreateEVSE(ctx context.Context, e *chargenet.EVSE, idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	start := time.Now()
	now = chargenet.Stamp(now)
	out := *e
	out.Connectors = slices.Clone(e.Connectors)
	stampEVSE(&out)
	var queued bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if _, err := tx.Exec(ctx, `SELECT pg_advisory_xact_lock($1)`, inventoryLock); err != nil {
			return err
		}
		if err := claimKey(ctx, tx, idem, now); err != nil {
			return err
		}
		if err := lockLocationRef(ctx, tx, out.LocationID); err != nil {
			return err
		}
		var taken bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM evses WHERE evse_id = $1)`, out.EvseID).Scan(&taken); err != nil {
			return err
		}
		if taken {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "evseId", "an EVSE with evseId %q already exists", out.EvseID)
		}
		if err := tx.QueryRow(ctx, `INSERT INTO evses (uid, evse_id, chargebox_id, location_id, status, last_updated, version, operator_hold) `+
			`SELECT COALESCE(max(uid), 0) + 1, $1::text, $2::bigint, $3::text, $4::text, $5::timestamptz, $6::bigint, $7::boolean `+
			`FROM evses RETURNING uid`,
			out.EvseID, out.ChargeboxID, out.LocationID, string(out.Status), out.LastUpdated, out.Version, out.OperatorHold).
			Scan(&out.UID); err != nil {
			return err
		}
		if err := writeConnectors(ctx, tx, &out); err != nil {
			return err
		}
		if err := storeEVSEDoc(ctx, tx, &out); err != nil {
			return err
		}
		if err := touchLocations(ctx, tx, out.LastUpdated, out.LocationID); err != nil {
			return err
		}
		var err error
		ev := chargenet.NewEVSEEvent(chargenet.EventEVSECreated, &out, now)
		ev.Actor = actor
		if queued, err = recordEvents(ctx, tx, ev); err != nil {
			return err
		}
		return keepAnswer(ctx, tx, idem, &out, now)
	})
	if err != nil {
		return nil, s.wrap("create evse", err)
	}
	s.hooks.Committed("create_evse", start, 1)
	if queued {
		s.hooks.Announce()
	}
	return &out, nil
}

// ChangeEVSE implements chargenet.EVSEService.ChangeEVSE, with its errors. It locks the
// EVSE's row (SELECT ... FOR UPDATE), so that its changes queue with PATCHes and status
// notifications through every replica, and then its old and new locations in id order.
// A change that leaves the Version as it was rolls back and returns the EVSE as read.
func (s *Store) ChangeEVSE(ctx context.Context, uid int64, change func(*chargenet.EVSE) ([]chargenet.Event, error), idem *chargenet.Idempotency, actor string, now time.Time) (*chargenet.EVSE, error) {
	start := time.Now()
	now = chargenet.Stamp(now)
	var e chargenet.EVSE
	var queued bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := claimKey(ctx, tx, idem, now); err != nil {
			return err
		}
		var err error
		if e, err = lockEVSE(ctx, tx, uid); err != nil {
			return err
		}
		read := *e.Clone()
		events, err := change(&e)
		if err != nil {
			return err
		}
		if e.Version == read.Version {
			e = read // as read, whatever change did to it
			return errNoChange
		}
		stampEVSE(&e)
		moved := e.LocationID != read.LocationID
		if moved {
			// Both locations in id order, the order every writer locks them in.
			ids := []string{read.LocationID, e.LocationID}
			slices.Sort(ids)
			for _, id := range ids {
				if id == e.LocationID {
					if err := lockLocationRef(ctx, tx, id); err != nil {
						return err
					}
				} else if id != "" {
					if _, err := tx.Exec(ctx, `SELECT 1 FROM locations WHERE id = $1 FOR NO KEY UPDATE`, id); err != nil {
						return err
					}
				}
			}
		}
		if _, err := tx.Exec(ctx, `UPDATE evses SET chargebox_id = $2, location_id = $3, status = $4, operator_hold = $5, `+
			`version = $6, last_updated = $7 WHERE uid = $1`, uid, e.ChargeboxID, nullText(e.LocationID), string(e.Status),
			e.OperatorHold, e.Version, e.LastUpdated); err != nil {
			return err
		}
		if err := writeConnectors(ctx, tx, &e); err != nil {
			return err
		}
		if err := storeEVSEDoc(ctx, tx, &e); err != nil {
			return err
		}
		if err := touchLocations(ctx, tx, e.LastUpdated, read.LocationID, e.LocationID); err != nil {
			return err
		}
		for i := range events {
			events[i].Actor = actor
		}
		if queued, err = recordEvents(ctx, tx, events...); err != nil {
			return err
		}
		return keepAnswer(ctx, tx, idem, &e, now)
	})
	if errors.Is(err, errNoChange) {
		return &e, nil
	}
	if err != nil {
		return nil, s.wrap("change evse", err)
	}
	s.hooks.Committed("change_evse", start, 1)
	if queued {
		s.hooks.Announce()
	}
	return &e, nil
}

// errNoChange rolls back a transaction that has nothing to write (the claim of an
// idempotency key included).
var errNoChange = errors.New("no change")

// lockLocation locks the row of location id (FOR NO KEY UPDATE), then reads it with its
// EVSE uids; ok is false when there is none. The read is a statement of its own, after
// the lock, so that it sees what the previous holder of the lock committed, EVSEs put
// at the location included.
func lockLocation(ctx context.Context, tx pgx.Tx, id string) (l chargenet.Location, ok bool, err error) {
	tag, err := tx.Exec(ctx, `SELECT 1 FROM locations WHERE id = $1 FOR NO KEY UPDATE`, id)
	if err != nil || tag.RowsAffected() == 0 {
		return l, false, err
	}
	rows, err := tx.Query(ctx, selectLocations+` WHERE l.id = $1`, id)
	if err != nil {
		return l, false, err
	}
	l, err = pgx.CollectExactlyOneRow(rows, scanLocation)
	if errors.Is(err, pgx.ErrNoRows) {
		return l, false, nil
	}
	return l, err == nil, err
}

// PutLocation implements chargenet.LocationService.PutLocation, with its errors, in one
// transaction that locks the location's row; of two concurrent creates of one id, the
// second is a replacement.
func (s *Store) PutLocation(ctx context.Context, l *chargenet.Location, actor string, now time.Time) (*chargenet.Location, bool, error) {
	start := time.Now()
	now = chargenet.Stamp(now)
	var out chargenet.Location
	var created, queued bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		cur, ok, err := lockLocation(ctx, tx, l.ID)
		if err != nil {
			return err
		}
		if !ok && l.IfVersion != 0 {
			return l.CheckVersion(nil)
		}
		if !ok {
			tag, err := tx.Exec(ctx, `INSERT INTO locations (id, name, address, city, postal_code, country, latitude, longitude, `+
				`time_zone, last_updated, version) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, 1) ON CONFLICT (id) DO NOTHING`,
				l.ID, l.Name, l.Address, l.City, l.PostalCode, l.Country, l.Latitude, l.Longitude, l.TimeZone, now)
			if err != nil {
				return err
			}
			if created = tag.RowsAffected() == 1; !created {
				// Created meanwhile by another transaction, now committed: replace it.
				if cur, ok, err = lockLocation(ctx, tx, l.ID); err != nil {
					return err
				}
				if !ok {
					return errors.New("location " + l.ID + " neither inserted nor found")
				}
			}
		}
		typ := chargenet.EventLocationCreated
		if created {
			out = *l
			out.EvseUIDs, out.LastUpdated, out.Version, out.DeletedAt, out.IfVersion = []int64{}, now, 1, nil, 0
		} else {
			if cur.DeletedAt != nil {
				return chargenet.LocationDeleted(l.ID, *cur.DeletedAt)
			}
			if err := l.CheckVersion(&cur); err != nil {
				return err
			}
			if cur.SameFields(l) {
				out = cur
				return nil
			}
			out = *l
			out.EvseUIDs, out.LastUpdated, out.Version, out.DeletedAt, out.IfVersion = cur.EvseUIDs, cur.LastUpdated, cur.Version, nil, 0
			out.Touch(now)
			if _, err := tx.Exec(ctx, `UPDATE locations SET name = $2, address = $3, city = $4, postal_code = $5, country = $6, `+
				`latitude = $7, longitude = $8, time_zone = $9, last_updated = $10, version = $11 WHERE id = $1`,
				l.ID, l.Name, l.Address, l.City, l.PostalCode, l.Country, l.Latitude, l.Longitude, l.TimeZone, out.LastUpdated,
				out.Version); err != nil {
				return err
			}
			typ = chargenet.EventLocationUpdated
		}
		if err := storeLocationDoc(ctx, tx, &out); err != nil {
			return err
		}
		ev := chargenet.NewLocationEvent(typ, &out, now)
		ev.Actor = actor
		queued, err = recordEvents(ctx, tx, ev)
		return err
	})
	if err != nil {
		return nil, false, s.wrap("put location", err)
	}
	s.hooks.Committed("put_location", start, 1)
	if queued {
		s.hooks.Announce()
	}
	return &out, created, nil
}

// DeleteLocation marks location id deleted, touched ((*chargenet.Location).Touch) and
// with DeletedAt its new LastUpdated, and its location.deleted event (see recordEvents), in one
// transaction that locks its row, and returns it as committed; a location deleted
// already is returned as it is. The row stays: Location still finds it, ListLocations
// no longer does, and its id cannot be used again.
//
// Errors: an ErrNotFound *chargenet.Error with Param "id" when there is no such
// location; chargenet.LocationInUse, naming them, while EVSEs at it are not REMOVED;
// otherwise wrapped driver or context errors, wrapping chargenet.ErrUnavailable if the
// database cannot be reached. Nothing is written when an error is returned.
func (s *Store) DeleteLocation(ctx context.Context, id, actor string, now time.Time) (*chargenet.Location, error) {
	start := time.Now()
	now = chargenet.Stamp(now)
	var out chargenet.Location
	var queued bool
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		l, ok, err := lockLocation(ctx, tx, id)
		if err != nil {
			return err
		}
		if !ok {
			return chargenet.LocationNotFound("id", id)
		}
		if l.DeletedAt != nil {
			out = l
			return nil
		}
		// After the lock: an EVSE created at or moved to the location meanwhile is seen.
		rows, err := tx.Query(ctx, `SELECT uid FROM evses WHERE location_id = $1 AND status <> $2 ORDER BY uid`,
			id, string(chargenet.StatusRemoved))
		if err != nil {
			return err
		}
		inUse, err := pgx.CollectRows(rows, pgx.RowTo[int64])
		if err != nil {
			return err
		}
		if len(inUse) > 0 {
			return chargenet.LocationInUse(id, inUse)
		}
		l.Touch(now)
		at := l.LastUpdated
		if _, err := tx.Exec(ctx, `UPDATE locations SET deleted_at = $2, last_updated = $2, version = $3 WHERE id = $1`,
			id, at, l.Version); err != nil {
			return err
		}
		l.DeletedAt = &at
		out = l
		if err := storeLocationDoc(ctx, tx, &out); err != nil {
			return err
		}
		ev := chargenet.NewLocationEvent(chargenet.EventLocationDeleted, &out, now)
		ev.Actor = actor
		queued, err = recordEvents(ctx, tx, ev)
		return err
	})
	if err != nil {
		return nil, s.wrap("delete location", err)
	}
	s.hooks.Committed("delete_location", start, 1)
	if queued {
		s.hooks.Announce()
	}
	return &out, nil
}
