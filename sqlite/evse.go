package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/groupcommit"
	"github.com/chargenet/chargenet/internal/wire"
)

const (
	evseColumns      = `uid, evse_id, chargebox_id, location_id, status, last_updated, version`
	connectorColumns = `evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage, ` +
		`tariff_ids, error_code, error_info, error_vendor_code, deleted_at, last_updated`

	// evseRowColumns are the columns of an EVSE joined with one of its connectors (all
	// NULL for an EVSE without connectors); see evseRow.
	evseRowColumns = `e.uid, e.evse_id, e.chargebox_id, e.location_id, e.status, e.last_updated, e.version, ` +
		`c.id, c.standard, c.format, c.power_type, c.max_electric_power, c.max_amperage, c.max_voltage, ` +
		`c.tariff_ids, c.error_code, c.error_info, c.error_vendor_code, c.deleted_at, c.last_updated`

	// evseByUIDQuery reads an EVSE and its connectors in one statement, so in one
	// snapshot: the Version always describes the connectors read with it.
	evseByUIDQuery = `SELECT ` + evseRowColumns + ` FROM evses e LEFT JOIN connectors c ON c.evse_uid = e.uid ` +
		`WHERE e.uid = ? ORDER BY c.id`
)

// listEVSEsQuery returns the keyset read of one slice of EVSEs with their connectors,
// in one statement. Its parameters are the key (when mode has one) and the limit.
func listEVSEsQuery(backward bool, mode keyMode) string {
	where, dir := keyset("uid", "", backward, mode)
	return `WITH page AS (SELECT ` + evseColumns + ` FROM evses ` + where + `ORDER BY uid ` + dir + ` LIMIT ?) ` +
		`SELECT ` + evseRowColumns + ` FROM page e LEFT JOIN connectors c ON c.evse_uid = e.uid ` +
		`ORDER BY e.uid ` + dir + `, c.id`
}

// evseRow is one row of an EVSE-with-connector query.
type evseRow struct {
	uid, chargeboxID, version   int64
	evseID, status, updated     string
	locationID                  sql.NullString
	connectorID                 sql.NullInt64
	standard, format, powerType sql.NullString
	power, amperage, voltage    sql.NullFloat64
	tariffs, code, info, vendor sql.NullString
	deletedAt, connUpdated      sql.NullString
	dest                        []any
}

func newEVSERow() *evseRow {
	r := &evseRow{}
	r.dest = []any{&r.uid, &r.evseID, &r.chargeboxID, &r.locationID, &r.status, &r.updated, &r.version,
		&r.connectorID, &r.standard, &r.format, &r.powerType, &r.power, &r.amperage, &r.voltage,
		&r.tariffs, &r.code, &r.info, &r.vendor, &r.deletedAt, &r.connUpdated}
	return r
}

// scanEVSEs reads EVSE-with-connector rows, grouped by EVSE in the order the rows come,
// into EVSEs with their connectors. It closes rows.
func scanEVSEs(rows *sql.Rows, capacity int) ([]chargenet.EVSE, error) {
	return scanEVSEsAt(rows, capacity, false)
}

// scanEVSEsAt is scanEVSEs for rows that end with the EVSE's change position (when
// withPos), which it sets as ChangePos.
func scanEVSEsAt(rows *sql.Rows, capacity int, withPos bool) ([]chargenet.EVSE, error) {
	defer func() { _ = rows.Close() }()
	out := make([]chargenet.EVSE, 0, capacity)
	r := newEVSERow()
	dest := r.dest
	var pos int64
	if withPos {
		dest = append(dest[:len(dest):len(dest)], &pos)
	}
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].UID != r.uid {
			updated, err := parseStamp(r.updated)
			if err != nil {
				return nil, err
			}
			out = append(out, chargenet.EVSE{
				UID:         r.uid,
				EvseID:      r.evseID,
				ChargeboxID: r.chargeboxID,
				LocationID:  r.locationID.String,
				Status:      chargenet.EvseStatus(r.status),
				Connectors:  []chargenet.Connector{},
				LastUpdated: updated,
				Version:     r.version,
				ChangePos:   uint64(pos),
			})
		}
		if !r.connectorID.Valid {
			continue
		}
		e := &out[len(out)-1]
		c, err := r.connector(e.LastUpdated)
		if err != nil {
			return nil, err
		}
		e.Connectors = append(e.Connectors, c)
	}
	return out, rows.Err()
}

// connector returns the connector of the row; evseUpdated is its EVSE's LastUpdated,
// which a connector without its own (NULL, see migration 0019) takes.
func (r *evseRow) connector(evseUpdated time.Time) (chargenet.Connector, error) {
	c := chargenet.Connector{
		ID:               r.connectorID.Int64,
		Standard:         chargenet.Standard(r.standard.String),
		Format:           chargenet.Format(r.format.String),
		PowerType:        chargenet.PowerType(r.powerType.String),
		MaxElectricPower: r.power.Float64,
		MaxAmperage:      r.amperage.Float64,
		MaxVoltage:       r.voltage.Float64,
	}
	var err error
	if c.TariffIDs, err = decodeTariffs(r.tariffs.String); err != nil {
		return c, fmt.Errorf("tariff_ids of connector %d/%d: %w", r.uid, c.ID, err)
	}
	if r.code.Valid {
		c.Error = &chargenet.ConnectorError{Code: chargenet.ErrorCode(r.code.String), Info: r.info.String, VendorErrorCode: r.vendor.String}
	}
	if r.deletedAt.Valid {
		t, err := parseStamp(r.deletedAt.String)
		if err != nil {
			return c, err
		}
		c.DeletedAt = &t
	}
	c.LastUpdated = evseUpdated
	if r.connUpdated.Valid {
		t, err := parseStamp(r.connUpdated.String)
		if err != nil {
			return c, err
		}
		c.LastUpdated = t
	}
	return c, nil
}

