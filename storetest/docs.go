package storetest

import (
	"context"
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// requireDocs checks that the store answers the contract JSON of every EVSE and
// location exactly as encoding its decoded read gives.
func requireDocs(t *testing.T, s chargenet.Store, when string) {
	t.Helper()
	ctx := t.Context()
	for _, e := range readAll(t, s.ListEVSEs, func(e *chargenet.EVSE) int64 { return e.UID }) {
		doc, version, err := s.EVSEDoc(ctx, e.UID)
		require.NoError(t, err)
		want, err := wire.EncodeEVSE(&e)
		require.NoError(t, err)
		assert.JSONEq(t, string(want), string(doc), "%s: EVSE %d", when, e.UID)
		assert.Equal(t, string(want), string(doc), "%s: EVSE %d byte for byte", when, e.UID)
		assert.Equal(t, e.Version, version, "%s: EVSE %d", when, e.UID)
	}
	locs := readAll(t, s.ListLocations, func(l *chargenet.Location) string { return l.ID })
	docs := readAll(t, s.ListLocationDocs, func(d *chargenet.LocationDoc) string { return d.ID })
	require.Len(t, docs, len(locs))
	for i := range locs {
		want, err := wire.EncodeLocation(&locs[i])
		require.NoError(t, err)
		assert.Equal(t, locs[i].ID, docs[i].ID)
		assert.Equal(t, string(want), string(docs[i].JSON), "%s: location %s", when, locs[i].ID)
	}
}

// testStoredDocs changes EVSEs and locations in every way the Store offers and checks
// after each that the stored JSON is what the rows say.
func testStoredDocs(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	requireDocs(t, s, "after the import")

	power := 99.5
	_, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: &power}, "", "", now())
	require.NoError(t, err)
	std := chargenet.StandardIEC62196T2
	_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{Standard: &std}, "", "", now())
	require.NoError(t, err)
	requireDocs(t, s, "after PATCHes")

	_, err = s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 2, Status: "Faulted",
		ErrorCode: "GroundFailure", Info: "pin 3", Timestamp: now()}, "",
		now())

	require.NoError(t, err)
	_, err = s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 502, ConnectorID: 0, Status: "Unavailable",
		ErrorCode: "NoError", Timestamp: now()}, "",
		now())

	require.NoError(t, err)
	requireDocs(t, s, "after status notifications")

	ts := now()
	require.NoError(t, s.Import(ctx, &chargenet.Inventory{
		Locations: []chargenet.Location{newLocation("NEW-1", ts)},
		EVSEs:     []chargenet.EVSE{newEVSE(7001, "NEW-1", ts), newEVSE(7002, "LOC-0003", ts), newEVSE(7003, "LOC-0001", ts)},
	}))
	requireDocs(t, s, "after an import adding EVSEs to existing locations")
}

// testPatchAndStatusTogether sends PATCHes of one EVSE and status notifications of its
// charge box at the same time, so that stores committing changes in groups take both
// kinds in one group: every answer must be what applying them one after the other
// gives, and the stored EVSE what the last of each kind left.
func testPatchAndStatusTogether(t *testing.T, open Opener) {
	const patches, notes = 24, 24
	s, _ := demoStore(t, open)
	ctx := t.Context()
	base := now().Add(-time.Hour)
	statuses := []string{"Available", "Charging", "Faulted", "Unavailable"}
	type result struct {
		power float64
		evse  *chargenet.EVSE
		res   *chargenet.StatusResult
		err   error
	}
	results := make([]result, patches+notes)
	atOnce(patches+notes, func(i int) {
		r := &results[i]
		if i < patches {
			r.power = float64(i) + 1.5
			r.evse, r.err = s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: &r.power}, "", "", time.Now())
			return
		}
		k := i - patches
		// Charge box 501: OCPP connector 2 is connector 1 of EVSE 1002.
		r.res, r.err = s.ApplyStatusNotification(context.WithoutCancel(ctx), &chargenet.StatusNotification{ChargeboxID: 501,
			ConnectorID: 2, Status: statuses[k%len(statuses)], ErrorCode: "NoError", Timestamp: base.Add(time.Duration(k) * time.Second)}, "",
			time.Now())

	})

	var versions []int64
	last := result{}
	for i, r := range results {
		require.NoError(t, r.err, "change %d", i)
		if i < patches {
			versions = append(versions, r.evse.Version)
			if last.evse == nil || r.evse.Version > last.evse.Version {
				last = r
			}
		}
	}
	slices.Sort(versions)
	assert.Len(t, slices.Compact(slices.Clone(versions)), patches, "every PATCH got a version of its own: %v", versions)

	final, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, last.power, final.Connector(1).MaxElectricPower, "the PATCH with the highest version was applied last")
	want, err := chargenet.StatusFromOCPP(statuses[(notes-1)%len(statuses)])
	require.NoError(t, err)
	assert.Equal(t, want, final.Status, "the newest notification decides the status, whatever order they came in")
	assert.GreaterOrEqual(t, final.Version, versions[len(versions)-1])
	requireDocs(t, s, "after PATCHes and notifications together")
}
