package server_test

import (
	"context"
	"fmt"
	"net/http"
	"regexp"
	"strings"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/server"
	"github.com/labstack/echo/v4"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

const (
	otherKey  = "other-partner-key-0123456789"
	ingestKey = "ingest-key-0123456789abcdef"
)

// withKeys stores a second partner key and an ingest key.
func withKeys(t *testing.T, v *env) *env {
	t.Helper()
	for name, k := range map[string]string{"other": otherKey, "ingest": ingestKey} {
		scope := chargenet.ScopePartner
		if name == "ingest" {
			scope = chargenet.ScopeIngest
		}
		require.NoError(t, v.store.CreateAPIKey(context.Background(), chargenet.APIKey{Name: name, Hash: chargenet.HashAPIKey(k), Scopes: []string{scope}, CreatedAt: time.Now()}))
	}
	return v
}

var secretRe = regexp.MustCompile(`^whsec_[A-Za-z0-9+/]{43}=$`)

const createBody = `{"url": "https://receiver.example.com/hooks", "description": "mine",
	"event_types": [{"type": "evse.status.changed"}, {"type": "evse.connector.updated", "api_version": "1.0"}]}`

func TestWebhookLifecycle(t *testing.T) {
	v := withKeys(t, newEnv(t, false))

	rec := v.do(http.MethodPost, "/emsp/v1/webhooks", createBody)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	created := decode[gen.WebhookWithSecret](t, rec)
	assert.Regexp(t, secretRe, created.Secret)
	assert.Equal(t, "/emsp/v1/webhooks/"+created.Id, rec.Header().Get("Location"))
	assert.True(t, created.Enabled)
	assert.Equal(t, "https://receiver.example.com/hooks", created.Url)
	assert.Equal(t, []gen.WebhookSubscription{{Type: "evse.connector.updated", ApiVersion: ptr("1.0")}, {Type: "evse.status.changed", ApiVersion: ptr("1.2")}},
		created.EventTypes, "versions resolved, in type order")

	rec = v.do(http.MethodGet, "/emsp/v1/webhooks/"+created.Id, "")
	require.Equal(t, http.StatusOK, rec.Code)
	assert.NotContains(t, rec.Body.String(), created.Secret, "the secret is shown only on creation")
	got := decode[gen.Webhook](t, rec)
	assert.Equal(t, created.Id, got.Id)

	t.Run("other keys see nothing", func(t *testing.T) {
		for _, req := range [][2]string{{http.MethodGet, ""}, {http.MethodDelete, ""}, {http.MethodPatch, `{"enabled": false}`}} {
			rec := v.do(req[0], "/emsp/v1/webhooks/"+created.Id, req[1], "Authorization", "Bearer "+otherKey)
			assertError(t, rec, http.StatusNotFound, chargenet.CodeNotFound, "webhookId")
		}
		rec := v.do(http.MethodGet, "/emsp/v1/webhooks", "", "Authorization", "Bearer "+otherKey)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Empty(t, decode[gen.WebhookPage](t, rec).Data)
		rec = v.do(http.MethodGet, "/emsp/v1/webhooks", "")
		require.Equal(t, http.StatusOK, rec.Code)
		page := decode[gen.WebhookPage](t, rec)
		require.Len(t, page.Data, 1)
		assert.Equal(t, created.Id, page.Data[0].Id)
		assert.True(t, page.Data[0].Enabled, "untouched by the other key")
	})

	t.Run("patch", func(t *testing.T) {
		rec := v.do(http.MethodPatch, "/emsp/v1/webhooks/"+created.Id, `{"enabled": false, "event_types": [{"type": "evse.status.changed", "api_version": "latest"}]}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		w := decode[gen.Webhook](t, rec)
		assert.False(t, w.Enabled)
		assert.Equal(t, []gen.WebhookSubscription{{Type: "evse.status.changed", ApiVersion: ptr("1.2")}}, w.EventTypes)
		assert.Equal(t, created.Url, w.Url, "absent fields keep their value")
		assert.Equal(t, ptr("mine"), w.Description)

		for name, body := range map[string]string{
			"empty":       `{}`,
			"null":        `{"enabled": null}`,
			"unknown":     `{"colour": "red"}`,
			"bad url":     `{"url": "http://receiver.example.com/"}`,
			"bad type":    `{"event_types": [{"type": "evse.gone"}]}`,
			"given twice": `{"enabled": true, "enabled": false}`,
			"NUL":         `{"description": "\u0000"}`,
		} {
			rec := v.do(http.MethodPatch, "/emsp/v1/webhooks/"+created.Id, body)
			assert.Equal(t, http.StatusBadRequest, rec.Code, "%s: %s", name, rec.Body.String())
		}
		rec = v.do(http.MethodGet, "/emsp/v1/webhooks/"+created.Id, "")
		assert.Equal(t, w, decode[gen.Webhook](t, rec), "refused patches change nothing")
	})

	t.Run("rotate", func(t *testing.T) {
		rec := v.do(http.MethodPost, "/emsp/v1/webhooks/"+created.Id+"/secret/rotate", "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		rotated := decode[gen.WebhookWithSecret](t, rec)
		assert.Regexp(t, secretRe, rotated.Secret)
		assert.NotEqual(t, created.Secret, rotated.Secret)
		stored, err := v.store.Webhook(context.Background(), "env", created.Id)
		require.NoError(t, err)
		assert.Equal(t, rotated.Secret, stored.Secret)
		assert.Equal(t, created.Secret, stored.PreviousSecret)
	})

	t.Run("delete", func(t *testing.T) {
		rec := v.do(http.MethodDelete, "/emsp/v1/webhooks/"+created.Id, "")
		assert.Equal(t, http.StatusNoContent, rec.Code)
		assert.Empty(t, rec.Body.String())
		for _, path := range []string{"", "/deliveries", "/secret/rotate"} {
			method := http.MethodGet
			if path == "/secret/rotate" {
				method = http.MethodPost
			}
			assertError(t, v.do(method, "/emsp/v1/webhooks/"+created.Id+path, ""), http.StatusNotFound, chargenet.CodeNotFound, "webhookId")
		}
	})
}

func TestWebhookCreateRefused(t *testing.T) {
	v := newEnv(t, true)
	sub := `"event_types": [{"type": "evse.status.changed"}]`
	tests := []struct {
		name, body, param, says string
	}{
		{"unknown type", `{"url": "https://a.example.com/", "event_types": [{"type": "evse.exploded"}]}`, "event_types[0].type", "evse.exploded"},
		{"unknown version", `{"url": "https://a.example.com/", "event_types": [{"type": "evse.status.changed", "api_version": "9.9"}]}`, "event_types[0].api_version", "9.9"},
		{"type twice", `{"url": "https://a.example.com/", "event_types": [{"type": "evse.status.changed"}, {"type": "evse.status.changed"}]}`, "event_types[1].type", "already"},
		{"no types", `{"url": "https://a.example.com/", "event_types": []}`, "event_types", "event_types"},
		{"http", `{"url": "http://a.example.com/", ` + sub + `}`, "url", "https"},
		{"loopback", `{"url": "https://127.0.0.1:8443/", ` + sub + `}`, "url", "not public"},
		{"localhost", `{"url": "https://localhost/", ` + sub + `}`, "url", "not public"},
		{"private", `{"url": "https://10.1.2.3/", ` + sub + `}`, "url", "not public"},
		{"link-local metadata", `{"url": "https://169.254.169.254/latest", ` + sub + `}`, "url", "not public"},
		{"IPv6 loopback", `{"url": "https://[::1]/", ` + sub + `}`, "url", "not public"},
		{"IPv4-mapped private", `{"url": "https://[::ffff:192.168.0.1]/", ` + sub + `}`, "url", "not public"},
		{"credentials", `{"url": "https://user:pw@a.example.com/", ` + sub + `}`, "url", "credentials"},
		{"relative", `{"url": "/hooks", ` + sub + `}`, "url", "absolute"},
		{"no url", `{` + sub + `}`, "url", "url"},
		{"unknown field", `{"url": "https://a.example.com/", "secret": "mine", ` + sub + `}`, "secret", "secret"},
		{"NUL in description", `{"url": "https://a.example.com/", "description": "a\u0000b", ` + sub + `}`, "description", "NUL"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			rec := v.do(http.MethodPost, "/emsp/v1/webhooks", tt.body)
			body := assertError(t, rec, http.StatusBadRequest, chargenet.CodeInvalidBody, tt.param)
			assert.Contains(t, body.Message, tt.says)
		})
	}
	rec := v.do(http.MethodGet, "/emsp/v1/webhooks", "")
	assert.Empty(t, decode[gen.WebhookPage](t, rec).Data, "nothing was created")
}

func TestWebhookDevelopmentFlag(t *testing.T) {
	v := newEnv(t, true)
	e, err := newServer(v.store, true)
	require.NoError(t, err)
	v.e = e
	rec := v.do(http.MethodPost, "/emsp/v1/webhooks", `{"url": "http://127.0.0.1:9/", "event_types": [{"type": "evse.status.changed"}]}`)
	assert.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
}

func TestWebhookDeliveriesPagination(t *testing.T) {
	v := newEnv(t, false)
	ctx := context.Background()
	ids := make([]string, 2)
	for i := range ids {
		rec := v.do(http.MethodPost, "/emsp/v1/webhooks", createBody)
		require.Equal(t, http.StatusCreated, rec.Code)
		ids[i] = decode[gen.WebhookWithSecret](t, rec).Id
	}
	for i := range 5 {
		rec := v.do(http.MethodPatch, "/v2/evses/1001/connectors/1", fmt.Sprintf(`{"maxElectricPower": %d}`, 10+i))
		require.Equal(t, http.StatusOK, rec.Code)
	}
	// Fail every delivery once, through the store as the dispatcher would.
	at := time.Now()
	ds, err := v.store.ClaimDeliveries(ctx, at, 100, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 10, "5 events × 2 webhooks")
	for i := range ds {
		next := at.Add(time.Hour)
		require.NoError(t, v.store.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &ds[i], Attempt: &chargenet.DeliveryAttempt{Attempt: 1, AttemptedAt: at,
			Outcome: chargenet.OutcomeFailed, HTTPStatus: 500, Error: "receiver answered 500 Internal Server Error", NextAttemptAt: &next}}))
	}

	var seen []int64
	cursor := ""
	for range 5 {
		path := "/emsp/v1/webhooks/" + ids[0] + "/deliveries?limit=2"
		if cursor != "" {
			path += "&cursor=" + cursor
		}
		rec := v.do(http.MethodGet, path, "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		page := decode[gen.DeliveryPage](t, rec)
		for _, d := range page.Data {
			seen = append(seen, d.Id)
			assert.Equal(t, gen.DeliveryOutcome("failed"), d.Outcome)
			assert.Equal(t, ptr(500), d.HttpStatus)
			assert.NotNil(t, d.NextAttemptAt)
		}
		if !page.Pagination.HasMore {
			break
		}
		cursor = *page.Pagination.NextCursor
	}
	require.Len(t, seen, 5)
	for i := 1; i < len(seen); i++ {
		assert.Greater(t, seen[i-1], seen[i], "newest first")
	}
	rec := v.do(http.MethodGet, "/emsp/v1/webhooks/"+ids[1]+"/deliveries?cursor="+cursor, "")
	assertError(t, rec, http.StatusBadRequest, chargenet.CodeInvalidCursor, "cursor")
}

func TestStatusNotifications(t *testing.T) {
	v := withKeys(t, newEnv(t, false))
	ingest := []string{"Authorization", "Bearer " + ingestKey}
	path := "/internal/v1/chargeboxes/501/status-notifications"

	body := assertError(t, v.do(http.MethodPost, path, `{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure"}`),
		http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization")
	assert.Equal(t, ptr(chargenet.ScopeIngest), body.Scope, "a partner key does not hold ingest")
	body = assertError(t, v.do(http.MethodGet, "/v2/evses/1001", "", ingest...), http.StatusForbidden, chargenet.CodeInsufficientScope, "Authorization")
	assert.Equal(t, ptr(chargenet.ScopeInventoryRead), body.Scope, "an ingest key reads nothing")

	rec := v.do(http.MethodPost, path, `{"connectorId": 1, "status": "Faulted", "errorCode": "GroundFailure", "info": "pin 3",
		"vendorId": "ACME", "vendorErrorCode": "E-1", "timestamp": "2026-11-22T10:00:00Z"}`, ingest...)
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	res := decode[gen.StatusNotificationResult](t, rec)
	assert.True(t, res.Applied)
	require.Len(t, res.Evses, 1)
	assert.Equal(t, gen.EvseStatusResult{Uid: 1001, Status: "OUTOFORDER", PreviousStatus: "AVAILABLE", Version: 2}, res.Evses[0])
	evse := decode[gen.EVSE](t, v.do(http.MethodGet, "/v2/evses/1001", ""))
	assert.Equal(t, gen.EvseStatus("OUTOFORDER"), evse.Status)
	assert.Equal(t, &gen.ConnectorStatus{ErrorCode: "GroundFailure", Info: ptr("pin 3"), VendorErrorCode: ptr("E-1")}, evse.Connectors[0].Error)

	logged := decode[gen.EventPage](t, v.do(http.MethodGet, "/emsp/v1/events?actor=ingest", ""))
	require.Len(t, logged.Data, 1, "the notification's event has the ingest key as its actor")
	data, err := logged.Data[0].Data.AsStatusChangedData()
	require.NoError(t, err)
	assert.Equal(t, ptr("ingest"), data.Actor)
	assert.Equal(t, int64(1001), data.Uid)

	rec = v.do(http.MethodPost, path, `{"connectorId": 1, "status": "Available", "errorCode": "NoError", "timestamp": "2026-11-22T09:59:00Z"}`, ingest...)
	require.Equal(t, http.StatusOK, rec.Code)
	assert.False(t, decode[gen.StatusNotificationResult](t, rec).Applied, "an older notification is ignored")

	tests := []struct {
		name, path, body string
		status           int
		code, param      string
	}{
		{"unknown status", path, `{"connectorId": 1, "status": "Sleeping", "errorCode": "NoError"}`, 400, chargenet.CodeInvalidBody, "status"},
		{"unknown error code", path, `{"connectorId": 1, "status": "Available", "errorCode": "Meltdown"}`, 400, chargenet.CodeInvalidBody, "errorCode"},
		{"info too long", path, `{"connectorId": 1, "status": "Available", "errorCode": "NoError", "info": "` + strings.Repeat("x", 51) + `"}`, 400, chargenet.CodeInvalidBody, "info"},
		{"negative connector", path, `{"connectorId": -1, "status": "Available", "errorCode": "NoError"}`, 400, chargenet.CodeInvalidBody, "connectorId"},
		{"bad timestamp", path, `{"connectorId": 1, "status": "Available", "errorCode": "NoError", "timestamp": "yesterday"}`, 400, chargenet.CodeInvalidBody, "timestamp"},
		{"timestamp in the future", path, `{"connectorId": 1, "status": "Available", "errorCode": "NoError", "timestamp": "2099-01-01T00:00:00Z"}`, 400, chargenet.CodeInvalidBody, "timestamp"},
		{"NUL in vendorErrorCode", path, `{"connectorId": 1, "status": "Faulted", "errorCode": "OtherError", "vendorErrorCode": "E\u0000"}`, 400, chargenet.CodeInvalidBody, "vendorErrorCode"},
		{"unknown charge box", "/internal/v1/chargeboxes/9999/status-notifications", `{"connectorId": 1, "status": "Available", "errorCode": "NoError"}`, 404, chargenet.CodeNotFound, "chargeboxId"},
		{"connector beyond the last", path, `{"connectorId": 4, "status": "Available", "errorCode": "NoError"}`, 404, chargenet.CodeNotFound, "connectorId"},
		{"deleted connector", "/internal/v1/chargeboxes/502/status-notifications", `{"connectorId": 7, "status": "Available", "errorCode": "NoError"}`, 409, chargenet.CodeConnectorDeleted, "connectorId"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			before := v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String()
			assertError(t, v.do(http.MethodPost, tt.path, tt.body, ingest...), tt.status, tt.code, tt.param)
			assert.Equal(t, before, v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String(), "nothing changed")
		})
	}
}

func ptr[T any](v T) *T { return &v }

// newServer returns the service over store with devKey, allowing insecure webhook URLs
// when insecure is true.
func newServer(store chargenet.Store, insecure bool) (*echo.Echo, error) {
	return server.New(server.Config{Store: store, Keys: server.NewKeys(store, []string{devKey}),
		Cursors: chargenet.NewCursorCodec([]byte(testSecret)), AllowInsecureWebhooks: insecure})
}
