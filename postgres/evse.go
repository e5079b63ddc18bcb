package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/groupcommit"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

const (
	evseColumns      = `uid, evse_id, chargebox_id, location_id, status, last_updated, version, operator_hold`
	connectorColumns = `evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage, ` +
		`tariff_ids, error_code, error_info, error_vendor_code, deleted_at, last_updated`

	// evseWithConnectorsQuery reads one EVSE joined with its connectors (one row per
	// connector, connector columns NULL if it has none) in one statement, so in one
	// snapshot: the Version always describes the connectors read with it.
	evseWithConnectorsQuery = `SELECT e.uid, e.evse_id, e.chargebox_id, e.location_id, e.status, e.last_updated, e.version, ` +
		`e.operator_hold, c.evse_uid, c.id, c.standard, c.format, c.power_type, c.max_electric_power, c.max_amperage, c.max_voltage, ` +
		`c.tariff_ids, c.error_code, c.error_info, c.error_vendor_code, c.deleted_at, c.last_updated ` +
		`FROM evses e LEFT JOIN connectors c ON c.evse_uid = e.uid WHERE e.uid = $1 ORDER BY c.id`

	connectorsOfQuery = `SELECT ` + connectorColumns + ` FROM connectors WHERE evse_uid = ANY($1) ORDER BY evse_uid, id`
)

// snapshot is the transaction of a read made of several statements: they all see the
// database as it was at the first.
var snapshot = pgx.TxOptions{IsoLevel: pgx.RepeatableRead, AccessMode: pgx.ReadOnly}

// evseRow receives the evseColumns of one row.
type evseRow struct {
	e          chargenet.EVSE
	locationID pgtype.Text
}

func (r *evseRow) dest() []any {
	return []any{&r.e.UID, &r.e.EvseID, &r.e.ChargeboxID, &r.locationID, &r.e.Status, &r.e.LastUpdated, &r.e.Version,
		&r.e.OperatorHold}
}

// evse returns the EVSE read, without connectors (an empty slice).
func (r *evseRow) evse() chargenet.EVSE {
	e := r.e
	e.LocationID = r.locationID.String
	e.LastUpdated = e.LastUpdated.UTC()
	e.Connectors = []chargenet.Connector{}
	return e
}

// connectorRow receives the connectorColumns of one row. Every column is nullable so
// that the row of an EVSE without connectors in a LEFT JOIN scans too.
type connectorRow struct {
	evseUID, id                 pgtype.Int8
	standard, format, powerType pgtype.Text
	power, amperage, voltage    pgtype.Float8
	tariffIDs                   []string
	code, info, vendor          pgtype.Text
	deletedAt, lastUpdated      pgtype.Timestamptz
}

func (r *connectorRow) dest() []any {
	return []any{&r.evseUID, &r.id, &r.standard, &r.format, &r.powerType, &r.power, &r.amperage, &r.voltage,
		&r.tariffIDs, &r.code, &r.info, &r.vendor, &r.deletedAt, &r.lastUpdated}
}

// connector returns the connector read; ok is false if the row held none. evseUpdated
// is its EVSE's LastUpdated, which a connector without its own (NULL, see migration
// 0016) takes.
func (r *connectorRow) connector(evseUpdated time.Time) (c chargenet.Connector, ok bool) {
	if !r.id.Valid {
		return c, false
	}
	c = chargenet.Connector{
		ID:               r.id.Int64,
		Standard:         chargenet.Standard(r.standard.String),
		Format:           chargenet.Format(r.format.String),
		PowerType:        chargenet.PowerType(r.powerType.String),
		MaxElectricPower: r.power.Float64,
		MaxAmperage:      r.amperage.Float64,
		MaxVoltage:       r.voltage.Float64,
		TariffIDs:        r.tariffIDs,
	}
	if c.TariffIDs == nil {
		c.TariffIDs = []string{}
	}
	if r.code.Valid {
		c.Error = &chargenet.ConnectorError{Code: chargenet.ErrorCode(r.code.String), Info: r.info.String, VendorErrorCode: r.vendor.String}
	}
	if r.deletedAt.Valid {
		t := r.deletedAt.Time.UTC()
		c.DeletedAt = &t
	}
	c.LastUpdated = evseUpdated
	if r.lastUpdated.Valid {
		c.LastUpdated = r.lastUpdated.Time.UTC()
	}
	return c, true
}

func evseNotFound(uid int64) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "EVSE with uid %d not found", uid)
}

// EVSE returns the EVSE with all its connectors (ascending id, deleted ones included)
// and its operator hold, read in one statement. If there is no EVSE with this uid it
// returns an ErrNotFound *chargenet.Error with Code not_found, Param "uid" and Message
// "EVSE with uid <uid> not found". Other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) EVSE(ctx context.Context, uid int64) (*chargenet.EVSE, error) {
	rows, err := s.pool.Query(ctx, evseWithConnectorsQuery, uid)
	if err != nil {
		return nil, s.wrap("evse", err)
	}
	defer rows.Close()
	var (
		er   evseRow
		cr   connectorRow
		e    *chargenet.EVSE
		dest = append(er.dest(), cr.dest()...)
	)
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return nil, s.wrap("evse", err)
		}
		if e == nil {
			v := er.evse()
			e = &v
		}
		if c, ok := cr.connector(e.LastUpdated); ok {
			e.Connectors = append(e.Connectors, c)
		}
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("evse", err)
	}
	if e == nil {
		return nil, evseNotFound(uid)
	}
	return e, nil
}

