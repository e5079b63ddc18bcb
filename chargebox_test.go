package chargenet_test

import (
	"encoding/json"
	"errors"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// station is a charge box with EVSE 7 (connectors 1, 2), EVSE 9 (connector 1 and a
// deleted connector 2) and EVSE 12 (connector 4).
func station(now time.Time) []chargenet.EVSE {
	deleted := now.Add(-time.Hour)
	return []chargenet.EVSE{
		{UID: 7, ChargeboxID: 1, Status: chargenet.StatusAvailable, Connectors: []chargenet.Connector{{ID: 1}, {ID: 2}}},
		{UID: 9, ChargeboxID: 1, Status: chargenet.StatusAvailable, Connectors: []chargenet.Connector{{ID: 1}, {ID: 2, DeletedAt: &deleted}}},
		{UID: 12, ChargeboxID: 1, Status: chargenet.StatusAvailable, Connectors: []chargenet.Connector{{ID: 4}}},
	}
}

// TestStationConnector maps OCPP 2.0.1's (evseId, connectorId) onto the box-wide
// connector numbers 1.6 uses.
func TestStationConnector(t *testing.T) {
	evses := station(time.Now())
	for _, tc := range []struct {
		name             string
		evse, connector  int
		want             int
		wantErr          error
		wantParam, wantM string
	}{
		{name: "the station as a whole", evse: 0, connector: 0, want: 0},
		{name: "evseId 0 with a connector is still the station", evse: 0, connector: 3, want: 0},
		{name: "first EVSE, first connector", evse: 1, connector: 1, want: 1},
		{name: "first EVSE, second connector", evse: 1, connector: 2, want: 2},
		{name: "second EVSE, first connector", evse: 2, connector: 1, want: 3},
		{name: "a deleted connector keeps its number", evse: 2, connector: 2, want: 4},
		{name: "third EVSE: connector ids do not matter, their order does", evse: 3, connector: 1, want: 5},
		{name: "no such EVSE", evse: 4, connector: 1, wantErr: chargenet.ErrNotFound, wantParam: "evseId",
			wantM: "evseId 4 does not exist: charge box 1 has 3 EVSEs"},
		{name: "no such connector", evse: 3, connector: 2, wantErr: chargenet.ErrNotFound, wantParam: "connectorId",
			wantM: "connectorId 2 of evseId 3 does not exist: EVSE 12 of charge box 1 has 1 connectors"},
		{name: "connector 0 of an EVSE", evse: 1, connector: 0, wantErr: chargenet.ErrInvalid, wantParam: "connectorId"},
		{name: "negative", evse: -1, connector: 1, wantErr: chargenet.ErrInvalid, wantParam: "evseId"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := chargenet.StationConnector(evses, 1, tc.evse, tc.connector)
			if tc.wantErr != nil {
				require.ErrorIs(t, err, tc.wantErr)
				var de *chargenet.Error
				require.True(t, errors.As(err, &de))
				assert.Equal(t, tc.wantParam, de.Param)
				if tc.wantM != "" {
					assert.Equal(t, tc.wantM, de.Message)
				}
				return
			}
			require.NoError(t, err)
			assert.Equal(t, tc.want, got)
		})
	}
}

// TestStatusNotification201 applies 2.0.1 notifications: their numbering, their status
// table, and the number their events carry.
func TestStatusNotification201(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	for _, tc := range []struct {
		status string
		want   chargenet.EvseStatus
	}{
		{"Available", chargenet.StatusAvailable},
		{"Occupied", chargenet.StatusCharging},
		{"Reserved", chargenet.StatusReserved},
		{"Unavailable", chargenet.StatusInoperative},
		{"Faulted", chargenet.StatusOutOfOrder},
	} {
		t.Run(tc.status, func(t *testing.T) {
			evses := station(now)
			evses[1].Status = chargenet.StatusUnknown
			plan, err := chargenet.ApplyStatusNotification(evses, &chargenet.StatusNotification{ChargeboxID: 1,
				Protocol: chargenet.ProtocolOCPP201, EVSE: 2, ConnectorID: 1, Status: tc.status, ErrorCode: "NoError",
				Timestamp: now.Add(-time.Second)}, now)
			require.NoError(t, err)
			require.Len(t, plan.Changed, 1)
			assert.Equal(t, int64(9), plan.Changed[0].UID)
			assert.Equal(t, tc.want, plan.Changed[0].Status)
			require.Len(t, plan.Events, 1)
			require.NoError(t, wire.EncodeEvents(plan.Events))
			var data map[string]any
			require.NoError(t, json.Unmarshal(plan.Events[0].Data, &data))
			assert.EqualValues(t, 3, data["ocppConnectorId"], "the box-wide number of EVSE 2's connector 1")
			assert.Equal(t, tc.status, data["ocppStatus"])
			assert.Equal(t, "chargebox", data["source"])
		})
	}
	t.Run("a 1.6 status is not a 2.0.1 one", func(t *testing.T) {
		_, err := chargenet.ApplyStatusNotification(station(now), &chargenet.StatusNotification{ChargeboxID: 1,
			Protocol: chargenet.ProtocolOCPP201, EVSE: 1, ConnectorID: 1, Status: "Charging", ErrorCode: "NoError", Timestamp: now}, now)
		require.ErrorIs(t, err, chargenet.ErrInvalid)
	})
	t.Run("a 2.0.1 status is not a 1.6 one", func(t *testing.T) {
		_, err := chargenet.ApplyStatusNotification(station(now), &chargenet.StatusNotification{ChargeboxID: 1,
			ConnectorID: 1, Status: "Occupied", ErrorCode: "NoError", Timestamp: now}, now)
		require.ErrorIs(t, err, chargenet.ErrInvalid)
	})
	t.Run("an EVSE the station does not have", func(t *testing.T) {
		_, err := chargenet.ApplyStatusNotification(station(now), &chargenet.StatusNotification{ChargeboxID: 1,
			Protocol: chargenet.ProtocolOCPP201, EVSE: 9, ConnectorID: 1, Status: "Occupied", ErrorCode: "NoError", Timestamp: now}, now)
		require.ErrorIs(t, err, chargenet.ErrNotFound)
	})
}

