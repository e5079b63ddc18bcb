package wire_test

import (
	"encoding/json"
	"regexp"
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// sixDigits is the form of every time the contract's answers show.
var sixDigits = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// times returns every string value of the keys named like the contract's times in the
// JSON value v, at any depth.
func times(t *testing.T, v any) []string {
	t.Helper()
	var out []string
	switch v := v.(type) {
	case map[string]any:
		for k, x := range v {
			switch k {
			case "lastUpdated", "deletedAt", "reportedAt", "timestamp":
				s, ok := x.(string)
				require.True(t, ok, "%s is a string", k)
				out = append(out, s)
			default:
				out = append(out, times(t, x)...)
			}
		}
	case []any:
		for _, x := range v {
			out = append(out, times(t, x)...)
		}
	}
	return out
}

func decode(t *testing.T, b []byte) map[string]any {
	t.Helper()
	var m map[string]any
	require.NoError(t, json.Unmarshal(b, &m))
	return m
}

// TestTimesAndVersions checks that answers show an EVSE's and a location's version and
// every time with six fractional digits in UTC, and that event data shows the same times
// but no version of the EVSE or location it embeds.
func TestTimesAndVersions(t *testing.T) {
	at := time.Date(2026, 11, 1, 11, 0, 0, 123456789, time.FixedZone("CET", 3600))
	inv := chargenet.DemoInventory(at)
	e := inv.EVSEs[3] // 1004: a deleted connector and one with an error
	e.LastUpdated, e.Version = at, 7
	l := inv.Locations[0]
	deleted := at.Add(time.Second)
	l.LastUpdated, l.Version, l.DeletedAt, l.EvseUIDs = at, 3, &deleted, []int64{1001, 1002}

	doc, err := wire.EncodeEVSE(&e)
	require.NoError(t, err)
	m := decode(t, doc)
	assert.Equal(t, 7.0, m["version"])
	assert.Equal(t, "2026-11-01T10:00:00.123456Z", m["lastUpdated"])
	got := times(t, m)
	assert.Len(t, got, 2, "lastUpdated and a connector's deletedAt")
	for _, s := range got {
		assert.Regexp(t, sixDigits, s)
	}

	doc, err = wire.EncodeLocation(&l)
	require.NoError(t, err)
	m = decode(t, doc)
	assert.Equal(t, 3.0, m["version"])
	got = times(t, m)
	slices.Sort(got)
	assert.Equal(t, []string{"2026-11-01T10:00:00.123456Z", "2026-11-01T10:00:01.123456Z"}, got)

	now := at.Add(time.Minute)
	events := []chargenet.Event{
		chargenet.NewEVSEEvent(chargenet.EventEVSECreated, &e, now),
		chargenet.NewOperatorStatusChangedEvent(&e, chargenet.StatusAvailable, now),
		chargenet.NewLocationEvent(chargenet.EventLocationUpdated, &l, now),
	}
	ev, err := chargenet.NewConnectorUpdatedEvent(&e, 1, now)
	require.NoError(t, err)
	events = append(events, ev)
	require.NoError(t, wire.EncodeEvents(events))
	for _, ev := range events {
		m := decode(t, ev.Data)
		for _, s := range times(t, m) {
			assert.Regexp(t, sixDigits, s, ev.Type)
		}
		if inner, ok := m["evse"].(map[string]any); ok {
			assert.NotContains(t, inner, "version", "%s: the embedded EVSE as its payload version shows it", ev.Type)
		}
		if ev.Type == chargenet.EventLocationUpdated {
			assert.NotContains(t, m, "version", "the location as its payload version shows it")
		}
		body, err := ev.Render("1.0")
		require.NoError(t, err)
		assert.Regexp(t, sixDigits, decode(t, body)["timestamp"], ev.Type)
	}
}

// TestEventPayload checks that the payload read back from an inventory event's data
// says what the data says (encoded again, it is the same data) and has the event's
// subject, for every inventory type; and that another type is refused.
func TestEventPayload(t *testing.T) {
	at := time.Date(2026, 11, 1, 11, 0, 0, 123456000, time.UTC)
	inv := chargenet.DemoInventory(at)
	e := inv.EVSEs[3] // 1004: a deleted connector and one with an error
	e.Version = 7
	l := inv.Locations[1]
	l.Version, l.EvseUIDs = 3, []int64{1003, 1004}
	deleted := at.Add(time.Second)
	gone := l
	gone.DeletedAt = &deleted
	moved := e
	moved.LocationID = ""
	notification := &chargenet.StatusNotification{ChargeboxID: e.ChargeboxID, ConnectorID: 2, Status: "Faulted",
		ErrorCode: chargenet.ErrorCode("GroundFailure")}
	for _, c := range []struct {
		typ     string
		payload chargenet.EventPayload
	}{
		{chargenet.EventLocationCreated, chargenet.LocationPayload{Location: l}},
		{chargenet.EventLocationDeleted, chargenet.LocationPayload{Location: gone}},
		{chargenet.EventEVSEUpdated, chargenet.EVSEPayload{EVSE: e, PreviousLocationID: "LOC-0001"}},
		{chargenet.EventEVSERemoved, chargenet.EVSEPayload{EVSE: moved}},
		{chargenet.EventConnectorUpdated, chargenet.ConnectorPayload{EVSE: e, ConnectorID: 2}},
		{chargenet.EventConnectorDeleted, chargenet.ConnectorPayload{EVSE: e, ConnectorID: 4}},
		{chargenet.EventStatusChanged, chargenet.StatusPayload{EVSE: e, Previous: chargenet.StatusAvailable,
			Source: chargenet.SourceChargebox, ReportedAt: at, Notification: notification}},
		{chargenet.EventStatusChanged, chargenet.StatusPayload{EVSE: e, Previous: chargenet.StatusAvailable,
			Source: chargenet.SourceOperator, ReportedAt: at}},
	} {
		t.Run(c.typ, func(t *testing.T) {
			sent := chargenet.Event{ID: "evt_1", Type: c.typ, Payload: c.payload, Actor: "emsp-acme"}
			data, err := wire.EventData(&sent)
			require.NoError(t, err)
			logged := chargenet.Event{ID: sent.ID, Type: sent.Type, Data: data, Actor: sent.Actor}
			p, err := wire.EventPayload(&logged)
			require.NoError(t, err)
			again, err := wire.EventData(&chargenet.Event{ID: sent.ID, Type: sent.Type, Payload: p, Actor: sent.Actor})
			require.NoError(t, err)
			assert.JSONEq(t, string(data), string(again))
			logged.Payload = p
			assert.Equal(t, chargenet.EventSubject(&sent), chargenet.EventSubject(&logged))
		})
	}
	_, err := wire.EventPayload(&chargenet.Event{ID: "evt_2", Type: chargenet.EventChargeboxConnected, Data: []byte(`{}`)})
	assert.Error(t, err)
	_, err = wire.EventPayload(&chargenet.Event{ID: "evt_3", Type: chargenet.EventEVSEUpdated, Data: []byte(`{"uid": "x"}`)})
	assert.Error(t, err)
}
