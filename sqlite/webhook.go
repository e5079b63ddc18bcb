package sqlite

import (
	"context"
	"database/sql"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
)

// webhookColumns are the columns of a webhook row, in the order webhookRow scans them.
const webhookColumns = `id, owner, url, description, enabled, disabled_reason, secret, previous_secret, ` +
	`previous_secret_until, created_at, updated_at, partner_id`

func webhookNotFound(id string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId", "webhook with webhookId %s not found", id)
}

type webhookRow struct {
	w                chargenet.Webhook
	enabled          bool
	prevUntil        sql.NullString
	created, updated string
	partner          sql.NullString
}

func (r *webhookRow) dest() []any {
	return []any{&r.w.ID, &r.w.Owner, &r.w.URL, &r.w.Description, &r.enabled, &r.w.DisabledReason, &r.w.Secret,
		&r.w.PreviousSecret, &r.prevUntil, &r.created, &r.updated, &r.partner}
}

func (r *webhookRow) webhook() (chargenet.Webhook, error) {
	w := r.w
	w.Enabled, w.Partner = r.enabled, r.partner.String
	var err error
	if w.CreatedAt, err = parseTime(r.created); err != nil {
		return w, err
	}
	if w.UpdatedAt, err = parseTime(r.updated); err != nil {
		return w, err
	}
	if r.prevUntil.Valid {
		if w.PreviousSecretUntil, err = parseTime(r.prevUntil.String); err != nil {
			return w, err
		}
	}
	return w, nil
}

// loadSubscriptions fills the Subscriptions of ws, in type order, in one query.
func loadSubscriptions(ctx context.Context, q querier, ws []chargenet.Webhook) error {
	if len(ws) == 0 {
		return nil
	}
	index := make(map[string]int, len(ws))
	args := make([]any, len(ws))
	for i := range ws {
		index[ws[i].ID] = i
		args[i] = ws[i].ID
		ws[i].Subscriptions = []chargenet.Subscription{}
	}
	rows, err := q.QueryContext(ctx, `SELECT webhook_id, type, api_version FROM webhook_event_types WHERE webhook_id IN (`+
		placeholders(len(ws))+`) ORDER BY webhook_id, type`, args...)
	if err != nil {
		return err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var id string
		var sub chargenet.Subscription
		if err := rows.Scan(&id, &sub.Type, &sub.APIVersion); err != nil {
			return err
		}
		w := &ws[index[id]]
		w.Subscriptions = append(w.Subscriptions, sub)
	}
	return rows.Err()
}

// webhookIn reads owner's webhook with its subscriptions through q.
func webhookIn(ctx context.Context, q querier, owner, id string) (*chargenet.Webhook, error) {
	rows, err := q.QueryContext(ctx, `SELECT `+webhookColumns+` FROM webhooks WHERE id = ? AND owner = ?`, id, owner)
	if err != nil {
		return nil, err
	}
	ws, err := scanWebhooks(rows)
	if err != nil {
		return nil, err
	}
	if len(ws) == 0 {
		return nil, webhookNotFound(id)
	}
	if err := loadSubscriptions(ctx, q, ws); err != nil {
		return nil, err
	}
	return &ws[0], nil
}

func scanWebhooks(rows *sql.Rows) ([]chargenet.Webhook, error) {
	defer func() { _ = rows.Close() }()
	out := []chargenet.Webhook{}
	var r webhookRow
	for rows.Next() {
		if err := rows.Scan(r.dest()...); err != nil {
			return nil, err
		}
		w, err := r.webhook()
		if err != nil {
			return nil, err
		}
		out = append(out, w)
	}
	return out, rows.Err()
}

