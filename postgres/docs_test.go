package postgres_test

import (
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/wire"
	"github.com/chargenet/chargenet/postgres"
	"github.com/jackc/pgx/v5/pgxpool"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestStoredDocs checks that the store keeps every row's JSON where the fast read path
// finds it (so that reads are not quietly encoding every time), that changes made
// without the store (plain SQL, as by an older or another program) retire the JSON they
// make stale, and that the store answers those rows correctly and writes their JSON
// again when it opens.
func TestStoredDocs(t *testing.T) {
	ctx := t.Context()
	s, db := mustOpenDemo(t)
	count := func(query string) int {
		t.Helper()
		var n int
		require.NoError(t, db.QueryRow(ctx, query).Scan(&n))
		return n
	}
	const staleEVSEs = `SELECT count(*) FROM evses WHERE doc IS NULL OR doc_version IS DISTINCT FROM version`
	const staleLocations = `SELECT count(*) FROM locations WHERE doc IS NULL`
	assert.Zero(t, count(staleEVSEs), "the import stores every EVSE's JSON")
	assert.Zero(t, count(staleLocations), "the import stores every location's JSON")

	power := 12.5
	_, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: &power}, "", "", time.Now())
	require.NoError(t, err)
	_, err = s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 502, Status: "Faulted", ErrorCode: "OtherError",
		Timestamp: time.Now()}, "",
		time.Now())

	require.NoError(t, err)
	assert.Zero(t, count(staleEVSEs), "PATCHes and status notifications rewrite the JSON")

	// The inventory's operations keep the JSON too.
	now := time.Now().UTC().Truncate(time.Microsecond)
	loc := chargenet.Location{ID: "HAFEN-1", Name: "Hafen", Address: "Kai 7", City: "Hamburg", Country: "DEU",
		Latitude: 53.5, Longitude: 9.9, TimeZone: "Europe/Berlin"}
	_, _, err = s.PutLocation(ctx, &loc, "", now)
	require.NoError(t, err)
	e := chargenet.EVSE{EvseID: "DE*CNT*E7001", ChargeboxID: 900, LocationID: "HAFEN-1", Connectors: []chargenet.Connector{{ID: 1,
		Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
		MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400}}}
	require.NoError(t, e.PrepareNew(now))
	created, err := s.CreateEVSE(ctx, &e, nil, "", now)
	require.NoError(t, err)
	to := "LOC-0001"
	_, err = s.ChangeEVSE(ctx, created.UID, func(e *chargenet.EVSE) ([]chargenet.Event, error) {
		return e.ApplyPatch(chargenet.EVSEPatch{LocationID: &to}, "", now)
	}, nil, "",

		now)

	require.NoError(t, err)
	_, err = s.DeleteLocation(ctx, "HAFEN-1", "", now)
	require.NoError(t, err)
	assert.Zero(t, count(staleEVSEs), "creating and moving an EVSE store its JSON")
	assert.Zero(t, count(staleLocations), "putting, deleting and the locations an EVSE joins or leaves store their JSON")
	requireSameDocs(t, s)

	// Changes by a program that does not keep the JSON.
	_, err = db.Exec(ctx, `UPDATE connectors SET max_voltage = 231 WHERE evse_uid = 1003 AND id = 1`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE evses SET version = version + 1 WHERE uid = 1003`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE locations SET name = 'Renamed' WHERE id = 'LOC-0100'`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `INSERT INTO evses (uid, evse_id, chargebox_id, location_id, status, last_updated) `+
		`VALUES (9001, 'DE*CNT*E9001*1', 900, 'LOC-0050', 'AVAILABLE', now())`)
	require.NoError(t, err)
	_, err = db.Exec(ctx, `UPDATE evses SET location_id = 'LOC-0060' WHERE uid = 1040`)
	require.NoError(t, err)
	assert.Equal(t, []string{"1003", "1040", "9001"}, ids(t, db, `SELECT uid::text FROM evses WHERE doc IS NULL OR doc_version <> version ORDER BY uid`),
		"EVSE 1003 (changed), 1040 (moved without a new version) and 9001 (inserted) have no JSON")
	assert.Equal(t, []string{"LOC-0020", "LOC-0050", "LOC-0060", "LOC-0100"}, ids(t, db, `SELECT id FROM locations WHERE doc IS NULL ORDER BY id`),
		"the renamed location, the one that gained an EVSE, and both ends of the move")

	requireSameDocs(t, s)

	// Opening again writes the missing JSON.
	s2, err := postgres.Open(ctx, db.Config().ConnString(), postgres.Options{})
	require.NoError(t, err)
	defer func() { _ = s2.Close() }()
	assert.Zero(t, count(staleEVSEs))
	assert.Zero(t, count(staleLocations))
	requireSameDocs(t, s2)
}

// requireSameDocs checks that the JSON the store answers is the encoding of its rows.
func requireSameDocs(t *testing.T, s *postgres.Store) {
	t.Helper()
	ctx := t.Context()
	evses, err := s.ListEVSEs(ctx, chargenet.Seek[int64]{Limit: 1000})
	require.NoError(t, err)
	for i := range evses {
		doc, version, err := s.EVSEDoc(ctx, evses[i].UID)
		require.NoError(t, err)
		want, err := wire.EncodeEVSE(&evses[i])
		require.NoError(t, err)
		assert.Equal(t, string(want), string(doc), "EVSE %d", evses[i].UID)
		assert.Equal(t, evses[i].Version, version)
	}
	locs, err := s.ListLocations(ctx, chargenet.Seek[string]{Limit: 1000})
	require.NoError(t, err)
	docs, err := s.ListLocationDocs(ctx, chargenet.Seek[string]{Limit: 1000})
	require.NoError(t, err)
	require.Len(t, docs, len(locs))
	for i := range locs {
		want, err := wire.EncodeLocation(&locs[i])
		require.NoError(t, err)
		assert.Equal(t, string(want), string(docs[i].JSON), "location %s", locs[i].ID)
	}
}

func ids(t *testing.T, db *pgxpool.Pool, query string) []string {
	t.Helper()
	rows, err := db.Query(t.Context(), query)
	require.NoError(t, err)
	var out []string
	for rows.Next() {
		var id string
		require.NoError(t, rows.Scan(&id))
		out = append(out, id)
	}
	require.NoError(t, rows.Err())
	return out
}
