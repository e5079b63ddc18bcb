package postgres

import (
	"context"
	"errors"
	"strconv"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/jackc/pgx/v5"
)

// eventColumns are the columns of a logged event, as scanEvent reads them. The
// transaction id is read as text under another name: an output column named xid would
// make ORDER BY xid sort the text.
const eventColumns = `xid::text AS pos, seq, id, type, occurred_at, data, traceparent, actor`

// horizon is the condition that keeps a read of the log below the oldest transaction
// still running: every transaction with a smaller id has ended, so no event can later
// commit before what the read returns.
const horizon = `xid < pg_snapshot_xmin(pg_current_snapshot())`

// expiredError is the error recorded with an OutcomeExpired attempt.
const expiredError = "the event left the retention window before it could be delivered"

// The statements of recordEvents.
const (
	// insertEventQuery stores an event in the log (its xid and seq are the columns'
	// defaults); its parameters are id, type, time, data and traceparent.
	insertEventQuery = `INSERT INTO events (id, type, occurred_at, data, traceparent, actor) ` +
		`VALUES ($1::text, $2::text, $3::timestamptz, $4::text, $5::text, $6::text)`
	// notifyQuery wakes the dispatchers of every replica (see listen.go) when the
	// transaction that runs it commits.
	notifyQuery = `SELECT pg_notify('` + deliveriesChannel + `', '')`
	// fanOutQuery queues an event for every webhook subscribed to its type, a push to a
	// partner (chargenet.PushAPIVersion) with the event's subject, which orders it; its
	// parameters are the event id, the due time, the type and the subject.
	fanOutQuery = `INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at, subject) ` +
		`SELECT $1::text, webhook_id, api_version, $2::timestamptz, ` +
		`CASE WHEN api_version = '` + chargenet.PushAPIVersion + `' THEN $4::text END FROM webhook_event_types WHERE type = $3::text`
)

