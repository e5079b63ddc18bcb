package postgres

import (
	"context"
	"io/fs"
	"path"
	"slices"

	"github.com/chargenet/chargenet"
	"github.com/jackc/pgx/v5/pgtype"
)

// OutboxStats counts the deliveries waiting for enabled webhooks and the pushes
// waiting for partners, finds when the change behind the oldest of each was committed,
// and counts the disabled webhooks, in one statement. Errors are wrapped driver errors,
// wrapping chargenet.ErrUnavailable if the database cannot be reached.
func (s *Store) OutboxStats(ctx context.Context) (chargenet.OutboxStats, error) {
	var out chargenet.OutboxStats
	var oldest, oldestPush pgtype.Timestamptz
	const pending = `FROM outbox o JOIN webhooks w ON w.id = o.webhook_id JOIN events e ON e.id = o.event_id WHERE w.enabled AND `
	err := s.pool.QueryRow(ctx, `SELECT `+
		`(SELECT count(*) `+pending+`w.partner_id IS NULL), (SELECT min(e.occurred_at) `+pending+`w.partner_id IS NULL), `+
		`(SELECT count(*) `+pending+`w.partner_id IS NOT NULL), (SELECT min(e.occurred_at) `+pending+`w.partner_id IS NOT NULL), `+
		`(SELECT count(*) FROM webhooks WHERE NOT enabled)`).Scan(&out.Pending, &oldest, &out.PendingPushes, &oldestPush,
		&out.DisabledWebhooks)
	if err != nil {
		return out, s.wrap("outbox stats", err)
	}
	if oldest.Valid {
		out.Oldest = oldest.Time
	}
	if oldestPush.Valid {
		out.OldestPush = oldestPush.Time
	}
	return out, nil
}

// MigrationHead returns the name of the last embedded migration and of the last one
// the database records. Errors are wrapped driver errors.
func (s *Store) MigrationHead(ctx context.Context) (known, applied string, err error) {
	names, err := fs.Glob(migrationFiles, "migrations/*.sql")
	if err != nil {
		return "", "", err
	}
	if len(names) > 0 {
		known = path.Base(slices.Max(names))
	}
	var last pgtype.Text
	if err := s.pool.QueryRow(ctx, `SELECT max(name) FROM migrations`).Scan(&last); err != nil {
		return known, "", s.wrap("migration head", err)
	}
	return known, last.String, nil
}

// PoolStats returns a snapshot of the connection pool.
func (s *Store) PoolStats() chargenet.PoolStats {
	st := s.pool.Stat()
	return chargenet.PoolStats{
		Max: st.MaxConns(), Total: st.TotalConns(), Idle: st.IdleConns(), Acquired: st.AcquiredConns(),
		Constructing: st.ConstructingConns(), AcquireCount: st.AcquireCount(), EmptyAcquireCount: st.EmptyAcquireCount(),
		AcquireDuration: st.AcquireDuration(),
	}
}
