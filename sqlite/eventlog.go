package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"strings"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
)

// eventColumns are the columns of a logged event, as scanEvent reads them.
const eventColumns = `seq, id, type, occurred_at, data, traceparent, actor`

// expiredError is the error recorded with an OutcomeExpired attempt.
const expiredError = "the event left the retention window before it could be delivered"

// scanEvent reads the eventColumns of one row.
func scanEvent(row interface{ Scan(...any) error }) (chargenet.Event, error) {
	var (
		ev       chargenet.Event
		at, data string
	)
	if err := row.Scan(&ev.Seq, &ev.ID, &ev.Type, &at, &data, &ev.TraceParent, &ev.Actor); err != nil {
		return ev, err
	}
	ev.Pos = uint64(ev.Seq)
	ev.Data = []byte(data)
	var err error
	ev.Time, err = parseTime(at)
	return ev, err
}

// typeIn returns the condition "column IN (types)" and its arguments; "" for no types.
func typeIn(column string, types []string) (string, []any) {
	if len(types) == 0 {
		return "", nil
	}
	args := make([]any, len(types))
	for i, t := range types {
		args[i] = t
	}
	return " AND " + column + " IN (" + placeholders(len(types)) + ")", args
}

// ListEvents reads one slice of the event log in seq order (see chargenet.EventLog),
// in one statement: the events of types (all but webhook.ping when types is empty;
// webhook.ping never), of actor when it is not empty (read in seq order from the index
// on actor), whose time is at or after seek.Since, after (seek.Pos, seek.Key)
// when seek.HasPos. An event's Pos is its Seq: one writer commits at a time, and each
// event takes the next number in its transaction, so numbers follow commit order. The
// result is empty, not nil, past the end. Errors are wrapped driver errors.
func (s *Store) ListEvents(ctx context.Context, seek chargenet.ChangeSeek[int64], types []string, actor string) ([]chargenet.Event, error) {
	out := []chargenet.Event{}
	if seek.Limit <= 0 {
		return out, nil
	}
	q := `SELECT ` + eventColumns + ` FROM events WHERE type NOT IN (` + placeholders(len(chargenet.UnloggedTypes)) + `)`
	args := unlogged()
	cond, targs := typeIn("type", types)
	q, args = q+cond, append(args, targs...)
	if actor != "" {
		q, args = q+` AND actor = ?`, append(args, actor)
	}
	if !seek.Since.IsZero() {
		since := formatTime(seek.Since)
		q, args = q+` AND occurred_at >= ?`, append(args, since)
		if !seek.HasPos {
			from, err := firstSeqAt(ctx, s.read, since)
			if err != nil {
				return nil, wrap("list events", err)
			}
			q, args = q+` AND seq >= ?`, append(args, from)
		}
	}
	if seek.HasPos {
		// After (Pos, Key) in (seq, seq) order.
		if pos := int64(seek.Pos); pos > seek.Key {
			q, args = q+` AND seq >= ?`, append(args, pos)
		} else {
			q, args = q+` AND seq > ?`, append(args, pos)
		}
	}
	q, args = q+` ORDER BY seq LIMIT ?`, append(args, seek.Limit)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap("list events", err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, wrap("list events", err)
		}
		out = append(out, ev)
	}
	return out, wrap("list events", rows.Err())
}

// unlogged returns chargenet.UnloggedTypes as query arguments.
func unlogged() []any {
	out := make([]any, len(chargenet.UnloggedTypes))
	for i, t := range chargenet.UnloggedTypes {
		out[i] = t
	}
	return out
}

func eventNotFound(id string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "eventId", "event with eventId %s not found", id)
}

// Event returns the logged event with this id, its Pos and Seq set. An ErrNotFound
// *chargenet.Error (Param "eventId") when there is none or it is a webhook.ping; other
// errors are wrapped driver errors.
func (s *Store) Event(ctx context.Context, id string) (*chargenet.Event, error) {
	ev, err := scanEvent(s.read.QueryRowContext(ctx, `SELECT `+eventColumns+` FROM events WHERE id = ? AND type NOT IN (`+
		placeholders(len(chargenet.UnloggedTypes))+`)`, append([]any{id}, unlogged()...)...))
	if errors.Is(err, sql.ErrNoRows) {
		return nil, eventNotFound(id)
	}
	if err != nil {
		return nil, wrap("event", err)
	}
	return &ev, nil
}

