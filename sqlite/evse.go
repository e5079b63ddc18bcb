package sqlite

import (
	"context"
	"database/sql"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
)

const (
	evseColumns      = `uid, evse_id, chargebox_id, location_id, status, last_updated, version`
	connectorColumns = `evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage, ` +
		`tariff_ids, error_code, error_info, error_vendor_code, deleted_at`

	// evseRowColumns are the columns of an EVSE joined with one of its connectors (all
	// NULL for an EVSE without connectors); see evseRow.
	evseRowColumns = `e.uid, e.evse_id, e.chargebox_id, e.location_id, e.status, e.last_updated, e.version, ` +
		`c.id, c.standard, c.format, c.power_type, c.max_electric_power, c.max_amperage, c.max_voltage, ` +
		`c.tariff_ids, c.error_code, c.error_info, c.error_vendor_code, c.deleted_at`

	// evseByUIDQuery reads an EVSE and its connectors in one statement, so in one
	// snapshot: the Version always describes the connectors read with it.
	evseByUIDQuery = `SELECT ` + evseRowColumns + ` FROM evses e LEFT JOIN connectors c ON c.evse_uid = e.uid ` +
		`WHERE e.uid = ? ORDER BY c.id`
)

// listEVSEsQuery returns the keyset read of one slice of EVSEs with their connectors,
// in one statement. Its parameters are the key (when hasKey) and the limit.
func listEVSEsQuery(backward, hasKey bool) string {
	where, dir := keyset("uid", "", backward, hasKey)
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
	deletedAt                   sql.NullString
	dest                        []any
}

func newEVSERow() *evseRow {
	r := &evseRow{}
	r.dest = []any{&r.uid, &r.evseID, &r.chargeboxID, &r.locationID, &r.status, &r.updated, &r.version,
		&r.connectorID, &r.standard, &r.format, &r.powerType, &r.power, &r.amperage, &r.voltage,
		&r.tariffs, &r.code, &r.info, &r.vendor, &r.deletedAt}
	return r
}

// scanEVSEs reads EVSE-with-connector rows, grouped by EVSE in the order the rows come,
// into EVSEs with their connectors. It closes rows.
func scanEVSEs(rows *sql.Rows, capacity int) ([]chargenet.EVSE, error) {
	defer func() { _ = rows.Close() }()
	out := make([]chargenet.EVSE, 0, capacity)
	r := newEVSERow()
	for rows.Next() {
		if err := rows.Scan(r.dest...); err != nil {
			return nil, err
		}
		if len(out) == 0 || out[len(out)-1].UID != r.uid {
			updated, err := parseTime(r.updated)
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
			})
		}
		if !r.connectorID.Valid {
			continue
		}
		c, err := r.connector()
		if err != nil {
			return nil, err
		}
		e := &out[len(out)-1]
		e.Connectors = append(e.Connectors, c)
	}
	return out, rows.Err()
}

func (r *evseRow) connector() (chargenet.Connector, error) {
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
		t, err := parseTime(r.deletedAt.String)
		if err != nil {
			return c, err
		}
		c.DeletedAt = &t
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
	rows, err := seekRows(ctx, &s.evses, seek)
	if err != nil {
		return nil, wrap("list evses", err)
	}
	evses, err := scanEVSEs(rows, seek.Limit)
	return evses, wrap("list evses", err)
}

// patchFields is the number of connector fields a chargenet.ConnectorPatch can set.
const patchFields = 5

// patchColumnNames are the columns of the patchable fields, in patchMask bit order.
var patchColumnNames = [patchFields]string{"standard", "format", "max_electric_power", "max_amperage", "max_voltage"}

// patchMask returns the set of fields a patch sets, bit i for patchColumnNames[i].
func patchMask(p chargenet.ConnectorPatch) int {
	mask := 0
	for i, set := range [patchFields]bool{p.Standard != nil, p.Format != nil, p.MaxElectricPower != nil,
		p.MaxAmperage != nil, p.MaxVoltage != nil} {
		if set {
			mask |= 1 << i
		}
	}
	return mask
}

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

