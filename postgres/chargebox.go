package postgres

import (
	"context"
	"crypto/sha256"
	"errors"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

// chargeboxesChannel is notified, with a box's id as payload, by every transaction that
// registers, revokes or connects a box or records availability it owes: the replica
// holding its connection acts on it (chargenet.Hooks.OnChargeboxSignal; see
// startListeners).
const chargeboxesChannel = "chargenet_chargeboxes"

const (
	chargeboxColumns = `id, identity, password_hash, created_at, session, protocol, connected_at, last_seen_at, ` +
		`boot_vendor, boot_model, boot_serial, boot_firmware, booted_at`
	availabilityColumns = `evse_uid, chargebox_id, state, requested_at, answer, answered_at`
	signalQuery         = `SELECT pg_notify('` + chargeboxesChannel + `', $1::text)`
)

// chargeboxRow receives chargeboxColumns.
type chargeboxRow struct {
	c                               chargenet.Chargebox
	hash                            []byte
	session, protocol               pgtype.Text
	connected, seen, booted         pgtype.Timestamptz
	vendor, model, serial, firmware pgtype.Text
}

func (r *chargeboxRow) dest() []any {
	return []any{&r.c.ID, &r.c.Identity, &r.hash, &r.c.CreatedAt, &r.session, &r.protocol, &r.connected, &r.seen,
		&r.vendor, &r.model, &r.serial, &r.firmware, &r.booted}
}

func (r *chargeboxRow) chargebox() chargenet.Chargebox {
	c := r.c
	copy(c.PasswordHash[:], r.hash)
	c.CreatedAt = c.CreatedAt.UTC()
	c.Session, c.Protocol = r.session.String, r.protocol.String
	if r.connected.Valid && c.Session != "" {
		t := r.connected.Time.UTC()
		c.ConnectedAt = &t
	}
	if r.seen.Valid {
		t := r.seen.Time.UTC()
		c.LastSeenAt = &t
	}
	if r.booted.Valid {
		c.Boot = &chargenet.BootInfo{Vendor: r.vendor.String, Model: r.model.String, SerialNumber: r.serial.String,
			FirmwareVersion: r.firmware.String, At: r.booted.Time.UTC()}
	}
	return c
}

func chargeboxNotFound(id int64) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId", "charge box with chargeboxId %d is not registered", id)
}

// lockChargebox locks and reads box id. ErrNotFound when it is not registered.
func lockChargebox(ctx context.Context, tx pgx.Tx, id int64) (*chargenet.Chargebox, error) {
	var r chargeboxRow
	err := tx.QueryRow(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes WHERE id = $1 FOR UPDATE`, id).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, chargeboxNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	c := r.chargebox()
	return &c, nil
}

// chargeboxTx runs fn in a write transaction, announces the deliveries its events
// queued after the commit, and wraps errors with op. errNoChange from fn rolls back and
// is no error.
func (s *Store) chargeboxTx(ctx context.Context, op string, fn func(tx pgx.Tx, record func(...chargenet.Event) error) error) error {
	start, queued := time.Now(), false
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		return fn(tx, func(events ...chargenet.Event) error {
			q, err := recordEvents(ctx, tx, events...)
			queued = queued || q
			return err
		})
	})
	switch {
	case errors.Is(err, errNoChange):
		return nil
	case err != nil:
		return s.wrap(op, err)
	}
	s.hooks.Committed(op, start, 1)
	if queued {
		s.hooks.Announce()
	}
	return nil
}

func signal(ctx context.Context, tx pgx.Tx, id int64) error {
	_, err := tx.Exec(ctx, signalQuery, strconv.FormatInt(id, 10))
	return err
}

func bumpEpoch(ctx context.Context, tx pgx.Tx) error {
	_, err := tx.Exec(ctx, `UPDATE chargebox_epoch SET epoch = epoch + 1 WHERE id = 1`)
	return err
}

// RegisterChargebox registers box id, or replaces the identity and password hash of a
// registered one and ends its recorded connection (reason revoked), in one transaction
// (see chargenet.ChargeboxService).
func (s *Store) RegisterChargebox(ctx context.Context, id int64, identity string, hash [sha256.Size]byte, now time.Time) (bool, error) {
	created := false
	now = chargenet.Stamp(now)
	err := s.chargeboxTx(ctx, "register_chargebox", func(tx pgx.Tx, record func(...chargenet.Event) error) error {
		created = false
		var other int64
		err := tx.QueryRow(ctx, `SELECT id FROM chargeboxes WHERE identity = $1 AND id <> $2`, identity, id).Scan(&other)
		if err == nil {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "identity", "identity %q is taken by charge box %d", identity, other)
		}
		if !errors.Is(err, pgx.ErrNoRows) {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO chargeboxes (id, identity, password_hash, created_at) VALUES ($1, $2, $3, $4) `+
			`ON CONFLICT (id) DO NOTHING`, id, identity, hash[:], now)
		if err != nil {
			return err
		}
		box, err := lockChargebox(ctx, tx, id)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 1 {
			created = true
		} else {
			if err := s.endConnection(ctx, tx, box, chargenet.ReasonRevoked, now, record); err != nil {
				return err
			}
			if _, err := tx.Exec(ctx, `UPDATE chargeboxes SET identity = $2, password_hash = $3 WHERE id = $1`, id, identity, hash[:]); err != nil {
				return err
			}
		}
		if err := bumpEpoch(ctx, tx); err != nil {
			return err
		}
		return signal(ctx, tx, id)
	})
	return created, err
}

