package sqlite_test

import (
	"database/sql"
	"fmt"
	"math/rand/v2"
	"path/filepath"
	"testing"
	"time"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/sqlite"
)

// TestEventLogSinceOutOfOrder fills the log by plain SQL (the trigger of migration 0015
// keeps the high water) and then through the store, with times out of seq order, prunes
// the oldest part, and reads it with since at every stored time and between: each read
// must hold exactly the events at or after since, in seq order, however far an event's
// time lies behind the events before it.
func TestEventLogSinceOutOfOrder(t *testing.T) {
	path := sqlitetest.NewFile(t)
	s := mustOpen(t, path)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	base := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)
	rng := rand.New(rand.NewPCG(1, 2))
	type logged struct {
		id string
		at time.Time
	}
	var all []logged
	for i := range 300 {
		// Mostly ascending, every seventh far behind.
		at := base.Add(time.Duration(i) * time.Second)
		if i%7 == 3 {
			at = at.Add(-time.Duration(rng.IntN(200)) * time.Second)
		}
		id := fmt.Sprintf("evt_%03d", i)
		_, err := db.ExecContext(t.Context(), `INSERT INTO events (id, type, occurred_at, data) VALUES (?, ?, ?, '{}')`,
			id, chargenet.EventConnectorUpdated, at.Format("2006-01-02T15:04:05.000000000Z07:00"))
		require.NoError(t, err)
		all = append(all, logged{id, at})
	}
	_, err = db.ExecContext(t.Context(), `DELETE FROM events WHERE seq <= 40`)
	require.NoError(t, err)
	all = all[40:]
	require.NoError(t, s.Import(t.Context(), chargenet.DemoInventory(base)))
	for i := range 40 {
		at := base.Add(time.Duration(300+i) * time.Second)
		if i%5 == 2 {
			at = at.Add(-time.Duration(rng.IntN(250)) * time.Second)
		}
		_, err := s.UpdateConnector(t.Context(), 1001+int64(i), 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(i + 1))}, "", "", at)
		require.NoError(t, err)
	}
	stored, err := s.ListEvents(t.Context(), chargenet.ChangeSeek[int64]{Limit: 1000}, nil, "")
	require.NoError(t, err)
	require.Len(t, stored, len(all)+40)
	for _, ev := range stored[len(all):] {
		all = append(all, logged{ev.ID, ev.Time})
	}

	for i := -1; i < 350; i++ {
		since := base.Add(time.Duration(i)*time.Second + time.Duration(i%2)*time.Millisecond)
		var want []string
		for _, l := range all {
			if !l.at.Before(since) {
				want = append(want, l.id)
			}
		}
		got, err := s.ListEvents(t.Context(), chargenet.ChangeSeek[int64]{Since: since, Limit: 1000}, nil, "")
		require.NoError(t, err)
		ids := []string{}
		for _, ev := range got {
			ids = append(ids, ev.ID)
		}
		if want == nil {
			want = []string{}
		}
		assert.Equal(t, want, ids, "since %s", since)
	}
}

// TestEventHighWaterMigration migrates a log written before migration 0015, times out of
// seq order: each event's high water must be the latest time up to it, the index on time
// gone, and a since read exact.
func TestEventHighWaterMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chargenet.db")
	at := func(s int) string {
		return time.Date(2026, 1, 1, 0, 0, s, 0, time.UTC).Format("2006-01-02T15:04:05.000000000Z07:00")
	}
	var stmts []string
	for i, s := range []int{10, 30, 20, 40, 5, 50} {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO events (id, type, occurred_at, data) VALUES ('evt_%d', '%s', '%s', '{}')`,
			i, chargenet.EventConnectorUpdated, at(s)))
	}
	require.NoError(t, sqlite.MigrateBeforeForTest(ctx, path, "0015", stmts...))
	s := mustOpen(t, path)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer func() { _ = db.Close() }()
	rows, err := db.QueryContext(ctx, `SELECT hw FROM events ORDER BY seq`)
	require.NoError(t, err)
	var hws []string
	for rows.Next() {
		var hw string
		require.NoError(t, rows.Scan(&hw))
		hws = append(hws, hw)
	}
	require.NoError(t, rows.Err())
	assert.Equal(t, []string{at(10), at(30), at(30), at(40), at(40), at(50)}, hws)
	var n int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'events_occurred_at'`).Scan(&n))
	assert.Zero(t, n, "the index on time is dropped")

	got, err := s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Since: time.Date(2026, 1, 1, 0, 0, 20, 0, time.UTC), Limit: 10}, nil, "")
	require.NoError(t, err)
	var ids []string
	for _, ev := range got {
		ids = append(ids, ev.ID)
	}
	assert.Equal(t, []string{"evt_1", "evt_2", "evt_3", "evt_5"}, ids)
}

// TestEventSeqMigration migrates a log numbered by AUTOINCREMENT whose newest events
// were pruned (the old sequence is past the newest event left) and one pending
// delivery: the delivery keeps its event, the events their numbers, and the next event
// logged is numbered after every number given before.
func TestEventSeqMigration(t *testing.T) {
	ctx := t.Context()
	path := filepath.Join(t.TempDir(), "chargenet.db")
	at := time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC).Format("2006-01-02T15:04:05.000000000Z07:00")
	stmts := []string{
		`INSERT INTO webhooks (id, owner, url, enabled, secret, created_at, updated_at) ` +
			`VALUES ('wh_1', 'p', 'https://example.com/hook', 1, 'whsec_x', '` + at + `', '` + at + `')`,
	}
	for i := range 5 {
		stmts = append(stmts, fmt.Sprintf(`INSERT INTO events (id, type, occurred_at, data) VALUES ('evt_%d', '%s', '%s', '{}')`,
			i, chargenet.EventConnectorUpdated, at))
	}
	stmts = append(stmts,
		`INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) VALUES ('evt_1', 'wh_1', '1.0', '`+at+`')`,
		`DELETE FROM events WHERE id IN ('evt_0', 'evt_3', 'evt_4')`)
	require.NoError(t, sqlite.MigrateBeforeForTest(ctx, path, "0016", stmts...))
	s := mustOpen(t, path)
	db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
	require.NoError(t, err)
	defer func() { _ = db.Close() }()

	var pending string
	require.NoError(t, db.QueryRowContext(ctx, `SELECT event_id FROM outbox`).Scan(&pending))
	assert.Equal(t, "evt_1", pending)
	var fks int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM pragma_foreign_key_check`).Scan(&fks))
	assert.Zero(t, fks, "every reference holds")
	var autoincrement int
	require.NoError(t, db.QueryRowContext(ctx, `SELECT count(*) FROM sqlite_schema WHERE name = 'events' AND sql LIKE '%AUTOINCREMENT%'`).Scan(&autoincrement))
	assert.Zero(t, autoincrement)

	e := chargenet.DemoInventory(time.Now()).EVSEs[0]
	ev, err := chargenet.NewConnectorUpdatedEvent(&e, e.Connectors[0].ID, time.Now())
	require.NoError(t, err)
	require.NoError(t, s.RecordEventsForTest(ctx, ev))
	got, err := s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 10}, nil, "")
	require.NoError(t, err)
	var seqs []int64
	for _, ev := range got {
		seqs = append(seqs, ev.Seq)
	}
	assert.Equal(t, []int64{2, 3, 6}, seqs, "after the 5 numbers given before")
}