// ListEVSEs reads one keyset slice of EVSEs with their connectors (see chargenet.Seek):
// ascending uids after seek.Key, or descending uids before it when seek.Backward. It
// reads the page, then the page's connectors in one query, both in one REPEATABLE READ
// transaction, so that every EVSE's connectors match its Version. The result is empty,
// not nil, past the end. Errors are wrapped driver or context errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) ListEVSEs(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.EVSE, error) {
	if seek.Limit <= 0 {
		return []chargenet.EVSE{}, nil
	}
	var out []chargenet.EVSE
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		query, args := seekQuery(`SELECT `+evseColumns+` FROM evses`, "uid", seek)
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		var er evseRow
		out, err = pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.EVSE, error) {
			err := row.Scan(er.dest()...)
			return er.evse(), err
		})
		if err != nil || len(out) == 0 {
			return err
		}
		return loadConnectors(ctx, tx, out)
	})
	if err != nil {
		return nil, s.wrap("list evses", err)
	}
	if out == nil {
		out = []chargenet.EVSE{}
	}
	return out, nil
}

// loadConnectors reads the connectors of evses, in one query, into their Connectors in
// ascending id order.
func loadConnectors(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, evses []chargenet.EVSE) error {
	index := make(map[int64]int, len(evses))
	uids := make([]int64, len(evses))
	for i := range evses {
		index[evses[i].UID] = i
		uids[i] = evses[i].UID
	}
	rows, err := q.Query(ctx, connectorsOfQuery, uids)
	if err != nil {
		return err
	}
	defer rows.Close()
	var cr connectorRow
	dest := cr.dest()
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		e := &evses[index[cr.evseUID.Int64]]
		c, _ := cr.connector(e.LastUpdated)
		e.Connectors = append(e.Connectors, c)
	}
	return rows.Err()
}

// lockEVSE locks the row of EVSE uid (SELECT ... FOR UPDATE) and returns the EVSE with
// its connectors (ascending id) and operator hold; evseNotFound if there is none.
func lockEVSE(ctx context.Context, tx pgx.Tx, uid int64) (chargenet.EVSE, error) {
	var er evseRow
	err := tx.QueryRow(ctx, `SELECT `+evseColumns+` FROM evses WHERE uid = $1 FOR UPDATE`, uid).Scan(er.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return chargenet.EVSE{}, evseNotFound(uid)
	}
	if err != nil {
		return chargenet.EVSE{}, err
	}
	// Read after the lock is held: the connectors as the previous writer left them.
	evses := []chargenet.EVSE{er.evse()}
	if err := loadConnectors(ctx, tx, evses); err != nil {
		return chargenet.EVSE{}, err
	}
	return evses[0], nil
}

// UpdateConnector implements chargenet.EVSEService.UpdateConnector, with its errors;
// ErrUnavailable wraps a database that cannot be reached or a closed store. It is
// group-committed (internal/groupcommit): a group locks its EVSE rows in uid order and
// then their locations in id order, so that writers through other replicas queue on them,
// and rewrites the stored JSON of what it changed.
func (s *Store) UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch, actor string, now time.Time) (*chargenet.EVSE, error) {
	op := &groupcommit.Op{UID: uid, ConnectorID: connectorID, Patch: patch, IfMatch: ifMatch, Actor: actor, Now: chargenet.Stamp(now)}
	if err := s.submit(ctx, op); err != nil {
		return nil, s.wrap("update connector", err)
	}
	return op.EVSE, nil
}

// EVSEDoc returns the EVSE's stored contract JSON (wire.EncodeEVSE) and its Version,
// read in one statement. An EVSE whose JSON is missing or was written for another
// version (a row changed by a program that does not keep it) is read and encoded
// instead. Concurrent calls are gathered into one statement (see readGroup). If there
// is no EVSE with this uid it returns an ErrNotFound *chargenet.Error with Param "uid";
// other errors are wrapped driver or context errors, wrapping chargenet.ErrUnavailable
// if the database cannot be reached or the store is closed.
func (s *Store) EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	d, found, err := s.evseDocs.get(ctx, uid)
	if err != nil {
		return nil, 0, s.wrap("evse doc", err)
	}
	if !found {
		return nil, 0, evseNotFound(uid)
	}
	if d.doc != nil {
		return d.doc, d.version, nil
	}
	e, err := s.EVSE(ctx, uid)
	if err != nil {
		return nil, 0, err
	}
	doc, err := wire.EncodeEVSE(e)
	return doc, e.Version, s.wrap("evse doc", err)
}