// ownedWebhook returns webhookNotFound unless owner has a webhook with this id.
func ownedWebhook(ctx context.Context, tx *sql.Tx, owner, id string) error {
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = ? AND owner = ?)`, id, owner).
		Scan(&exists); err != nil {
		return err
	}
	if !exists {
		return webhookNotFound(id)
	}
	return nil
}

// SendTestEvent stores ev and queues it, due now, for owner's webhook webhookID only,
// in payload version chargenet.PingVersion, in one transaction, and announces it (chargenet.Hooks.Announce).
// An ErrNotFound *chargenet.Error (Param "webhookId") when owner has no such webhook;
// other errors are wrapped driver errors. Nothing is written when an error is returned.
func (s *Store) SendTestEvent(ctx context.Context, owner, webhookID string, ev chargenet.Event, now time.Time) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := ownedWebhook(ctx, tx, owner, webhookID); err != nil {
			return err
		}
		if _, err := s.insertEvents(ctx, tx, []chargenet.Event{ev}); err != nil {
			return err
		}
		_, err := tx.ExecContext(ctx, `INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) VALUES (?, ?, ?, ?)`,
			ev.ID, webhookID, chargenet.PingVersion, formatTime(now))
		return err
	})
	if err != nil {
		return wrap("send test event", err)
	}
	s.hooks.Announce()
	return nil
}

// ReplayEvents queues the logged events r selects again for owner's webhook (see
// chargenet.EventLog), due now, in seq order, in one transaction: only events of types
// the webhook subscribes to, each in its subscription's version, also those still
// pending for it (a second delivery: receivers drop duplicates by id). It returns how many it queued and announces them
// when there are any. An ErrNotFound *chargenet.Error (Param "webhookId") when owner
// has no such webhook; other errors are wrapped driver errors.
func (s *Store) ReplayEvents(ctx context.Context, owner, webhookID string, r chargenet.Replay, now time.Time) (int, error) {
	var n int64
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := ownedWebhook(ctx, tx, owner, webhookID); err != nil {
			return err
		}
		q := `INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) ` +
			`SELECT e.id, w.webhook_id, w.api_version, ? FROM events e JOIN webhook_event_types w ` +
			`ON w.type = e.type AND w.webhook_id = ? WHERE e.type NOT IN (` + placeholders(len(chargenet.UnloggedTypes)) + `)`
		args := append([]any{formatTime(now), webhookID}, unlogged()...)
		if !r.Since.IsZero() {
			since := formatTime(r.Since)
			from, err := firstSeqAt(ctx, tx, since)
			if err != nil {
				return err
			}
			q, args = q+` AND e.seq >= ? AND e.occurred_at >= ?`, append(args, from, since)
		}
		if !r.Until.IsZero() {
			q, args = q+` AND e.occurred_at < ?`, append(args, formatTime(r.Until))
		}
		cond, targs := typeIn("e.type", r.Types)
		q, args = q+cond, append(args, targs...)
		q += ` ORDER BY e.seq`
		res, err := tx.ExecContext(ctx, q, args...)
		if err != nil {
			return err
		}
		n, err = res.RowsAffected()
		return err
	})
	if err != nil {
		return 0, wrap("replay events", err)
	}
	if n > 0 {
		s.hooks.Announce()
	}
	return int(n), nil
}

// PruneEvents removes, in one write transaction, at most limit of each (see
// chargenet.EventLog): pending deliveries of events before the first whose high water
// is at or after before (firstSeqAt: all older than before), each recorded as an
// OutcomeExpired attempt (made now, numbered after the delivery's attempts), whether or
// not its webhook is enabled; attempts made before before; and those events that no
// delivery still needs, in log order; the highest number removed is kept in
// events_pruned, so that insertEvents never gives it again. Errors are wrapped driver
// errors; then nothing is removed.
func (s *Store) PruneEvents(ctx context.Context, before time.Time, limit int) (chargenet.Pruned, error) {
	var p chargenet.Pruned
	if limit <= 0 {
		return p, nil
	}
	cut := formatTime(before)
	start := time.Now()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		// Every event before end happened before the cut (see firstSeqAt); one after it
		// that did waits until the events before it are old enough too.
		end, err := firstSeqAt(ctx, tx, cut)
		if err != nil {
			return err
		}
		rows, err := tx.QueryContext(ctx, `SELECT o.id FROM events e JOIN outbox o ON o.event_id = e.id `+
			`WHERE e.seq < ? ORDER BY e.seq, o.id LIMIT ?`, end, limit)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows)
		if err != nil {
			return err
		}
		if len(ids) > 0 {
			in := `(` + placeholders(len(ids)) + `)`
			if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_attempts (webhook_id, event_id, event_type, attempt, `+
				`attempted_at, outcome, http_status, error, duration_ms, next_attempt_at) `+
				`SELECT o.webhook_id, o.event_id, e.type, o.attempts + 1, ?, ?, NULL, ?, 0, NULL `+
				`FROM outbox o JOIN events e ON e.id = o.event_id WHERE o.id IN `+in+` ORDER BY o.id`,
				append([]any{formatTime(start), chargenet.OutcomeExpired, expiredError}, ids...)...); err != nil {
				return err
			}
			if _, err := tx.ExecContext(ctx, `DELETE FROM outbox WHERE id IN `+in, ids...); err != nil {
				return err
			}
			p.Expired = len(ids)
		}
		res, err := tx.ExecContext(ctx, `DELETE FROM delivery_attempts WHERE id IN (SELECT id FROM delivery_attempts `+
			`WHERE attempted_at < ? ORDER BY attempted_at LIMIT ?)`, cut, limit)
		if err != nil {
			return err
		}
		n, err := res.RowsAffected()
		if err != nil {
			return err
		}
		p.Attempts = int(n)
		res, err = tx.ExecContext(ctx, `DELETE FROM events WHERE seq IN (SELECT e.seq FROM events e WHERE e.seq < ? `+
			`AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.id) ORDER BY e.seq LIMIT ?)`, end, limit)
		if err != nil {
			return err
		}
		if n, err = res.RowsAffected(); err != nil {
			return err
		}
		if p.Events = int(n); n > 0 {
			// end is past every event removed.
			_, err = tx.ExecContext(ctx, `INSERT INTO events_pruned (id, last_seq) VALUES (1, ?) `+
				`ON CONFLICT (id) DO UPDATE SET last_seq = max(last_seq, excluded.last_seq)`, end-1)
		}
		return err
	})
	if err != nil {
		return chargenet.Pruned{}, wrap("prune events", err)
	}
	if p != (chargenet.Pruned{}) {
		s.hooks.Committed("prune_events", start, p.Events+p.Attempts+p.Expired)
	}
	return p, nil
}

