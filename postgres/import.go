package postgres

import (
	"cmp"
	"context"
	"fmt"
	"slices"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// Import implements chargenet.Store.Import, with its errors: all of the inventory
// in one transaction or nothing. It checks every identifier in one round trip, then
// streams the rows with COPY (a million records take seconds); imports and creates take
// turns through an advisory lock so that the check holds until the commit. Its
// statements have no statement_timeout; ctx bounds them.
func (s *Store) Import(ctx context.Context, inv *chargenet.Inventory) error {
	if err := inv.Validate(); err != nil {
		return err
	}
	err := s.lockedTx(ctx, inventoryLock, func(tx pgx.Tx) error {
		if err := checkImport(ctx, tx, inv); err != nil {
			return err
		}
		return copyInventory(ctx, tx, inv)
	})
	return s.wrap("import", err)
}

// checkImport returns the error of the first record of inv whose identifier exists in
// the database already, or whose location exists neither in inv nor in the database, or
// is deleted.
func checkImport(ctx context.Context, tx pgx.Tx, inv *chargenet.Inventory) error {
	n := len(inv.EVSEs)
	if len(inv.Locations) == 0 && n == 0 {
		return nil
	}
	locIDs := make([]string, len(inv.Locations))
	inFile := make(map[string]bool, len(inv.Locations))
	for i := range inv.Locations {
		locIDs[i] = inv.Locations[i].ID
		inFile[locIDs[i]] = true
	}
	uids, evseIDs := make([]int64, n), make([]string, n)
	var refs []string // locations the EVSEs refer to that are not in the file, ...
	var refAt []int64 // ... and the index of the first EVSE referring to each
	seen := map[string]bool{}
	for i := range inv.EVSEs {
		e := &inv.EVSEs[i]
		uids[i], evseIDs[i] = e.UID, e.EvseID
		if id := e.LocationID; id != "" && !inFile[id] && !seen[id] {
			seen[id] = true
			refs, refAt = append(refs, id), append(refAt, int64(i))
		}
	}

	// Each query returns the lowest 0-based index of a record that fails, or NULL.
	var b pgx.Batch
	var locTaken, uidTaken, evseIDTaken, locMissing, locDeleted pgtype.Int8
	b.Queue(`SELECT min(u.i) - 1 FROM unnest($1::text[]) WITH ORDINALITY AS u(id, i) JOIN locations l ON l.id = u.id`,
		locIDs).QueryRow(func(r pgx.Row) error { return r.Scan(&locTaken) })
	b.Queue(`SELECT min(u.i) - 1 FROM unnest($1::bigint[]) WITH ORDINALITY AS u(uid, i) JOIN evses e ON e.uid = u.uid`,
		uids).QueryRow(func(r pgx.Row) error { return r.Scan(&uidTaken) })
	b.Queue(`SELECT min(u.i) - 1 FROM unnest($1::text[]) WITH ORDINALITY AS u(evse_id, i) JOIN evses e ON e.evse_id = u.evse_id`,
		evseIDs).QueryRow(func(r pgx.Row) error { return r.Scan(&evseIDTaken) })
	b.Queue(`SELECT min(u.i) FROM unnest($1::text[], $2::bigint[]) AS u(id, i) `+
		`WHERE NOT EXISTS (SELECT 1 FROM locations l WHERE l.id = u.id)`,
		refs, refAt).QueryRow(func(r pgx.Row) error { return r.Scan(&locMissing) })
	b.Queue(`SELECT min(u.i) FROM unnest($1::text[], $2::bigint[]) AS u(id, i) `+
		`WHERE EXISTS (SELECT 1 FROM locations l WHERE l.id = u.id AND l.deleted_at IS NOT NULL)`,
		refs, refAt).QueryRow(func(r pgx.Row) error { return r.Scan(&locDeleted) })
	if err := tx.SendBatch(ctx, &b).Close(); err != nil {
		return err
	}

	if locTaken.Valid {
		i := locTaken.Int64
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("locations[%d].id", i),
			"locations[%d].id: location %q already exists", i, locIDs[i])
	}
	first := int64(n)
	for _, v := range []pgtype.Int8{uidTaken, evseIDTaken, locMissing, locDeleted} {
		if v.Valid {
			first = min(first, v.Int64)
		}
	}
	switch i := first; {
	case uidTaken.Valid && uidTaken.Int64 == i:
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("evses[%d].uid", i),
			"evses[%d].uid: EVSE %d already exists", i, uids[i])
	case evseIDTaken.Valid && evseIDTaken.Int64 == i:
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("evses[%d].evseId", i),
			"evses[%d].evseId: an EVSE with evseId %q already exists", i, evseIDs[i])
	case locMissing.Valid && locMissing.Int64 == i:
		return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, fmt.Sprintf("evses[%d].locationId", i),
			"evses[%d].locationId: location %q exists neither in the import nor in the database", i, inv.EVSEs[i].LocationID)
	case locDeleted.Valid && locDeleted.Int64 == i:
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeLocationDeleted, fmt.Sprintf("evses[%d].locationId", i),
			"evses[%d].locationId: location %q was deleted", i, inv.EVSEs[i].LocationID)
	}
	return nil
}

