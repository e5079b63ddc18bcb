package postgres_test

import (
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChangeListHorizon checks the rule that keeps a change list from passing a change:
// transaction A writes EVSE 1001 and location LOC-0101 and stays open, B writes EVSE
// 1002 and LOC-0102 and commits. B's id is above A's, so while A is open the lists must
// not return B's changes (a partner would resume after them and never see A's); once A
// commits they return both, A's first.
func TestChangeListHorizon(t *testing.T) {
	ctx := t.Context()
	s, db := mustOpenDemo(t)

	// A partner that has read both lists to their end (waiting until the import shows:
	// other databases' transactions on the server may hold the horizon for a moment).
	var evseAt chargenet.ChangeSeek[int64]
	var locAt chargenet.ChangeSeek[string]
	read := func() ([]chargenet.EVSE, []chargenet.Location) {
		t.Helper()
		es, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Pos: evseAt.Pos, Key: evseAt.Key, HasPos: evseAt.HasPos, Limit: 1000})
		require.NoError(t, err)
		ls, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Pos: locAt.Pos, Key: locAt.Key, HasPos: locAt.HasPos, Limit: 1000})
		require.NoError(t, err)
		if len(es) > 0 {
			last := es[len(es)-1]
			evseAt = chargenet.ChangeSeek[int64]{Pos: last.ChangePos, Key: last.UID, HasPos: true}
		}
		if len(ls) > 0 {
			last := ls[len(ls)-1]
			locAt = chargenet.ChangeSeek[string]{Pos: last.ChangePos, Key: last.ID, HasPos: true}
		}
		return es, ls
	}
	seen := 0
	for deadline := time.Now().Add(10 * time.Second); seen < 40 && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		es, _ := read()
		seen += len(es)
	}
	require.Equal(t, 40, seen, "the imported EVSEs")
	read()

	a, err := db.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = a.Rollback(ctx) }()
	_, err = a.Exec(ctx, `UPDATE evses SET version = version + 1 WHERE uid = 1001`)
	require.NoError(t, err)
	_, err = a.Exec(ctx, `UPDATE locations SET name = 'Written by A' WHERE id = 'LOC-0101'`)
	require.NoError(t, err)

	b, err := db.Begin(ctx)
	require.NoError(t, err)
	_, err = b.Exec(ctx, `UPDATE evses SET version = version + 1 WHERE uid = 1002`)
	require.NoError(t, err)
	_, err = b.Exec(ctx, `UPDATE locations SET name = 'Written by B' WHERE id = 'LOC-0102'`)
	require.NoError(t, err)
	require.NoError(t, b.Commit(ctx))

	committed, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	require.Equal(t, int64(2), committed.Version, "B committed")
	for range 5 {
		es, ls := read()
		assert.Empty(t, es, "no EVSE change while A, which began writing before B, is open")
		assert.Empty(t, ls, "no location change while A is open")
		time.Sleep(20 * time.Millisecond)
	}

	require.NoError(t, a.Commit(ctx))
	var evses []chargenet.EVSE
	var locs []chargenet.Location
	for deadline := time.Now().Add(10 * time.Second); (len(evses) < 2 || len(locs) < 2) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		es, ls := read()
		evses, locs = append(evses, es...), append(locs, ls...)
	}
	require.Len(t, evses, 2, "both EVSE changes once A committed")
	assert.Equal(t, []int64{1001, 1002}, []int64{evses[0].UID, evses[1].UID}, "A's change first: its transaction began writing first")
	assert.Less(t, evses[0].ChangePos, evses[1].ChangePos)
	for _, e := range evses {
		assert.Equal(t, int64(2), e.Version, "EVSE %d as committed", e.UID)
	}
	require.Len(t, locs, 2, "both location changes once A committed")
	assert.Equal(t, []string{"Written by A", "Written by B"}, []string{locs[0].Name, locs[1].Name})
	assert.Equal(t, evses[0].ChangePos, locs[0].ChangePos, "A's position is A's transaction id")
}