// decodeTariffs decodes the JSON array of tariff ids; the result is never nil.
func decodeTariffs(s string) ([]string, error) {
	if s == "" || s == "[]" {
		return []string{}, nil
	}
	// Fast path for what encodeTariffs writes: without a backslash no string holds
	// an escaped quote, so the array splits on its separators.
	if len(s) >= 4 && strings.HasPrefix(s, `["`) && strings.HasSuffix(s, `"]`) && !strings.ContainsRune(s, '\\') {
		ids := strings.Split(s[2:len(s)-2], `","`)
		if !slices.ContainsFunc(ids, func(id string) bool { return strings.ContainsRune(id, '"') }) {
			return ids, nil
		}
	}
	var ids []string
	if err := json.Unmarshal([]byte(s), &ids); err != nil {
		return nil, err
	}
	if ids == nil {
		ids = []string{}
	}
	return ids, nil
}

func encodeTariffs(ids []string) (string, error) {
	if len(ids) == 0 {
		return "[]", nil
	}
	b, err := json.Marshal(ids)
	return string(b), err
}

func evseNotFound(uid int64) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "EVSE with uid %d not found", uid)
}

// EVSE returns the EVSE with all its connectors (ascending id, deleted ones included),
// read in one snapshot. If there is no EVSE with this uid it returns an ErrNotFound
// *chargenet.Error with Code not_found and Param "uid".
func (s *Store) EVSE(ctx context.Context, uid int64) (*chargenet.EVSE, error) {
	rows, err := s.evse.QueryContext(ctx, uid)
	if err != nil {
		return nil, wrap("evse", err)
	}
	evses, err := scanEVSEs(rows, 1)
	if err != nil {
		return nil, wrap("evse", err)
	}
	if len(evses) == 0 {
		return nil, evseNotFound(uid)
	}
	return &evses[0], nil
}

// ListEVSEs reads one keyset slice of EVSEs with their connectors, in one statement
// (see chargenet.Seek): ascending uids after seek.Key, or descending uids before it
// when seek.Backward. The result is empty, not nil, past the end. Errors are wrapped
// driver or context errors.
func (s *Store) ListEVSEs(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.EVSE, error) {
	if seek.Limit <= 0 {
		return []chargenet.EVSE{}, nil
	}
	rows, err := seekRows(ctx, &s.reads, listEVSEsQuery, seek)
	if err != nil {
		return nil, wrap("list evses", err)
	}
	evses, err := scanEVSEs(rows, seek.Limit)
	return evses, wrap("list evses", err)
}

// patchFields is the number of connector fields a chargenet.ConnectorPatch can set.
const patchFields = 5

// patchColumnNames are the columns of the patchable fields, in the order of their
// groupcommit Field bits.
var patchColumnNames = [patchFields]string{"standard", "format", "max_electric_power", "max_amperage", "max_voltage"}

// patchedValues returns the values of c's fields in mask, in patchColumnNames order.
func patchedValues(c *chargenet.Connector, mask int) []any {
	all := [patchFields]any{string(c.Standard), string(c.Format), c.MaxElectricPower, c.MaxAmperage, c.MaxVoltage}
	args := make([]any, 0, patchFields+2)
	for i, v := range all {
		if mask&(1<<i) != 0 {
			args = append(args, v)
		}
	}
	return args
}

// patchQuery returns the UPDATE that writes exactly the columns in mask, and the
// connector's last update: its parameters are patchedValues, the last update, the EVSE's
// uid and the connector's id.
func patchQuery(mask int) string {
	var set []string
	for i, col := range patchColumnNames {
		if mask&(1<<i) != 0 {
			set = append(set, col+" = ?")
		}
	}
	set = append(set, "last_updated = ?")
	return `UPDATE connectors SET ` + strings.Join(set, ", ") + ` WHERE evse_uid = ? AND id = ?`
}

// UpdateConnector implements chargenet.EVSEService.UpdateConnector, with its errors;
// ErrUnavailable wraps a database that cannot be written or a closed store. The store's
// single writer group-commits it with the other changes waiting (internal/groupcommit),
// and it returns once the group is synced to disk.
func (s *Store) UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch, actor string, now time.Time) (*chargenet.EVSE, error) {
	op := &groupcommit.Op{UID: uid, ConnectorID: connectorID, Patch: patch, IfMatch: ifMatch, Actor: actor, Now: now.UTC()}
	if err := s.submit(ctx, op, "update connector"); err != nil {
		return nil, err
	}
	return op.EVSE, nil
}

// EVSEDoc returns the EVSE's contract JSON (wire.EncodeEVSE) and its Version: the
// EVSE read in one statement (see EVSE) and encoded. If there is no EVSE with this uid
// it returns an ErrNotFound *chargenet.Error with Param "uid"; other errors are wrapped
// driver errors.
//
// The answer may come from the read cache (see SetReadCacheSize) while nothing has been
// committed since it was read. The returned JSON must not be modified.
func (s *Store) EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	at, cacheable := s.cache.view(ctx)
	if cacheable {
		if e, ok := s.cache.evse(at, uid); ok {
			return e.doc, e.version, nil
		}
	}
	e, err := s.EVSE(ctx, uid)
	if err != nil {
		return nil, 0, err
	}
	doc, err := wire.EncodeEVSE(e)
	if err != nil {
		return nil, 0, wrap("evse doc", err)
	}
	doc = clip(doc)
	if cacheable {
		s.cache.putEVSE(at, uid, evseDocEntry{doc: doc, version: e.Version})
	}
	return doc, e.Version, nil
}
