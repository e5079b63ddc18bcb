package chargenet_test

import (
	"encoding/base64"
	"net/netip"
	"regexp"
	"slices"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

func TestCheckWebhookURL(t *testing.T) {
	tests := []struct {
		url      string
		insecure bool
		says     string // empty: accepted
	}{
		{"https://emsp.example.com/hooks", false, ""},
		{"https://emsp.example.com:8443/hooks?x=1", false, ""},
		{"https://8.8.8.8/hooks", false, ""},
		{"https://[2001:4860:4860::8888]/hooks", false, ""},
		{"http://emsp.example.com/hooks", false, "https"},
		{"http://emsp.example.com/hooks", true, ""},
		{"http://127.0.0.1:9000/hooks", true, ""},
		{"ftp://emsp.example.com/hooks", true, "scheme"},
		{"https://localhost/hooks", false, "not public"},
		{"https://api.localhost/hooks", false, "not public"},
		{"https://LOCALHOST./hooks", false, "not public"},
		{"https://127.0.0.1/hooks", false, "not public"},
		{"https://127.1.2.3/hooks", false, "not public"},
		{"https://[::1]/hooks", false, "not public"},
		{"https://10.0.0.1/hooks", false, "not public"},
		{"https://172.16.5.4/hooks", false, "not public"},
		{"https://192.168.1.1/hooks", false, "not public"},
		{"https://169.254.169.254/latest/meta-data", false, "not public"},
		{"https://100.64.0.1/hooks", false, "not public"},
		{"https://0.0.0.0/hooks", false, "not public"},
		{"https://[::ffff:10.0.0.1]/hooks", false, "not public"},
		{"https://[fc00::1]/hooks", false, "not public"},
		{"https://[fe80::1]/hooks", false, "not public"},
		{"https://[64:ff9b::a00:1]/hooks", false, "not public"},
		{"https://user:secret@emsp.example.com/hooks", false, "credentials"},
		{"https://emsp.example.com/hooks#frag", false, "fragment"},
		{"/hooks", false, "absolute"},
		{"emsp.example.com/hooks", false, "absolute"},
		{"https://emsp.example.com:99999/hooks", false, "port"},
		{"https://emsp.example.com:0/hooks", false, "port"},
		{"https://%zz/", false, "not a URL"},
	}
	for _, tt := range tests {
		t.Run(tt.url, func(t *testing.T) {
			err := chargenet.CheckWebhookURL(tt.url, tt.insecure)
			if tt.says == "" {
				assert.NoError(t, err)
				return
			}
			var de *chargenet.Error
			require.ErrorAs(t, err, &de)
			assert.ErrorIs(t, err, chargenet.ErrInvalid)
			assert.Equal(t, "url", de.Param)
			assert.Contains(t, de.Message, tt.says)
		})
	}
}

func TestPublicAddr(t *testing.T) {
	for addr, want := range map[string]bool{
		"8.8.8.8": true, "1.1.1.1": true, "2606:4700::1111": true, "93.184.216.34": true,
		"127.0.0.1": false, "10.1.1.1": false, "172.31.255.255": false, "192.168.0.1": false, "169.254.1.1": false,
		"100.100.100.100": false, "224.0.0.1": false, "255.255.255.255": false, "198.18.0.1": false, "192.0.2.1": false,
		"::1": false, "::": false, "fd12::1": false, "fe80::1": false, "ff02::1": false, "::ffff:127.0.0.1": false,
		"2001:db8::1": false, "2002:a00:1::": false,
		"::ffff:100.64.0.1": false, "::ffff:192.0.2.1": false, "::ffff:8.8.8.8": true, // IPv4-mapped: the IPv4 rules apply
	} {
		assert.Equal(t, want, chargenet.PublicAddr(netip.MustParseAddr(addr)), addr)
	}
}

func TestResolveSubscriptions(t *testing.T) {
	catalogue := []chargenet.EventType{
		{Type: "evse.connector.updated", APIVersions: []string{"1.0", "1.1"}, Latest: "1.1"},
		{Type: "evse.status.changed", APIVersions: []string{"1.0"}, Latest: "1.0"},
	}
	got, err := chargenet.ResolveSubscriptions(catalogue, []chargenet.Subscription{
		{Type: "evse.connector.updated"}, {Type: "evse.status.changed", APIVersion: "latest"},
	})
	require.NoError(t, err)
	assert.Equal(t, []chargenet.Subscription{{Type: "evse.connector.updated", APIVersion: "1.1"}, {Type: "evse.status.changed", APIVersion: "1.0"}}, got)
	got, err = chargenet.ResolveSubscriptions(catalogue, []chargenet.Subscription{{Type: "evse.connector.updated", APIVersion: "1.0"}})
	require.NoError(t, err)
	assert.Equal(t, "1.0", got[0].APIVersion, "an older version stays as asked")

	shipped, err := chargenet.EventTypes()
	require.NoError(t, err)
	for _, et := range shipped {
		if et.Type == chargenet.EventWebhookPing {
			continue // refused, below
		}
		got, err := chargenet.ResolveSubscriptions(shipped, []chargenet.Subscription{{Type: et.Type, APIVersion: "latest"}})
		require.NoError(t, err)
		assert.Equal(t, []chargenet.Subscription{{Type: et.Type, APIVersion: et.Latest}}, got, "the shipped catalogue's latest")
	}

	t.Run("webhook.ping is refused", func(t *testing.T) {
		_, err := chargenet.ResolveSubscriptions(shipped, []chargenet.Subscription{{Type: chargenet.EventStatusChanged},
			{Type: chargenet.EventWebhookPing, APIVersion: "1.0"}})
		var de *chargenet.Error
		require.ErrorAs(t, err, &de)
		assert.ErrorIs(t, err, chargenet.ErrInvalid)
		assert.Equal(t, "event_types[1].type", de.Param)
		assert.Contains(t, de.Message, "/test")
	})

	tests := []struct {
		name  string
		subs  []chargenet.Subscription
		param string
	}{
		{"none", nil, "event_types"},
		{"unknown type", []chargenet.Subscription{{Type: "evse.status.changed"}, {Type: "evse.exploded"}}, "event_types[1].type"},
		{"unknown version", []chargenet.Subscription{{Type: "evse.status.changed", APIVersion: "1.1"}}, "event_types[0].api_version"},
		{"twice", []chargenet.Subscription{{Type: "evse.status.changed"}, {Type: "evse.status.changed", APIVersion: "1.0"}}, "event_types[1].type"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := chargenet.ResolveSubscriptions(catalogue, tt.subs)
			var de *chargenet.Error
			require.ErrorAs(t, err, &de)
			assert.Equal(t, tt.param, de.Param)
			assert.Contains(t, de.Message, tt.param)
		})
	}
}

