package chargenet_test

import (
	"encoding/json"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/getkin/kin-openapi/openapi3"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// allStatuses are the contract's EVSE statuses.
var allStatuses = []chargenet.EvseStatus{chargenet.StatusPlanned, chargenet.StatusAvailable, chargenet.StatusReserved,
	chargenet.StatusCharging, chargenet.StatusBlocked, chargenet.StatusOutOfOrder, chargenet.StatusInoperative,
	chargenet.StatusUnknown, chargenet.StatusRemoved}

// changeChecker checks the events of one domain change against what the change did to
// the EVSEs' contract JSON.
type changeChecker struct {
	t       *testing.T
	schema  *openapi3.Schema
	changes int // changes that changed an EVSE's JSON
	refused int // changes refused (nothing may change then)
}

func evseDoc(t *testing.T, e *chargenet.EVSE) string {
	t.Helper()
	b, err := wire.EncodeEVSE(e)
	require.NoError(t, err)
	return string(b)
}

// check asserts that every EVSE whose JSON differs between before and after is named
// (data.uid) by at least one of events, that an EVSE moved to another location has an
// event with its previousLocationId, that a refused change (err) changed nothing, and
// that every event renders, in each of its versions, to a body the contract's
// WebhookEvent schema (the callbacks' body) accepts.
func (c *changeChecker) check(name string, before, after []*chargenet.EVSE, events []chargenet.Event, err error) {
	t := c.t
	t.Helper()
	if err != nil {
		c.refused++
		for i := range before {
			assert.Equal(t, evseDoc(t, before[i]), evseDoc(t, after[i]), "%s: refused (%v) but changed EVSE %d", name, err, before[i].UID)
		}
		assert.Empty(t, events, "%s: refused with events", name)
		return
	}
	type named struct {
		UID                int64  `json:"uid"`
		PreviousLocationID string `json:"previousLocationId"`
	}
	var names []named
	require.NoError(t, wire.EncodeEvents(events), name)
	for _, ev := range events {
		var n named
		require.NoError(t, json.Unmarshal(ev.Data, &n), "%s: %s", name, ev.Type)
		names = append(names, n)
		for v := range chargenet.Renderers[ev.Type] {
			body, err := ev.Render(v)
			require.NoError(t, err, "%s: %s %s", name, ev.Type, v)
			var doc any
			require.NoError(t, json.Unmarshal(body, &doc))
			assert.NoError(t, c.schema.VisitJSON(doc), "%s: %s %s: %s", name, ev.Type, v, body)
		}
	}
	for i := range before {
		b, a := before[i], after[i]
		if evseDoc(t, b) == evseDoc(t, a) {
			continue
		}
		c.changes++
		assert.True(t, slices.ContainsFunc(names, func(n named) bool { return n.UID == a.UID }),
			"%s: EVSE %d changed and no event names it (events %v)\nbefore %s\nafter  %s", name, a.UID, types(events), evseDoc(t, b), evseDoc(t, a))
		if b.LocationID != a.LocationID {
			assert.True(t, slices.ContainsFunc(names, func(n named) bool { return n.UID == a.UID && n.PreviousLocationID == b.LocationID }),
				"%s: EVSE %d moved from %s to %s and no event names %s as previousLocationId", name, a.UID, b.LocationID, a.LocationID, b.LocationID)
		}
	}
}

func types(events []chargenet.Event) []string {
	out := make([]string, len(events))
	for i, ev := range events {
		out[i] = ev.Type
	}
	return out
}

// TestEveryEVSEChangeHasAnEvent walks every domain change of an EVSE from every status
// (INOPERATIVE held by the operator and not), with and without connector errors and a
// deleted connector: each patchable field, Remove, AddConnector, DeleteConnector,
// UpdateConnector (with the version and event its store path adds), and status
// notifications of every OCPP status and of no error and two errors, to one connector
// and to the whole charge box, newer and older than the last one. Whenever a change
// alters an EVSE's contract JSON, an event names that EVSE: a partner that follows the
// event log and re-reads what it names keeps an exact copy.
func TestEveryEVSEChangeHasAnEvent(t *testing.T) {
	doc, err := gen.GetSpec()
	require.NoError(t, err)
	c := &changeChecker{t: t, schema: doc.Components.Schemas["WebhookEvent"].Value}
	require.NotNil(t, c.schema)

	now := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	earlier := now.Add(-time.Hour)
	inv := chargenet.DemoInventory(earlier)
	var base chargenet.EVSE
	for _, e := range inv.EVSEs {
		if len(e.Connectors) >= 2 {
			base = *e.Clone()
			break
		}
	}
	require.GreaterOrEqual(t, len(base.Connectors), 2, "a demo EVSE with two connectors")
	other := inv.Locations[0].ID
	if other == base.LocationID {
		other = inv.Locations[1].ID
	}

	type start struct {
		name string
		e    chargenet.EVSE
	}
	var starts []start
	for _, st := range allStatuses {
		for _, hold := range []bool{false, true} {
			if hold && st != chargenet.StatusInoperative {
				continue
			}
			for _, variant := range []string{"no errors", "an error", "a deleted connector"} {
				e := *base.Clone()
				e.Status, e.OperatorHold, e.StatusReportedAt = st, hold, earlier
				for i := range e.Connectors {
					e.Connectors[i].Error, e.Connectors[i].DeletedAt, e.Connectors[i].StatusReportedAt = nil, nil, earlier
				}
				switch variant {
				case "an error":
					e.Connectors[0].Error = &chargenet.ConnectorError{Code: "GroundFailure", Info: "pin 3"}
				case "a deleted connector":
					at := earlier
					e.Connectors[1].DeletedAt = &at
				}
				starts = append(starts, start{fmt.Sprintf("%s (held %v, %s)", st, hold, variant), e})
			}
		}
	}

	// one applies a change to a copy of s.e and checks it.
	one := func(s start, name string, change func(e *chargenet.EVSE) ([]chargenet.Event, error)) {
		before := s.e.Clone()
		e := s.e.Clone()
		events, err := change(e)
		c.check(s.name+": "+name, []*chargenet.EVSE{before}, []*chargenet.EVSE{e}, events, err)
	}
	for _, s := range starts {
		for _, st := range allStatuses {
			one(s, "PATCH status "+string(st), func(e *chargenet.EVSE) ([]chargenet.Event, error) {
				return e.ApplyPatch(chargenet.EVSEPatch{Status: &st}, "", now)
			})
			one(s, "PATCH status "+string(st)+" and locationId", func(e *chargenet.EVSE) ([]chargenet.Event, error) {
				return e.ApplyPatch(chargenet.EVSEPatch{Status: &st, LocationID: &other}, "", now)
			})
		}
		for _, cb := range []int64{s.e.ChargeboxID, s.e.ChargeboxID + 1} {
			one(s, fmt.Sprintf("PATCH chargeboxId %d", cb), func(e *chargenet.EVSE) ([]chargenet.Event, error) {
				return e.ApplyPatch(chargenet.EVSEPatch{ChargeboxID: &cb}, "", now)
			})
		}
		for _, loc := range []string{s.e.LocationID, other} {
			one(s, "PATCH locationId "+loc, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
				return e.ApplyPatch(chargenet.EVSEPatch{LocationID: &loc}, "", now)
			})
			cb := s.e.ChargeboxID + 1
			one(s, "PATCH chargeboxId and locationId "+loc, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
				return e.ApplyPatch(chargenet.EVSEPatch{ChargeboxID: &cb, LocationID: &loc}, "", now)
			})
		}
		one(s, "Remove", func(e *chargenet.EVSE) ([]chargenet.Event, error) { return e.Remove("", now) })
		one(s, "AddConnector", func(e *chargenet.EVSE) ([]chargenet.Event, error) {
			return e.AddConnector(s.e.Connectors[0], "", now)
		})
		for _, conn := range s.e.Connectors {
			one(s, fmt.Sprintf("DeleteConnector %d", conn.ID), func(e *chargenet.EVSE) ([]chargenet.Event, error) {
				return e.DeleteConnector(conn.ID, "", now)
			})
			for _, power := range []float64{conn.MaxElectricPower, conn.MaxElectricPower / 2} {
				one(s, fmt.Sprintf("UpdateConnector %d maxElectricPower %v", conn.ID, power), func(e *chargenet.EVSE) ([]chargenet.Event, error) {
					if _, err := e.UpdateConnector(conn.ID, chargenet.ConnectorPatch{MaxElectricPower: &power}, ""); err != nil {
						return nil, err
					}
					// What the store's path adds (internal/groupcommit): a new version and the event.
					e.Version++
					e.LastUpdated = now
					ev, err := chargenet.NewConnectorUpdatedEvent(e, conn.ID, now)
					return []chargenet.Event{ev}, err
				})
			}
		}
	}

	// Status notifications, to a charge box of the start's EVSE and a second EVSE that
	// is AVAILABLE without errors (so that connector 0 reaches both).
	second := *base.Clone()
	second.UID, second.Status, second.OperatorHold, second.StatusReportedAt = base.UID+1, chargenet.StatusAvailable, false, earlier
	for i := range second.Connectors {
		second.Connectors[i].Error, second.Connectors[i].DeletedAt, second.Connectors[i].StatusReportedAt = nil, nil, earlier
	}
	ocpp := []string{"Available", "Reserved", "Preparing", "Charging", "Finishing", "SuspendedEV", "SuspendedEVSE", "Faulted", "Unavailable"}
	errs := []struct {
		code       chargenet.ErrorCode
		info       string
		vendorCode string
	}{{"NoError", "", ""}, {"GroundFailure", "pin 3", ""}, {"HighTemperature", "", "T-9"}}
	for _, s := range starts {
		for _, st := range ocpp {
			for _, er := range errs {
				for _, conn := range []int{0, 1, 2, 3} {
					for _, at := range []time.Time{now, earlier.Add(-time.Minute)} {
						name := fmt.Sprintf("%s: notification connector %d %s %s at %s", s.name, conn, st, er.code, at.Format(time.TimeOnly))
						before := []*chargenet.EVSE{s.e.Clone(), second.Clone()}
						evses := []chargenet.EVSE{*s.e.Clone(), *second.Clone()}
						n := &chargenet.StatusNotification{ChargeboxID: s.e.ChargeboxID, ConnectorID: conn, Status: st,
							ErrorCode: er.code, Info: er.info, VendorErrorCode: er.vendorCode, Timestamp: at}
						plan, err := chargenet.ApplyStatusNotification(evses, n, now)
						var events []chargenet.Event
						if plan != nil {
							events = plan.Events
						}
						c.check(name, before, []*chargenet.EVSE{&evses[0], &evses[1]}, events, err)
					}
				}
			}
		}
	}
	t.Logf("%d changes that altered an EVSE's JSON, %d refused", c.changes, c.refused)
	assert.Positive(t, c.changes)
	assert.Positive(t, c.refused)
}
