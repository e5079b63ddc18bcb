package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"encoding/json"
	"fmt"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
)

// Import inserts the inventory in one transaction: all of it, or nothing. A location id,
// EVSE uid or evseId that already exists is an ErrConflict *chargenet.Error, and an EVSE
// whose location exists neither in the file nor in the database an ErrInvalid one, both
// naming the record (as in "evses[3].uid").
func (s *Store) Import(ctx context.Context, inv *chargenet.Inventory) error {
	if err := inv.Validate(); err != nil {
		return err
	}
	tx, err := s.write.BeginTx(ctx, nil)
	if err != nil {
		return wrap(err)
	}
	defer tx.Rollback()
	loc, err := tx.PrepareContext(ctx, `INSERT INTO locations (`+locationColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return wrap(err)
	}
	for i := range inv.Locations {
		l := &inv.Locations[i]
		if _, err := loc.ExecContext(ctx, l.ID, l.Name, l.Address, l.City, l.PostalCode, l.Country, l.Latitude, l.Longitude,
			l.TimeZone, formatTime(l.LastUpdated)); err != nil {
			if _, ok := constraint(err); ok {
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("locations[%d].id", i),
					"locations[%d].id: location %q already exists", i, l.ID)
			}
			return wrap(err)
		}
	}
	evse, err := tx.PrepareContext(ctx, `INSERT INTO evses (`+evseColumns+`) VALUES (?, ?, ?, ?, ?, ?, 1)`)
	if err != nil {
		return wrap(err)
	}
	conn, err := tx.PrepareContext(ctx, `INSERT INTO connectors (`+connectorColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`)
	if err != nil {
		return wrap(err)
	}
	exists, err := tx.PrepareContext(ctx, `SELECT count(*) FROM locations WHERE id = ?`)
	if err != nil {
		return wrap(err)
	}
	for i := range inv.EVSEs {
		e := &inv.EVSEs[i]
		var locID sql.NullString
		if e.LocationID != "" {
			var n int
			if err := exists.QueryRowContext(ctx, e.LocationID).Scan(&n); err != nil {
				return wrap(err)
			}
			if n == 0 {
				return chargenet.Errorf(chargenet.ErrInvalid, chargenet.CodeInvalidBody, fmt.Sprintf("evses[%d].locationId", i),
					"evses[%d].locationId: location %q exists neither in the file nor in the database", i, e.LocationID)
			}
			locID = sql.NullString{String: e.LocationID, Valid: true}
		}
		if _, err := evse.ExecContext(ctx, e.UID, e.EvseID, e.ChargeboxID, locID, string(e.Status), formatTime(e.LastUpdated)); err != nil {
			if msg, ok := constraint(err); ok {
				if strings.Contains(msg, "evse_id") {
					return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("evses[%d].evseId", i),
						"evses[%d].evseId: an EVSE with evseId %q already exists", i, e.EvseID)
				}
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, fmt.Sprintf("evses[%d].uid", i),
					"evses[%d].uid: EVSE %d already exists", i, e.UID)
			}
			return wrap(err)
		}
		for _, c := range e.Connectors {
			tariffs, err := json.Marshal(nonNil(c.TariffIDs))
			if err != nil {
				return wrap(err)
			}
			var code, info, vendor, deleted sql.NullString
			if c.Error != nil {
				code = sql.NullString{String: string(c.Error.Code), Valid: true}
				info = sql.NullString{String: c.Error.Info, Valid: c.Error.Info != ""}
				vendor = sql.NullString{String: c.Error.VendorErrorCode, Valid: c.Error.VendorErrorCode != ""}
			}
			if c.DeletedAt != nil {
				deleted = sql.NullString{String: formatTime(*c.DeletedAt), Valid: true}
			}
			if _, err := conn.ExecContext(ctx, e.UID, c.ID, string(c.Standard), string(c.Format), string(c.PowerType),
				c.MaxElectricPower, c.MaxAmperage, c.MaxVoltage, string(tariffs), code, info, vendor, deleted); err != nil {
				return wrap(err)
			}
		}
	}
	return wrap(tx.Commit())
}

func nonNil(s []string) []string {
	if s == nil {
		return []string{}
	}
	return s
}

// CreateAPIKey stores a key's hash under its name. A name already used, by an active or
// a revoked key, is an ErrConflict *chargenet.Error: names identify keys in logs and
// revocations for good.
func (s *Store) CreateAPIKey(ctx context.Context, key chargenet.APIKey) error {
	_, err := s.write.ExecContext(ctx, `INSERT INTO api_keys (name, hash, scope, created_at) VALUES (?, ?, ?, ?)`,
		key.Name, key.Hash[:], key.Scope, formatTime(key.CreatedAt))
	if _, ok := constraint(err); ok {
		return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "name", "an API key named %q already exists", key.Name)
	}
	return wrap(err)
}

// RevokeAPIKey revokes the named key. ErrNotFound if no active key has that name.
func (s *Store) RevokeAPIKey(ctx context.Context, name string, now time.Time) error {
	res, err := s.write.ExecContext(ctx, `UPDATE api_keys SET revoked_at = ? WHERE name = ? AND revoked_at IS NULL`, formatTime(now), name)
	if err != nil {
		return wrap(err)
	}
	if n, err := res.RowsAffected(); err != nil || n == 0 {
		return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "name", "no active API key named %q", name)
	}
	return nil
}

// APIKeyByHash returns the active key with this hash, or an ErrNotFound *chargenet.Error.
func (s *Store) APIKeyByHash(ctx context.Context, hash [sha256.Size]byte) (*chargenet.APIKey, error) {
	var (
		k       chargenet.APIKey
		raw     []byte
		created string
	)
	err := s.stmts.apiKey.QueryRowContext(ctx, hash[:]).Scan(&k.Name, &raw, &k.Scope, &created)
	if err == sql.ErrNoRows {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "", "API key not found")
	}
	if err != nil {
		return nil, wrap(err)
	}
	copy(k.Hash[:], raw)
	if k.CreatedAt, err = parseTime(created); err != nil {
		return nil, err
	}
	return &k, nil
}

// Setting returns the stored value of a setting, storing value first if there is none.
func (s *Store) Setting(ctx context.Context, name, value string) (string, error) {
	if _, err := s.write.ExecContext(ctx, `INSERT INTO settings (name, value) VALUES (?, ?) ON CONFLICT (name) DO NOTHING`, name, value); err != nil {
		return "", wrap(err)
	}
	var stored string
	if err := s.write.QueryRowContext(ctx, `SELECT value FROM settings WHERE name = ?`, name).Scan(&stored); err != nil {
		return "", wrap(err)
	}
	return stored, nil
}
