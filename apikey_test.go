package chargenet_test

import (
	"errors"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestParseScopes(t *testing.T) {
	tests := []struct {
		names []string
		want  []string
		param string
	}{
		{nil, []string{"partner"}, ""},
		{[]string{"webhooks", "inventory:read", "webhooks"}, []string{"inventory:read", "webhooks"}, ""},
		{[]string{"keys", "partner", "ingest"}, []string{"partner", "ingest", "keys"}, ""},
		{[]string{"inventory:read", "admin"}, nil, "scopes[1]"},
		{[]string{""}, nil, "scopes[0]"},
	}
	for _, tt := range tests {
		got, err := chargenet.ParseScopes(tt.names)
		if tt.param != "" {
			var de *chargenet.Error
			require.ErrorAs(t, err, &de, "%v", tt.names)
			assert.ErrorIs(t, err, chargenet.ErrInvalid)
			assert.Equal(t, tt.param, de.Param)
			continue
		}
		require.NoError(t, err, "%v", tt.names)
		assert.Equal(t, tt.want, got)
	}
}

func TestGrants(t *testing.T) {
	grant := func(s string) chargenet.Grants {
		g, ok := chargenet.GrantsOf(s)
		require.True(t, ok, s)
		return g
	}
	partner := &chargenet.APIKey{Scopes: []string{chargenet.ScopePartner}}
	for _, s := range chargenet.Scopes {
		want := s != chargenet.ScopeIngest && s != chargenet.ScopeKeys
		assert.Equal(t, want, partner.Grants().Has(grant(s)), "partner grants %s", s)
	}
	reader := &chargenet.APIKey{Scopes: []string{chargenet.ScopeInventoryRead, chargenet.ScopeWebhooks}}
	assert.True(t, reader.Grants().Has(grant(chargenet.ScopeWebhooks)))
	assert.False(t, reader.Grants().Has(grant(chargenet.ScopeInventoryWrite)))
	assert.False(t, reader.Grants().Has(grant(chargenet.ScopePartner)), "two scopes are not the four of partner")
	_, ok := chargenet.GrantsOf("root")
	assert.False(t, ok)
	seen := chargenet.Grants(0)
	for _, s := range chargenet.Scopes {
		assert.Zero(t, seen&grant(s), "%s has its own bit", s)
		seen |= grant(s)
	}
}

func TestSecretExpiry(t *testing.T) {
	at := time.Date(2026, 11, 1, 10, 0, 0, 0, time.UTC)
	k := chargenet.APIKey{Hash: chargenet.HashAPIKey("new"), ExpiresAt: at.Add(48 * time.Hour),
		PreviousHash: chargenet.HashAPIKey("old"), PreviousUntil: at.Add(24 * time.Hour)}
	tests := []struct {
		name    string
		key     chargenet.APIKey
		secret  string
		expiry  time.Time
		rotated bool
		ok      bool
	}{
		{"current", k, "new", at.Add(48 * time.Hour), false, true},
		{"replaced, in the overlap", k, "old", at.Add(24 * time.Hour), true, true},
		{"unknown", k, "other", time.Time{}, false, false},
		{"key expires before the overlap ends", func() chargenet.APIKey { c := k; c.ExpiresAt = at; return c }(), "old", at, true, true},
		{"no rotation", chargenet.APIKey{Hash: chargenet.HashAPIKey("new")}, "", time.Time{}, false, false},
	}
	for _, tt := range tests {
		expiry, rotated, ok := tt.key.SecretExpiry(chargenet.HashAPIKey(tt.secret))
		assert.Equal(t, tt.expiry, expiry, tt.name)
		assert.Equal(t, tt.rotated, rotated, tt.name)
		assert.Equal(t, tt.ok, ok, tt.name)
	}
}

func TestCheckKeyNameAndRateLimit(t *testing.T) {
	for name, valid := range map[string]bool{"partner-a": true, "emsp.example_2": true, "A": true, "": false,
		"-a": false, "chargebox:cb-1": false, "env": false, "with space": false, string(make([]byte, 65)): false} {
		err := chargenet.CheckKeyName(name)
		assert.Equal(t, valid, err == nil, "%q: %v", name, err)
		if err != nil {
			assert.True(t, errors.Is(err, chargenet.ErrInvalid))
		}
	}
	for r, valid := range map[chargenet.RateLimit]bool{{}: true, {Requests: 600, Window: time.Minute}: true,
		{Requests: 1, Window: 24 * time.Hour}: true, {Requests: 0, Window: time.Minute}: false,
		{Requests: 10, Window: 1500 * time.Millisecond}: false, {Requests: 10, Window: 25 * time.Hour}: false} {
		assert.Equal(t, valid, chargenet.CheckKeyRateLimit(r) == nil, "%v", r)
	}
}
