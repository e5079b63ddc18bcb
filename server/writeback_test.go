package server_test

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// object is a JSON object as a client holds a read: every field, computed ones included.
type object = map[string]any

// read GETs path and returns the answer as an object.
func (v *env) read(path string) object {
	v.t.Helper()
	rec := v.do(http.MethodGet, path, "")
	require.Equal(v.t, http.StatusOK, rec.Code, rec.Body.String())
	var o object
	require.NoError(v.t, json.Unmarshal(rec.Body.Bytes(), &o))
	return o
}

// send writes o as the body of a request.
func (v *env) send(method, path string, o object, headers ...string) *httptest.ResponseRecorder {
	v.t.Helper()
	body, err := json.Marshal(o)
	require.NoError(v.t, err)
	return v.do(method, path, string(body), headers...)
}

// connectorOf is connector i of an EVSE read, as a client writes it back: with the
// EVSE's version, so that the write is made only on the EVSE it read.
func connectorOf(evse object, i int) object {
	c := evse["connectors"].([]any)[i].(object)
	c["version"] = evse["version"]
	return c
}

// writeBack is one write operation of locations, EVSEs and connectors, fed with what a
// read returned.
type writeBack struct {
	name   string
	read   string                       // the GET whose answer the body is made of
	body   func(read object) object     // the object written back, from the read
	change func(body object)            // the client's change
	method string                       // the write
	path   string                       // the write's path
	status int                          // its answer
	check  func(t *testing.T, o object) // the change is in the answer
}

var writeBacks = []writeBack{
	{
		name: "putLocation", read: "/v1/locations/LOC-0001", body: func(r object) object { return r },
		change: func(b object) { b["name"] = "Renamed Hub" },
		method: http.MethodPut, path: "/v1/locations/LOC-0001", status: http.StatusOK,
		check: func(t *testing.T, o object) {
			assert.Equal(t, "Renamed Hub", o["name"])
			assert.Equal(t, []any{1001.0, 1002.0}, o["evseUids"], "computed from the EVSEs, not from the body")
		},
	},
	{
		name: "createEvse", read: "/v2/evses/1001", body: func(r object) object { return r },
		change: func(b object) { b["evseId"], b["chargeboxId"] = "DE*CNT*E7001*1", 509.0 },
		method: http.MethodPost, path: "/v2/evses", status: http.StatusCreated,
		check: func(t *testing.T, o object) {
			assert.Equal(t, "DE*CNT*E7001*1", o["evseId"])
			assert.NotEqual(t, 1001.0, o["uid"], "the service assigns the uid")
			assert.Equal(t, 1.0, o["version"], "a new EVSE starts at version 1, whatever the body's")
		},
	},
	{
		name: "updateEvse", read: "/v2/evses/1001", body: func(r object) object { return r },
		change: func(b object) { b["status"] = "INOPERATIVE" },
		method: http.MethodPatch, path: "/v2/evses/1001", status: http.StatusOK,
		check: func(t *testing.T, o object) { assert.Equal(t, "INOPERATIVE", o["status"]) },
	},
	{
		name: "createConnector", read: "/v2/evses/1001", body: func(r object) object { return connectorOf(r, 0) },
		change: func(b object) { b["maxElectricPower"] = 11.0 },
		method: http.MethodPost, path: "/v2/evses/1001/connectors", status: http.StatusCreated,
		check: func(t *testing.T, o object) {
			connectors := o["connectors"].([]any)
			require.Len(t, connectors, 2)
			assert.Equal(t, 2.0, connectors[1].(object)["id"], "the service assigns the id")
			assert.Equal(t, 11.0, connectors[1].(object)["maxElectricPower"])
		},
	},
	{
		name: "updateConnector", read: "/v2/evses/1001", body: func(r object) object { return connectorOf(r, 0) },
		change: func(b object) { b["maxElectricPower"] = 11.0 },
		method: http.MethodPatch, path: "/v2/evses/1001/connectors/1", status: http.StatusOK,
		check: func(t *testing.T, o object) {
			assert.Equal(t, 11.0, o["connectors"].([]any)[0].(object)["maxElectricPower"])
		},
	},
}

// TestWriteBack reads an object, changes a field and writes the whole read back, computed
// fields and version included, through every write operation of locations, EVSEs and
// connectors.
func TestWriteBack(t *testing.T) {
	for _, tt := range writeBacks {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, false)
			body := tt.body(v.read(tt.read))
			tt.change(body)
			rec := v.send(tt.method, tt.path, body)
			require.Equal(t, tt.status, rec.Code, rec.Body.String())
			var got object
			require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &got))
			tt.check(t, got)
			if tt.method != http.MethodPost {
				assert.Equal(t, body["version"].(float64)+1, got["version"], "one change")
			}
		})
	}
}

// TestWriteBackStale writes back a read after someone else changed the object: the
// body's version is a precondition, so the write is 412 and changes nothing.
func TestWriteBackStale(t *testing.T) {
	for _, tt := range writeBacks {
		if tt.name == "createEvse" { // a new EVSE has no version to hold
			continue
		}
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, false)
			body := tt.body(v.read(tt.read))
			// Someone else changes EVSE 1001, and so its location.
			require.Equal(t, http.StatusOK, v.do(http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxVoltage": 230}`).Code)
			before := v.read(tt.read)
			tt.change(body)
			e := assertError(t, v.send(tt.method, tt.path, body), http.StatusPreconditionFailed, chargenet.CodePreconditionFailed, "version")
			assert.Contains(t, e.Message, "is not the current version")
			assert.Equal(t, before, v.read(tt.read), "a refused write changes nothing")
		})
	}
}

