package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/groupcommit"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgconn"
	"github.com/jackc/pgx/v5/pgtype"
	"github.com/jackc/pgx/v5/pgxpool"
)

// groupWriters is the number of change groups one store applies at once (see
// internal/groupcommit): one, as measured in docs/internals.md (Group commit).
const groupWriters = 1

// groupWaitTarget is how many changes end a wait for more by default
// (groupcommit.Config.WaitTarget): 32, against SQLite's 8, because a PostgreSQL commit
// costs more (figures: docs/internals.md, Commit wait).
const groupWaitTarget = 32

// groupRows selects the EVSEs of a group: those with uids $1 and those of charge boxes $2.
const groupRows = `uid = ANY($1::bigint[]) OR chargebox_id = ANY($2::bigint[])`

const (
	// groupLockQuery locks the EVSE rows of a group in uid order and reads them: FOR
	// UPDATE returns each row as the last writer committed it.
	groupLockQuery = `SELECT ` + evseColumns + `, status_at FROM evses WHERE ` + groupRows + ` ORDER BY uid FOR UPDATE`
	// groupConnectorsQuery reads their connectors with their status times, once the
	// locks are held (a statement of its own: a snapshot taken after the locks).
	groupConnectorsQuery = `SELECT ` + connectorColumns + `, status_at FROM connectors ` +
		`WHERE evse_uid IN (SELECT uid FROM evses WHERE ` + groupRows + `) ORDER BY evse_uid, id`

	// groupLocationLock locks the location rows of a group's EVSEs in id order, after
	// the EVSE rows (every transaction that locks both takes EVSEs first, in uid order,
	// so that replicas cannot deadlock); the EVSEs' location_id cannot change while they
	// are locked.
	groupLocationLock = `SELECT 1 FROM locations WHERE id IN (SELECT location_id FROM evses WHERE ` + groupRows + `) ` +
		`ORDER BY id FOR NO KEY UPDATE`
	// groupLocationsQuery reads them with their EVSE uids, once the locks are held (a
	// statement of its own: a snapshot that sees what the previous holder committed).
	groupLocationsQuery = selectLocations + ` WHERE l.id IN (SELECT location_id FROM evses WHERE ` + groupRows + `)`

	// groupEVSEWrite writes the changed EVSEs of a group in one statement.
	groupEVSEWrite = `UPDATE evses e SET status = u.status, status_at = u.status_at, version = u.version, ` +
		`last_updated = u.last_updated, doc = u.doc, doc_version = u.version ` +
		`FROM unnest($1::bigint[], $2::text[], $3::timestamptz[], $4::bigint[], $5::timestamptz[], $6::text[]) ` +
		`AS u(uid, status, status_at, version, last_updated, doc) WHERE e.uid = u.uid`
	// groupConnectorWrite writes the changed fields (groupcommit Field bits in u.f) of
	// the changed connectors of a group in one statement; the other columns keep their
	// values.
	groupConnectorWrite = `UPDATE connectors c SET ` +
		`standard = CASE WHEN u.f & 1 <> 0 THEN u.standard ELSE c.standard END, ` +
		`format = CASE WHEN u.f & 2 <> 0 THEN u.format ELSE c.format END, ` +
		`max_electric_power = CASE WHEN u.f & 4 <> 0 THEN u.power ELSE c.max_electric_power END, ` +
		`max_amperage = CASE WHEN u.f & 8 <> 0 THEN u.amperage ELSE c.max_amperage END, ` +
		`max_voltage = CASE WHEN u.f & 16 <> 0 THEN u.voltage ELSE c.max_voltage END, ` +
		`error_code = CASE WHEN u.f & 32 <> 0 THEN u.code ELSE c.error_code END, ` +
		`error_info = CASE WHEN u.f & 32 <> 0 THEN u.info ELSE c.error_info END, ` +
		`error_vendor_code = CASE WHEN u.f & 32 <> 0 THEN u.vendor ELSE c.error_vendor_code END, ` +
		`status_at = CASE WHEN u.f & 32 <> 0 THEN u.status_at ELSE c.status_at END, ` +
		`last_updated = u.last_updated ` +
		`FROM unnest($1::bigint[], $2::bigint[], $3::int[], $4::text[], $5::text[], $6::float8[], $7::float8[], ` +
		`$8::float8[], $9::text[], $10::text[], $11::text[], $12::timestamptz[], $13::timestamptz[]) ` +
		`AS u(evse_uid, id, f, standard, format, power, amperage, voltage, code, info, vendor, status_at, last_updated) ` +
		`WHERE c.evse_uid = u.evse_uid AND c.id = u.id`
	// groupLocationWrite writes the version, last update and JSON (with the EVSE uids it
	// lists, as text) of the locations a group touched, in one statement.
	groupLocationWrite = `UPDATE locations l SET version = u.version, last_updated = u.last_updated, doc = u.doc, ` +
		`doc_uids = u.uids::bigint[] ` +
		`FROM unnest($1::text[], $2::bigint[], $3::timestamptz[], $4::text[], $5::text[]) ` +
		`AS u(id, version, last_updated, doc, uids) WHERE l.id = u.id`
	// groupEventsInsert stores the events of a group in one statement, in their order
	// (so their seq numbers follow it).
	groupEventsInsert = `INSERT INTO events (id, type, occurred_at, data, traceparent, actor) ` +
		`SELECT * FROM unnest($1::text[], $2::text[], $3::timestamptz[], $4::text[], $5::text[], $6::text[])`
	// groupFanOut queues the events of a group ($1 ids, $2 times, $3 types, $4
	// subjects) for every webhook subscribed to their types, a push to a partner with
	// the event's subject, in one statement, event by event.
	groupFanOut = `INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at, subject) ` +
		`SELECT u.id, w.webhook_id, w.api_version, u.at, ` +
		`CASE WHEN w.api_version = '` + chargenet.PushAPIVersion + `' THEN u.subject END ` +
		`FROM unnest($1::text[], $2::timestamptz[], $3::text[], $4::text[]) WITH ORDINALITY AS u(id, at, type, subject, n) ` +
		`JOIN webhook_event_types w ON w.type = u.type ORDER BY u.n, w.webhook_id`
	// groupNotifyQuery notifies deliveriesChannel when the events of a group (ids $1)
	// queued a delivery.
	groupNotifyQuery = `SELECT pg_notify('` + deliveriesChannel + `', '') ` +
		`WHERE EXISTS (SELECT 1 FROM outbox WHERE event_id = ANY($1::text[]))`
)

