package apitest

import (
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
		{"an operation added since", http.MethodGet, "/admin/v1/keys", 200, `{}`, false},
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