// patchQuery returns the UPDATE that writes exactly the columns in mask.
func patchQuery(mask int) string {
	var set []string
	for i, col := range patchColumnNames {
		if mask&(1<<i) != 0 {
			set = append(set, col+" = ?")
		}
	}
	return `UPDATE connectors SET ` + strings.Join(set, ", ") + ` WHERE evse_uid = ? AND id = ?`
}

// UpdateConnector applies patch to connector connectorID of EVSE uid in a write
// transaction: it reads the EVSE with its connectors, lets
// (*chargenet.EVSE).UpdateConnector check the request, writes only the columns the
// patch sets, increments the EVSE's Version, sets its LastUpdated to now, and returns
// the EVSE as committed, and records the evse.connector.updated event in the same
// transaction. It returns once the transaction is committed (synced to disk).
//
// Concurrent calls are applied one after the other by the store's single writer, which
// commits the calls waiting at the same time in one transaction (group commit): one
// sync for many updates, each still seeing the ones before it. The group reads each
// EVSE it updates once, applies its updates to it in memory in turn, and writes it
// once.
//
// Errors: an ErrNotFound *chargenet.Error with Param "uid" if the EVSE does not exist;
// from the domain rules, unchanged, ErrNotFound (connector), ErrPreconditionFailed
// (ifMatch), ErrConflict (deleted connector) and ErrInvalid (the patched connector
// breaks a rule); ctx's error if it ends before the update is applied; a wrapped driver
// error, wrapping chargenet.ErrUnavailable when the database cannot be written or the
// store is closed. Nothing is written when an error is returned.
func (s *Store) UpdateConnector(ctx context.Context, uid, connectorID int64, patch chargenet.ConnectorPatch, ifMatch string, now time.Time) (*chargenet.EVSE, error) {
	req := &updateRequest{ctx: ctx, uid: uid, connectorID: connectorID, patch: patch, ifMatch: ifMatch, now: now.UTC(),
		done: make(chan updateResult, 1)}
	select {
	case s.updates <- req:
	case <-s.quit:
		return nil, wrap("update connector", errStoreClosed)
	case <-ctx.Done():
		return nil, ctx.Err()
	}
	// Once taken, the request is applied or failed by the writer, which always answers.
	res := <-req.done
	return res.evse, res.err
}

// errStoreClosed is the cause of an update on a closed store.
var errStoreClosed = errors.New("sql: database is closed")

// updateRequest is one UpdateConnector call, waiting for the writer.
type updateRequest struct {
	ctx              context.Context
	uid, connectorID int64
	patch            chargenet.ConnectorPatch
	ifMatch          string
	now              time.Time
	done             chan updateResult
}

type updateResult struct {
	evse *chargenet.EVSE
	err  error
}

// maxGroup bounds how many updates one transaction commits.
const maxGroup = 64

// writeLoop is the store's single writer: it takes the waiting updates, at most
// maxGroup at a time, and applies them in one transaction, until quit is closed.
func (s *Store) writeLoop() {
	defer close(s.writerDone)
	group := make([]*updateRequest, 0, maxGroup)
	for {
		select {
		case <-s.quit:
			return
		case req := <-s.updates:
			group = append(group[:0], req)
		}
	more:
		for len(group) < maxGroup {
			select {
			case req := <-s.updates:
				group = append(group, req)
			default:
				break more
			}
		}
		s.applyGroup(group)
	}
}

