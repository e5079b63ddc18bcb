package chargenet_test

import (
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStatusPlanReached checks that a plan names exactly the connectors a notification
// set: the one it addresses, or every one in service for connector 0, and none that had
// a newer report already.
func TestStatusPlanReached(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	deleted := now.Add(-time.Hour)
	box := func() []chargenet.EVSE {
		return []chargenet.EVSE{
			{UID: 7, ChargeboxID: 1, Status: chargenet.StatusAvailable, Connectors: []chargenet.Connector{
				{ID: 1}, {ID: 2, StatusReportedAt: now}, {ID: 3}}},
			{UID: 9, ChargeboxID: 1, Status: chargenet.StatusAvailable, Connectors: []chargenet.Connector{
				{ID: 1}, {ID: 2, DeletedAt: &deleted}}},
		}
	}
	for _, tc := range []struct {
		name      string
		connector int
		want      map[int64][]int64
	}{
		{"one connector of several", 1, map[int64][]int64{7: {1}}},
		{"the second EVSE's first", 4, map[int64][]int64{9: {1}}},
		{"connector 0: every one in service without a newer report", 0, map[int64][]int64{7: {1, 3}, 9: {1}}},
		{"one with a newer report", 2, map[int64][]int64{}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evses := box()
			plan, err := chargenet.ApplyStatusNotification(evses, &chargenet.StatusNotification{ChargeboxID: 1,
				ConnectorID: tc.connector, Status: "Charging", ErrorCode: "NoError", Timestamp: now.Add(-time.Minute)}, now)
			require.NoError(t, err)
			assert.Equal(t, tc.want, plan.Reached)
			changed := map[int64]bool{}
			for _, e := range plan.Changed {
				changed[e.UID] = true
				assert.Contains(t, tc.want, e.UID, "a changed EVSE has connectors reached")
			}
			for uid := range tc.want {
				assert.True(t, changed[uid], "EVSE %d reached but not changed", uid)
			}
		})
	}
}