// TestAvailabilityTargets finds how a box addresses an EVSE in each OCPP version.
func TestAvailabilityTargets(t *testing.T) {
	evses := station(time.Now())
	for _, tc := range []struct {
		uid        int64
		station    int
		connectors []int
		ok         bool
	}{
		{7, 1, []int{1, 2}, true},
		{9, 2, []int{3}, true}, // its deleted connector 4 is not asked
		{12, 3, []int{5}, true},
		{13, 0, nil, false},
	} {
		st, conns, ok := chargenet.AvailabilityTargets(evses, tc.uid)
		assert.Equal(t, tc.ok, ok, "EVSE %d", tc.uid)
		assert.Equal(t, tc.station, st, "EVSE %d", tc.uid)
		assert.Equal(t, tc.connectors, conns, "EVSE %d", tc.uid)
	}
}

// TestOwedAvailability decides what a box is asked from the operator's statuses and
// what was asked before.
func TestOwedAvailability(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	asked := func(state string) chargenet.AvailabilityRequest {
		return chargenet.AvailabilityRequest{EVSEUID: 7, ChargeboxID: 1, State: state, RequestedAt: now.Add(-time.Hour), Answer: chargenet.AnswerAccepted}
	}
	for _, tc := range []struct {
		name   string
		status chargenet.EvseStatus
		hold   bool
		last   *chargenet.AvailabilityRequest
		want   string // "" owes nothing
	}{
		{"the operator set it INOPERATIVE, never asked", chargenet.StatusInoperative, true, nil, chargenet.Inoperative},
		{"INOPERATIVE asked and answered", chargenet.StatusInoperative, true, ptr(asked(chargenet.Inoperative)), ""},
		{"INOPERATIVE from the box itself is not the operator's", chargenet.StatusInoperative, false, nil, ""},
		{"back in service after Inoperative", chargenet.StatusAvailable, false, ptr(asked(chargenet.Inoperative)), chargenet.Operative},
		{"UNKNOWN is in service too", chargenet.StatusUnknown, false, ptr(asked(chargenet.Inoperative)), chargenet.Operative},
		{"in service, Operative asked before", chargenet.StatusCharging, false, ptr(asked(chargenet.Operative)), ""},
		{"in service, never asked: boxes start operative", chargenet.StatusAvailable, false, nil, ""},
		{"REMOVED after Inoperative owes nothing", chargenet.StatusRemoved, false, ptr(asked(chargenet.Inoperative)), ""},
		{"INOPERATIVE again after Operative", chargenet.StatusInoperative, true, ptr(asked(chargenet.Operative)), chargenet.Inoperative},
	} {
		t.Run(tc.name, func(t *testing.T) {
			evses := []chargenet.EVSE{{UID: 7, ChargeboxID: 1, Status: tc.status, OperatorHold: tc.hold}}
			last := map[int64]chargenet.AvailabilityRequest{}
			if tc.last != nil {
				last[7] = *tc.last
			}
			got := chargenet.OwedAvailability(evses, last, now)
			if tc.want == "" {
				assert.Empty(t, got)
				return
			}
			require.Len(t, got, 1)
			assert.Equal(t, chargenet.AvailabilityRequest{EVSEUID: 7, ChargeboxID: 1, State: tc.want, RequestedAt: now, Answer: chargenet.AnswerPending}, got[0])
		})
	}
}

