package sqlite

import (
	"context"
	"crypto/sha256"
	"database/sql"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
)

const (
	chargeboxColumns = `id, identity, password_hash, created_at, session, protocol, connected_at, last_seen_at, ` +
		`boot_vendor, boot_model, boot_serial, boot_firmware, booted_at`
	availabilityColumns = `evse_uid, chargebox_id, state, requested_at, answer, answered_at`
	// boxEVSEsQuery reads what ending a connection and owing availability need of a
	// charge box's EVSEs, without their connectors.
	boxEVSEsQuery = `SELECT uid, evse_id, chargebox_id, location_id, status, operator_hold, version, last_updated ` +
		`FROM evses WHERE chargebox_id = ? ORDER BY uid`
)

// chargeboxRow receives chargeboxColumns.
type chargeboxRow struct {
	c                                     chargenet.Chargebox
	hash                                  []byte
	created                               string
	session, protocol, connected, seen    sql.NullString
	vendor, model, serial, firmware, boot sql.NullString
}

func (r *chargeboxRow) dest() []any {
	return []any{&r.c.ID, &r.c.Identity, &r.hash, &r.created, &r.session, &r.protocol, &r.connected, &r.seen,
		&r.vendor, &r.model, &r.serial, &r.firmware, &r.boot}
}

func (r *chargeboxRow) chargebox() (chargenet.Chargebox, error) {
	c := r.c
	copy(c.PasswordHash[:], r.hash)
	var err error
	if c.CreatedAt, err = parseTime(r.created); err != nil {
		return c, err
	}
	c.Session, c.Protocol = r.session.String, r.protocol.String
	if c.ConnectedAt, err = optionalTime(r.connected); err != nil {
		return c, err
	}
	if c.LastSeenAt, err = optionalTime(r.seen); err != nil {
		return c, err
	}
	if r.boot.Valid {
		at, err := parseTime(r.boot.String)
		if err != nil {
			return c, err
		}
		c.Boot = &chargenet.BootInfo{Vendor: r.vendor.String, Model: r.model.String, SerialNumber: r.serial.String,
			FirmwareVersion: r.firmware.String, At: at}
	}
	if !c.Connected() {
		c.ConnectedAt = nil
	}
	return c, nil
}

func optionalTime(s sql.NullString) (*time.Time, error) {
	if !s.Valid {
		return nil, nil
	}
	t, err := parseTime(s.String)
	return &t, err
}

func chargeboxNotFound(id int64) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId", "charge box with chargeboxId %d is not registered", id)
}

// reader is what a read needs: a *sql.DB or a *sql.Tx.
type reader interface {
	querier
	rowQuerier
}

// RegisterChargebox registers box id, or replaces the identity and password hash of a
// registered one and ends its recorded connection (reason revoked), in one write
// transaction (see chargenet.ChargeboxService).
func (s *Store) RegisterChargebox(ctx context.Context, id int64, identity string, hash [sha256.Size]byte, now time.Time) (bool, error) {
	created := false
	err := s.inventoryTx(ctx, "register chargebox", func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		var other int64
		err := tx.QueryRowContext(ctx, `SELECT id FROM chargeboxes WHERE identity = ? AND id <> ?`, identity, id).Scan(&other)
		if err == nil {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "identity",
				"identity %q is taken by charge box %d", identity, other)
		}
		if !errors.Is(err, sql.ErrNoRows) {
			return err
		}
		box, err := lockedChargebox(ctx, tx, id)
		switch {
		case errors.Is(err, chargenet.ErrNotFound):
			created = true
			_, err = tx.ExecContext(ctx, `INSERT INTO chargeboxes (id, identity, password_hash, created_at) VALUES (?, ?, ?, ?)`,
				id, identity, hash[:], formatTime(now))
			if err != nil {
				return err
			}
		case err != nil:
			return err
		default:
			if err := s.endConnection(ctx, tx, box, chargenet.ReasonRevoked, now, record); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `UPDATE chargeboxes SET identity = ?, password_hash = ? WHERE id = ?`,
				identity, hash[:], id); err != nil {
				return err
			}
		}
		return bumpEpoch(ctx, tx)
	})
	return created, err
}