// BenchmarkLocationChanges reads 25-item pages of the change list of
// storetest.ScaleLocations locations (default 1,000,000, imported first): the first
// page, one deep in the list, and the first with a recent Since (see
// storetest.BenchLocationChanges).
func BenchmarkLocationChanges(b *testing.B) {
	n := storetest.ScaleLocations(b)
	s := MustOpenDB(b)
	at := time.Now().UTC().Truncate(time.Microsecond).Add(-time.Hour)
	require.NoError(b, s.Import(b.Context(), storetest.ScaleInventory(n, at)))
	// The statistics autovacuum gathers after a large import, at once: the planner
	// needs them to choose the index on last_updated for a recent Since.
	_, err := testDB.pool.Exec(b.Context(), `ANALYZE`)
	require.NoError(b, err)
	storetest.BenchLocationChanges(b, s, n, at.Add(-time.Hour), at.Add(time.Minute))
}

// TestChangePositionsMigration applies migrations 0011 and 0014 to a database holding
// rows (the demo inventory, written before them) and checks that every row gets a
// position without losing the JSON the store keeps beside it (an UPDATE of the rows would
// clear every location's, see migration 0010).
func TestChangePositionsMigration(t *testing.T) {
	ctx := t.Context()
	s, db := mustOpenDemo(t)
	// Back to the schema before 0011, rows and their JSON kept.
	_, err := db.Exec(ctx, `DROP TABLE evse_changes;
		DROP FUNCTION evses_changed, evses_deleted, connectors_changed, connectors_updated CASCADE;
		DROP FUNCTION set_change_xid, evses_location_change_xid CASCADE;
		DROP INDEX locations_last_updated;
		ALTER TABLE locations DROP COLUMN change_xid;
		DELETE FROM migrations WHERE name IN ('0011_change_positions.sql', '0014_evse_change_table.sql')`)
	require.NoError(t, err)
	count := func(query string) int {
		t.Helper()
		var n int
		require.NoError(t, db.QueryRow(ctx, query).Scan(&n))
		return n
	}
	const staleEVSEs = `SELECT count(*) FROM evses WHERE doc IS NULL OR doc_version IS DISTINCT FROM version`
	const staleLocations = `SELECT count(*) FROM locations WHERE doc IS NULL`
	require.Zero(t, count(staleEVSEs))
	require.Zero(t, count(staleLocations))

	require.NoError(t, s.Migrate(ctx))
	assert.Zero(t, count(staleEVSEs), "the migration keeps every EVSE's JSON")
	assert.Zero(t, count(staleLocations), "the migration keeps every location's JSON")
	var evses []chargenet.EVSE
	var locs []chargenet.Location
	for deadline := time.Now().Add(10 * time.Second); (len(evses) < 40 || len(locs) < 120) && time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		evses, err = s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 1000})
		require.NoError(t, err)
		locs, err = s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Limit: 1000})
		require.NoError(t, err)
	}
	assert.Len(t, evses, 40, "every existing EVSE has a position")
	assert.Len(t, locs, 120, "every existing location has a position")

	// And the triggers work: a PATCH moves its EVSE behind the others.
	_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(10.0)}, "", "", time.Now())
	require.NoError(t, err)
	assert.Zero(t, count(staleEVSEs), "the PATCH stores its JSON")
	for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
		evses, err = s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 1000})
		require.NoError(t, err)
		if len(evses) == 40 && evses[39].UID == 1001 {
			break
		}
	}
	require.Len(t, evses, 40)
	assert.Equal(t, int64(1001), evses[39].UID, "the patched EVSE comes last")
}