// The statements of PruneEvents; their parameters are the cut ("before") and the limit,
// and for pruneExpiredQuery also the attempt's time, outcome and error. Each takes its
// rows FOR UPDATE SKIP LOCKED, so replicas pruning at once take different rows, and
// never wait for a dispatcher claiming deliveries or a replay reading events.
const (
	pruneExpiredQuery = `WITH expired AS (DELETE FROM outbox WHERE id IN (` +
		`SELECT o.id FROM events e JOIN outbox o ON o.event_id = e.id WHERE e.occurred_at < $1 ` +
		`ORDER BY e.occurred_at, o.id LIMIT $2 FOR UPDATE OF o SKIP LOCKED) ` +
		`RETURNING id, webhook_id, event_id, attempts) ` +
		`INSERT INTO delivery_attempts (webhook_id, event_id, event_type, attempt, attempted_at, outcome, error, duration_ms) ` +
		`SELECT x.webhook_id, x.event_id, e.type, x.attempts + 1, $3, $4, $5, 0 ` +
		`FROM expired x JOIN events e ON e.id = x.event_id ORDER BY x.id`
	pruneAttemptsQuery = `DELETE FROM delivery_attempts WHERE id IN (SELECT id FROM delivery_attempts ` +
		`WHERE attempted_at < $1 ORDER BY attempted_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
	pruneEventsQuery = `DELETE FROM events WHERE id IN (SELECT e.id FROM events e WHERE e.occurred_at < $1 ` +
		`AND NOT EXISTS (SELECT 1 FROM outbox o WHERE o.event_id = e.id) ORDER BY e.occurred_at LIMIT $2 FOR UPDATE SKIP LOCKED)`
)

// scanEvent reads the eventColumns of one row.
func scanEvent(row pgx.Row) (chargenet.Event, error) {
	var (
		ev        chargenet.Event
		xid, data string
	)
	if err := row.Scan(&xid, &ev.Seq, &ev.ID, &ev.Type, &ev.Time, &data, &ev.TraceParent, &ev.Actor); err != nil {
		return ev, err
	}
	ev.Time = ev.Time.UTC()
	ev.Data = []byte(data)
	var err error
	ev.Pos, err = strconv.ParseUint(xid, 10, 64)
	return ev, err
}

// ListEvents reads one slice of the event log in (xid, seq) order (see
// chargenet.EventLog), in one statement: the events of types (all but webhook.ping when
// types is empty; webhook.ping never), of actor when it is not empty, whose time is at
// or after seek.Since, after
// (seek.Pos, seek.Key) when seek.HasPos, and only those written by transactions below
// the oldest one still running (see horizon): an event shows once every transaction
// that started writing before it has ended. An event's Pos is the id of the
// transaction that wrote it. The result is empty, not nil, past the end. Errors are
// wrapped driver errors, wrapping chargenet.ErrUnavailable if the database cannot be
// reached.
func (s *Store) ListEvents(ctx context.Context, seek chargenet.ChangeSeek[int64], types []string, actor string) ([]chargenet.Event, error) {
	out := []chargenet.Event{}
	if seek.Limit <= 0 {
		return out, nil
	}
	q := `SELECT ` + eventColumns + ` FROM events WHERE ` + horizon + ` AND type <> ALL($1::text[])`
	args := []any{chargenet.UnloggedTypes}
	switch len(types) {
	case 0:
	case 1: // read in order from the index on (type, xid, seq)
		args = append(args, types[0])
		q += ` AND type = $` + strconv.Itoa(len(args))
	default:
		args = append(args, types)
		q += ` AND type = ANY($` + strconv.Itoa(len(args)) + `::text[])`
	}
	if actor != "" { // read in order from the index on (actor, xid, seq)
		args = append(args, actor)
		q += ` AND actor = $` + strconv.Itoa(len(args))
	}
	if !seek.Since.IsZero() {
		args = append(args, chargenet.Stamp(seek.Since))
		q += ` AND occurred_at >= $` + strconv.Itoa(len(args))
	}
	if seek.HasPos {
		args = append(args, strconv.FormatUint(seek.Pos, 10), seek.Key)
		q += ` AND (xid, seq) > ($` + strconv.Itoa(len(args)-1) + `::text::xid8, $` + strconv.Itoa(len(args)) + `::bigint)`
	}
	args = append(args, seek.Limit)
	q += ` ORDER BY xid, seq LIMIT $` + strconv.Itoa(len(args))
	rows, err := s.pool.Query(ctx, q, args...)
	if err != nil {
		return nil, s.wrap("list events", err)
	}
	defer rows.Close()
	for rows.Next() {
		ev, err := scanEvent(rows)
		if err != nil {
			return nil, s.wrap("list events", err)
		}
		out = append(out, ev)
	}
	if err := rows.Err(); err != nil {
		return nil, s.wrap("list events", err)
	}
	return out, nil
}

func eventNotFound(id string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "eventId", "event with eventId %s not found", id)
}

// Event returns the logged event with this id, its Pos and Seq set. An ErrNotFound
// *chargenet.Error (Param "eventId") when there is none or it is a webhook.ping; other
// errors are wrapped driver errors, wrapping chargenet.ErrUnavailable if the database
// cannot be reached.
func (s *Store) Event(ctx context.Context, id string) (*chargenet.Event, error) {
	ev, err := scanEvent(s.pool.QueryRow(ctx, `SELECT `+eventColumns+` FROM events WHERE id = $1 AND type <> ALL($2::text[])`,
		id, chargenet.UnloggedTypes))
	if errors.Is(err, pgx.ErrNoRows) {
		return nil, eventNotFound(id)
	}
	if err != nil {
		return nil, s.wrap("event", err)
	}
	return &ev, nil
}

// lockWebhook locks owner's webhook id in tx with strength (a row-level lock clause)
// and returns webhookNotFound when there is none.
func lockWebhook(ctx context.Context, tx pgx.Tx, owner, id, strength string) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM webhooks WHERE id = $1 AND owner = $2 `+strength, id, owner).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return webhookNotFound(id)
	}
	return err
}

// SendTestEvent stores ev and queues it, due now, for owner's webhook webhookID only,
// in payload version chargenet.PingVersion, in one transaction that notifies the listening replicas, and
// announces it (chargenet.Hooks.Announce). An ErrNotFound *chargenet.Error (Param
// "webhookId") when owner has no such webhook; other errors are wrapped driver errors,
// wrapping chargenet.ErrUnavailable if the database cannot be reached. Nothing is
// written when an error is returned.
func (s *Store) SendTestEvent(ctx context.Context, owner, webhookID string, ev chargenet.Event, now time.Time) error {
	data, err := wire.EventData(&ev)
	if err != nil {
		return err
	}
	ev.Data = data
	err = pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockWebhook(ctx, tx, owner, webhookID, `FOR KEY SHARE`); err != nil {
			return err
		}
		tp := ev.TraceParent
		if tp == "" {
			tp = chargenet.TraceParent(ctx)
		}
		if _, err := tx.Exec(ctx, insertEventQuery, ev.ID, ev.Type, chargenet.Stamp(ev.Time), string(ev.Data), tp, ev.Actor); err != nil {
			return err
		}
		if _, err := tx.Exec(ctx, `INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) VALUES ($1, $2, $3, $4)`,
			ev.ID, webhookID, chargenet.PingVersion, chargenet.Stamp(now)); err != nil {
			return err
		}
		_, err := tx.Exec(ctx, notifyQuery)
		return err
	})
	if err != nil {
		return s.wrap("send test event", err)
	}
	s.hooks.Announce()
	return nil
}

