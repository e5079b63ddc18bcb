package sqlite

import (
	"context"
	"database/sql"
	"fmt"
	"maps"
	"slices"

	"github.com/chargenet/chargenet"
	sqlite3 "modernc.org/sqlite/lib"
)

// Import implements chargenet.Store.Import, with its errors: all of the inventory
// in one transaction or nothing.
func (s *Store) Import(ctx context.Context, inv *chargenet.Inventory) error {
	const op = "import"
	if err := inv.Validate(); err != nil {
		return err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return wrap(op, err)
	}
	defer func() { _ = tx.Rollback() }()

	// Rows are inserted with a context that cannot be canceled, which spares the driver
	// a goroutine per statement; the loops check ctx every checkEvery rows instead, and
	// database/sql rolls the transaction back as soon as ctx ends.
	rowCtx := context.WithoutCancel(ctx)
	inImport := make(map[string]bool, len(inv.Locations))
	for i := range inv.Locations {
		inImport[inv.Locations[i].ID] = true
	}
	touched := map[string]bool{} // existing locations that gain EVSEs
	for i := range inv.EVSEs {
		if id := inv.EVSEs[i].LocationID; id != "" && !inImport[id] {
			touched[id] = true
		}
	}
	// An existing location must not be deleted: the first EVSE naming a deleted one is
	// refused.
	checked := map[string]bool{}
	for i := range inv.EVSEs {
		if id := inv.EVSEs[i].LocationID; touched[id] && !checked[id] {
			checked[id] = true
			var deleted bool
			if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM locations WHERE id = ? AND deleted_at IS NOT NULL)`, id).Scan(&deleted); err != nil {
				return wrap(op, err)
			}
			if deleted {
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeLocationDeleted, fmt.Sprintf("evses[%d].locationId", i),
					"evses[%d].locationId: location %q was deleted", i, id)
			}
		}
	}
	newest := inv.NewestEVSEUpdates()
	insLoc := tx.StmtContext(ctx, s.insertLocation)
	for i := range inv.Locations {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return wrap(op, ctx.Err())
		}
		l := &inv.Locations[i]
		updated := chargenet.Stamp(l.LastUpdated)
		if t := newest[l.ID]; t.After(updated) {
			updated = t
		}
		_, err := insLoc.ExecContext(rowCtx, l.ID, l.Name, l.Address, l.City, l.PostalCode, l.Country,
			l.Latitude, l.Longitude, l.TimeZone, formatTime(updated), 1)
		if err != nil {
			if constraintCode(err) == sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY {
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("locations[%d].id", i),
					"locations[%d].id: location %q already exists", i, l.ID)
			}
			return wrap(op, fmt.Errorf("locations[%d]: %w", i, err))
		}
	}

	insEVSE := tx.StmtContext(ctx, s.insertEVSE)
	insConn := tx.StmtContext(ctx, s.insertConnector)
	for i := range inv.EVSEs {
		if i%checkEvery == 0 && ctx.Err() != nil {
			return wrap(op, ctx.Err())
		}
		e := &inv.EVSEs[i]
		locID := sql.NullString{String: e.LocationID, Valid: e.LocationID != ""}
		updated := formatTime(chargenet.Stamp(e.LastUpdated))
		_, err := insEVSE.ExecContext(rowCtx, e.UID, e.EvseID, e.ChargeboxID, locID, string(e.Status), updated)
		if err != nil {
			switch constraintCode(err) {
			case sqlite3.SQLITE_CONSTRAINT_PRIMARYKEY:
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("evses[%d].uid", i),
					"evses[%d].uid: EVSE %d already exists", i, e.UID)
			case sqlite3.SQLITE_CONSTRAINT_UNIQUE: // evse_id is the only other unique column
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("evses[%d].evseId", i),
					"evses[%d].evseId: an EVSE with evseId %q already exists", i, e.EvseID)
			case sqlite3.SQLITE_CONSTRAINT_FOREIGNKEY:
				return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, fmt.Sprintf("evses[%d].locationId", i),
					"evses[%d].locationId: location %q exists neither in the import nor in the database", i, e.LocationID)
			}
			return wrap(op, fmt.Errorf("evses[%d]: %w", i, err))
		}
		for j := range e.Connectors {
			c := &e.Connectors[j]
			tariffs, err := encodeTariffs(c.TariffIDs)
			if err != nil {
				return wrap(op, fmt.Errorf("evses[%d].connectors[%d].tariffIds: %w", i, j, err))
			}
			var code, info, vendor, deleted sql.NullString
			if c.Error != nil {
				code = sql.NullString{String: string(c.Error.Code), Valid: true}
				info = sql.NullString{String: c.Error.Info, Valid: c.Error.Info != ""}
				vendor = sql.NullString{String: c.Error.VendorErrorCode, Valid: c.Error.VendorErrorCode != ""}
			}
			if c.DeletedAt != nil {
				deleted = sql.NullString{String: formatTime(chargenet.Stamp(*c.DeletedAt)), Valid: true}
			}
			if _, err := insConn.ExecContext(rowCtx, e.UID, c.ID, string(c.Standard), string(c.Format), string(c.PowerType),
				c.MaxElectricPower, c.MaxAmperage, c.MaxVoltage, tariffs, code, info, vendor, deleted, updated); err != nil {
				return wrap(op, fmt.Errorf("evses[%d].connectors[%d]: %w", i, j, err))
			}
		}
	}
	for _, id := range slices.Sorted(maps.Keys(touched)) {
		if err := touchLocation(ctx, tx, id, newest[id]); err != nil {
			return wrap(op, err)
		}
	}
	return wrap(op, tx.Commit())
}

// checkEvery is how many rows Import inserts between checks of its context.
const checkEvery = 1024
