package server_test

import (
	"bytes"
	"context"
	"encoding/json"
	"log/slog"
	"net/http"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/server"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// syncBuffer is a bytes.Buffer safe for the concurrent writes of a logger.
type syncBuffer struct {
	mu sync.Mutex
	b  bytes.Buffer
}

func (s *syncBuffer) Write(p []byte) (int, error) {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.Write(p)
}

func (s *syncBuffer) String() string {
	s.mu.Lock()
	defer s.mu.Unlock()
	return s.b.String()
}

func (s *syncBuffer) lines(t *testing.T) []map[string]any {
	s.mu.Lock()
	defer s.mu.Unlock()
	var out []map[string]any
	for _, l := range strings.Split(strings.TrimSpace(s.b.String()), "\n") {
		var m map[string]any
		require.NoError(t, json.Unmarshal([]byte(l), &m), l)
		out = append(out, m)
	}
	return out
}

// TestRequestLogActor checks that the request log line names the key that made the
// request as actor, never the key itself, and has no actor when no key was accepted.
func TestRequestLogActor(t *testing.T) {
	base := newEnv(t, false)
	const secret = "ops-key-0123456789abcdef"
	require.NoError(t, base.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: "ops-console", Hash: chargenet.HashAPIKey(secret),
		Scopes: []string{chargenet.ScopePartner}, CreatedAt: time.Now()}))
	var logs syncBuffer
	e, err := server.New(server.Config{Store: base.store, Keys: server.NewKeys(base.store, []string{devKey}),
		Cursors: chargenet.NewCursorCodec([]byte(testSecret)), Logger: slog.New(slog.NewJSONHandler(&logs, nil))})
	require.NoError(t, err)
	v := &env{t: t, e: e, store: base.store}

	require.Equal(t, http.StatusOK, v.do(http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxVoltage": 300}`,
		"Authorization", "Bearer "+secret).Code)
	require.Equal(t, http.StatusBadRequest, v.do(http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxVoltage": -1}`).Code)
	require.Equal(t, http.StatusForbidden, v.do(http.MethodGet, "/v2/evses", "", "Authorization", "").Code)

	lines := logs.lines(t)
	require.Len(t, lines, 3)
	assert.Equal(t, "ops-console", lines[0]["actor"], "a stored key by its name")
	assert.Equal(t, chargenet.DevKeyName, lines[1]["actor"], "also when the request is refused after the key")
	assert.NotContains(t, lines[2], "actor", "no key, no actor")
	for _, l := range lines {
		assert.Equal(t, "request", l["msg"])
	}
	assert.NotContains(t, logs.String(), secret, "the log never holds a key")
	assert.NotContains(t, logs.String(), devKey)
}

// TestHeaderRequestIDIsCanonical checks the form the server sets and reads the request
// id header by, as a key of the header map.
func TestHeaderRequestIDIsCanonical(t *testing.T) {
	assert.Equal(t, http.CanonicalHeaderKey(server.HeaderRequestID), server.HeaderRequestID)
}