// RevokeChargebox ends the registration of box id, its recorded connection (reason
// revoked) and its availability requests, in one transaction.
func (s *Store) RevokeChargebox(ctx context.Context, id int64, now time.Time) error {
	now = chargenet.Stamp(now)
	return s.chargeboxTx(ctx, "revoke_chargebox", func(tx pgx.Tx, record func(...chargenet.Event) error) error {
		box, err := lockChargebox(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := s.endConnection(ctx, tx, box, chargenet.ReasonRevoked, now, record); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM chargebox_availability WHERE chargebox_id = $1`, id); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `DELETE FROM chargeboxes WHERE id = $1`, id); err != nil {
			return err
		}
		if err := bumpEpoch(ctx, tx); err != nil {
			return err
		}
		return signal(ctx, tx, id)
	})
}

// endConnection ends box's recorded connection, if any, at now: its
// chargebox.disconnected event naming reason, and its EVSEs in service UNKNOWN
// (chargenet.Disconnect), locked in uid order as the group commit locks them, with their
// events and stored JSON, and their locations touched; all with the box's actor.
func (s *Store) endConnection(ctx context.Context, tx pgx.Tx, box *chargenet.Chargebox, reason string, now time.Time,
	record func(...chargenet.Event) error) error {
	if !box.Connected() {
		return nil
	}
	if _, err := tx.Exec(ctx, `UPDATE chargeboxes SET session = NULL, connected_at = NULL WHERE id = $1`, box.ID); err != nil {
		return err
	}
	ev := chargenet.NewChargeboxEvent(chargenet.EventChargeboxDisconnected, box, reason, now)
	evses, err := lockBoxEVSEs(ctx, tx, box.ID)
	if err != nil {
		return err
	}
	changed, events := chargenet.Disconnect(evses, chargenet.ChargeboxActor(box.Identity), now)
	for _, e := range changed {
		if _, err := tx.Exec(ctx, `UPDATE evses SET status = $2, version = $3, last_updated = $4 WHERE uid = $1`,
			e.UID, string(e.Status), e.Version, chargenet.Stamp(e.LastUpdated)); err != nil {
			return err
		}
		if err := storeEVSEDoc(ctx, tx, e); err != nil {
			return err
		}
	}
	ids, newest := chargenet.ChangedLocations(changed)
	for _, id := range ids { // in id order, after the EVSEs (see touchLocations)
		if err := touchLocations(ctx, tx, newest[id], id); err != nil {
			return err
		}
	}
	return record(append([]chargenet.Event{ev}, events...)...)
}

// lockBoxes locks, before a transaction changes several charge boxes, the rows of boxes
// in id order and then the EVSE rows of the boxes of ending (whose connections it ends)
// in uid order, as the group commit locks EVSEs: two writers that each lock one box's
// rows after another's could otherwise deadlock.
func lockBoxes(ctx context.Context, tx pgx.Tx, boxes, ending []int64) error {
	if len(boxes) > 0 {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM chargeboxes WHERE id = ANY($1) ORDER BY id FOR UPDATE`, boxes); err != nil {
			return err
		}
	}
	if len(ending) > 0 {
		if _, err := tx.Exec(ctx, `SELECT 1 FROM evses WHERE chargebox_id = ANY($1) ORDER BY uid FOR UPDATE`, ending); err != nil {
			return err
		}
	}
	return nil
}

// lockBoxEVSEs locks the EVSEs of charge box id in uid order and reads them with their
// connectors (after the locks: as the previous writer left them).
func lockBoxEVSEs(ctx context.Context, tx pgx.Tx, id int64) ([]chargenet.EVSE, error) {
	boxes := []int64{id}
	rows, err := tx.Query(ctx, groupLockQuery, []int64{}, boxes)
	if err != nil {
		return nil, err
	}
	evses, err := scanLockedEVSEs(rows)
	if err != nil || len(evses) == 0 {
		return evses, err
	}
	rows, err = tx.Query(ctx, groupConnectorsQuery, []int64{}, boxes)
	if err != nil {
		return nil, err
	}
	return evses, scanGroupConnectors(rows, evses)
}

// ChargeboxByIdentity returns the registered box with this identity (without EVSEs and
// availability). ErrNotFound when there is none.
func (s *Store) ChargeboxByIdentity(ctx context.Context, identity string) (*chargenet.Chargebox, error) {
	var r chargeboxRow
	err := s.pool.QueryRow(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes WHERE identity = $1`, identity).Scan(r.dest()...)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "identity", "no charge box is registered with identity %q", identity)
	}
	if err != nil {
		return nil, s.wrap("chargebox by identity", err)
	}
	c := r.chargebox()
	return &c, nil
}

// Chargebox returns registered box id with its EVSE uids and availability requests, read
// in one snapshot.
func (s *Store) Chargebox(ctx context.Context, id int64) (*chargenet.Chargebox, error) {
	boxes, err := s.readChargeboxes(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes WHERE id = $1`, id)
	if err != nil {
		return nil, s.wrap("chargebox", err)
	}
	if len(boxes) == 0 {
		return nil, chargeboxNotFound(id)
	}
	return &boxes[0], nil
}

// ListChargeboxes reads one keyset slice of the registered boxes (see chargenet.Seek),
// each with its EVSE uids and availability, in one snapshot.
func (s *Store) ListChargeboxes(ctx context.Context, seek chargenet.Seek[int64]) ([]chargenet.Chargebox, error) {
	if seek.Limit <= 0 {
		return []chargenet.Chargebox{}, nil
	}
	query, args := seekQuery(`SELECT `+chargeboxColumns+` FROM chargeboxes`, "id", seek)
	boxes, err := s.readChargeboxes(ctx, query, args...)
	if err != nil {
		return nil, s.wrap("list chargeboxes", err)
	}
	return boxes, nil
}

// readChargeboxes reads the boxes query selects, with their EVSE uids and availability,
// in one REPEATABLE READ transaction.
func (s *Store) readChargeboxes(ctx context.Context, query string, args ...any) ([]chargenet.Chargebox, error) {
	out := []chargenet.Chargebox{}
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		var r chargeboxRow
		boxes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.Chargebox, error) {
			err := row.Scan(r.dest()...)
			return r.chargebox(), err
		})
		if err != nil || len(boxes) == 0 {
			return err
		}
		ids := make([]int64, len(boxes))
		index := make(map[int64]*chargenet.Chargebox, len(boxes))
		for i := range boxes {
			boxes[i].EVSEUIDs, boxes[i].Availability = []int64{}, []chargenet.AvailabilityRequest{}
			ids[i], index[boxes[i].ID] = boxes[i].ID, &boxes[i]
		}
		rows, err = tx.Query(ctx, `SELECT chargebox_id, uid FROM evses WHERE chargebox_id = ANY($1) ORDER BY chargebox_id, uid`, ids)
		if err != nil {
			return err
		}
		var box, uid int64
		if _, err := pgx.ForEachRow(rows, []any{&box, &uid}, func() error {
			index[box].EVSEUIDs = append(index[box].EVSEUIDs, uid)
			return nil
		}); err != nil {
			return err
		}
		asked, err := availability(ctx, tx, `SELECT `+prefixed(availabilityColumns, "a.")+` FROM chargebox_availability a `+
			`JOIN evses e ON e.uid = a.evse_uid AND e.chargebox_id = a.chargebox_id WHERE a.chargebox_id = ANY($1) `+
			`ORDER BY a.chargebox_id, a.evse_uid`, ids)
		if err != nil {
			return err
		}
		for _, a := range asked {
			index[a.ChargeboxID].Availability = append(index[a.ChargeboxID].Availability, a)
		}
		out = boxes
		return nil
	})
	return out, err
}