// applyGroup applies the updates of group in one transaction and answers each. An
// update refused by a rule writes nothing and is answered with its error; the others
// still commit. A driver error fails the whole transaction, and every update of the
// group is answered with it: none is committed.
func (s *Store) applyGroup(group []*updateRequest) {
	const op = "update connector"
	results := make([]updateResult, len(group))
	answer := func() {
		for i, r := range group {
			r.done <- results[i]
		}
	}
	failAll := func(err error) {
		for i := range results {
			if results[i].err == nil {
				results[i] = updateResult{err: wrap(op, err)}
			}
		}
		answer()
	}
	// The requests' contexts only decide whether an update starts: a cancellation in
	// the middle of the transaction must not fail the others.
	ctx, cancel := context.WithTimeout(context.Background(), busyTimeout+5*time.Second)
	defer cancel()
	start := time.Now()
	tx, err := s.write.BeginTx(ctx, nil) // BEGIN IMMEDIATE: holds the write lock from here
	if err != nil {
		failAll(err)
		return
	}
	defer func() { _ = tx.Rollback() }()
	// Whether a webhook takes the updates' events, read once for the group: the
	// transaction holds the write lock, so no subscription can appear meanwhile.
	var subscribed bool
	if err := tx.StmtContext(ctx, s.subscribed).QueryRowContext(ctx, chargenet.EventConnectorUpdated).Scan(&subscribed); err != nil {
		failAll(err)
		return
	}
	g := groupState{s: s, tx: tx, subscribed: subscribed, evses: make(map[int64]*groupEVSE)}
	for i, r := range group {
		if err := r.ctx.Err(); err != nil {
			results[i].err = err
			continue
		}
		e, err := g.apply(ctx, r)
		var de *chargenet.Error
		switch {
		case err == nil:
			results[i].evse = e
		case errors.As(err, &de):
			results[i].err = err // refused: changes nothing
		default:
			failAll(err)
			return
		}
	}
	if err := g.write(ctx); err != nil {
		failAll(err)
		return
	}
	if err := tx.Commit(); err != nil {
		failAll(err)
		return
	}
	s.Committed("update_connector", start, len(group))
	if g.queued {
		s.Announce()
	}
	answer()
}

// groupState is what one group commit has read and changed: each EVSE is read once, the
// group's updates are applied to it in memory one after the other, and write stores
// each changed EVSE once. An update thus costs the same whether the group holds one
// update of an EVSE or many.
type groupState struct {
	s          *Store
	tx         *sql.Tx
	subscribed bool                 // a webhook takes evse.connector.updated
	queued     bool                 // an update queued a webhook delivery
	evses      map[int64]*groupEVSE // by uid; nil for a uid that does not exist
	order      []*groupEVSE         // the changed EVSEs, in the order of their first change
}

type groupEVSE struct {
	e       *chargenet.EVSE
	masks   map[int64]int // connector id → the patched fields (patchMask), OR-ed
	changed bool
}

// apply applies one update of the group to the EVSE as the group's earlier updates left
// it (see UpdateConnector), and returns a copy of the EVSE it produces. When
// subscribed, it records the update's event in the transaction. Domain errors are
// returned before anything changes.
func (g *groupState) apply(ctx context.Context, r *updateRequest) (*chargenet.EVSE, error) {
	ge, read := g.evses[r.uid]
	if !read {
		rows, err := g.tx.StmtContext(ctx, g.s.evseForUpdate).QueryContext(ctx, r.uid)
		if err != nil {
			return nil, err
		}
		evses, err := scanEVSEs(rows, 1)
		if err != nil {
			return nil, err
		}
		if len(evses) > 0 {
			ge = &groupEVSE{e: &evses[0], masks: make(map[int64]int)}
		}
		g.evses[r.uid] = ge
	}
	if ge == nil {
		return nil, evseNotFound(r.uid)
	}
	if _, err := ge.e.UpdateConnector(r.connectorID, r.patch, r.ifMatch); err != nil {
		return nil, err
	}
	ge.masks[r.connectorID] |= patchMask(r.patch)
	ge.e.Version++
	ge.e.LastUpdated = r.now
	if !ge.changed {
		ge.changed = true
		g.order = append(g.order, ge)
	}
	e := ge.e.Clone()
	if g.subscribed {
		ev, err := chargenet.NewConnectorUpdatedEvent(e, r.connectorID, r.now)
		if err != nil {
			return nil, err
		}
		ev.TraceParent = chargenet.TraceParent(r.ctx) // the group's ctx is not the request's
		queued, err := g.s.recordEvents(ctx, g.tx, ev)
		if err != nil {
			return nil, err
		}
		g.queued = g.queued || queued
	}
	return e, nil
}

