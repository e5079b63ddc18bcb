package postgres

import (
	"context"
	"errors"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5"
	"github.com/jackc/pgx/v5/pgtype"
)

const (
	webhookColumns = `id, owner, url, description, enabled, disabled_reason, secret, previous_secret, ` +
		`previous_secret_until, created_at, updated_at, partner_id`

	// claimQuery leases the due deliveries and reads them with their events and
	// webhooks, in one statement; its parameters are the lease's end, now and the
	// limit. A push to a partner is claimed only when no earlier push of its subject
	// waits for that partner (leased, or due later): a partner gets the pushes of one
	// location in order. FOR UPDATE OF o SKIP LOCKED makes concurrent claimers (replicas) pass over
	// the rows another one is leasing instead of waiting for it or taking them too; a row
	// another claimer leased and committed meanwhile is re-checked against the lease
	// condition, so it is not taken either.
	claimQuery = `WITH claimed AS (` +
		`UPDATE outbox SET leased_until = $1, attempts = attempts + 1 WHERE id IN (` +
		`SELECT o.id FROM outbox o JOIN webhooks w ON w.id = o.webhook_id ` +
		`WHERE o.next_attempt_at <= $2 AND (o.leased_until IS NULL OR o.leased_until <= $2) AND w.enabled ` +
		`AND (o.subject IS NULL OR NOT EXISTS (SELECT 1 FROM outbox p WHERE p.webhook_id = o.webhook_id ` +
		`AND p.subject = o.subject AND p.id < o.id)) ` +
		`ORDER BY o.next_attempt_at, o.id LIMIT $3 FOR UPDATE OF o SKIP LOCKED) ` +
		`RETURNING id, event_id, webhook_id, api_version, attempts, next_attempt_at) ` +
		`SELECT c.id, c.api_version, c.attempts, ev.id, ev.type, ev.occurred_at, ev.data, ev.traceparent, ` +
		`w.id, w.owner, w.url, w.description, w.enabled, w.disabled_reason, w.secret, w.previous_secret, ` +
		`w.previous_secret_until, w.created_at, w.updated_at, w.partner_id ` +
		`FROM claimed c JOIN events ev ON ev.id = c.event_id JOIN webhooks w ON w.id = c.webhook_id ` +
		`ORDER BY c.next_attempt_at, c.id`

	attemptColumns = `id, webhook_id, event_id, event_type, attempt, attempted_at, outcome, http_status, error, ` +
		`duration_ms, next_attempt_at`
)

func webhookNotFound(id string) error {
	return chargenet.Errorf(chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId", "webhook with webhookId %s not found", id)
}

// webhookRow receives the webhookColumns of one row.
type webhookRow struct {
	w         chargenet.Webhook
	prevUntil pgtype.Timestamptz
	partner   pgtype.Text
}

func (r *webhookRow) dest() []any {
	return []any{&r.w.ID, &r.w.Owner, &r.w.URL, &r.w.Description, &r.w.Enabled, &r.w.DisabledReason, &r.w.Secret,
		&r.w.PreviousSecret, &r.prevUntil, &r.w.CreatedAt, &r.w.UpdatedAt, &r.partner}
}

// webhook returns the webhook read, without subscriptions (nil).
func (r *webhookRow) webhook() chargenet.Webhook {
	w := r.w
	w.CreatedAt, w.UpdatedAt = w.CreatedAt.UTC(), w.UpdatedAt.UTC()
	w.Partner = r.partner.String
	w.PreviousSecretUntil = time.Time{}
	if r.prevUntil.Valid {
		w.PreviousSecretUntil = r.prevUntil.Time.UTC()
	}
	return w
}

func collectWebhooks(rows pgx.Rows) ([]chargenet.Webhook, error) {
	var r webhookRow
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.Webhook, error) {
		err := row.Scan(r.dest()...)
		return r.webhook(), err
	})
	if out == nil {
		out = []chargenet.Webhook{}
	}
	return out, err
}