// copyInventory streams inv into the tables with COPY: locations, then EVSEs, then
// their connectors.
func copyInventory(ctx context.Context, tx pgx.Tx, inv *chargenet.Inventory) error {
	// Each location and EVSE is stored with its JSON (see EVSEDoc, ListLocationDocs); a
	// location's JSON lists the uids of the EVSEs the import gives it.
	uids := make(map[string][]int64, len(inv.Locations))
	inImport := make(map[string]bool, len(inv.Locations))
	for i := range inv.Locations {
		inImport[inv.Locations[i].ID] = true
	}
	var touched []string // existing locations that gain EVSEs
	for i := range inv.EVSEs {
		if id := inv.EVSEs[i].LocationID; id != "" {
			if inImport[id] {
				uids[id] = append(uids[id], inv.EVSEs[i].UID)
			} else if !slices.Contains(touched, id) {
				touched = append(touched, id)
			}
		}
	}
	newest := inv.NewestEVSEUpdates()
	if len(inv.Locations) > 0 {
		_, err := tx.CopyFrom(ctx, pgx.Identifier{"locations"},
			[]string{"id", "name", "address", "city", "postal_code", "country", "latitude", "longitude", "time_zone", "last_updated",
				"version", "doc", "doc_uids"},
			pgx.CopyFromSlice(len(inv.Locations), func(i int) ([]any, error) {
				l := inv.Locations[i]
				l.EvseUIDs = uids[l.ID]
				slices.Sort(l.EvseUIDs)
				l.LastUpdated, l.Version = chargenet.Stamp(l.LastUpdated), 1
				if t := newest[l.ID]; t.After(l.LastUpdated) {
					l.LastUpdated = t
				}
				doc, docUIDs, err := locationDoc(l)
				if err != nil {
					return nil, fmt.Errorf("locations[%d]: %w", i, err)
				}
				return []any{l.ID, l.Name, l.Address, l.City, l.PostalCode, l.Country, l.Latitude, l.Longitude,
					l.TimeZone, l.LastUpdated, l.Version, string(doc), docUIDs}, nil
			}))
		if err != nil {
			return fmt.Errorf("copying locations: %w", err)
		}
	}
	if len(inv.EVSEs) == 0 {
		return nil
	}
	_, err := tx.CopyFrom(ctx, pgx.Identifier{"evses"},
		[]string{"uid", "evse_id", "chargebox_id", "location_id", "status", "last_updated", "version", "doc", "doc_version"},
		pgx.CopyFromSlice(len(inv.EVSEs), func(i int) ([]any, error) {
			e := importedEVSE(&inv.EVSEs[i])
			doc, err := wire.EncodeEVSE(&e)
			if err != nil {
				return nil, fmt.Errorf("evses[%d]: %w", i, err)
			}
			return []any{e.UID, e.EvseID, e.ChargeboxID, nullText(e.LocationID), string(e.Status), e.LastUpdated, int64(1),
				string(doc), int64(1)}, nil
		}))
	if err != nil {
		return fmt.Errorf("copying evses: %w", err)
	}
	// Existing locations that gained EVSEs are touched: their JSON lists the new uids.
	slices.Sort(touched)
	for _, id := range touched {
		if err := touchLocations(ctx, tx, newest[id], id); err != nil {
			return err
		}
	}
	i, j := 0, -1 // the connector being copied: inv.EVSEs[i].Connectors[j]
	_, err = tx.CopyFrom(ctx, pgx.Identifier{"connectors"},
		[]string{"evse_uid", "id", "standard", "format", "power_type", "max_electric_power", "max_amperage", "max_voltage",
			"tariff_ids", "error_code", "error_info", "error_vendor_code", "deleted_at", "last_updated"},
		pgx.CopyFromFunc(func() ([]any, error) {
			for j++; i < len(inv.EVSEs) && j >= len(inv.EVSEs[i].Connectors); j = 0 {
				i++
			}
			if i == len(inv.EVSEs) {
				return nil, nil // end of data
			}
			e, c := &inv.EVSEs[i], &inv.EVSEs[i].Connectors[j]
			tariffs := c.TariffIDs
			if tariffs == nil {
				tariffs = []string{} // NOT NULL
			}
			var code, info, vendor pgtype.Text
			if c.Error != nil {
				code, info, vendor = nullText(string(c.Error.Code)), nullText(c.Error.Info), nullText(c.Error.VendorErrorCode)
			}
			var deleted pgtype.Timestamptz
			if c.DeletedAt != nil {
				deleted = pgtype.Timestamptz{Time: chargenet.Stamp(*c.DeletedAt), Valid: true}
			}
			return []any{e.UID, c.ID, string(c.Standard), string(c.Format), string(c.PowerType),
				c.MaxElectricPower, c.MaxAmperage, c.MaxVoltage, tariffs, code, info, vendor, deleted, chargenet.Stamp(e.LastUpdated)}, nil
		}))
	if err != nil {
		return fmt.Errorf("copying connectors: %w", err)
	}
	return nil
}

// nullText returns s as text, NULL when empty.
func nullText(s string) pgtype.Text { return pgtype.Text{String: s, Valid: s != ""} }

// importedEVSE returns e as an import stores it: Version 1, times in UTC to the
// microsecond, each connector's LastUpdated its EVSE's, connectors in ascending id.
func importedEVSE(e *chargenet.EVSE) chargenet.EVSE {
	out := *e
	out.Version = 1
	out.LastUpdated = chargenet.Stamp(e.LastUpdated)
	out.Connectors = slices.Clone(e.Connectors)
	slices.SortFunc(out.Connectors, func(a, b chargenet.Connector) int { return cmp.Compare(a.ID, b.ID) })
	for i := range out.Connectors {
		c := &out.Connectors[i]
		c.LastUpdated = out.LastUpdated
		if c.DeletedAt != nil {
			t := chargenet.Stamp(*c.DeletedAt)
			c.DeletedAt = &t
		}
	}
	return out
}
