package chargenet_test

import (
	"encoding/json"
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCatalogueListsWhatIsProduced keeps the event type catalogue and the renderers
// equal: every type listed is produced in every version listed, and nothing else.
func TestCatalogueListsWhatIsProduced(t *testing.T) {
	types, err := chargenet.EventTypes()
	require.NoError(t, err)
	listed := map[string][]string{}
	for _, et := range types {
		listed[et.Type] = et.APIVersions
	}
	rendered := map[string][]string{}
	for typ, versions := range chargenet.Renderers {
		for v := range versions {
			rendered[typ] = append(rendered[typ], v)
		}
		slices.SortFunc(rendered[typ], chargenet.CompareVersions)
	}
	assert.Equal(t, listed, rendered)
	assert.Contains(t, listed, chargenet.EventConnectorUpdated)
	assert.Contains(t, listed, chargenet.EventStatusChanged)
	ping := listed[chargenet.EventWebhookPing]
	assert.Equal(t, ping[len(ping)-1], chargenet.PingVersion, "test pings go out in webhook.ping's latest version")
}

func catalogue(t *testing.T) []chargenet.EventType {
	t.Helper()
	out, err := chargenet.EventTypes()
	require.NoError(t, err)
	return out
}

// TestEventsMatchTheContract renders each event type in each version and validates the
// body against the contract's WebhookEvent schema (the callback of createWebhook).
func TestEventsMatchTheContract(t *testing.T) {
	doc, err := gen.GetSpec()
	require.NoError(t, err)
	schema := doc.Components.Schemas["WebhookEvent"].Value
	require.NotNil(t, schema)

	inv := chargenet.DemoInventory(time.Now())
	now := time.Now().Truncate(chargenet.Precision)
	var events []chargenet.Event
	for _, e := range inv.EVSEs[:8] { // AC and DC, with and without errors, a deleted connector (1004)
		for _, c := range e.Connectors {
			ev, err := chargenet.NewConnectorUpdatedEvent(&e, c.ID, now)
			require.NoError(t, err)
			events = append(events, ev)
		}
		n := &chargenet.StatusNotification{ChargeboxID: e.ChargeboxID, ConnectorID: 1, Status: "Faulted", ErrorCode: "GroundFailure", Timestamp: now}
		events = append(events, chargenet.NewStatusChangedEvent(&e, chargenet.StatusAvailable, n, now))
	}
	// A connector without tariffs still has the required tariffIds array.
	bare := inv.EVSEs[0]
	bare.Connectors = slices.Clone(bare.Connectors)
	bare.Connectors[0].TariffIDs = nil
	ev, err := chargenet.NewConnectorUpdatedEvent(&bare, bare.Connectors[0].ID, now)
	require.NoError(t, err)
	events = append(events, ev)
	// The events of the inventory's life, through the domain operations that make them.
	planned := inv.EVSEs[1]
	planned.Connectors = slices.Clone(planned.Connectors)
	planned.Status = chargenet.StatusPlanned
	events = append(events, chargenet.NewEVSEEvent(chargenet.EventEVSECreated, &planned, now))
	status := chargenet.StatusAvailable
	life, err := planned.ApplyPatch(chargenet.EVSEPatch{Status: &status}, "", now)
	require.NoError(t, err)
	events = append(events, life...)
	chargebox, elsewhere := planned.ChargeboxID+1, inv.Locations[1].ID
	moved, err := planned.ApplyPatch(chargenet.EVSEPatch{ChargeboxID: &chargebox, LocationID: &elsewhere}, "", now)
	require.NoError(t, err)
	require.Len(t, moved, 1)
	assert.Equal(t, chargenet.EventEVSEUpdated, moved[0].Type)
	require.NoError(t, wire.EncodeEvents(moved))
	assert.Contains(t, string(moved[0].Data), `"previousLocationId":"`+inv.EVSEs[1].LocationID+`"`)
	events = append(events, moved...)
	more, err := planned.AddConnector(planned.Connectors[0], "", now)
	require.NoError(t, err)
	events = append(events, more...)
	more, err = planned.DeleteConnector(1, "", now)
	require.NoError(t, err)
	events = append(events, more...)
	more, err = planned.Remove("", now)
	require.NoError(t, err)
	events = append(events, more...)
	loc := inv.Locations[0]
	for _, typ := range []string{chargenet.EventLocationCreated, chargenet.EventLocationUpdated, chargenet.EventLocationDeleted} {
		if typ == chargenet.EventLocationDeleted {
			loc.DeletedAt = &now
		}
		events = append(events, chargenet.NewLocationEvent(typ, &loc, now))
	}
	// A charge box's connection: connected, and disconnected with its EVSEs turned UNKNOWN.
	box := &chargenet.Chargebox{ID: 501, Identity: "CB-501", Protocol: chargenet.ProtocolOCPP201}
	for _, c := range []struct{ typ, reason string }{{chargenet.EventChargeboxConnected, ""}, {chargenet.EventChargeboxDisconnected, chargenet.ReasonOffline}} {
		events = append(events, chargenet.NewChargeboxEvent(c.typ, box, c.reason, now))
	}
	offline := slices.Clone(inv.EVSEs[:2])
	_, unknown := chargenet.Disconnect(offline, "chargebox:CB-501", now)
	require.NotEmpty(t, unknown)
	events = append(events, unknown...)
	pings := []chargenet.Event{chargenet.NewPingEvent("wh_01JD0000000000000000000000", "https://receiver.example.com/hooks", now)}
	require.NoError(t, wire.EncodeEvents(pings))
	ping := pings[0]
	assert.JSONEq(t, `{"webhookId":"wh_01JD0000000000000000000000","url":"https://receiver.example.com/hooks"}`, string(ping.Data))
	events = append(events, ping)
	for i := range events {
		events[i].Actor = "emsp-acme"
	}
	require.NoError(t, wire.EncodeEvents(events))
	require.NoError(t, wire.EncodeEvents(life))
	covered := map[string]bool{}
	for _, ev := range events {
		covered[ev.Type] = true
	}
	for typ := range chargenet.Renderers {
		assert.True(t, covered[typ], "no event of type %s was checked", typ)
	}

	latest := map[string]string{}
	for _, et := range catalogue(t) {
		latest[et.Type] = et.Latest
	}
	for _, ev := range events {
		for v := range chargenet.Renderers[ev.Type] {
			body, err := ev.Render(v)
			require.NoError(t, err)
			var doc any
			require.NoError(t, json.Unmarshal(body, &doc))
			assert.NoError(t, schema.VisitJSON(doc), "%s %s: %s", ev.Type, v, body)
			var data struct{ Data map[string]any }
			require.NoError(t, json.Unmarshal(body, &data))
			if v == latest[ev.Type] {
				assert.Equal(t, "emsp-acme", data.Data["actor"], "%s %s: the latest version carries the actor", ev.Type, v)
			} else {
				assert.NotContains(t, data.Data, "actor", "%s %s: older versions render without the actor", ev.Type, v)
			}
			var head struct {
				Type      string    `json:"type"`
				Timestamp time.Time `json:"timestamp"`
			}
			require.NoError(t, json.Unmarshal(body, &head))
			assert.Equal(t, ev.Type, head.Type)
			assert.True(t, head.Timestamp.Equal(now), "timestamp is the change's time")
		}
	}
	// An operator's status change in both versions of evse.status.changed.
	op := life[0]
	require.Equal(t, chargenet.EventStatusChanged, op.Type)
	for v, want := range map[string]string{"1.0": `"ocppConnectorId":0`, "1.1": `"source":"operator"`} {
		body, err := op.Render(v)
		require.NoError(t, err)
		assert.Contains(t, string(body), want, v)
	}
	old, err := op.Render("1.0")
	require.NoError(t, err)
	assert.NotContains(t, string(old), "source", "1.0 has no source")

	_, err = events[0].Render("9.9")
	assert.Error(t, err, "a version without a renderer")

	bad := chargenet.Event{ID: "evt_x", Type: chargenet.EventConnectorUpdated, Time: now, Data: json.RawMessage(`{"uid": "not a number"}`)}
	body, err := bad.Render("1.0")
	require.NoError(t, err)
	var v any
	require.NoError(t, json.Unmarshal(body, &v))
	assert.Error(t, schema.VisitJSON(v), "the schema check can fail")
}
