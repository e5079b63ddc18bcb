package sqlite

import (
	"path/filepath"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestChangeListPlans checks that every change-list read seeks the position index to
// the seek's position (or where Since starts) instead of walking the list from its
// start, so that a page deep in the list costs what the first one does
// (BenchmarkLocationChanges measures it).
func TestChangeListPlans(t *testing.T) {
	s, err := Open(t.Context(), filepath.Join(t.TempDir(), "plans.db"))
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	for _, tc := range []struct {
		name, query, index string
		args               []any
	}{
		{"evses", listEVSEChangesQuery(true, false), "evse_changes_pos", []any{5, 5, 1, 25}},
		{"evses since", listEVSEChangesQuery(false, true), "evse_changes_pos", []any{"2026", "2026", 25}},
		{"evses after, since", listEVSEChangesQuery(true, true), "evse_changes_pos", []any{5, "2026", 5, 1, "2026", 25}},
		{"locations", listLocationChangesQuery(true, false), "location_changes_pos", []any{5, 5, "L1", 25}},
		{"locations since", listLocationChangesQuery(false, true), "location_changes_pos", []any{"2026", "2026", 25}},
		{"locations after, since", listLocationChangesQuery(true, true), "location_changes_pos", []any{5, "2026", 5, "L1", "2026", 25}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			rows, err := s.read.QueryContext(t.Context(), "EXPLAIN QUERY PLAN "+tc.query, tc.args...)
			require.NoError(t, err)
			var plan []string
			for rows.Next() {
				var id, parent, unused int
				var detail string
				require.NoError(t, rows.Scan(&id, &parent, &unused, &detail))
				plan = append(plan, detail)
			}
			require.NoError(t, rows.Err())
			require.NoError(t, rows.Close())
			assert.Contains(t, plan, "SEARCH c USING COVERING INDEX "+tc.index+" (pos>?)", "plan:\n%s", strings.Join(plan, "\n"))
		})
	}
}

// TestChangePositionsMigration applies migration 0011 to a database holding rows
// written before it: every EVSE and location gets a position, oldest update first.
func TestChangePositionsMigration(t *testing.T) {
	ctx := t.Context()
	s, err := Open(ctx, filepath.Join(t.TempDir(), "migrate.db"))
	require.NoError(t, err)
	defer func() { _ = s.Close() }()
	base := time.Now().UTC().Truncate(time.Second)
	inv := chargenet.DemoInventory(base)
	// Updates in the reverse order of the keys, so that key order is not update order.
	for i := range inv.Locations {
		inv.Locations[i].LastUpdated = base.Add(-time.Duration(i) * time.Minute)
	}
	for i := range inv.EVSEs {
		inv.EVSEs[i].LastUpdated = base.Add(-time.Duration(i) * time.Minute)
	}
	require.NoError(t, s.Import(ctx, inv))
	var names []string
	rows, err := s.write.QueryContext(ctx, `SELECT name FROM sqlite_schema WHERE type = 'trigger' AND name LIKE '%\_pos' ESCAPE '\'`)
	require.NoError(t, err)
	for rows.Next() {
		var n string
		require.NoError(t, rows.Scan(&n))
		names = append(names, n)
	}
	require.NoError(t, rows.Close())
	require.Len(t, names, 11)
	for _, n := range names {
		_, err := s.write.ExecContext(ctx, `DROP TRIGGER `+n)
		require.NoError(t, err)
	}
	_, err = s.write.ExecContext(ctx, `DROP TABLE evse_changes; DROP TABLE location_changes;
		DELETE FROM migrations WHERE name = '0011_change_positions.sql'`)
	require.NoError(t, err)

	require.NoError(t, s.Migrate(ctx))
	evses, err := s.ListEVSEChanges(ctx, chargenet.ChangeSeek[int64]{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, evses, len(inv.EVSEs))
	for i := 1; i < len(evses); i++ {
		assert.True(t, evses[i-1].LastUpdated.Before(evses[i].LastUpdated), "EVSE %d before %d", evses[i-1].UID, evses[i].UID)
	}
	locs, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, locs, len(inv.Locations))
	for i := 1; i < len(locs); i++ {
		assert.True(t, locs[i-1].LastUpdated.Before(locs[i].LastUpdated), "location %s before %s", locs[i-1].ID, locs[i].ID)
	}
	// Since finds its start from the high water the migration filled in.
	recent, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Since: base.Add(-2 * time.Minute), Limit: 1000})
	require.NoError(t, err)
	require.Len(t, recent, 3)
	assert.Equal(t, []string{"LOC-0003", "LOC-0002", "LOC-0001"}, []string{recent[0].ID, recent[1].ID, recent[2].ID})
}