// write stores every changed EVSE as the group left it: the patched columns of each
// patched connector, then the EVSE's version, last update time and JSON.
func (g *groupState) write(ctx context.Context) error {
	for _, ge := range g.order {
		e := ge.e
		for id, mask := range ge.masks {
			args := append(patchedValues(e.Connector(id), mask), e.UID, id)
			if _, err := g.tx.StmtContext(ctx, g.s.patch[mask]).ExecContext(ctx, args...); err != nil {
				return err
			}
		}
		doc, err := chargenet.EVSEJSON(e)
		if err != nil {
			return err
		}
		if _, err := g.tx.StmtContext(ctx, g.s.setVersion).ExecContext(ctx, e.Version, formatTime(e.LastUpdated), string(doc), e.Version, e.UID); err != nil {
			return err
		}
	}
	return nil
}

// EVSEDoc returns the EVSE's stored contract JSON (chargenet.EVSEJSON) and its Version,
// read in one statement. An EVSE whose JSON is missing or was written for another
// version (a row changed by a program that does not keep it) is read and encoded
// instead. If there is no EVSE with this uid it returns an ErrNotFound
// *chargenet.Error with Param "uid"; other errors are wrapped driver errors.
//
// The answer may come from the read cache (see SetReadCacheSize) while nothing has been
// committed since it was read. The returned JSON must not be modified.
func (s *Store) EVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	at, cacheable := s.cache.version()
	if cacheable {
		if e, ok := s.cache.evse(at, uid); ok {
			return e.doc, e.version, nil
		}
	}
	doc, version, err := s.readEVSEDoc(ctx, uid)
	if err == nil && cacheable {
		s.cache.putEVSE(at, uid, evseDocEntry{doc: doc, version: version})
	}
	return doc, version, err
}

// readEVSEDoc is EVSEDoc without the cache. The JSON's capacity is its length.
func (s *Store) readEVSEDoc(ctx context.Context, uid int64) ([]byte, int64, error) {
	var doc sql.NullString
	var version int64
	err := s.evseDoc.QueryRowContext(ctx, uid).Scan(&doc, &version)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, 0, evseNotFound(uid)
	}
	if err != nil {
		return nil, 0, wrap("evse doc", err)
	}
	if doc.Valid {
		return clip([]byte(doc.String)), version, nil
	}
	e, err := s.EVSE(ctx, uid)
	if err != nil {
		return nil, 0, err
	}
	b, err := chargenet.EVSEJSON(e)
	return clip(b), e.Version, wrap("evse doc", err)
}

// fillEVSEDocs writes the JSON of every EVSE that has none or has one of another
// version (rows written before the column existed, or by a program that does not keep
// it), a thousand per transaction. Errors are wrapped driver errors.
func (s *Store) fillEVSEDocs(ctx context.Context) error {
	for {
		n := 0
		err := s.writeTx(ctx, func(tx *sql.Tx) error {
			rows, err := tx.QueryContext(ctx, `WITH todo AS (SELECT uid FROM evses WHERE doc IS NULL OR doc_version IS NOT version `+
				`ORDER BY uid LIMIT 1000) `+
				`SELECT `+evseRowColumns+` FROM evses e LEFT JOIN connectors c ON c.evse_uid = e.uid `+
				`WHERE e.uid IN (SELECT uid FROM todo) ORDER BY e.uid, c.id`)
			if err != nil {
				return err
			}
			evses, err := scanEVSEs(rows, 1000)
			if err != nil {
				return err
			}
			for i := range evses {
				doc, err := chargenet.EVSEJSON(&evses[i])
				if err != nil {
					return err
				}
				if _, err := tx.ExecContext(ctx, `UPDATE evses SET doc = ?, doc_version = version WHERE uid = ?`, string(doc), evses[i].UID); err != nil {
					return err
				}
			}
			n = len(evses)
			return nil
		})
		if err != nil {
			return wrap("filling EVSE docs", err)
		}
		if n == 0 {
			return nil
		}
	}
}

var _ chargenet.EVSEDocs = (*Store)(nil)