// rowQuerier is a *sql.DB or a *sql.Tx.
type rowQuerier interface {
	QueryRowContext(ctx context.Context, query string, args ...any) *sql.Row
}

// firstSeqAt returns a seq before which every event of the log happened before at (a
// stored time): the seq of the first event whose high water (migration 0015) is at or
// after at, or one past the newest event. The high water never decreases along the log,
// so a search over seq finds it in about log2(events) lookups by seq; events appended or
// pruned meanwhile do not change the answer's meaning.
func firstSeqAt(ctx context.Context, q rowQuerier, at string) (int64, error) {
	var lo, hi int64
	if err := q.QueryRowContext(ctx, `SELECT coalesce(min(seq), 0), coalesce(max(seq), 0) + 1 FROM events`).Scan(&lo, &hi); err != nil {
		return 0, err
	}
	// Every event before lo happened before at; the answer is at most hi.
	for lo < hi {
		mid := lo + (hi-lo)/2
		var seq int64
		var hw string
		err := q.QueryRowContext(ctx, `SELECT seq, hw FROM events WHERE seq >= ? AND seq < ? ORDER BY seq LIMIT 1`, mid, hi).Scan(&seq, &hw)
		switch {
		case errors.Is(err, sql.ErrNoRows):
			hi = mid // no event in [mid, hi)
		case err != nil:
			return 0, err
		case hw >= at:
			hi = seq
		default:
			lo = seq + 1
		}
	}
	return lo, nil
}

// insertEventsQuery stores n events in the log; its parameters are seq, id, type, time,
// data, traceparent, high water (migration 0015), actor (migration 0021) and subject
// (migration 0023) of each (see Store.insertEvents).
// The values are plain parameters: a statement whose VALUES read the table it writes
// has SQLite compute all of them into a temporary table before it inserts the first row.
func insertEventsQuery(n int) string {
	return `INSERT INTO events (seq, id, type, occurred_at, data, traceparent, hw, actor, subject) VALUES ` +
		strings.TrimSuffix(strings.Repeat(`(?, ?, ?, ?, ?, ?, ?, ?, ?), `, n), ", ")
}