func TestNewID(t *testing.T) {
	re := regexp.MustCompile(`^evt_[0-9A-HJKMNP-TV-Z]{26}$`)
	seen := map[string]bool{}
	base := time.Date(2026, 11, 22, 10, 0, 0, 0, time.UTC)
	var ordered []string
	for i := range 1000 {
		id := chargenet.NewID("evt_", base.Add(time.Duration(i)*time.Millisecond))
		require.Regexp(t, re, id)
		assert.False(t, seen[id], "duplicate %s", id)
		seen[id] = true
		ordered = append(ordered, id)
	}
	assert.True(t, slices.IsSorted(ordered), "later ids sort after earlier ones")
	assert.Less(t, chargenet.NewID("wh_", base), chargenet.NewID("wh_", base.Add(24*time.Hour)))
}

func TestNewWebhookSecret(t *testing.T) {
	a, b := chargenet.NewWebhookSecret(), chargenet.NewWebhookSecret()
	assert.NotEqual(t, a, b)
	require.Regexp(t, `^whsec_[A-Za-z0-9+/]{43}=$`, a)
	key, err := base64.StdEncoding.DecodeString(strings.TrimPrefix(a, "whsec_"))
	require.NoError(t, err)
	assert.Len(t, key, 32)
}

func TestWebhookPatchApply(t *testing.T) {
	w := chargenet.Webhook{URL: "https://a.example.com/", Description: "d", Enabled: false, DisabledReason: "410",
		Subscriptions: []chargenet.Subscription{{Type: "evse.status.changed", APIVersion: "1.0"}}}
	on := true
	got := chargenet.WebhookPatch{Enabled: &on}.Apply(w)
	assert.True(t, got.Enabled)
	assert.Empty(t, got.DisabledReason, "enabling clears the reason")
	assert.Equal(t, w.URL, got.URL)
	off := false
	got = chargenet.WebhookPatch{Enabled: &off}.Apply(w)
	assert.Equal(t, "410", got.DisabledReason, "disabling keeps it")
}