// ReplayEvents queues the logged events r selects again for owner's webhook (see
// chargenet.EventLog), due now, in log order, in one transaction: only events of types
// the webhook subscribes to, each in its subscription's version, also those still
// pending for it (a second delivery: receivers drop duplicates by id). The webhook's row
// is locked (FOR NO KEY UPDATE), so that it cannot be deleted meanwhile; the events are
// locked FOR KEY SHARE, so that a pruner skips them. It returns how many it queued;
// when there are any the transaction notifies the listening replicas and the store
// announces them. An ErrNotFound *chargenet.Error (Param "webhookId") when owner has no
// such webhook; other errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) ReplayEvents(ctx context.Context, owner, webhookID string, r chargenet.Replay, now time.Time) (int, error) {
	var n int64
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := lockWebhook(ctx, tx, owner, webhookID, `FOR NO KEY UPDATE`); err != nil {
			return err
		}
		args := []any{chargenet.Stamp(now), webhookID, chargenet.UnloggedTypes}
		q := `INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) ` +
			`SELECT e.id, w.webhook_id, w.api_version, $1 FROM events e JOIN webhook_event_types w ` +
			`ON w.type = e.type AND w.webhook_id = $2 WHERE e.type <> ALL($3::text[])`
		if !r.Since.IsZero() {
			args = append(args, chargenet.Stamp(r.Since))
			q += ` AND e.occurred_at >= $` + strconv.Itoa(len(args))
		}
		if !r.Until.IsZero() {
			args = append(args, chargenet.Stamp(r.Until))
			q += ` AND e.occurred_at < $` + strconv.Itoa(len(args))
		}
		if len(r.Types) > 0 {
			args = append(args, r.Types)
			q += ` AND e.type = ANY($` + strconv.Itoa(len(args)) + `::text[])`
		}
		q += ` ORDER BY e.xid, e.seq FOR KEY SHARE OF e`
		tag, err := tx.Exec(ctx, q, args...)
		if err != nil {
			return err
		}
		if n = tag.RowsAffected(); n > 0 {
			_, err = tx.Exec(ctx, notifyQuery)
		}
		return err
	})
	if err != nil {
		return 0, s.wrap("replay events", err)
	}
	if n > 0 {
		s.hooks.Announce()
	}
	return int(n), nil
}

// PruneEvents removes, in one transaction, at most limit of each (see
// chargenet.EventLog): pending deliveries of events older than before, each recorded as
// an OutcomeExpired attempt (made now, numbered after the delivery's attempts), whether
// or not its webhook is enabled; attempts made before before; and events older than
// before that no delivery still needs. Rows another transaction holds locked (a
// dispatcher's claim, a replay, another replica's prune) are skipped, so replicas prune
// at once without waiting for each other. Errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached; then nothing is removed.
func (s *Store) PruneEvents(ctx context.Context, before time.Time, limit int) (chargenet.Pruned, error) {
	var p chargenet.Pruned
	if limit <= 0 {
		return p, nil
	}
	cut := chargenet.Stamp(before)
	start := time.Now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, pruneExpiredQuery, cut, limit, chargenet.Stamp(start), chargenet.OutcomeExpired, expiredError)
		if err != nil {
			return err
		}
		p.Expired = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, pruneAttemptsQuery, cut, limit); err != nil {
			return err
		}
		p.Attempts = int(tag.RowsAffected())
		if tag, err = tx.Exec(ctx, pruneEventsQuery, cut, limit); err != nil {
			return err
		}
		p.Events = int(tag.RowsAffected())
		return nil
	})
	if err != nil {
		return chargenet.Pruned{}, s.wrap("prune events", err)
	}
	if p != (chargenet.Pruned{}) {
		s.hooks.Committed("prune_events", start, p.Events+p.Attempts+p.Expired)
	}
	return p, nil
}

// recordEvents writes events to the log in the caller's transaction tx, each queued,
// due at the event's time, for every webhook subscribed to its type. When it queued a
// delivery it also notifies deliveriesChannel (delivered to the listening replicas
// at commit) and reports it: the caller announces them (chargenet.Hooks.Announce) once the
// transaction is committed. Errors are the driver's, unwrapped.
func recordEvents(ctx context.Context, tx pgx.Tx, events ...chargenet.Event) (queued bool, err error) {
	if err := wire.EncodeEvents(events); err != nil {
		return false, err
	}
	for _, ev := range events {
		at := chargenet.Stamp(ev.Time)
		tp := ev.TraceParent
		if tp == "" {
			tp = chargenet.TraceParent(ctx)
		}
		if _, err := tx.Exec(ctx, insertEventQuery, ev.ID, ev.Type, at, string(ev.Data), tp, ev.Actor); err != nil {
			return false, err
		}
		tag, err := tx.Exec(ctx, fanOutQuery, ev.ID, at, ev.Type, chargenet.EventSubject(&ev))
		if err != nil {
			return false, err
		}
		queued = queued || tag.RowsAffected() > 0
	}
	if queued {
		if _, err := tx.Exec(ctx, notifyQuery); err != nil {
			return false, err
		}
	}
	return queued, nil
}
