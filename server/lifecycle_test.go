package server_test

import (
	"fmt"
	"net/http"
	"strings"
	"sync"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	newLocation = `{"name": "Hafen Depot", "address": "Kai 7", "city": "Hamburg", "postalCode": "20457",
		"country": "DEU", "coordinates": {"latitude": 53.54, "longitude": 9.98}, "timeZone": "Europe/Berlin"}`
	newEVSE = `{"evseId": "DE*CNT*E9001*1", "chargeboxId": 901, "locationId": "HAFEN-1",
		"connectors": [{"id": 1, "standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE",
		"maxElectricPower": 22, "maxAmperage": 32, "maxVoltage": 400, "tariffIds": ["AC-STANDARD"]}]}`
	newConnector = `{"standard": "IEC_62196_T2_COMBO", "format": "CABLE", "powerType": "DC",
		"maxElectricPower": 150, "maxAmperage": 375, "maxVoltage": 920}`
)

// TestInventoryLifecycle walks a location and an EVSE through their whole life over the
// API, every answer checked against the contract.
func TestInventoryLifecycle(t *testing.T) {
	v := withKeys(t, newEnv(t, false))

	rec := v.do(http.MethodPut, "/v1/locations/HAFEN-1", newLocation)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	assert.Equal(t, "/v1/locations/HAFEN-1", rec.Header().Get("Location"))
	loc := decode[gen.Location](t, rec)
	assert.Empty(t, loc.EvseUids)
	assert.Nil(t, loc.DeletedAt)
	assert.NotEmpty(t, rec.Header().Get("X-Request-Id"))
	assert.NotEmpty(t, rec.Header().Get("X-RateLimit-Remaining"))

	again := v.do(http.MethodPut, "/v1/locations/HAFEN-1", newLocation)
	require.Equal(t, http.StatusOK, again.Code, again.Body.String())
	assert.Equal(t, loc.LastUpdated, decode[gen.Location](t, again).LastUpdated, "the same body changes nothing")
	renamed := decode[gen.Location](t, v.do(http.MethodPut, "/v1/locations/HAFEN-1", strings.Replace(newLocation, "Hafen Depot", "Hafen Nord", 1)))
	assert.Equal(t, "Hafen Nord", renamed.Name)

	rec = v.do(http.MethodPost, "/v2/evses", newEVSE)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	evse := decode[gen.EVSE](t, rec)
	assert.Equal(t, gen.PLANNED, evse.Status, "status defaults to PLANNED")
	assert.Equal(t, fmt.Sprintf("/v2/evses/%d", evse.Uid), rec.Header().Get("Location"))
	assert.Equal(t, `"1"`, rec.Header().Get("ETag"))
	path := fmt.Sprintf("/v2/evses/%d", evse.Uid)
	assert.Equal(t, []int64{evse.Uid}, decode[gen.Location](t, v.do(http.MethodGet, "/v1/locations/HAFEN-1", "")).EvseUids)

	// A charge box notification does not commission a PLANNED EVSE.
	ingest := []string{"Authorization", "Bearer " + ingestKey}
	res := decode[gen.StatusNotificationResult](t, v.do(http.MethodPost, "/internal/v1/chargeboxes/901/status-notifications",
		`{"connectorId": 1, "errorCode": "NoError", "status": "Available"}`, ingest...))
	assert.False(t, res.Applied)
	require.NotNil(t, res.Reason)
	assert.Contains(t, *res.Reason, "PLANNED")
	require.Len(t, res.Evses, 1)
	assert.Equal(t, gen.PLANNED, res.Evses[0].Status)

	assertError(t, v.do(http.MethodPatch, path, `{"status": "AVAILABLE"}`, "If-Match", `"99"`), 412, chargenet.CodePreconditionFailed, "If-Match")
	rec = v.do(http.MethodPatch, path, `{"status": "AVAILABLE"}`, "If-Match", `"1"`)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	assert.Equal(t, gen.AVAILABLE, decode[gen.EVSE](t, rec).Status)
	assertError(t, v.do(http.MethodPatch, path, `{"status": "PLANNED"}`), 409, chargenet.CodeInvalidTransition, "status")
	assertError(t, v.do(http.MethodPatch, path, `{"locationId": "NOWHERE"}`), 400, chargenet.CodeInvalidBody, "locationId")

	// Out of service by the operator: notifications no longer move the status.
	require.Equal(t, http.StatusOK, v.do(http.MethodPatch, path, `{"status": "INOPERATIVE"}`).Code)
	res = decode[gen.StatusNotificationResult](t, v.do(http.MethodPost, "/internal/v1/chargeboxes/901/status-notifications",
		`{"connectorId": 1, "errorCode": "GroundFailure", "status": "Faulted"}`, ingest...))
	assert.False(t, res.Applied)
	assert.Equal(t, gen.INOPERATIVE, res.Evses[0].Status)
	got := decode[gen.EVSE](t, v.do(http.MethodGet, path, ""))
	require.NotNil(t, got.Connectors[0].Error, "the connector's state is still recorded")
	assert.Equal(t, gen.ConnectorErrorCodeGroundFailure, got.Connectors[0].Error.ErrorCode)
	require.Equal(t, http.StatusOK, v.do(http.MethodPatch, path, `{"status": "AVAILABLE"}`).Code)

	rec = v.do(http.MethodPost, path+"/connectors", newConnector)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	withTwo := decode[gen.EVSE](t, rec)
	require.Len(t, withTwo.Connectors, 2)
	assert.Equal(t, int64(2), withTwo.Connectors[1].Id)
	assertError(t, v.do(http.MethodPost, path+"/connectors", strings.Replace(newConnector, `"DC"`, `"AC_3_PHASE"`, 1)), 400, chargenet.CodeInvalidConnector, "standard")

	rec = v.do(http.MethodDelete, path+"/connectors/1", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	deleted := decode[gen.EVSE](t, rec)
	require.NotNil(t, deleted.Connectors[0].DeletedAt)
	twice := v.do(http.MethodDelete, path+"/connectors/1", "")
	require.Equal(t, http.StatusOK, twice.Code)
	assert.Equal(t, rec.Header().Get("ETag"), twice.Header().Get("ETag"), "a second delete changes nothing")
	assertError(t, v.do(http.MethodPatch, path+"/connectors/1", `{"maxElectricPower": 11}`), 409, chargenet.CodeConnectorDeleted, "connectorId")

	assertError(t, v.do(http.MethodDelete, "/v1/locations/HAFEN-1", ""), 409, chargenet.CodeLocationInUse, "id")
	removed := v.do(http.MethodDelete, path, "")
	require.Equal(t, http.StatusOK, removed.Code, removed.Body.String())
	assert.Equal(t, gen.REMOVED, decode[gen.EVSE](t, removed).Status)
	assert.Equal(t, removed.Body.String(), v.do(http.MethodDelete, path, "").Body.String(), "a second removal answers the same state")
	assertError(t, v.do(http.MethodPatch, path, `{"status": "AVAILABLE"}`), 409, chargenet.CodeEVSERemoved, "uid")
	assertError(t, v.do(http.MethodPatch, path+"/connectors/2", `{"maxElectricPower": 11}`), 409, chargenet.CodeEVSERemoved, "uid")
	assertError(t, v.do(http.MethodPost, path+"/connectors", newConnector), 409, chargenet.CodeEVSERemoved, "uid")
	assert.Equal(t, gen.REMOVED, decode[gen.EVSE](t, v.do(http.MethodGet, path, "")).Status, "a removed EVSE stays readable")

	rec = v.do(http.MethodDelete, "/v1/locations/HAFEN-1", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	require.NotNil(t, decode[gen.Location](t, rec).DeletedAt)
	assert.NotNil(t, decode[gen.Location](t, v.do(http.MethodGet, "/v1/locations/HAFEN-1", "")).DeletedAt)
	assertError(t, v.do(http.MethodPut, "/v1/locations/HAFEN-1", newLocation), 409, chargenet.CodeLocationDeleted, "id")
	assertError(t, v.do(http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "E9001", "E9002", 1)), 409, chargenet.CodeLocationDeleted, "locationId")
	for _, p := range []string{"/v1/locations?limit=100", "/v1/locations?limit=100&cursor="} {
		if strings.HasSuffix(p, "=") {
			continue
		}
		page := decode[gen.LocationPage](t, v.do(http.MethodGet, p, ""))
		for _, l := range page.Data {
			assert.NotEqual(t, "HAFEN-1", l.Id, "a deleted location is in no list page")
		}
	}
}

func TestCreateRefusals(t *testing.T) {
	v := newEnv(t, false)
	require.Equal(t, http.StatusCreated, v.do(http.MethodPut, "/v1/locations/HAFEN-1", newLocation).Code)
	tests := []struct {
		name, method, path, body string
		status                   int
		code, param              string
	}{
		{"missing location", http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "HAFEN-1", "NOWHERE", 1), 400, chargenet.CodeInvalidBody, "locationId"},
		{"connector ids not 1..n", http.MethodPost, "/v2/evses", strings.Replace(newEVSE, `"id": 1`, `"id": 2`, 1), 400, chargenet.CodeInvalidBody, "connectors[0].id"},
		{"created removed", http.MethodPost, "/v2/evses", strings.Replace(newEVSE, `"chargeboxId"`, `"status": "REMOVED", "chargeboxId"`, 1), 400, chargenet.CodeInvalidBody, "status"},
		{"bad evseId", http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "DE*CNT*E9001*1", "nope", 1), 400, chargenet.CodeInvalidBody, "evseId"},
		{"taken evseId", http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "DE*CNT*E9001*1", "DE*CNT*E1001*1", 1), 409, chargenet.CodeConflict, "evseId"},
		{"DC standard on AC", http.MethodPost, "/v2/evses", strings.Replace(newEVSE, `"IEC_62196_T2"`, `"CHADEMO"`, 1), 400, chargenet.CodeInvalidConnector, "connectors[0].standard"},
		{"uid that no EVSE can have", http.MethodPost, "/v2/evses", strings.Replace(newEVSE, `"chargeboxId"`, `"uid": 0, "chargeboxId"`, 1), 400, chargenet.CodeInvalidBody, "uid"},
		{"stale version of a location", http.MethodPut, "/v1/locations/LOC-0001", strings.Replace(newLocation, `{`, `{"version": 99, `, 1), 412, chargenet.CodePreconditionFailed, "version"},
		{"stale version of an EVSE", http.MethodPost, "/v2/evses/1001/connectors", strings.Replace(newConnector, `{`, `{"version": 99, `, 1), 412, chargenet.CodePreconditionFailed, "version"},
		{"id differs from the path", http.MethodPut, "/v1/locations/HAFEN-2", strings.Replace(newLocation, `{`, `{"id": "HAFEN-3", `, 1), 400, chargenet.CodeInvalidBody, "id"},
		{"unknown time zone", http.MethodPut, "/v1/locations/HAFEN-2", strings.Replace(newLocation, "Europe/Berlin", "Mars/Olympus", 1), 400, chargenet.CodeInvalidBody, "timeZone"},
		{"empty EVSE patch", http.MethodPatch, "/v2/evses/1001", `{}`, 400, chargenet.CodeInvalidBody, ""},
		{"connector of no EVSE", http.MethodPost, "/v2/evses/424242/connectors", newConnector, 404, chargenet.CodeNotFound, "uid"},
		{"key too long", http.MethodPost, "/v2/evses", newEVSE, 400, chargenet.CodeInvalidParameter, "Idempotency-Key"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := decode[gen.EvsePage](t, v.do(http.MethodGet, "/v2/evses?limit=100", ""))
			var headers []string
			if tt.name == "key too long" {
				headers = []string{"Idempotency-Key", strings.Repeat("k", 256)}
			}
			assertError(t, v.do(tt.method, tt.path, tt.body, headers...), tt.status, tt.code, tt.param)
			after := decode[gen.EvsePage](t, v.do(http.MethodGet, "/v2/evses?limit=100", ""))
			assert.Equal(t, before, after, "a refused request changes nothing")
		})
	}
}