// groupStore is the store as internal/groupcommit sees it.
type groupStore struct{ s *Store }

func (g groupStore) Announce() { g.s.hooks.Announce() }

func (g groupStore) Committed(op string, start time.Time, writes int) {
	g.s.hooks.Committed(op, start, writes)
}

// Begin acquires a connection and sends, in one round trip, BEGIN, the lock of the
// group's EVSE rows and their read, then the lock of their locations' rows and their
// read.
func (g groupStore) Begin(ctx context.Context, load groupcommit.Load) (groupcommit.Tx, *groupcommit.Loaded, error) {
	conn, err := g.s.pool.Acquire(ctx)
	if err != nil {
		return nil, nil, err
	}
	tx := &groupTx{conn: conn}
	uids, boxes := load.UIDs, load.Chargeboxes
	if uids == nil {
		uids = []int64{}
	}
	if boxes == nil {
		boxes = []int64{}
	}
	loaded := &groupcommit.Loaded{}
	var b pgx.Batch
	b.Queue(`BEGIN`)
	b.Queue(groupLockQuery, uids, boxes).Query(func(rows pgx.Rows) error {
		var err error
		loaded.EVSEs, err = scanLockedEVSEs(rows)
		return err
	})
	b.Queue(groupConnectorsQuery, uids, boxes).Query(func(rows pgx.Rows) error {
		return scanGroupConnectors(rows, loaded.EVSEs)
	})
	b.Queue(groupLocationLock, uids, boxes)
	b.Queue(groupLocationsQuery, uids, boxes).Query(func(rows pgx.Rows) error {
		locs, err := pgx.CollectRows(rows, scanLocation)
		loaded.Locations = make(map[string]*chargenet.Location, len(locs))
		for i := range locs {
			loaded.Locations[locs[i].ID] = &locs[i]
		}
		return err
	})
	if err := conn.SendBatch(ctx, &b).Close(); err != nil {
		tx.Rollback()
		return nil, nil, err
	}
	return tx, loaded, nil
}