// availability reads availability requests (availabilityColumns); never nil.
func availability(ctx context.Context, q interface {
	Query(context.Context, string, ...any) (pgx.Rows, error)
}, query string, args ...any) ([]chargenet.AvailabilityRequest, error) {
	rows, err := q.Query(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	var a chargenet.AvailabilityRequest
	var answered pgtype.Timestamptz
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.AvailabilityRequest, error) {
		if err := row.Scan(&a.EVSEUID, &a.ChargeboxID, &a.State, &a.RequestedAt, &a.Answer, &answered); err != nil {
			return a, err
		}
		r := a
		r.RequestedAt = r.RequestedAt.UTC()
		if answered.Valid {
			t := answered.Time.UTC()
			r.AnsweredAt = &t
		}
		return r, nil
	})
	if out == nil {
		out = []chargenet.AvailabilityRequest{}
	}
	return out, err
}

// RecordConnections applies changes in order in one transaction (see
// chargenet.ChargeboxService). A connection signals its box, so that another replica
// holding an older connection of it closes that one.
func (s *Store) RecordConnections(ctx context.Context, changes []chargenet.ConnectionChange) error {
	if len(changes) == 0 {
		return nil
	}
	return s.chargeboxTx(ctx, "record_connections", func(tx pgx.Tx, record func(...chargenet.Event) error) error {
		var boxes, ending []int64
		for _, ch := range changes {
			boxes = append(boxes, ch.Chargebox)
			if ch.Kind == chargenet.Disconnected {
				ending = append(ending, ch.Chargebox)
			}
		}
		if err := lockBoxes(ctx, tx, boxes, ending); err != nil {
			return err
		}
		// Boxes report being seen in bulk: a run of Seen changes goes in one round trip.
		var seen pgx.Batch
		flushSeen := func() error {
			if seen.Len() == 0 {
				return nil
			}
			err := tx.SendBatch(ctx, &seen).Close()
			seen = pgx.Batch{}
			return err
		}
		for _, ch := range changes {
			if ch.Kind != chargenet.Seen {
				if err := flushSeen(); err != nil {
					return err
				}
			}
			at := chargenet.Stamp(ch.At)
			switch ch.Kind {
			case chargenet.Connected:
				var box chargenet.Chargebox
				err := tx.QueryRow(ctx, `UPDATE chargeboxes SET session = $2, protocol = $3, connected_at = $4, last_seen_at = $4 `+
					`WHERE id = $1 RETURNING id, identity, protocol`, ch.Chargebox, ch.Session, ch.Protocol, at).
					Scan(&box.ID, &box.Identity, &box.Protocol)
				if errors.Is(err, pgx.ErrNoRows) {
					continue
				}
				if err != nil {
					return err
				}
				if err := record(chargenet.NewChargeboxEvent(chargenet.EventChargeboxConnected, &box, "", at)); err != nil {
					return err
				}
				if err := signal(ctx, tx, box.ID); err != nil {
					return err
				}
			case chargenet.Seen:
				seen.Queue(`UPDATE chargeboxes SET last_seen_at = $3 WHERE id = $1 AND session = $2 `+
					`AND (last_seen_at IS NULL OR last_seen_at < $3)`, ch.Chargebox, ch.Session, at)
			case chargenet.Booted:
				b := ch.Boot
				if _, err := tx.Exec(ctx, `UPDATE chargeboxes SET boot_vendor = $3, boot_model = $4, boot_serial = $5, `+
					`boot_firmware = $6, booted_at = $7 WHERE id = $1 AND session = $2`, ch.Chargebox, ch.Session, b.Vendor, b.Model,
					nullText(b.SerialNumber), nullText(b.FirmwareVersion), chargenet.Stamp(b.At)); err != nil {
					return err
				}
			case chargenet.Disconnected:
				box, err := lockChargebox(ctx, tx, ch.Chargebox)
				if errors.Is(err, chargenet.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if box.Session != ch.Session {
					continue // a newer connection took over, or the end is recorded already
				}
				if err := s.endConnection(ctx, tx, box, ch.Reason, at, record); err != nil {
					return err
				}
			}
		}
		return flushSeen()
	})
}

// ExpireConnections ends, with reason offline, at most limit recorded connections last
// seen before seenBefore, in one transaction (rows another replica is ending are
// skipped), and returns their boxes.
func (s *Store) ExpireConnections(ctx context.Context, seenBefore, now time.Time, limit int) ([]int64, error) {
	var ids []int64
	now = chargenet.Stamp(now)
	err := s.chargeboxTx(ctx, "expire_connections", func(tx pgx.Tx, record func(...chargenet.Event) error) error {
		ids = nil
		rows, err := tx.Query(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes WHERE session IS NOT NULL AND last_seen_at < $1 `+
			`ORDER BY id LIMIT $2 FOR UPDATE SKIP LOCKED`, chargenet.Stamp(seenBefore), limit)
		if err != nil {
			return err
		}
		var r chargeboxRow
		boxes, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.Chargebox, error) {
			err := row.Scan(r.dest()...)
			return r.chargebox(), err
		})
		if err != nil {
			return err
		}
		if len(boxes) == 0 {
			return errNoChange
		}
		ending := make([]int64, len(boxes))
		for i := range boxes {
			ending[i] = boxes[i].ID
		}
		if err := lockBoxes(ctx, tx, nil, ending); err != nil {
			return err
		}
		for i := range boxes {
			if err := s.endConnection(ctx, tx, &boxes[i], chargenet.ReasonOffline, now, record); err != nil {
				return err
			}
			ids = append(ids, boxes[i].ID)
		}
		return nil
	})
	return ids, err
}

// owes reads, in q, what box id owes (chargenet.OwedAvailability) and what was asked
// of it. ErrNotFound when it is not registered.
func owes(ctx context.Context, tx pgx.Tx, id int64, now time.Time) (owed, asked []chargenet.AvailabilityRequest, err error) {
	var one int
	if err := tx.QueryRow(ctx, `SELECT 1 FROM chargeboxes WHERE id = $1`, id).Scan(&one); err != nil {
		if errors.Is(err, pgx.ErrNoRows) {
			return nil, nil, chargeboxNotFound(id)
		}
		return nil, nil, err
	}
	rows, err := tx.Query(ctx, `SELECT `+evseColumns+` FROM evses WHERE chargebox_id = $1 ORDER BY uid`, id)
	if err != nil {
		return nil, nil, err
	}
	var er evseRow
	evses, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.EVSE, error) {
		err := row.Scan(er.dest()...)
		return er.evse(), err
	})
	if err != nil {
		return nil, nil, err
	}
	asked, err = availability(ctx, tx, `SELECT `+availabilityColumns+` FROM chargebox_availability WHERE chargebox_id = $1 ORDER BY evse_uid`, id)
	if err != nil {
		return nil, nil, err
	}
	last := make(map[int64]chargenet.AvailabilityRequest, len(asked))
	for _, a := range asked {
		last[a.EVSEUID] = a
	}
	return chargenet.OwedAvailability(evses, last, now), asked, nil
}

// OweAvailability records what box id owes as pending requests and returns its pending
// requests; recording signals the box. A box that owes nothing new costs one read
// transaction; the write transaction locks the box and decides again.
func (s *Store) OweAvailability(ctx context.Context, id int64, now time.Time) ([]chargenet.AvailabilityRequest, error) {
	now = chargenet.Stamp(now)
	var owed, asked []chargenet.AvailabilityRequest
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		var err error
		owed, asked, err = owes(ctx, tx, id, now)
		return err
	})
	if err != nil {
		return nil, s.wrap("owe availability", err)
	}
	if len(owed) == 0 {
		return chargenet.PendingRequests(asked), nil
	}
	err = s.chargeboxTx(ctx, "owe_availability", func(tx pgx.Tx, _ func(...chargenet.Event) error) error {
		if _, err := lockChargebox(ctx, tx, id); err != nil {
			return err
		}
		var err error
		if owed, asked, err = owes(ctx, tx, id, now); err != nil {
			return err
		}
		for _, a := range owed {
			if _, err := tx.Exec(ctx, `INSERT INTO chargebox_availability (`+availabilityColumns+`) VALUES ($1, $2, $3, $4, $5, NULL) `+
				`ON CONFLICT (evse_uid) DO UPDATE SET chargebox_id = EXCLUDED.chargebox_id, state = EXCLUDED.state, `+
				`requested_at = EXCLUDED.requested_at, answer = EXCLUDED.answer, answered_at = NULL`,
				a.EVSEUID, a.ChargeboxID, a.State, a.RequestedAt, a.Answer); err != nil {
				return err
			}
		}
		if asked, err = availability(ctx, tx, `SELECT `+availabilityColumns+` FROM chargebox_availability WHERE chargebox_id = $1 ORDER BY evse_uid`, id); err != nil {
			return err
		}
		return signal(ctx, tx, id)
	})
	if err != nil {
		return nil, err
	}
	return chargenet.PendingRequests(asked), nil
}

// PendingAvailability returns every pending request of the registered boxes, by box and
// uid.
func (s *Store) PendingAvailability(ctx context.Context) ([]chargenet.AvailabilityRequest, error) {
	out, err := availability(ctx, s.pool, `SELECT `+prefixed(availabilityColumns, "a.")+` FROM chargebox_availability a `+
		`JOIN chargeboxes b ON b.id = a.chargebox_id WHERE a.answer = 'pending' ORDER BY a.chargebox_id, a.evse_uid`)
	if err != nil {
		return nil, s.wrap("pending availability", err)
	}
	return out, nil
}

// AnswerAvailability records the answer to the request of EVSE uid made at requestedAt,
// if it is still the EVSE's pending request.
func (s *Store) AnswerAvailability(ctx context.Context, uid int64, requestedAt time.Time, answer string, now time.Time) error {
	_, err := s.pool.Exec(ctx, `UPDATE chargebox_availability SET answer = $3, answered_at = $4 `+
		`WHERE evse_uid = $1 AND requested_at = $2 AND answer = 'pending'`, uid, chargenet.Stamp(requestedAt), answer, chargenet.Stamp(now))
	return s.wrap("answer availability", err)
}

// ChargeboxEpoch returns the number RegisterChargebox and RevokeChargebox change.
func (s *Store) ChargeboxEpoch(ctx context.Context) (int64, error) {
	var n int64
	if err := s.pool.QueryRow(ctx, `SELECT epoch FROM chargebox_epoch WHERE id = 1`).Scan(&n); err != nil {
		return 0, s.wrap("chargebox epoch", err)
	}
	return n, nil
}