// loadSubscriptions fills the Subscriptions of ws, in type order, in one query.
func loadSubscriptions(ctx context.Context, q querier, ws []chargenet.Webhook) error {
	if len(ws) == 0 {
		return nil
	}
	index := make(map[string]int, len(ws))
	ids := make([]string, len(ws))
	for i := range ws {
		index[ws[i].ID] = i
		ids[i] = ws[i].ID
		ws[i].Subscriptions = []chargenet.Subscription{}
	}
	rows, err := q.Query(ctx, `SELECT webhook_id, type, api_version FROM webhook_event_types `+
		`WHERE webhook_id = ANY($1) ORDER BY webhook_id, type`, ids)
	if err != nil {
		return err
	}
	defer rows.Close()
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

// webhookIn reads owner's webhook with its subscriptions through q, locking its row
// (FOR UPDATE) when lock is set; webhookNotFound if there is none.
func webhookIn(ctx context.Context, q querier, owner, id string, lock bool) (*chargenet.Webhook, error) {
	query := `SELECT ` + webhookColumns + ` FROM webhooks WHERE id = $1 AND owner = $2`
	if lock {
		query += ` FOR UPDATE`
	}
	rows, err := q.Query(ctx, query, id, owner)
	if err != nil {
		return nil, err
	}
	ws, err := collectWebhooks(rows)
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

func insertSubscriptions(ctx context.Context, tx pgx.Tx, id string, subs []chargenet.Subscription) error {
	for _, sub := range subs {
		if _, err := tx.Exec(ctx, `INSERT INTO webhook_event_types (webhook_id, type, api_version) VALUES ($1, $2, $3)`,
			id, sub.Type, sub.APIVersion); err != nil {
			return err
		}
	}
	return nil
}

// CreateWebhook stores w with its subscriptions in one transaction, with idem's answer
// (made of w as stored, kept as of w.CreatedAt) when idem is not nil; times are stored
// in UTC to the microsecond. Errors: chargenet.IdempotencyKeyInUse when idem's key has
// an unexpired answer (checked first); an ErrConflict *chargenet.Error with Param "id"
// for an ID already taken; an error of idem.Answer, unchanged; other errors are wrapped
// driver errors, wrapping chargenet.ErrUnavailable if the database cannot be reached.
// Nothing is written when an error is returned.
func (s *Store) CreateWebhook(ctx context.Context, w *chargenet.Webhook, idem *chargenet.Idempotency) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		if err := claimKey(ctx, tx, idem, w.CreatedAt); err != nil {
			return err
		}
		tag, err := tx.Exec(ctx, `INSERT INTO webhooks (`+webhookColumns+`) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10, $11, $12) `+
			`ON CONFLICT (id) DO NOTHING`,
			w.ID, w.Owner, w.URL, w.Description, w.Enabled, w.DisabledReason, w.Secret, w.PreviousSecret,
			nullTime(w.PreviousSecretUntil), chargenet.Stamp(w.CreatedAt), chargenet.Stamp(w.UpdatedAt), pgtype.Text{String: w.Partner, Valid: w.Partner != ""})
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return chargenet.Errorf(chargenet.ErrConflict, chargenet.CodeConflict, "id", "a webhook with id %s already exists", w.ID)
		}
		if err := insertSubscriptions(ctx, tx, w.ID, w.Subscriptions); err != nil {
			return err
		}
		if idem == nil {
			return nil
		}
		stored, err := webhookIn(ctx, tx, w.Owner, w.ID, false)
		if err != nil {
			return err
		}
		return keepAnswer(ctx, tx, idem, stored, w.CreatedAt)
	})
	return s.wrap("create webhook", err)
}

// Webhook returns owner's webhook with this id and its subscriptions (in type order),
// read in one REPEATABLE READ transaction. An ErrNotFound *chargenet.Error with Param
// "webhookId" if owner has none with this id; other errors are wrapped driver errors,
// wrapping chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) Webhook(ctx context.Context, owner, id string) (*chargenet.Webhook, error) {
	var out *chargenet.Webhook
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		var err error
		out, err = webhookIn(ctx, tx, owner, id, false)
		return err
	})
	if err != nil {
		return nil, s.wrap("webhook", err)
	}
	return out, nil
}