// scanLockedEVSEs reads the rows of groupLockQuery.
func scanLockedEVSEs(rows pgx.Rows) ([]chargenet.EVSE, error) {
	var (
		er  evseRow
		eAt pgtype.Timestamptz
	)
	return pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.EVSE, error) {
		if err := row.Scan(append(er.dest(), &eAt)...); err != nil {
			return chargenet.EVSE{}, err
		}
		e := er.evse()
		if eAt.Valid {
			e.StatusReportedAt = eAt.Time.UTC()
		}
		return e, nil
	})
}

// scanGroupConnectors reads the rows of groupConnectorsQuery into the Connectors of
// evses (in ascending uid).
func scanGroupConnectors(rows pgx.Rows, evses []chargenet.EVSE) error {
	var (
		cr  connectorRow
		cAt pgtype.Timestamptz
	)
	dest := append(cr.dest(), &cAt)
	i := 0
	for rows.Next() {
		if err := rows.Scan(dest...); err != nil {
			return err
		}
		for i < len(evses) && evses[i].UID < cr.evseUID.Int64 {
			i++
		}
		if i == len(evses) || evses[i].UID != cr.evseUID.Int64 {
			continue // an EVSE inserted after the lock: not part of the group
		}
		c, _ := cr.connector(evses[i].LastUpdated)
		if cAt.Valid {
			c.StatusReportedAt = cAt.Time.UTC()
		}
		evses[i].Connectors = append(evses[i].Connectors, c)
	}
	return rows.Err()
}

// groupTx is a group's transaction on one pooled connection.
type groupTx struct {
	conn *pgxpool.Conn
}

// Commit sends, in one round trip, the writes of the changed EVSEs (each with its JSON,
// wire.EncodeEVSE), connectors and touched locations (each with its JSON; one
// statement each), the events and their fan-out (one statement each), the notification
// of the listening replicas when a delivery was queued, and COMMIT.
func (t *groupTx) Commit(ctx context.Context, changes []groupcommit.Change, locations []*chargenet.Location, events []chargenet.Event) (bool, error) {
	var b pgx.Batch
	if len(changes) > 0 {
		n := len(changes)
		uids, versions := make([]int64, n), make([]int64, n)
		statuses, docs := make([]string, n), make([]string, n)
		statusAt, updated := make([]pgtype.Timestamptz, n), make([]time.Time, n)
		var c connectorColumnsOf
		for i, ch := range changes {
			e := ch.EVSE
			doc, err := wire.EncodeEVSE(e)
			if err != nil {
				t.Rollback()
				return false, err
			}
			uids[i], versions[i], statuses[i], docs[i] = e.UID, e.Version, string(e.Status), string(doc)
			statusAt[i], updated[i] = nullTime(e.StatusReportedAt), chargenet.Stamp(e.LastUpdated)
			for id, f := range ch.Connectors {
				if conn := e.Connector(id); conn != nil {
					c.add(e.UID, conn, f)
				}
			}
		}
		b.Queue(groupEVSEWrite, uids, statuses, statusAt, versions, updated, docs)
		if len(c.uid) > 0 {
			b.Queue(groupConnectorWrite, c.uid, c.id, c.f, c.standard, c.format, c.power, c.amperage, c.voltage,
				c.code, c.info, c.vendor, c.statusAt, c.lastUpdated)
		}
	}
	if n := len(locations); n > 0 {
		ids, docs, uids := make([]string, n), make([]string, n), make([]string, n)
		versions, updated := make([]int64, n), make([]time.Time, n)
		for i, l := range locations {
			doc, docUIDs, err := locationDoc(*l)
			if err != nil {
				t.Rollback()
				return false, err
			}
			ids[i], versions[i], updated[i], docs[i], uids[i] = l.ID, l.Version, chargenet.Stamp(l.LastUpdated), string(doc), uidsText(docUIDs)
		}
		b.Queue(groupLocationWrite, ids, versions, updated, docs, uids)
	}
	queued := false
	if err := wire.EncodeEvents(events); err != nil {
		return false, err
	}
	if n := len(events); n > 0 {
		ids, types, data, tps, actors := make([]string, n), make([]string, n), make([]string, n), make([]string, n), make([]string, n)
		subjects := make([]string, n)
		ats := make([]time.Time, n)
		for i, ev := range events {
			ids[i], types[i], ats[i], data[i], tps[i], actors[i] = ev.ID, ev.Type, chargenet.Stamp(ev.Time), string(ev.Data), ev.TraceParent, ev.Actor
			subjects[i] = chargenet.EventSubject(&ev)
		}
		b.Queue(groupEventsInsert, ids, types, ats, data, tps, actors)
		b.Queue(groupFanOut, ids, ats, types, subjects).Exec(func(tag pgconn.CommandTag) error {
			queued = tag.RowsAffected() > 0
			return nil
		})
		b.Queue(groupNotifyQuery, ids)
	}
	b.Queue(`COMMIT`)
	err := t.conn.SendBatch(ctx, &b).Close()
	if err != nil {
		t.Rollback()
		return false, err
	}
	t.conn.Release()
	return queued, nil
}