func insertSubscriptions(ctx context.Context, tx *sql.Tx, id string, subs []chargenet.Subscription) error {
	for _, sub := range subs {
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhook_event_types (webhook_id, type, api_version) VALUES (?, ?, ?)`,
			id, sub.Type, sub.APIVersion); err != nil {
			return err
		}
	}
	return nil
}

// CreateWebhook stores w with its subscriptions, and idem's answer when idem is not nil,
// in one transaction. An ID already taken is an ErrConflict *chargenet.Error, and so is
// an idempotency key with an answer (chargenet.IdempotencyKeyInUse); other errors are
// wrapped driver errors.
func (s *Store) CreateWebhook(ctx context.Context, w *chargenet.Webhook, idem *chargenet.Idempotency) error {
	const op = "create webhook"
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		if err := claimKey(ctx, tx, idem, w.CreatedAt); err != nil {
			return err
		}
		var prevUntil any
		if !w.PreviousSecretUntil.IsZero() {
			prevUntil = formatTime(w.PreviousSecretUntil)
		}
		if _, err := tx.ExecContext(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
			w.ID, w.Owner, w.URL, w.Description, w.Enabled, w.DisabledReason, w.Secret, w.PreviousSecret, prevUntil,
			formatTime(w.CreatedAt), formatTime(w.UpdatedAt), nullString(w.Partner)); err != nil {
			if constraintCode(err) != 0 {
				return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "id", "a webhook with id %s already exists", w.ID)
			}
			return err
		}
		if err := insertSubscriptions(ctx, tx, w.ID, w.Subscriptions); err != nil {
			return err
		}
		return keepAnswer(ctx, tx, idem, w, w.CreatedAt)
	})
	return wrap(op, err)
}

// Webhook returns owner's webhook with this id and its subscriptions; an ErrNotFound
// *chargenet.Error (Param "webhookId") if owner has none with this id.
func (s *Store) Webhook(ctx context.Context, owner, id string) (*chargenet.Webhook, error) {
	w, err := webhookIn(ctx, s.read, owner, id)
	return w, wrap("webhook", err)
}

// ListWebhooks reads one keyset slice of owner's webhooks in id order (see
// chargenet.Seek), with their subscriptions. Errors are wrapped driver errors.
func (s *Store) ListWebhooks(ctx context.Context, owner string, seek chargenet.Seek[string]) ([]chargenet.Webhook, error) {
	if seek.Limit <= 0 {
		return []chargenet.Webhook{}, nil
	}
	q, args := filteredSeek(`SELECT `+webhookColumns+` FROM webhooks`, "owner = ?", "id", []any{owner}, seek)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap("list webhooks", err)
	}
	ws, err := scanWebhooks(rows)
	if err == nil {
		err = loadSubscriptions(ctx, s.read, ws)
	}
	if err != nil {
		return nil, wrap("list webhooks", err)
	}
	return ws, nil
}

// UpdateWebhook applies patch to owner's webhook in one transaction and returns it as
// committed; an ErrNotFound *chargenet.Error if owner has none with this id.
func (s *Store) UpdateWebhook(ctx context.Context, owner, id string, patch chargenet.WebhookPatch, now time.Time) (*chargenet.Webhook, error) {
	var out *chargenet.Webhook
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		w, err := webhookIn(ctx, tx, owner, id)
		if err != nil {
			return err
		}
		updated := patch.Apply(*w)
		updated.UpdatedAt = now.UTC()
		if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET url = ?, description = ?, enabled = ?, disabled_reason = ?, `+
			`updated_at = ? WHERE id = ?`, updated.URL, updated.Description, updated.Enabled, updated.DisabledReason,
			formatTime(updated.UpdatedAt), id); err != nil {
			return err
		}
		if patch.Subscriptions != nil {
			if _, err := tx.ExecContext(ctx, `DELETE FROM webhook_event_types WHERE webhook_id = ?`, id); err != nil {
				return err
			}
			if err := insertSubscriptions(ctx, tx, id, updated.Subscriptions); err != nil {
				return err
			}
		}
		out, err = webhookIn(ctx, tx, owner, id)
		return err
	})
	return out, wrap("update webhook", err)
}

// RotateWebhookSecret replaces the signing secret, keeping the current one as the
// previous secret until now + chargenet.SecretOverlap; an ErrNotFound
// *chargenet.Error if owner has no webhook with this id.
func (s *Store) RotateWebhookSecret(ctx context.Context, owner, id, secret string, now time.Time) (*chargenet.Webhook, error) {
	var out *chargenet.Webhook
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `UPDATE webhooks SET previous_secret = secret, previous_secret_until = ?, secret = ?, `+
			`updated_at = ? WHERE id = ? AND owner = ?`, formatTime(now.Add(chargenet.SecretOverlap)), secret, formatTime(now), id, owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, webhookNotFound(id))
		}
		out, err = webhookIn(ctx, tx, owner, id)
		return err
	})
	return out, wrap("rotate webhook secret", err)
}