// RevokeChargebox ends the registration of box id, its recorded connection (reason
// revoked) and its availability requests, in one write transaction.
func (s *Store) RevokeChargebox(ctx context.Context, id int64, now time.Time) error {
	return s.inventoryTx(ctx, "revoke chargebox", func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		box, err := lockedChargebox(ctx, tx, id)
		if err != nil {
			return err
		}
		if err := s.endConnection(ctx, tx, box, chargenet.ReasonRevoked, now, record); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM chargebox_availability WHERE chargebox_id = ?`, id); err != nil {
			return err
		}
		if _, err := tx.ExecContext(ctx, `DELETE FROM chargeboxes WHERE id = ?`, id); err != nil {
			return err
		}
		return bumpEpoch(ctx, tx)
	})
}

func bumpEpoch(ctx context.Context, tx *sql.Tx) error {
	_, err := tx.ExecContext(ctx, `UPDATE chargebox_epoch SET epoch = epoch + 1 WHERE id = 1`)
	return err
}

// lockedChargebox reads box id in a write transaction (which holds SQLite's write
// lock). ErrNotFound when it is not registered.
func lockedChargebox(ctx context.Context, q reader, id int64) (*chargenet.Chargebox, error) {
	var r chargeboxRow
	err := q.QueryRowContext(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes WHERE id = ?`, id).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, chargeboxNotFound(id)
	}
	if err != nil {
		return nil, err
	}
	c, err := r.chargebox()
	return &c, err
}

// endConnection ends box's recorded connection, if any, at now: its chargebox.disconnected
// event naming reason, and its EVSEs in service UNKNOWN (chargenet.Disconnect) with their
// events and their locations touched, all with the box's actor.
func (s *Store) endConnection(ctx context.Context, tx *sql.Tx, box *chargenet.Chargebox, reason string, now time.Time,
	record func(...chargenet.Event) error) error {
	if !box.Connected() {
		return nil
	}
	if _, err := tx.ExecContext(ctx, `UPDATE chargeboxes SET session = NULL, connected_at = NULL WHERE id = ?`, box.ID); err != nil {
		return err
	}
	ev := chargenet.NewChargeboxEvent(chargenet.EventChargeboxDisconnected, box, reason, now)
	evses, err := boxEVSEs(ctx, tx, box.ID)
	if err != nil {
		return err
	}
	changed, events := chargenet.Disconnect(evses, chargenet.ChargeboxActor(box.Identity), now)
	for _, e := range changed {
		if _, err := tx.ExecContext(ctx, `UPDATE evses SET status = ?, version = ?, last_updated = ? WHERE uid = ?`,
			string(e.Status), e.Version, formatTime(e.LastUpdated), e.UID); err != nil {
			return err
		}
	}
	ids, newest := chargenet.ChangedLocations(changed)
	for _, id := range ids {
		if err := touchLocation(ctx, tx, id, newest[id]); err != nil {
			return err
		}
	}
	return record(append([]chargenet.Event{ev}, events...)...)
}

// boxEVSEs reads the EVSEs of charge box id without their connectors (boxEVSEsQuery).
func boxEVSEs(ctx context.Context, q reader, id int64) ([]chargenet.EVSE, error) {
	rows, err := q.QueryContext(ctx, boxEVSEsQuery, id)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	var out []chargenet.EVSE
	for rows.Next() {
		var e chargenet.EVSE
		var loc sql.NullString
		var status, updated string
		if err := rows.Scan(&e.UID, &e.EvseID, &e.ChargeboxID, &loc, &status, &e.OperatorHold, &e.Version, &updated); err != nil {
			return nil, err
		}
		e.LocationID, e.Status = loc.String, chargenet.EvseStatus(status)
		if e.LastUpdated, err = parseStamp(updated); err != nil {
			return nil, err
		}
		out = append(out, e)
	}
	return out, rows.Err()
}

