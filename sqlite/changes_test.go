package sqlite

import (
	"path/filepath"
	"strings"
	"testing"

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