// DeleteWebhook deletes owner's webhook; its subscriptions, pending deliveries and
// attempts go with it. An ErrNotFound *chargenet.Error if owner has none with this id.
func (s *Store) DeleteWebhook(ctx context.Context, owner, id string) error {
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		res, err := tx.ExecContext(ctx, `DELETE FROM webhooks WHERE id = ? AND owner = ?`, id, owner)
		if err != nil {
			return err
		}
		if n, err := res.RowsAffected(); err != nil || n == 0 {
			return errors.Join(err, webhookNotFound(id))
		}
		return nil // its events stay in the log for the retention window
	})
	return wrap("delete webhook", err)
}

// ListDeliveryAttempts reads one keyset slice of the attempts of owner's webhook (see
// chargenet.Seek over attempt ids). An ErrNotFound *chargenet.Error if owner has no
// webhook with this id.
func (s *Store) ListDeliveryAttempts(ctx context.Context, owner, webhookID string, seek chargenet.Seek[int64]) ([]chargenet.DeliveryAttempt, error) {
	const op = "list delivery attempts"
	var exists bool
	if err := s.read.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = ? AND owner = ?)`,
		webhookID, owner).Scan(&exists); err != nil {
		return nil, wrap(op, err)
	}
	if !exists {
		return nil, webhookNotFound(webhookID)
	}
	out := []chargenet.DeliveryAttempt{}
	if seek.Limit <= 0 {
		return out, nil
	}
	q, args := filteredSeek(`SELECT id, webhook_id, event_id, event_type, attempt, attempted_at, outcome, http_status, error, `+
		`duration_ms, next_attempt_at FROM delivery_attempts`, "webhook_id = ?", "id", []any{webhookID}, seek)
	rows, err := s.read.QueryContext(ctx, q, args...)
	if err != nil {
		return nil, wrap(op, err)
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var a chargenet.DeliveryAttempt
		var at string
		var status sql.NullInt64
		var next sql.NullString
		var ms int64
		if err := rows.Scan(&a.ID, &a.WebhookID, &a.EventID, &a.EventType, &a.Attempt, &at, &a.Outcome, &status, &a.Error,
			&ms, &next); err != nil {
			return nil, wrap(op, err)
		}
		if a.AttemptedAt, err = parseTime(at); err != nil {
			return nil, wrap(op, err)
		}
		a.HTTPStatus, a.Duration = int(status.Int64), time.Duration(ms)*time.Millisecond
		if next.Valid {
			t, err := parseTime(next.String)
			if err != nil {
				return nil, wrap(op, err)
			}
			a.NextAttemptAt = &t
		}
		out = append(out, a)
	}
	return out, wrap(op, rows.Err())
}

// ClaimDeliveries leases up to limit due deliveries of enabled webhooks until now +
// lease, in one write transaction, and returns them with their events and webhooks. A
// push to a partner is claimed only when no earlier push of its subject waits for that
// partner (leased, or due later): a partner gets the pushes of one location in order.
// Errors are wrapped driver errors.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]chargenet.Delivery, error) {
	var out []chargenet.Delivery
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		nowS := formatTime(now)
		rows, err := tx.QueryContext(ctx, `UPDATE outbox SET leased_until = ?, attempts = attempts + 1 WHERE id IN (`+
			`SELECT o.id FROM outbox o JOIN webhooks w ON w.id = o.webhook_id WHERE o.next_attempt_at <= ? `+
			`AND (o.leased_until IS NULL OR o.leased_until <= ?) AND w.enabled `+
			`AND (o.subject IS NULL OR NOT EXISTS (SELECT 1 FROM outbox p WHERE p.webhook_id = o.webhook_id `+
			`AND p.subject = o.subject AND p.id < o.id)) ORDER BY o.next_attempt_at, o.id LIMIT ?) `+
			`RETURNING id`, formatTime(now.Add(lease)), nowS, nowS, limit)
		if err != nil {
			return err
		}
		ids, err := scanIDs(rows)
		if err != nil || len(ids) == 0 {
			return err
		}
		// The claimed deliveries with their events and webhooks, in one read.
		rows, err = tx.QueryContext(ctx, `SELECT o.id, o.api_version, o.attempts, e.id, e.type, e.occurred_at, e.data, e.traceparent, `+
			prefixed(webhookColumns, "w.")+` FROM outbox o JOIN events e ON e.id = o.event_id JOIN webhooks w ON w.id = o.webhook_id `+
			`WHERE o.id IN (`+placeholders(len(ids))+`) ORDER BY o.next_attempt_at, o.id`, ids...)
		if err != nil {
			return err
		}
		defer func() { _ = rows.Close() }()
		var wr webhookRow
		for rows.Next() {
			var d chargenet.Delivery
			var at, data string
			dest := append([]any{&d.ID, &d.APIVersion, &d.Attempt, &d.Event.ID, &d.Event.Type, &at, &data, &d.Event.TraceParent}, wr.dest()...)
			if err := rows.Scan(dest...); err != nil {
				return err
			}
			if d.Event.Time, err = parseTime(at); err != nil {
				return err
			}
			d.Event.Data = []byte(data)
			if d.Webhook, err = wr.webhook(); err != nil {
				return err
			}
			out = append(out, d)
		}
		return rows.Err()
	})
	return out, wrap("claim deliveries", err)
}

// RecordAttempts stores the attempts and settles their deliveries (see
// chargenet.Store), in one write transaction. Errors are wrapped driver errors; then
// nothing is recorded.
func (s *Store) RecordAttempts(ctx context.Context, records ...chargenet.AttemptRecord) error {
	start := time.Now()
	err := s.writeTx(ctx, func(tx *sql.Tx) error {
		for _, r := range records {
			if err := recordAttempt(ctx, tx, r.Delivery, r.Attempt); err != nil {
				return err
			}
		}
		return nil
	})
	if err == nil {
		s.hooks.Committed("record_attempts", start, len(records))
	}
	return wrap("record attempts", err)
}

// recordAttempt is one record of RecordAttempts.
func recordAttempt(ctx context.Context, tx *sql.Tx, d *chargenet.Delivery, a *chargenet.DeliveryAttempt) error {
	var exists bool
	if err := tx.QueryRowContext(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = ?)`, d.Webhook.ID).Scan(&exists); err != nil || !exists {
		return err // a deleted webhook took its deliveries with it
	}
	var status, next any
	if a.HTTPStatus != 0 {
		status = a.HTTPStatus
	}
	if a.NextAttemptAt != nil {
		next = formatTime(*a.NextAttemptAt)
	}
	if _, err := tx.ExecContext(ctx, `INSERT INTO delivery_attempts (webhook_id, event_id, event_type, attempt, attempted_at, `+
		`outcome, http_status, error, duration_ms, next_attempt_at) VALUES (?, ?, ?, ?, ?, ?, ?, ?, ?, ?)`,
		d.Webhook.ID, d.Event.ID, d.Event.Type, a.Attempt, formatTime(a.AttemptedAt), a.Outcome, status, a.Error,
		a.Duration.Milliseconds(), next); err != nil {
		return err
	}
	if a.Outcome == chargenet.OutcomeGone {
		if _, err := tx.ExecContext(ctx, `UPDATE webhooks SET enabled = 0, disabled_reason = ?, updated_at = ? WHERE id = ?`,
			"the receiver answered 410 Gone at "+a.AttemptedAt.UTC().Format(time.RFC3339), formatTime(a.AttemptedAt), d.Webhook.ID); err != nil {
			return err
		}
	}
	if a.ReceiverDown() {
		// Text times of a fixed width compare like the times they hold.
		// Only the rows due before then: those deferred already are not written again.
		if _, err := tx.ExecContext(ctx, `UPDATE outbox SET next_attempt_at = ? WHERE webhook_id = ? AND next_attempt_at < ? `+
			`AND id <> ? AND (leased_until IS NULL OR leased_until <= ?)`, next, d.Webhook.ID, next, d.ID, formatTime(a.AttemptedAt)); err != nil {
			return err
		}
	}
	var err error
	if a.NextAttemptAt == nil {
		// The event stays in the log for the retention window (PruneEvents).
		_, err = tx.ExecContext(ctx, `DELETE FROM outbox WHERE id = ?`, d.ID)
	} else {
		_, err = tx.ExecContext(ctx, `UPDATE outbox SET next_attempt_at = ?, leased_until = NULL WHERE id = ?`, next, d.ID)
	}
	return err
}