// ChargeboxByIdentity returns the registered box with this identity (without EVSEs and
// availability). ErrNotFound when there is none.
func (s *Store) ChargeboxByIdentity(ctx context.Context, identity string) (*chargenet.Chargebox, error) {
	var r chargeboxRow
	err := s.read.QueryRowContext(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes WHERE identity = ?`, identity).Scan(r.dest()...)
	if errors.Is(err, sql.ErrNoRows) {
		return nil, chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "identity", "no charge box is registered with identity %q", identity)
	}
	if err != nil {
		return nil, wrap("chargebox by identity", err)
	}
	c, err := r.chargebox()
	if err != nil {
		return nil, wrap("chargebox by identity", err)
	}
	return &c, nil
}

// Chargebox returns registered box id with its EVSE uids and availability requests, read
// in one snapshot.
func (s *Store) Chargebox(ctx context.Context, id int64) (*chargenet.Chargebox, error) {
	boxes, err := s.readChargeboxes(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes WHERE id = ?`, id)
	if err != nil {
		return nil, wrap("chargebox", err)
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
	where, dir := keyset("id", "", seek.Backward, keyModeOf(seek))
	args := []any{}
	if seek.HasKey {
		args = append(args, seek.Key)
	}
	boxes, err := s.readChargeboxes(ctx, `SELECT `+chargeboxColumns+` FROM chargeboxes `+where+`ORDER BY id `+dir+` LIMIT ?`,
		append(args, seek.Limit)...)
	return boxes, wrap("list chargeboxes", err)
}

// readChargeboxes reads the boxes query selects, with their EVSE uids and availability,
// in one read transaction (one snapshot).
func (s *Store) readChargeboxes(ctx context.Context, query string, args ...any) ([]chargenet.Chargebox, error) {
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, err
	}
	defer func() { _ = tx.Rollback() }()
	rows, err := tx.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	out := []chargenet.Chargebox{}
	for rows.Next() {
		var r chargeboxRow
		if err := rows.Scan(r.dest()...); err != nil {
			_ = rows.Close()
			return nil, err
		}
		c, err := r.chargebox()
		if err != nil {
			_ = rows.Close()
			return nil, err
		}
		c.EVSEUIDs, c.Availability = []int64{}, []chargenet.AvailabilityRequest{}
		out = append(out, c)
	}
	if err := rows.Err(); err != nil {
		return nil, err
	}
	_ = rows.Close()
	for i := range out {
		c := &out[i]
		uids, err := tx.QueryContext(ctx, `SELECT uid FROM evses WHERE chargebox_id = ? ORDER BY uid`, c.ID)
		if err != nil {
			return nil, err
		}
		for uids.Next() {
			var uid int64
			if err := uids.Scan(&uid); err != nil {
				_ = uids.Close()
				return nil, err
			}
			c.EVSEUIDs = append(c.EVSEUIDs, uid)
		}
		if err := uids.Err(); err != nil {
			return nil, err
		}
		_ = uids.Close()
		if c.Availability, err = availability(ctx, tx, `SELECT `+availabilityColumns+` FROM chargebox_availability `+
			`WHERE chargebox_id = ? AND evse_uid IN (SELECT uid FROM evses WHERE chargebox_id = ?) ORDER BY evse_uid`, c.ID, c.ID); err != nil {
			return nil, err
		}
	}
	return out, tx.Commit()
}

// availability reads availability requests (availabilityColumns); never nil.
func availability(ctx context.Context, q reader, query string, args ...any) ([]chargenet.AvailabilityRequest, error) {
	rows, err := q.QueryContext(ctx, query, args...)
	if err != nil {
		return nil, err
	}
	defer func() { _ = rows.Close() }()
	out := []chargenet.AvailabilityRequest{}
	for rows.Next() {
		var a chargenet.AvailabilityRequest
		var requested string
		var answered sql.NullString
		if err := rows.Scan(&a.EVSEUID, &a.ChargeboxID, &a.State, &requested, &a.Answer, &answered); err != nil {
			return nil, err
		}
		if a.RequestedAt, err = parseTime(requested); err != nil {
			return nil, err
		}
		if a.AnsweredAt, err = optionalTime(answered); err != nil {
			return nil, err
		}
		out = append(out, a)
	}
	return out, rows.Err()
}

