package chargenet_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestOperatorTransitions checks every pair of statuses against the table the contract
// and docs/inventory.md show.
func TestOperatorTransitions(t *testing.T) {
	all := []chargenet.EvseStatus{chargenet.StatusAvailable, chargenet.StatusReserved, chargenet.StatusCharging, chargenet.StatusBlocked,
		chargenet.StatusOutOfOrder, chargenet.StatusInoperative, chargenet.StatusPlanned, chargenet.StatusRemoved, chargenet.StatusUnknown}
	allowed := func(from, to chargenet.EvseStatus) bool {
		switch from {
		case chargenet.StatusPlanned:
			return to != chargenet.StatusPlanned
		case chargenet.StatusRemoved:
			return false
		case chargenet.StatusInoperative:
			return to == chargenet.StatusAvailable || to == chargenet.StatusUnknown || to == chargenet.StatusRemoved
		}
		return to == chargenet.StatusInoperative || to == chargenet.StatusRemoved
	}
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	for _, from := range all {
		for _, to := range all {
			if from == to {
				continue
			}
			e := chargenet.EVSE{UID: 7, EvseID: "DE*CNT*E7", ChargeboxID: 1, Status: from, Version: 3}
			events, err := e.ApplyPatch(chargenet.EVSEPatch{Status: &to}, "", now)
			if !allowed(from, to) {
				var de *chargenet.Error
				require.True(t, errors.As(err, &de), "%s → %s must be refused", from, to)
				assert.ErrorIs(t, err, chargenet.ErrConflict)
				assert.Contains(t, []string{chargenet.CodeInvalidTransition, chargenet.CodeEVSERemoved}, de.Code)
				assert.Equal(t, from, e.Status, "unchanged")
				assert.Equal(t, int64(3), e.Version)
				continue
			}
			require.NoError(t, err, "%s → %s", from, to)
			assert.Equal(t, to, e.Status)
			assert.Equal(t, int64(4), e.Version)
			assert.Equal(t, to == chargenet.StatusInoperative, e.OperatorHold, "the operator holds only its INOPERATIVE")
			wantEvents := 1
			if to == chargenet.StatusRemoved {
				wantEvents = 2
			}
			assert.Len(t, events, wantEvents, "%s → %s", from, to)
		}
	}
}

func TestHeld(t *testing.T) {
	tests := []struct {
		status chargenet.EvseStatus
		hold   bool
		held   bool
	}{
		{chargenet.StatusPlanned, false, true},
		{chargenet.StatusRemoved, false, true},
		{chargenet.StatusInoperative, true, true},
		{chargenet.StatusInoperative, false, false}, // a charge box's Unavailable
		{chargenet.StatusAvailable, false, false},
	}
	for _, tt := range tests {
		e := chargenet.EVSE{UID: 1, Status: tt.status, OperatorHold: tt.hold}
		reason, held := e.Held()
		assert.Equal(t, tt.held, held, "%s hold=%v", tt.status, tt.hold)
		assert.Equal(t, tt.held, reason != "")
	}
}

func TestConnectorLife(t *testing.T) {
	now := time.Date(2026, 11, 23, 10, 0, 0, 0, time.UTC)
	e := chargenet.DemoInventory(now).EVSEs[3] // 1004: connector 2 deleted
	version := e.Version
	c := chargenet.Connector{Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
		MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400}
	events, err := e.AddConnector(c, "", now)
	require.NoError(t, err)
	require.Len(t, events, 1)
	assert.Equal(t, chargenet.EventConnectorCreated, events[0].Type)
	last := e.Connectors[len(e.Connectors)-1]
	assert.Equal(t, int64(len(e.Connectors)), last.ID, "the next id after the deleted ones")
	assert.Equal(t, version+1, e.Version)

	events, err = e.DeleteConnector(last.ID, "", now)
	require.NoError(t, err)
	assert.Len(t, events, 1)
	events, err = e.DeleteConnector(last.ID, "", now)
	require.NoError(t, err)
	assert.Empty(t, events, "deleting again changes nothing")
	assert.Equal(t, version+2, e.Version)

	_, err = e.DeleteConnector(99, "", now)
	assert.ErrorIs(t, err, chargenet.ErrNotFound)
	_, err = e.AddConnector(c, `"1"`, now)
	assert.ErrorIs(t, err, chargenet.ErrPreconditionFailed)
	bad := c
	bad.Standard = chargenet.StandardChademo
	_, err = e.AddConnector(bad, "", now)
	assert.ErrorIs(t, err, chargenet.ErrInvalid)
	assert.Equal(t, version+2, e.Version, "refusals change nothing")
}

func TestNextUpdate(t *testing.T) {
	base := time.Date(2026, 11, 26, 10, 0, 0, 123456000, time.UTC)
	tests := []struct {
		name          string
		previous, now time.Time
		want          time.Time
	}{
		{"a later clock is taken", base, base.Add(time.Second), base.Add(time.Second)},
		{"to the microsecond", base, base.Add(time.Second + 789), base.Add(time.Second)},
		{"the same microsecond moves one on", base, base.Add(999), base.Add(time.Microsecond)},
		{"a clock behind moves one on from the previous", base, base.Add(-time.Hour), base.Add(time.Microsecond)},
		{"a previous time with nanoseconds", base.Add(500), base.Add(-time.Hour), base.Add(time.Microsecond)},
		{"in UTC", base, base.Add(time.Minute).In(time.FixedZone("x", 3600)), base.Add(time.Minute)},
		{"the first change", time.Time{}, base, base},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got := chargenet.NextUpdate(tt.previous, tt.now)
			assert.Equal(t, tt.want, got)
			assert.Equal(t, time.UTC, got.Location())
			assert.True(t, got.After(tt.previous), "later than the previous")
		})
	}
}

// TestChangesGrowLastUpdated applies changes with a clock that runs backwards: each one
// still gives the EVSE, and the connector it changed, a later LastUpdated.
func TestChangesGrowLastUpdated(t *testing.T) {
	e := chargenet.DemoInventory(time.Now()).EVSEs[0]
	e.Version = 1
	clock := time.Now().Add(time.Hour)
	tick := func() time.Time { clock = clock.Add(-time.Minute); return clock }
	last := e.LastUpdated
	check := func(what string, connector int64) {
		t.Helper()
		assert.True(t, e.LastUpdated.After(last), "%s: %s after %s", what, e.LastUpdated, last)
		if connector > 0 {
			assert.Equal(t, e.LastUpdated, e.Connector(connector).LastUpdated, "%s: the connector's time", what)
		}
		last = e.LastUpdated
	}
	power := 50.0
	_, err := e.UpdateConnector(1, chargenet.ConnectorPatch{MaxElectricPower: &power}, "")
	require.NoError(t, err)
	e.TouchConnector(1, tick())
	check("PATCH", 1)
	_, err = e.AddConnector(e.Connectors[0], "", tick())
	require.NoError(t, err)
	check("connector added", e.Connectors[len(e.Connectors)-1].ID)
	_, err = e.DeleteConnector(1, "", tick())
	require.NoError(t, err)
	check("connector deleted", 1)
	assert.Equal(t, e.LastUpdated, *e.Connector(1).DeletedAt, "deleted when it changed")
	inoperative := chargenet.StatusInoperative
	_, err = e.ApplyPatch(chargenet.EVSEPatch{Status: &inoperative}, "", tick())
	require.NoError(t, err)
	check("status", 0)
	_, err = e.Remove("", tick())
	require.NoError(t, err)
	check("removed", 0)
}
