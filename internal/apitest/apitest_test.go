package apitest

import (
	"encoding/json"
	"net/http"
	"net/http/httptest"
	"testing"

	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestCheckLastRelease checks that an answer is held to the last released contract where
// that contract has the operation, and only there.
func TestCheckLastRelease(t *testing.T) {
	name, _, err := lastRelease()
	require.NoError(t, err)
	require.Regexp(t, `^\d+\.\d+\.\d+\.yaml$`, name)
	header := http.Header{"Content-Type": {"application/json"}, "X-Request-Id": {"r1"}}
	tests := []struct {
		name, method, path string
		status             int
		body               string
		fails              bool
	}{
		{"an event-type catalogue the release describes", http.MethodGet, "/emsp/v1/webhooks/event_types", 200, `{"event_types": []}`, false},
		{"an EVSE without the fields the release requires", http.MethodGet, "/v2/evses/1001", 200, `{"uid": 1001}`, true},
		{"a status the release does not document", http.MethodGet, "/v2/evses/1001", 418, `{"message": "x"}`, true},
		{"an operation added since", http.MethodGet, "/v1/tariffs", 200, `{}`, false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			req := httptest.NewRequest(tt.method, tt.path, nil)
			err := checkLastRelease(req, tt.status, header, []byte(tt.body))
			if tt.fails {
				assert.ErrorContains(t, err, "a client of "+name)
			} else {
				assert.NoError(t, err)
			}
		})
	}
}

// TestReleasedEventsOnly checks that an event page is held to the last release only for
// the payloads that release had.
func TestReleasedEventsOnly(t *testing.T) {
	_, _, err := lastRelease()
	require.NoError(t, err)
	page := `{"data": [
		{"type": "evse.created", "api_version": "1.0", "id": "a"},
		{"type": "evse.created", "api_version": "9.9", "id": "b"},
		{"type": "no.such.type", "api_version": "1.0", "id": "c"}
	], "pagination": {"limit": 3}}`
	var got struct {
		Data []struct {
			ID string `json:"id"`
		} `json:"data"`
		Pagination map[string]any `json:"pagination"`
	}
	require.NoError(t, json.Unmarshal(releasedEventsOnly([]byte(page)), &got))
	require.Len(t, got.Data, 1)
	assert.Equal(t, "a", got.Data[0].ID)
	assert.Equal(t, map[string]any{"limit": 3.0}, got.Pagination, "the rest of the page is kept")
}

// TestFindOperation checks that the checkers route as the servers do: in OCPI (Echo) an
// encoded slash stays inside its path parameter; in the REST API (kin-openapi's router
// in the validator) it separates segments; an empty parameter is no operation.
func TestFindOperation(t *testing.T) {
	_, rest, err := contract()
	require.NoError(t, err)
	_, ocpi, err := ocpiContract()
	require.NoError(t, err)
	tests := []struct {
		name, target string
		ocpi         bool
		operation    string
		params       map[string]string
	}{
		{"an encoded slash in an EVSE UID", "/ocpi/2.2.1/locations/0/%2F/0", true, "",
			map[string]string{"location_id": "0", "evse_uid": "/", "connector_id": "0"}},
		{"an encoded slash in a location id", "/v1/locations/a%2Fb", false, "none", nil},
		{"an empty segment", "/ocpi/2.2.1/locations/0//0", true, "none", nil},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			r := rest
			if tt.ocpi {
				r = ocpi
			}
			find := findOperation
			if !tt.ocpi {
				find = findRESTOperation
			}
			route, params, err := find(r, httptest.NewRequest(http.MethodGet, tt.target, nil))
			if tt.operation == "none" {
				assert.Error(t, err)
				return
			}
			require.NoError(t, err)
			assert.NotEmpty(t, route.Operation.OperationID)
			for k, v := range tt.params {
				assert.Equal(t, v, params[k], k)
			}
		})
	}
}