// RecordConnections applies changes in order in one write transaction (see
// chargenet.ChargeboxService).
func (s *Store) RecordConnections(ctx context.Context, changes []chargenet.ConnectionChange) error {
	if len(changes) == 0 {
		return nil
	}
	return s.inventoryTx(ctx, "record connections", func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		var seen *sql.Stmt // prepared once: boxes report being seen in bulk
		defer func() {
			if seen != nil {
				_ = seen.Close()
			}
		}()
		for _, ch := range changes {
			at := formatTime(ch.At)
			switch ch.Kind {
			case chargenet.Connected:
				var box chargenet.Chargebox
				err := tx.QueryRowContext(ctx, `UPDATE chargeboxes SET session = ?, protocol = ?, connected_at = ?, last_seen_at = ? `+
					`WHERE id = ? RETURNING id, identity, protocol`, ch.Session, ch.Protocol, at, at, ch.Chargebox).
					Scan(&box.ID, &box.Identity, &box.Protocol)
				if errors.Is(err, sql.ErrNoRows) {
					continue
				}
				if err != nil {
					return err
				}
				if err := record(chargenet.NewChargeboxEvent(chargenet.EventChargeboxConnected, &box, "", ch.At)); err != nil {
					return err
				}
			case chargenet.Seen:
				if seen == nil {
					var err error
					if seen, err = tx.PrepareContext(ctx, `UPDATE chargeboxes SET last_seen_at = ? WHERE id = ? AND session = ? `+
						`AND (last_seen_at IS NULL OR last_seen_at < ?)`); err != nil {
						return err
					}
				}
				if _, err := seen.ExecContext(ctx, at, ch.Chargebox, ch.Session, at); err != nil {
					return err
				}
			case chargenet.Booted:
				b := ch.Boot
				if _, err := tx.ExecContext(ctx, `UPDATE chargeboxes SET boot_vendor = ?, boot_model = ?, boot_serial = ?, `+
					`boot_firmware = ?, booted_at = ? WHERE id = ? AND session = ?`, b.Vendor, b.Model, nullText(b.SerialNumber),
					nullText(b.FirmwareVersion), formatTime(b.At), ch.Chargebox, ch.Session); err != nil {
					return err
				}
			case chargenet.Disconnected:
				box, err := lockedChargebox(ctx, tx, ch.Chargebox)
				if errors.Is(err, chargenet.ErrNotFound) {
					continue
				}
				if err != nil {
					return err
				}
				if box.Session != ch.Session {
					continue // a newer connection took over, or the end is recorded already
				}
				if err := s.endConnection(ctx, tx, box, ch.Reason, ch.At, record); err != nil {
					return err
				}
			}
		}
		return nil
	})
}

// ExpireConnections ends, with reason offline, at most limit recorded connections last
// seen before seenBefore, in one write transaction, and returns their boxes.
func (s *Store) ExpireConnections(ctx context.Context, seenBefore, now time.Time, limit int) ([]int64, error) {
	var ids []int64
	err := s.inventoryTx(ctx, "expire connections", func(tx *sql.Tx, record func(...chargenet.Event) error) error {
		ids = nil
		rows, err := tx.QueryContext(ctx, `SELECT id FROM chargeboxes WHERE session IS NOT NULL AND last_seen_at < ? `+
			`ORDER BY id LIMIT ?`, formatTime(seenBefore), limit)
		if err != nil {
			return err
		}
		for rows.Next() {
			var id int64
			if err := rows.Scan(&id); err != nil {
				_ = rows.Close()
				return err
			}
			ids = append(ids, id)
		}
		if err := rows.Err(); err != nil {
			return err
		}
		_ = rows.Close()
		if len(ids) == 0 {
			return errNoChange
		}
		for _, id := range ids {
			box, err := lockedChargebox(ctx, tx, id)
			if err != nil {
				return err
			}
			if err := s.endConnection(ctx, tx, box, chargenet.ReasonOffline, now, record); err != nil {
				return err
			}
		}
		return nil
	})
	return ids, err
}