func TestIdempotencyKey(t *testing.T) {
	v := withKeys(t, newEnv(t, false))
	require.Equal(t, http.StatusCreated, v.do(http.MethodPut, "/v1/locations/HAFEN-1", newLocation).Code)
	key := []string{"Idempotency-Key", "create-9001"}

	first := v.do(http.MethodPost, "/v2/evses", newEVSE, key...)
	require.Equal(t, http.StatusCreated, first.Code, first.Body.String())
	assert.Empty(t, first.Header().Get("Idempotent-Replayed"))
	replay := v.do(http.MethodPost, "/v2/evses", newEVSE, key...)
	assert.Equal(t, http.StatusCreated, replay.Code)
	assert.Equal(t, "true", replay.Header().Get("Idempotent-Replayed"))
	assert.Equal(t, first.Body.String(), replay.Body.String(), "the same body again")
	assert.Equal(t, first.Header().Get("Location"), replay.Header().Get("Location"))
	assert.Equal(t, first.Header().Get("ETag"), replay.Header().Get("ETag"))

	assertError(t, v.do(http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "E9001", "E9002", 1), key...), 422, chargenet.CodeIdempotencyKeyReused, "Idempotency-Key")
	assertError(t, v.do(http.MethodPost, "/v2/evses/1001/connectors", newConnector, key...), 422, chargenet.CodeIdempotencyKeyReused, "Idempotency-Key")

	// Keys belong to an API key: another partner's same key is a new request.
	other := v.do(http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "E9001", "E9003", 1), append(key, "Authorization", "Bearer "+otherKey)...)
	assert.Equal(t, http.StatusCreated, other.Code, other.Body.String())
	assert.Empty(t, other.Header().Get("Idempotent-Replayed"))

	// A refused request keeps nothing: the key can be used again once the body is right.
	bad := []string{"Idempotency-Key", "fix-me"}
	assertError(t, v.do(http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "HAFEN-1", "NOWHERE", 1), bad...), 400, chargenet.CodeInvalidBody, "locationId")
	assert.Equal(t, http.StatusCreated, v.do(http.MethodPost, "/v2/evses", strings.Replace(newEVSE, "E9001", "E9004", 1), bad...).Code)

	// Connectors and webhooks take keys too.
	ck := []string{"Idempotency-Key", "connector-1"}
	c1 := v.do(http.MethodPost, "/v2/evses/1001/connectors", newConnector, ck...)
	require.Equal(t, http.StatusCreated, c1.Code, c1.Body.String())
	c2 := v.do(http.MethodPost, "/v2/evses/1001/connectors", newConnector, ck...)
	assert.Equal(t, c1.Body.String(), c2.Body.String())
	assert.Len(t, decode[gen.EVSE](t, v.do(http.MethodGet, "/v2/evses/1001", "")).Connectors, len(decode[gen.EVSE](t, c1).Connectors), "one connector added")
	wk := []string{"Idempotency-Key", "webhook-1"}
	w1 := v.do(http.MethodPost, "/emsp/v1/webhooks", createBody, wk...)
	require.Equal(t, http.StatusCreated, w1.Code, w1.Body.String())
	w2 := v.do(http.MethodPost, "/emsp/v1/webhooks", createBody, wk...)
	assert.Equal(t, w1.Body.String(), w2.Body.String(), "the replay shows the same secret")
	assert.Len(t, decode[gen.WebhookPage](t, v.do(http.MethodGet, "/emsp/v1/webhooks", "")).Data, 1)
}

func TestIdempotencyKeyConcurrent(t *testing.T) {
	v := newEnv(t, false)
	require.Equal(t, http.StatusCreated, v.do(http.MethodPut, "/v1/locations/HAFEN-1", newLocation).Code)
	const n = 32
	codes := make([]int, n)
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			codes[i] = v.do(http.MethodPost, "/v2/evses", newEVSE, "Idempotency-Key", "same-key").Code
		}()
	}
	wg.Wait()
	created := 0
	for _, c := range codes {
		assert.Contains(t, []int{http.StatusCreated, http.StatusConflict}, c)
		if c == http.StatusCreated {
			created++
		}
	}
	assert.GreaterOrEqual(t, created, 1)
	loc := decode[gen.Location](t, v.do(http.MethodGet, "/v1/locations/HAFEN-1", ""))
	assert.Len(t, loc.EvseUids, 1, "exactly one EVSE created")
}