// ListWebhooks reads one keyset slice of owner's webhooks in id order (see
// chargenet.Seek), with their subscriptions, in one REPEATABLE READ transaction. The
// result is empty, not nil, past the end. Errors are wrapped driver errors, wrapping
// chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) ListWebhooks(ctx context.Context, owner string, seek chargenet.Seek[string]) ([]chargenet.Webhook, error) {
	if seek.Limit <= 0 {
		return []chargenet.Webhook{}, nil
	}
	var out []chargenet.Webhook
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		query, args := filteredSeek(`SELECT `+webhookColumns+` FROM webhooks`, "owner = $1", "id", []any{owner}, seek)
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		if out, err = collectWebhooks(rows); err != nil {
			return err
		}
		return loadSubscriptions(ctx, tx, out)
	})
	if err != nil {
		return nil, s.wrap("list webhooks", err)
	}
	return out, nil
}

// UpdateWebhook applies patch to owner's webhook in one transaction that locks its row,
// sets UpdatedAt to now (UTC, to the microsecond) and returns the webhook as committed.
// An ErrNotFound *chargenet.Error with Param "webhookId" if owner has none with this
// id; other errors are wrapped driver errors, wrapping chargenet.ErrUnavailable if the
// database cannot be reached.
func (s *Store) UpdateWebhook(ctx context.Context, owner, id string, patch chargenet.WebhookPatch, now time.Time) (*chargenet.Webhook, error) {
	var out *chargenet.Webhook
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		w, err := webhookIn(ctx, tx, owner, id, true)
		if err != nil {
			return err
		}
		updated := patch.Apply(*w)
		updated.UpdatedAt = chargenet.Stamp(now)
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET url = $1, description = $2, enabled = $3, disabled_reason = $4, `+
			`updated_at = $5 WHERE id = $6`, updated.URL, updated.Description, updated.Enabled, updated.DisabledReason,
			updated.UpdatedAt, id); err != nil {
			return err
		}
		if patch.Subscriptions != nil {
			if _, err := tx.Exec(ctx, `DELETE FROM webhook_event_types WHERE webhook_id = $1`, id); err != nil {
				return err
			}
			if err := insertSubscriptions(ctx, tx, id, updated.Subscriptions); err != nil {
				return err
			}
		}
		out, err = webhookIn(ctx, tx, owner, id, false)
		return err
	})
	if err != nil {
		return nil, s.wrap("update webhook", err)
	}
	return out, nil
}

// RotateWebhookSecret makes secret the signing secret, keeping the current one as the
// previous secret until now + chargenet.SecretOverlap, sets UpdatedAt to now (times in
// UTC, to the microsecond) and returns the webhook as committed. An ErrNotFound
// *chargenet.Error with Param "webhookId" if owner has no webhook with this id; other
// errors are wrapped driver errors, wrapping chargenet.ErrUnavailable if the database
// cannot be reached.
func (s *Store) RotateWebhookSecret(ctx context.Context, owner, id, secret string, now time.Time) (*chargenet.Webhook, error) {
	var out *chargenet.Webhook
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `UPDATE webhooks SET previous_secret = secret, previous_secret_until = $1, secret = $2, `+
			`updated_at = $3 WHERE id = $4 AND owner = $5`, chargenet.Stamp(now.Add(chargenet.SecretOverlap)), secret, chargenet.Stamp(now), id, owner)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return webhookNotFound(id)
		}
		out, err = webhookIn(ctx, tx, owner, id, false)
		return err
	})
	if err != nil {
		return nil, s.wrap("rotate webhook secret", err)
	}
	return out, nil
}

// DeleteWebhook deletes owner's webhook; its subscriptions, pending deliveries and
// attempts go with it (ON DELETE CASCADE). An ErrNotFound *chargenet.Error with Param
// "webhookId" if owner has none with this id; other errors are wrapped driver errors,
// wrapping chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) DeleteWebhook(ctx context.Context, owner, id string) error {
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
		tag, err := tx.Exec(ctx, `DELETE FROM webhooks WHERE id = $1 AND owner = $2`, id, owner)
		if err != nil {
			return err
		}
		if tag.RowsAffected() == 0 {
			return webhookNotFound(id)
		}
		return nil // its events stay in the log for the retention window
	})
	return s.wrap("delete webhook", err)
}

// ListDeliveryAttempts reads one keyset slice of the attempts of owner's webhook (see
// chargenet.Seek over attempt ids), in one REPEATABLE READ transaction. The result is
// empty, not nil, past the end. An ErrNotFound *chargenet.Error with Param "webhookId"
// if owner has no webhook with this id; other errors are wrapped driver errors,
// wrapping chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) ListDeliveryAttempts(ctx context.Context, owner, webhookID string, seek chargenet.Seek[int64]) ([]chargenet.DeliveryAttempt, error) {
	out := []chargenet.DeliveryAttempt{}
	err := pgx.BeginTxFunc(ctx, s.pool, snapshot, func(tx pgx.Tx) error {
		var exists bool
		if err := tx.QueryRow(ctx, `SELECT EXISTS (SELECT 1 FROM webhooks WHERE id = $1 AND owner = $2)`,
			webhookID, owner).Scan(&exists); err != nil {
			return err
		}
		if !exists {
			return webhookNotFound(webhookID)
		}
		if seek.Limit <= 0 {
			return nil
		}
		query, args := filteredSeek(`SELECT `+attemptColumns+` FROM delivery_attempts`, "webhook_id = $1", "id",
			[]any{webhookID}, seek)
		rows, err := tx.Query(ctx, query, args...)
		if err != nil {
			return err
		}
		defer rows.Close()
		for rows.Next() {
			var (
				a      chargenet.DeliveryAttempt
				status pgtype.Int4
				next   pgtype.Timestamptz
				ms     int64
			)
			if err := rows.Scan(&a.ID, &a.WebhookID, &a.EventID, &a.EventType, &a.Attempt, &a.AttemptedAt, &a.Outcome,
				&status, &a.Error, &ms, &next); err != nil {
				return err
			}
			a.AttemptedAt = a.AttemptedAt.UTC()
			a.HTTPStatus, a.Duration = int(status.Int32), time.Duration(ms)*time.Millisecond
			if next.Valid {
				t := next.Time.UTC()
				a.NextAttemptAt = &t
			}
			out = append(out, a)
		}
		return rows.Err()
	})
	if err != nil {
		return nil, s.wrap("list delivery attempts", err)
	}
	return out, nil
}

// ClaimDeliveries leases up to limit due deliveries of enabled webhooks until now +
// lease and returns them, oldest due first, with their events and webhooks (secrets
// included, subscriptions nil), in one statement. Its sub-select takes the due outbox
// rows FOR UPDATE OF o SKIP LOCKED, so replicas claiming at once never lease the same
// delivery. Errors are wrapped driver errors, wrapping chargenet.ErrUnavailable if the
// database cannot be reached.
func (s *Store) ClaimDeliveries(ctx context.Context, now time.Time, limit int, lease time.Duration) ([]chargenet.Delivery, error) {
	if limit <= 0 {
		return nil, nil
	}
	rows, err := s.pool.Query(ctx, claimQuery, chargenet.Stamp(now.Add(lease)), chargenet.Stamp(now), limit)
	if err != nil {
		return nil, s.wrap("claim deliveries", err)
	}
	var (
		wr   webhookRow
		d    chargenet.Delivery
		data string
	)
	dest := append([]any{&d.ID, &d.APIVersion, &d.Attempt, &d.Event.ID, &d.Event.Type, &d.Event.Time, &data, &d.Event.TraceParent}, wr.dest()...)
	out, err := pgx.CollectRows(rows, func(row pgx.CollectableRow) (chargenet.Delivery, error) {
		if err := row.Scan(dest...); err != nil {
			return chargenet.Delivery{}, err
		}
		c := d
		c.Event.Time = c.Event.Time.UTC()
		c.Event.Data = []byte(data)
		c.Webhook = wr.webhook()
		return c, nil
	})
	if err != nil {
		return nil, s.wrap("claim deliveries", err)
	}
	return out, nil
}

// RecordAttempts stores the attempts and settles their deliveries (see
// chargenet.Store) in one transaction: a delivery is removed when its attempt's
// NextAttemptAt is nil, otherwise due again then and no longer leased;
// chargenet.OutcomeGone also disables the webhook. Each webhook's row is locked against
// deletion (FOR KEY SHARE) first; a webhook deleted meanwhile makes its record a no-op.
// Times are stored in UTC to the microsecond. Errors are wrapped driver errors,
// wrapping chargenet.ErrUnavailable if the database cannot be reached; then nothing is
// recorded.
func (s *Store) RecordAttempts(ctx context.Context, records ...chargenet.AttemptRecord) error {
	start := time.Now()
	err := pgx.BeginFunc(ctx, s.pool, func(tx pgx.Tx) error {
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
	return s.wrap("record attempts", err)
}

// recordAttempt is one record of RecordAttempts.
func recordAttempt(ctx context.Context, tx pgx.Tx, d *chargenet.Delivery, a *chargenet.DeliveryAttempt) error {
	var one int
	err := tx.QueryRow(ctx, `SELECT 1 FROM webhooks WHERE id = $1 FOR KEY SHARE`, d.Webhook.ID).Scan(&one)
	if errors.Is(err, pgx.ErrNoRows) {
		return nil // a deleted webhook took its deliveries with it
	}
	if err != nil {
		return err
	}
	status := pgtype.Int4{Int32: int32(a.HTTPStatus), Valid: a.HTTPStatus != 0}
	var next pgtype.Timestamptz
	if a.NextAttemptAt != nil {
		next = pgtype.Timestamptz{Time: chargenet.Stamp(*a.NextAttemptAt), Valid: true}
	}
	if _, err := tx.Exec(ctx, `INSERT INTO delivery_attempts (webhook_id, event_id, event_type, attempt, attempted_at, `+
		`outcome, http_status, error, duration_ms, next_attempt_at) VALUES ($1, $2, $3, $4, $5, $6, $7, $8, $9, $10)`,
		d.Webhook.ID, d.Event.ID, d.Event.Type, a.Attempt, chargenet.Stamp(a.AttemptedAt), a.Outcome, status, a.Error,
		a.Duration.Milliseconds(), next); err != nil {
		return err
	}
	if a.Outcome == chargenet.OutcomeGone {
		if _, err := tx.Exec(ctx, `UPDATE webhooks SET enabled = false, disabled_reason = $1, updated_at = $2 WHERE id = $3`,
			"the receiver answered 410 Gone at "+a.AttemptedAt.UTC().Format(time.RFC3339), chargenet.Stamp(a.AttemptedAt), d.Webhook.ID); err != nil {
			return err
		}
	}
	if a.ReceiverDown() {
		// Only the rows due before then: those deferred already are not written again, so
		// that a receiver that stays down costs one short update per attempt, not a
		// rewrite of its whole backlog (a long transaction would hold back the change
		// lists and the event log of every replica).
		if _, err := tx.Exec(ctx, `UPDATE outbox SET next_attempt_at = $1 WHERE webhook_id = $2 AND next_attempt_at < $1 `+
			`AND id <> $3 AND (leased_until IS NULL OR leased_until <= $4)`, next, d.Webhook.ID, d.ID, chargenet.Stamp(a.AttemptedAt)); err != nil {
			return err
		}
	}
	if a.NextAttemptAt == nil {
		// The event stays in the log for the retention window (PruneEvents).
		_, err = tx.Exec(ctx, `DELETE FROM outbox WHERE id = $1`, d.ID)
	} else {
		_, err = tx.Exec(ctx, `UPDATE outbox SET next_attempt_at = $1, leased_until = NULL WHERE id = $2`, next, d.ID)
	}
	return err
}