// OweAvailability records what box id owes (chargenet.OwedAvailability) as pending
// requests and returns its pending requests. A box that owes nothing new costs one
// read transaction; the write transaction decides again.
func (s *Store) OweAvailability(ctx context.Context, id int64, now time.Time) ([]chargenet.AvailabilityRequest, error) {
	owes := func(q reader) ([]chargenet.AvailabilityRequest, []chargenet.AvailabilityRequest, error) {
		if _, err := lockedChargebox(ctx, q, id); err != nil {
			return nil, nil, err
		}
		evses, err := boxEVSEs(ctx, q, id)
		if err != nil {
			return nil, nil, err
		}
		asked, err := availability(ctx, q, `SELECT `+availabilityColumns+` FROM chargebox_availability WHERE chargebox_id = ? ORDER BY evse_uid`, id)
		if err != nil {
			return nil, nil, err
		}
		last := make(map[int64]chargenet.AvailabilityRequest, len(asked))
		for _, a := range asked {
			last[a.EVSEUID] = a
		}
		return chargenet.OwedAvailability(evses, last, now), asked, nil
	}
	tx, err := s.read.BeginTx(ctx, &sql.TxOptions{ReadOnly: true})
	if err != nil {
		return nil, wrap("owe availability", err)
	}
	owed, asked, err := owes(tx)
	_ = tx.Rollback()
	if err != nil {
		return nil, wrap("owe availability", err)
	}
	if len(owed) == 0 {
		return chargenet.PendingRequests(asked), nil
	}
	err = s.inventoryTx(ctx, "owe availability", func(tx *sql.Tx, _ func(...chargenet.Event) error) error {
		if owed, asked, err = owes(tx); err != nil {
			return err
		}
		for _, a := range owed {
			if _, err := tx.ExecContext(ctx, `INSERT INTO chargebox_availability (`+availabilityColumns+`) VALUES (?, ?, ?, ?, ?, NULL) `+
				`ON CONFLICT (evse_uid) DO UPDATE SET chargebox_id = excluded.chargebox_id, state = excluded.state, `+
				`requested_at = excluded.requested_at, answer = excluded.answer, answered_at = NULL`,
				a.EVSEUID, a.ChargeboxID, a.State, formatTime(a.RequestedAt), a.Answer); err != nil {
				return err
			}
		}
		asked, err = availability(ctx, tx, `SELECT `+availabilityColumns+` FROM chargebox_availability WHERE chargebox_id = ? ORDER BY evse_uid`, id)
		return err
	})
	if err != nil {
		return nil, err
	}
	return chargenet.PendingRequests(asked), nil
}

// PendingAvailability returns every pending request of the registered boxes, by box and
// uid.
func (s *Store) PendingAvailability(ctx context.Context) ([]chargenet.AvailabilityRequest, error) {
	out, err := availability(ctx, s.read, `SELECT `+prefixed(availabilityColumns, "a.")+` FROM chargebox_availability a `+
		`JOIN chargeboxes b ON b.id = a.chargebox_id WHERE a.answer = 'pending' ORDER BY a.chargebox_id, a.evse_uid`)
	return out, wrap("pending availability", err)
}

// AnswerAvailability records the answer to the request of EVSE uid made at requestedAt,
// if it is still the EVSE's pending request.
func (s *Store) AnswerAvailability(ctx context.Context, uid int64, requestedAt time.Time, answer string, now time.Time) error {
	return s.inventoryTx(ctx, "answer availability", func(tx *sql.Tx, _ func(...chargenet.Event) error) error {
		_, err := tx.ExecContext(ctx, `UPDATE chargebox_availability SET answer = ?, answered_at = ? `+
			`WHERE evse_uid = ? AND requested_at = ? AND answer = 'pending'`, answer, formatTime(now), uid, formatTime(requestedAt))
		return err
	})
}

// ChargeboxEpoch returns the number RegisterChargebox and RevokeChargebox change.
func (s *Store) ChargeboxEpoch(ctx context.Context) (int64, error) {
	var n int64
	err := s.read.QueryRowContext(ctx, `SELECT epoch FROM chargebox_epoch WHERE id = 1`).Scan(&n)
	return n, wrap("chargebox epoch", err)
}
