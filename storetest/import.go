package storetest

import (
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// testImport imports the demo inventory into an empty store and reads it back whole.
func testImport(t *testing.T, open Opener) {
	s := open(t, Options{})
	ctx := t.Context()
	require.NoError(t, s.Import(ctx, &chargenet.Inventory{}), "an empty inventory")
	assert.Equal(t, snapshot{Locations: []chargenet.Location{}, EVSEs: []chargenet.EVSE{}}, takeSnapshot(t, s))

	inv := chargenet.DemoInventory(time.Now())
	require.NoError(t, s.Import(ctx, inv))
	want := asImported(chargenet.DemoInventory(inv.Locations[0].LastUpdated))
	got := takeSnapshot(t, s)
	assert.Equal(t, sortedLocations(want), got.Locations)
	assert.Equal(t, sortedEVSEs(want), got.EVSEs)
}

// testImportRoundTrip imports records at the edges of the model and reads them back.
func testImportRoundTrip(t *testing.T, open Opener) {
	s := open(t, Options{})
	ctx := t.Context()
	ts := time.Date(2026, 3, 29, 1, 30, 0, 123456000, time.FixedZone("CEST", 2*3600))
	deleted := ts.Add(-time.Hour)
	noPostal := newLocation("no_postal-code", ts)
	noPostal.PostalCode = ""
	noPostal.Latitude, noPostal.Longitude = -90, 180
	inv := &chargenet.Inventory{
		Locations: []chargenet.Location{noPostal},
		EVSEs: []chargenet.EVSE{
			{ // no location, no connectors, a version the import ignores
				UID: 5, EvseID: "NLABCE5", ChargeboxID: 9, Status: chargenet.StatusPlanned,
				LastUpdated: ts, Version: 7, Connectors: nil,
			},
			{
				UID: 3, EvseID: "DE*ABC*E3*X", ChargeboxID: 9, LocationID: "no_postal-code", Status: chargenet.StatusOutOfOrder,
				LastUpdated: ts,
				Connectors: []chargenet.Connector{
					{ // nil tariffs, error without info, deleted
						ID: 2, Standard: chargenet.StandardGBTDC, Format: chargenet.FormatCable, PowerType: chargenet.PowerDC,
						MaxElectricPower: 4000, MaxAmperage: 0.001, MaxVoltage: 1500,
						Error:     &chargenet.ConnectorError{Code: "OtherError"},
						DeletedAt: &deleted,
					},
					{
						ID: 1, Standard: chargenet.StandardIEC62196T1, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC2PhaseSplit,
						MaxElectricPower: 3.7, MaxAmperage: 16, MaxVoltage: 230.5, TariffIDs: []string{"B", "A", "ü-tariff"},
						Error: &chargenet.ConnectorError{Code: "WeakSignal", Info: "weak", VendorErrorCode: "V-1"},
					},
				},
			},
		},
	}
	require.NoError(t, s.Import(ctx, inv))

	utc := ts.UTC()
	deletedUTC := deleted.UTC()
	e5, err := s.EVSE(ctx, 5)
	require.NoError(t, err)
	assert.Equal(t, &chargenet.EVSE{
		UID: 5, EvseID: "NLABCE5", ChargeboxID: 9, Status: chargenet.StatusPlanned,
		LastUpdated: utc, Version: 1, Connectors: []chargenet.Connector{},
	}, e5, "Version 1, connectors empty, not nil")

	e3, err := s.EVSE(ctx, 3)
	require.NoError(t, err)
	assert.Equal(t, &chargenet.EVSE{
		UID: 3, EvseID: "DE*ABC*E3*X", ChargeboxID: 9, LocationID: "no_postal-code", Status: chargenet.StatusOutOfOrder,
		LastUpdated: utc, Version: 1,
		Connectors: []chargenet.Connector{
			{
				ID: 1, Standard: chargenet.StandardIEC62196T1, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC2PhaseSplit,
				MaxElectricPower: 3.7, MaxAmperage: 16, MaxVoltage: 230.5, TariffIDs: []string{"B", "A", "ü-tariff"},
				Error:       &chargenet.ConnectorError{Code: "WeakSignal", Info: "weak", VendorErrorCode: "V-1"},
				LastUpdated: utc,
			},
			{
				ID: 2, Standard: chargenet.StandardGBTDC, Format: chargenet.FormatCable, PowerType: chargenet.PowerDC,
				MaxElectricPower: 4000, MaxAmperage: 0.001, MaxVoltage: 1500, TariffIDs: []string{},
				Error:       &chargenet.ConnectorError{Code: "OtherError"},
				DeletedAt:   &deletedUTC,
				LastUpdated: utc,
			},
		},
	}, e3, "connectors ascending by id, times in UTC, tariffs empty, not nil, each updated as its EVSE")

	l, err := s.Location(ctx, "no_postal-code")
	require.NoError(t, err)
	wantLoc := noPostal
	wantLoc.LastUpdated, wantLoc.Version = utc, 1
	wantLoc.EvseUIDs = []int64{3}
	assert.Equal(t, &wantLoc, l)

	list, err := s.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 10})
	require.NoError(t, err)
	assert.Equal(t, []chargenet.EVSE{*e3, *e5}, list, "lists read what EVSE reads")
}

