package sqlite

import (
	"context"
	"database/sql"
	"io/fs"
	"path/filepath"
	"slices"
	"time"

	"github.com/chargenet/chargenet"
)

// OutboxStats counts the deliveries waiting for enabled webhooks and the pushes
// waiting for partners, finds when the change behind the oldest of each was committed,
// and counts the disabled webhooks, in one read snapshot. Errors are wrapped driver
// errors.
func (s *Store) OutboxStats(ctx context.Context) (chargenet.OutboxStats, error) {
	var out chargenet.OutboxStats
	var oldest, oldestPush sql.NullString
	const pending = `FROM outbox o JOIN webhooks w ON w.id = o.webhook_id JOIN events e ON e.id = o.event_id WHERE w.enabled AND `
	err := s.read.QueryRowContext(ctx, `SELECT `+
		`(SELECT count(*) `+pending+`w.partner_id IS NULL), (SELECT min(e.occurred_at) `+pending+`w.partner_id IS NULL), `+
		`(SELECT count(*) `+pending+`w.partner_id IS NOT NULL), (SELECT min(e.occurred_at) `+pending+`w.partner_id IS NOT NULL), `+
		`(SELECT count(*) FROM webhooks WHERE NOT enabled)`).Scan(&out.Pending, &oldest, &out.PendingPushes, &oldestPush,
		&out.DisabledWebhooks)
	if err != nil {
		return out, wrap("outbox stats", err)
	}
	for _, t := range []struct {
		s   sql.NullString
		out *time.Time
	}{{oldest, &out.Oldest}, {oldestPush, &out.OldestPush}} {
		if t.s.Valid {
			if *t.out, err = parseTime(t.s.String); err != nil {
				return out, wrap("outbox stats", err)
			}
		}
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
		known = filepath.Base(slices.Max(names))
	}
	var last sql.NullString
	if err := s.read.QueryRowContext(ctx, `SELECT max(name) FROM migrations`).Scan(&last); err != nil {
		return known, "", wrap("migration head", err)
	}
	return known, last.String, nil
}

// ReadCacheStats returns how many reads the read cache answered and how many it sent to
// the database since the store opened; zeros for an in-memory database, which has no
// cache.
func (s *Store) ReadCacheStats() (hits, misses uint64) {
	if s.cache == nil {
		return 0, 0
	}
	return s.cache.hits.Load(), s.cache.misses.Load()
}