// TestWriteBackPreconditions holds a connector write to If-Match and the body's version
// together: both must hold.
func TestWriteBackPreconditions(t *testing.T) {
	tests := []struct {
		name    string
		ifMatch string
		version float64
		status  int
		param   string
	}{
		{"both current", `"1"`, 1, http.StatusOK, ""},
		{"stale If-Match", `"9"`, 1, http.StatusPreconditionFailed, "If-Match"},
		{"stale version", `"1"`, 9, http.StatusPreconditionFailed, "version"},
		{"both stale", `"9"`, 9, http.StatusPreconditionFailed, "If-Match"},
		{"any ETag, stale version", `*`, 9, http.StatusPreconditionFailed, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, false)
			before := v.read("/v2/evses/1001")
			rec := v.send(http.MethodPatch, "/v2/evses/1001/connectors/1",
				object{"maxElectricPower": 11.0, "version": tt.version}, "If-Match", tt.ifMatch)
			if tt.status == http.StatusOK {
				require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
				assert.Equal(t, 11.0, decode[gen.EVSE](t, rec).Connectors[0].MaxElectricPower)
				return
			}
			assertError(t, rec, tt.status, chargenet.CodePreconditionFailed, tt.param)
			assert.Equal(t, before, v.read("/v2/evses/1001"), "a refused write changes nothing")
		})
	}
}

// TestWriteBackUnchangeable sends back reads with a field changed that the operation
// does not change, or that names another object: 400 naming it, and nothing changes.
func TestWriteBackUnchangeable(t *testing.T) {
	tests := []struct {
		name   string
		method string
		path   string
		body   func(evse object) object
		status int
		code   string
		param  string
	}{
		{"EVSE uid of another", http.MethodPatch, "/v2/evses/1001", func(e object) object { e["uid"] = 1002.0; return e },
			http.StatusBadRequest, chargenet.CodeInvalidBody, "uid"},
		{"EVSE evseId", http.MethodPatch, "/v2/evses/1001", func(e object) object { e["evseId"] = "DE*CNT*E9999*1"; return e },
			http.StatusBadRequest, chargenet.CodeInvalidBody, "evseId"},
		{"EVSE connector power", http.MethodPatch, "/v2/evses/1001", func(e object) object {
			e["connectors"].([]any)[0].(object)["maxElectricPower"] = 11.0
			return e
		}, http.StatusBadRequest, chargenet.CodeInvalidBody, "connectors[0].maxElectricPower"},
		{"EVSE connector dropped", http.MethodPatch, "/v2/evses/1001", func(e object) object { e["connectors"] = []any{}; return e },
			http.StatusBadRequest, chargenet.CodeInvalidBody, "connectors"},
		{"EVSE computed fields only", http.MethodPatch, "/v2/evses/1001", func(e object) object {
			return object{"uid": e["uid"], "lastUpdated": e["lastUpdated"], "version": e["version"]}
		}, http.StatusBadRequest, chargenet.CodeInvalidBody, ""},
		{"connector id of another", http.MethodPatch, "/v2/evses/1001/connectors/1", func(e object) object {
			c := connectorOf(e, 0)
			c["id"] = 2.0
			return c
		}, http.StatusBadRequest, chargenet.CodeInvalidBody, "id"},
		{"connector powerType", http.MethodPatch, "/v2/evses/1001/connectors/1", func(e object) object {
			c := connectorOf(e, 0)
			c["powerType"] = "AC_1_PHASE"
			return c
		}, http.StatusBadRequest, chargenet.CodeInvalidBody, "powerType"},
		{"connector tariffIds", http.MethodPatch, "/v2/evses/1001/connectors/1", func(e object) object {
			c := connectorOf(e, 0)
			c["tariffIds"] = []any{"OTHER"}
			return c
		}, http.StatusBadRequest, chargenet.CodeInvalidBody, "tariffIds"},
		{"location that does not exist, with a version", http.MethodPut, "/v1/locations/LOC-NEW", func(e object) object {
			return object{"name": "New", "address": "Kai 1", "city": "Hamburg", "country": "DEU",
				"coordinates": object{"latitude": 53.5, "longitude": 9.9}, "timeZone": "Europe/Berlin", "version": 1.0}
		}, http.StatusPreconditionFailed, chargenet.CodePreconditionFailed, "version"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			v := newEnv(t, false)
			evse := v.read("/v2/evses/1001")
			locations := v.read("/v1/locations")
			e := assertError(t, v.send(tt.method, tt.path, tt.body(v.read("/v2/evses/1001"))), tt.status, tt.code, tt.param)
			if tt.param == "" {
				assert.Nil(t, e.Param)
			}
			assert.Equal(t, evse, v.read("/v2/evses/1001"), "a refused write changes nothing")
			assert.Equal(t, locations, v.read("/v1/locations"))
		})
	}
}