// TestEVSEChangeTriggers writes EVSEs and connectors with plain SQL, as another program
// would, and checks that the EVSE change list follows (migration 0014): a change of an
// EVSE's row or of its connectors moves the EVSE to the end of the list with its change
// time, a deleted EVSE leaves it, and a new uid replaces the old one.
func TestEVSEChangeTriggers(t *testing.T) {
	for _, tc := range []struct {
		name   string
		sql    string
		listed int     // the EVSEs in the list afterwards (40 before)
		moved  []int64 // the EVSEs that end the list, in uid order
		gone   []int64 // the EVSEs no longer listed
	}{
		{"connector updated", `UPDATE connectors SET max_voltage = 231 WHERE evse_uid = 1003 AND id = 1`, 40, []int64{1003}, nil},
		{"connector moved to another EVSE", `UPDATE connectors SET evse_uid = 1007, id = 9 WHERE evse_uid = 1006 AND id = 1`,
			40, []int64{1006, 1007}, nil},
		{"connector inserted", `INSERT INTO connectors (evse_uid, id, standard, format, power_type, max_electric_power, max_amperage, max_voltage)
			VALUES (1004, 9, 'IEC_62196_T2', 'SOCKET', 'AC_3_PHASE', 22000, 32, 400)`, 40, []int64{1004}, nil},
		{"connector deleted", `DELETE FROM connectors WHERE evse_uid = 1005 AND id = 1`, 40, []int64{1005}, nil},
		{"EVSE updated", `UPDATE evses SET status = 'INOPERATIVE', last_updated = now(), version = version + 1 WHERE uid IN (1010, 1011)`,
			40, []int64{1010, 1011}, nil},
		{"EVSE deleted", `DELETE FROM connectors WHERE evse_uid = 1012; DELETE FROM evses WHERE uid = 1012`, 39, nil, []int64{1012}},
		{"EVSE given a new uid", `DELETE FROM connectors WHERE evse_uid = 1013; UPDATE evses SET uid = 1099 WHERE uid = 1013`,
			40, []int64{1099}, []int64{1013}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			ctx := t.Context()
			s, db := mustOpenDemo(t)
			_, err := db.Exec(ctx, tc.sql)
			require.NoError(t, err)
			// The list once it shows the write (other databases' transactions on the
			// server may hold the horizon for a moment).
			var evses []chargenet.EVSE
			ends := func() []int64 {
				if len(evses) < len(tc.moved) {
					return nil
				}
				var uids []int64
				for _, e := range evses[len(evses)-len(tc.moved):] {
					uids = append(uids, e.UID)
				}
				slices.Sort(uids)
				return uids
			}
			for deadline := time.Now().Add(10 * time.Second); time.Now().Before(deadline); time.Sleep(10 * time.Millisecond) {
				evses, err = s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 1000})
				require.NoError(t, err)
				if len(evses) == tc.listed && slices.Equal(ends(), tc.moved) {
					break
				}
			}
			require.Len(t, evses, tc.listed)
			if len(tc.moved) > 0 {
				assert.Equal(t, tc.moved, ends(), "the written EVSEs end the list")
				first := evses[len(evses)-len(tc.moved)]
				assert.Greater(t, first.ChangePos, evses[len(evses)-len(tc.moved)-1].ChangePos, "behind every other EVSE")
			}
			for _, e := range evses {
				assert.NotContains(t, tc.gone, e.UID, "EVSE %d is gone", e.UID)
			}
			// The change time the lists filter on is the row's.
			var stale int
			require.NoError(t, db.QueryRow(ctx, `SELECT count(*) FROM evses e FULL JOIN evse_changes c ON c.uid = e.uid
				WHERE c.last_updated IS DISTINCT FROM e.last_updated`).Scan(&stale))
			assert.Zero(t, stale, "every EVSE, and only they, in evse_changes with its last_updated")
		})
	}
}

// TestEVSEUpdateInPlace checks what lets PostgreSQL update an EVSE's row in place (a
// heap-only tuple, see migration 0014): no index of evses covers a column that a status
// report or a PATCH writes.
func TestEVSEUpdateInPlace(t *testing.T) {
	ctx := t.Context()
	_, db := mustOpenDemo(t)
	rows, err := db.Query(ctx, `SELECT i.indexrelid::regclass::text, a.attname FROM pg_index i
		JOIN pg_attribute a ON a.attrelid = i.indrelid AND a.attnum = ANY(i.indkey)
		WHERE i.indrelid = 'evses'::regclass`)
	require.NoError(t, err)
	covered := map[string][]string{}
	for rows.Next() {
		var index, column string
		require.NoError(t, rows.Scan(&index, &column))
		covered[column] = append(covered[column], index)
	}
	require.NoError(t, rows.Err())
	require.NotEmpty(t, covered["uid"], "the primary key is seen")
	for _, column := range []string{"status", "status_at", "version", "last_updated", "doc", "doc_version"} {
		assert.Empty(t, covered[column], "column %s, written by every change, is in an index", column)
	}
}