// testImportExistingLocation imports EVSEs whose location is already in the database.
// Such a location is touched with the newest of its imported EVSEs' LastUpdated, and a
// location of the import gets no earlier LastUpdated than its EVSEs'.
func testImportExistingLocation(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	ts := now()
	before := location(t, s, "LOC-0001")
	old := newLocation("OLDER-THAN-ITS-EVSE", ts.Add(-time.Hour))
	require.NoError(t, s.Import(ctx, &chargenet.Inventory{Locations: []chargenet.Location{old}, EVSEs: []chargenet.EVSE{
		newEVSE(5000, "LOC-0001", ts.Add(-time.Minute)), newEVSE(10, "LOC-0001", ts.Add(500)), newEVSE(20, "LOC-0120", ts),
		newEVSE(30, old.ID, ts),
	}}))
	l := location(t, s, "LOC-0001")
	assert.Equal(t, []int64{10, 1001, 1002, 5000}, l.EvseUIDs)
	assert.Equal(t, before.Version+1, l.Version, "touched once")
	assert.Equal(t, ts, l.LastUpdated, "the newest of its new EVSEs', to the microsecond")
	l = location(t, s, "LOC-0120")
	assert.Equal(t, []int64{20}, l.EvseUIDs)
	l = location(t, s, old.ID)
	assert.Equal(t, int64(1), l.Version)
	assert.Equal(t, ts, l.LastUpdated, "its EVSE's, which is newer")
}

// testImportRollback imports inventories with one bad record after good ones into a
// store holding the demo inventory: each fails with an error naming the record and
// leaves the store exactly as it was.
func testImportRollback(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	before := takeSnapshot(t, s)
	ts := now()

	// good returns an inventory of new records: two locations and two EVSEs, one at a
	// new location, one at an existing one. The test appends or replaces records.
	good := func() *chargenet.Inventory {
		return &chargenet.Inventory{
			Locations: []chargenet.Location{newLocation("NEW-1", ts), newLocation("NEW-2", ts)},
			EVSEs:     []chargenet.EVSE{newEVSE(7001, "NEW-1", ts), newEVSE(7002, "LOC-0001", ts)},
		}
	}
	tests := []struct {
		name  string
		edit  func(inv *chargenet.Inventory)
		kind  error
		code  string
		param string
		msg   string
	}{
		{
			name: "third EVSE breaks a connector rule",
			edit: func(inv *chargenet.Inventory) {
				e := newEVSE(7003, "NEW-2", ts)
				e.Connectors[0].Standard = chargenet.StandardChademo // DC standard, AC power type
				inv.EVSEs = append(inv.EVSEs, e)
			},
			kind: chargenet.ErrInvalid, code: chargenet.CodeInvalidConnector, param: "evses[2].connectors[0].standard",
		},
		{
			name: "third EVSE repeats a uid of the file",
			edit: func(inv *chargenet.Inventory) {
				e := newEVSE(7001, "NEW-2", ts)
				e.EvseID = "DE*TST*E7001X"
				inv.EVSEs = append(inv.EVSEs, e)
			},
			kind: chargenet.ErrInvalid, code: chargenet.CodeInvalidBody, param: "evses[2].uid",
		},
		{
			name: "third EVSE has the uid of an existing EVSE",
			edit: func(inv *chargenet.Inventory) { inv.EVSEs = append(inv.EVSEs, newEVSE(1004, "NEW-2", ts)) },
			kind: chargenet.ErrConflict, code: chargenet.CodeConflict, param: "evses[2].uid",
			msg: "evses[2].uid: EVSE 1004 already exists",
		},
		{
			name: "third EVSE has the evseId of an existing EVSE",
			edit: func(inv *chargenet.Inventory) {
				e := newEVSE(7003, "NEW-2", ts)
				e.EvseID = "DE*CNT*E1004*1"
				inv.EVSEs = append(inv.EVSEs, e)
			},
			kind: chargenet.ErrConflict, code: chargenet.CodeConflict, param: "evses[2].evseId",
		},
		{
			name: "third EVSE at a location that exists nowhere",
			edit: func(inv *chargenet.Inventory) { inv.EVSEs = append(inv.EVSEs, newEVSE(7003, "NOWHERE", ts)) },
			kind: chargenet.ErrInvalid, code: chargenet.CodeInvalidBody, param: "evses[2].locationId",
		},
		{
			name: "second location exists",
			edit: func(inv *chargenet.Inventory) { inv.Locations[1] = newLocation("LOC-0007", ts) },
			kind: chargenet.ErrConflict, code: chargenet.CodeConflict, param: "locations[1].id",
		},
		{
			name: "third location is invalid",
			edit: func(inv *chargenet.Inventory) {
				l := newLocation("NEW-3", ts)
				l.Country = "DE"
				inv.Locations = append(inv.Locations, l)
			},
			kind: chargenet.ErrInvalid, code: chargenet.CodeInvalidBody, param: "locations[2].country",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inv := good()
			tt.edit(inv)
			msg := requireError(t, s.Import(t.Context(), inv), tt.kind, tt.code, tt.param)
			assert.Contains(t, msg, tt.param, "the message names the record")
			if tt.msg != "" {
				assert.Equal(t, tt.msg, msg)
			}
			assert.Equal(t, before, takeSnapshot(t, s), "the store is as before")
		})
	}

	// The good records alone import.
	require.NoError(t, s.Import(t.Context(), good()))
	after := takeSnapshot(t, s)
	assert.Len(t, after.Locations, len(before.Locations)+2)
	assert.Len(t, after.EVSEs, len(before.EVSEs)+2)
}