// TestPendingRequests keeps the unanswered requests, in their order, and answers empty,
// not nil, when there is none.
func TestPendingRequests(t *testing.T) {
	req := func(uid int64, answer string) chargenet.AvailabilityRequest {
		return chargenet.AvailabilityRequest{EVSEUID: uid, ChargeboxID: 1, State: chargenet.Inoperative, Answer: answer}
	}
	for _, tc := range []struct {
		name  string
		asked []chargenet.AvailabilityRequest
		want  []int64 // uids
	}{
		{"none asked", nil, []int64{}},
		{"all answered", []chargenet.AvailabilityRequest{req(7, chargenet.AnswerAccepted), req(9, chargenet.AnswerRejected)}, []int64{}},
		{"pending ones in order", []chargenet.AvailabilityRequest{req(9, chargenet.AnswerPending), req(7, chargenet.AnswerAccepted),
			req(3, chargenet.AnswerPending)}, []int64{9, 3}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got := chargenet.PendingRequests(tc.asked)
			require.NotNil(t, got)
			uids := []int64{}
			for _, a := range got {
				assert.Equal(t, chargenet.AnswerPending, a.Answer)
				uids = append(uids, a.EVSEUID)
			}
			assert.Equal(t, tc.want, uids)
		})
	}
}

// TestDisconnect turns the EVSEs in service UNKNOWN and leaves the operator's alone.
func TestDisconnect(t *testing.T) {
	now := time.Date(2026, 5, 1, 12, 0, 0, 0, time.UTC)
	reported := now.Add(-time.Minute)
	evses := []chargenet.EVSE{
		{UID: 1, Status: chargenet.StatusCharging, Version: 3, StatusReportedAt: reported},
		{UID: 2, Status: chargenet.StatusPlanned, Version: 3},
		{UID: 3, Status: chargenet.StatusInoperative, OperatorHold: true, Version: 3},
		{UID: 4, Status: chargenet.StatusInoperative, Version: 3}, // the box's own Unavailable
		{UID: 5, Status: chargenet.StatusRemoved, Version: 3},
		{UID: 6, Status: chargenet.StatusUnknown, Version: 3},
		{UID: 7, Status: chargenet.StatusOutOfOrder, Version: 3},
	}
	changed, events := chargenet.Disconnect(evses, "chargebox:CB-501", now)
	require.NoError(t, wire.EncodeEvents(events))
	var uids []int64
	for _, e := range changed {
		uids = append(uids, e.UID)
		assert.Equal(t, chargenet.StatusUnknown, e.Status)
		assert.Equal(t, int64(4), e.Version)
		assert.Equal(t, now, e.LastUpdated)
	}
	assert.Equal(t, []int64{1, 4, 7}, uids)
	assert.Equal(t, reported, evses[0].StatusReportedAt, "the status time stays for the box's next notification")
	require.Len(t, events, 3)
	var data map[string]any
	require.NoError(t, json.Unmarshal(events[0].Data, &data))
	assert.Equal(t, "connection", data["source"])
	assert.Equal(t, "chargebox:CB-501", data["actor"])
	assert.Equal(t, "chargebox:CB-501", events[0].Actor)
	assert.Equal(t, "CHARGING", data["previousStatus"])
	assert.Equal(t, "UNKNOWN", data["status"])
	for _, v := range []struct{ version, source, actor string }{{"1.1", "chargebox", ""}, {"1.2", "connection", "chargebox:CB-501"}} {
		d, err := events[0].RenderData(v.version)
		require.NoError(t, err)
		var rendered map[string]any
		require.NoError(t, json.Unmarshal(d, &rendered))
		assert.Equal(t, v.source, rendered["source"], "version %s", v.version)
		if v.actor == "" {
			assert.NotContains(t, rendered, "actor", "version %s", v.version)
		} else {
			assert.Equal(t, v.actor, rendered["actor"], "version %s", v.version)
		}
	}
	d, err := events[0].RenderData("1.0")
	require.NoError(t, err)
	data = nil
	require.NoError(t, json.Unmarshal(d, &data))
	assert.NotContains(t, data, "source")
	assert.EqualValues(t, 0, data["ocppConnectorId"], "1.0 says the whole charge box")
}

// TestChargeboxPasswords checks the form of new passwords and the constant-time check.
func TestChargeboxPasswords(t *testing.T) {
	p := chargenet.NewChargeboxPassword()
	assert.Regexp(t, `^[A-Za-z0-9]{32}$`, p)
	assert.NotEqual(t, p, chargenet.NewChargeboxPassword())
	c := chargenet.Chargebox{PasswordHash: chargenet.HashChargeboxPassword(p)}
	assert.True(t, c.CheckPassword(p))
	assert.False(t, c.CheckPassword(p[:31]))
	assert.False(t, c.CheckPassword(""))
	for id, ok := range map[string]bool{"501": true, "CB-501": true, "a.b_c~d*e": true, "": false, "a b": false,
		"a:b": false, "a/b": false, "ä": false, "012345678901234567890123456789012345678901234567": true,
		"0123456789012345678901234567890123456789012345678": false} {
		assert.Equal(t, ok, chargenet.ValidIdentity(id), "%q", id)
	}
}