// logEndQuery reads the high water of the newest event (empty for an empty log) and the
// number the next event follows: the newest event's, or the highest pruned when that is
// later (migration 0016).
const logEndQuery = `SELECT coalesce((SELECT hw FROM events ORDER BY seq DESC LIMIT 1), ''), ` +
	`max(coalesce((SELECT seq FROM events ORDER BY seq DESC LIMIT 1), 0), coalesce((SELECT last_seq FROM events_pruned), 0))`

// insertBatches are the sizes of the prepared multi-row inserts of events (see
// Store.insertEvents): a transaction's events are written in as few statements as
// their count's binary digits.
var insertBatches = [...]int{64, 32, 16, 8, 4, 2, 1}

// recordEvents writes events to the log in the caller's transaction, each queued for
// every webhook subscribed to its type. It reports whether any was queued: the caller
// announces them (chargenet.Hooks.Announce) once the transaction is committed.
func (s *Store) recordEvents(ctx context.Context, tx *sql.Tx, events ...chargenet.Event) (queued bool, err error) {
	if len(events) == 0 {
		return false, nil
	}
	first, err := s.insertEvents(ctx, tx, events)
	if err != nil {
		return false, err
	}
	res, err := tx.StmtContext(ctx, s.fanOut).ExecContext(ctx, first)
	if err != nil {
		return false, err
	}
	n, err := res.RowsAffected()
	return n > 0, err
}

// insertEvents stores events in the log in the caller's transaction (which holds the
// write lock), in as few statements as insertBatches allow, numbered in their order
// after the end of the log (logEndQuery), each with its high water (migration 0015): the
// latest time of the event, of the events before it in the call and of the newest
// logged before the call, and its subject (chargenet.EventSubject). It encodes each
// event's Payload into its Data (package wire). It returns the seq before the first.
func (s *Store) insertEvents(ctx context.Context, tx *sql.Tx, events []chargenet.Event) (first int64, err error) {
	if err := wire.EncodeEvents(events); err != nil {
		return 0, err
	}
	var hw string
	if err := tx.StmtContext(ctx, s.logEnd).QueryRowContext(ctx).Scan(&hw, &first); err != nil {
		return 0, err
	}
	seq := first
	args := make([]any, 0, 9*insertBatches[0])
	for rest, i := events, 0; len(rest) > 0; i++ {
		size := insertBatches[i]
		if size > len(rest) {
			continue
		}
		args = args[:0]
		for _, ev := range rest[:size] {
			tp := ev.TraceParent
			if tp == "" {
				tp = chargenet.TraceParent(ctx)
			}
			at := formatTime(ev.Time)
			hw = max(hw, at)
			seq++
			args = append(args, seq, ev.ID, ev.Type, at, string(ev.Data), tp, hw, ev.Actor, chargenet.EventSubject(&ev))
		}
		st, err := s.writes.get(ctx, insertEventsQuery(size))
		if err != nil {
			return 0, err
		}
		if _, err := tx.StmtContext(ctx, st).ExecContext(ctx, args...); err != nil {
			return 0, err
		}
		rest = rest[size:]
		i-- // the same size again while it fits
	}
	return first, nil
}

// scanIDs reads the integer ids rows return, as query arguments, and closes rows.
func scanIDs(rows *sql.Rows) ([]any, error) {
	var ids []any
	for rows.Next() {
		var id int64
		if err := rows.Scan(&id); err != nil {
			_ = rows.Close()
			return nil, err
		}
		ids = append(ids, id)
	}
	return ids, errors.Join(rows.Err(), rows.Close())
}

// fanOutQuery queues the events with seq above its parameter (those a transaction
// just stored) for every webhook subscribed to their types, due at their times, in
// log order; a push to a partner (chargenet.PushAPIVersion) with the event's subject,
// which orders it.
const fanOutQuery = `INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at, subject) ` +
	`SELECT e.id, w.webhook_id, w.api_version, e.occurred_at, ` +
	`CASE WHEN w.api_version = '` + chargenet.PushAPIVersion + `' THEN e.subject END FROM events e ` +
	`JOIN webhook_event_types w ON w.type = e.type WHERE e.seq > ? ORDER BY e.seq, w.webhook_id`
