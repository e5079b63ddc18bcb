package server_test

import (
	"encoding/json"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestLocationJSONMatchesTheServer keeps chargenet.LocationJSON, which stores keep
// beside each location, byte for byte equal to the server's own encoding.
func TestLocationJSONMatchesTheServer(t *testing.T) {
	locs := chargenet.DemoInventory(time.Now()).Locations
	locs = append(locs,
		chargenet.Location{ID: "X_1", Name: `<Café & "Bar">`, Address: "a\u2028b", City: "Zürich", Country: "CHE",
			Latitude: -0.000001, Longitude: 179.9999999, TimeZone: "Europe/Zurich", EvseUIDs: []int64{1, 9007199254740993},
			LastUpdated: time.Date(2026, 1, 2, 3, 4, 5, 600, time.FixedZone("x", 3600))},
		chargenet.Location{ID: "Y", Name: "n", Address: "a", City: "c", Country: "DEU", TimeZone: "UTC"},
	)
	for i := range locs {
		l := &locs[i]
		got, err := chargenet.LocationJSON(l)
		require.NoError(t, err)
		want, err := json.Marshal(server.LocationToAPI(l))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), l.ID)
	}
}

// TestEVSEJSONMatchesTheServer keeps chargenet.EVSEJSON byte for byte equal to the
// server's own encoding of an EVSE.
func TestEVSEJSONMatchesTheServer(t *testing.T) {
	evses := chargenet.DemoInventory(time.Now()).EVSEs
	odd := evses[3]
	odd.LocationID = ""
	odd.Connectors = append([]chargenet.Connector(nil), odd.Connectors...)
	odd.Connectors[0].TariffIDs = nil
	odd.Connectors[0].Error = &chargenet.ConnectorError{Code: "OtherError", Info: `<&> "q"`}
	evses = append(evses, odd, chargenet.EVSE{UID: 7, EvseID: "DE*X*E7", ChargeboxID: 1, Status: chargenet.StatusUnknown})
	for i := range evses {
		e := &evses[i]
		got, err := chargenet.EVSEJSON(e)
		require.NoError(t, err)
		want, err := json.Marshal(server.EVSEToAPI(e))
		require.NoError(t, err)
		assert.Equal(t, string(want), string(got), "EVSE %d", e.UID)
	}
}