// Rollback rolls the transaction back and releases the connection; a connection that
// cannot roll back is closed, so that the pool does not hand it out again.
func (t *groupTx) Rollback() {
	ctx, cancel := context.WithTimeout(context.Background(), 5*time.Second)
	defer cancel()
	if _, err := t.conn.Exec(ctx, `ROLLBACK`); err != nil {
		_ = t.conn.Conn().Close(ctx)
	}
	t.conn.Release()
}

// connectorColumnsOf gathers the columns of groupConnectorWrite.
type connectorColumnsOf struct {
	uid, id                  []int64
	f                        []int32
	standard, format         []string
	power, amperage, voltage []float64
	code, info, vendor       []pgtype.Text
	statusAt, lastUpdated    []pgtype.Timestamptz
}

func (c *connectorColumnsOf) add(uid int64, conn *chargenet.Connector, f int) {
	c.uid, c.id, c.f = append(c.uid, uid), append(c.id, conn.ID), append(c.f, int32(f))
	c.standard, c.format = append(c.standard, string(conn.Standard)), append(c.format, string(conn.Format))
	c.power, c.amperage, c.voltage = append(c.power, conn.MaxElectricPower), append(c.amperage, conn.MaxAmperage),
		append(c.voltage, conn.MaxVoltage)
	var code, info, vendor pgtype.Text
	if conn.Error != nil {
		code = pgtype.Text{String: string(conn.Error.Code), Valid: true}
		info = pgtype.Text{String: conn.Error.Info, Valid: true}
		vendor = pgtype.Text{String: conn.Error.VendorErrorCode, Valid: true}
	}
	c.code, c.info, c.vendor = append(c.code, code), append(c.info, info), append(c.vendor, vendor)
	c.statusAt = append(c.statusAt, nullTime(conn.StatusReportedAt))
	c.lastUpdated = append(c.lastUpdated, nullTime(conn.LastUpdated))
}

// uidsText returns uids as a PostgreSQL array literal, "{1001,1002}".
func uidsText(uids []int64) string {
	b := make([]byte, 0, 2+8*len(uids))
	b = append(b, '{')
	for i, uid := range uids {
		if i > 0 {
			b = append(b, ',')
		}
		b = strconv.AppendInt(b, uid, 10)
	}
	return string(append(b, '}'))
}

// retryGroup reports whether a group failed in a way that trying it again may mend: a
// deadlock or a serialization failure.
func retryGroup(err error) bool {
	var pe *pgconn.PgError
	return errors.As(err, &pe) && (pe.Code == "40P01" || pe.Code == "40001")
}

// submit applies op through the store's group commit and returns its error.
func (s *Store) submit(ctx context.Context, op *groupcommit.Op) error {
	if err := s.group.Submit(ctx, op); err != nil {
		if errors.Is(err, groupcommit.ErrClosed) {
			return chargenet.WrapStoreError("postgres", "write", err, func(error) bool { return true })
		}
		return err
	}
	return op.Err
}
