package storetest

import (
	"encoding/json"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NewWebhook returns a valid, enabled webhook of owner created at created (which should
// be at microsecond precision, as every store keeps times), subscribed to types in
// payload version 1.0, for store tests and benchmarks.
func NewWebhook(owner string, created time.Time, types ...string) chargenet.Webhook {
	w := chargenet.Webhook{
		ID: chargenet.NewID("wh_", created), Owner: owner, URL: "https://receiver.example.com/hooks",
		Description: "test", Enabled: true, Secret: chargenet.NewWebhookSecret(), CreatedAt: created, UpdatedAt: created,
		Subscriptions: []chargenet.Subscription{},
	}
	for _, t := range types {
		w.Subscriptions = append(w.Subscriptions, chargenet.Subscription{Type: t, APIVersion: "1.0"})
	}
	return w
}

func testWebhooks(t *testing.T, open Opener) {
	s := open(t, Options{})
	ctx := t.Context()
	created := now().Add(-time.Hour)
	a := NewWebhook("partner-a", created, chargenet.EventConnectorUpdated, chargenet.EventStatusChanged)
	require.NoError(t, s.CreateWebhook(ctx, &a, nil))

	got, err := s.Webhook(ctx, "partner-a", a.ID)
	require.NoError(t, err)
	assert.Equal(t, &a, got, "read back as created")

	t.Run("other owners do not see it", func(t *testing.T) {
		_, err := s.Webhook(ctx, "partner-b", a.ID)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		_, err = s.UpdateWebhook(ctx, "partner-b", a.ID, chargenet.WebhookPatch{Enabled: ptr(false)}, now())
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		_, err = s.RotateWebhookSecret(ctx, "partner-b", a.ID, chargenet.NewWebhookSecret(), now())
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		requireError(t, s.DeleteWebhook(ctx, "partner-b", a.ID), chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		_, err = s.ListDeliveryAttempts(ctx, "partner-b", a.ID, chargenet.Seek[int64]{Limit: 10})
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		list, err := s.ListWebhooks(ctx, "partner-b", chargenet.Seek[string]{Limit: 10})
		require.NoError(t, err)
		assert.Empty(t, list)
		again, err := s.Webhook(ctx, "partner-a", a.ID)
		require.NoError(t, err)
		assert.Equal(t, &a, again, "unchanged by the other owner's attempts")
	})

	t.Run("duplicate id", func(t *testing.T) {
		dup := NewWebhook("partner-b", created)
		dup.ID = a.ID
		requireError(t, s.CreateWebhook(ctx, &dup, nil), chargenet.ErrConflict, chargenet.CodeConflict, "id")
	})

	t.Run("list pages by id", func(t *testing.T) {
		var want []chargenet.Webhook
		for i := range 5 {
			w := NewWebhook("partner-c", created.Add(time.Duration(i)*time.Millisecond), chargenet.EventStatusChanged)
			require.NoError(t, s.CreateWebhook(ctx, &w, nil))
			want = append(want, w)
		}
		var got []chargenet.Webhook
		seek := chargenet.Seek[string]{Limit: 2}
		for range 4 {
			page, err := s.ListWebhooks(ctx, "partner-c", seek)
			require.NoError(t, err)
			got = append(got, page...)
			if len(page) < seek.Limit {
				break
			}
			seek.Key, seek.HasKey = page[len(page)-1].ID, true
		}
		assert.Equal(t, want, got)
		back, err := s.ListWebhooks(ctx, "partner-c", chargenet.Seek[string]{Key: want[3].ID, HasKey: true, Backward: true, Limit: 2})
		require.NoError(t, err)
		assert.Equal(t, []chargenet.Webhook{want[2], want[1]}, back)
		at, err := s.ListWebhooks(ctx, "partner-c", chargenet.Seek[string]{Key: want[3].ID, HasKey: true, Inclusive: true, Limit: 3})
		require.NoError(t, err)
		assert.Equal(t, []chargenet.Webhook{want[3], want[4]}, at, "from the key's webhook")
	})

	t.Run("update", func(t *testing.T) {
		at := now()
		subs := []chargenet.Subscription{{Type: chargenet.EventStatusChanged, APIVersion: "1.0"}}
		got, err := s.UpdateWebhook(ctx, "partner-a", a.ID, chargenet.WebhookPatch{
			URL: ptr("https://other.example.com/x"), Subscriptions: &subs, Enabled: ptr(false)}, at)
		require.NoError(t, err)
		want := a
		want.URL, want.Subscriptions, want.Enabled, want.UpdatedAt = "https://other.example.com/x", subs, false, at
		assert.Equal(t, &want, got)
		reread, err := s.Webhook(ctx, "partner-a", a.ID)
		require.NoError(t, err)
		assert.Equal(t, got, reread)

		got, err = s.UpdateWebhook(ctx, "partner-a", a.ID, chargenet.WebhookPatch{Description: ptr("renamed"), Enabled: ptr(true)}, at)
		require.NoError(t, err)
		want.Description, want.Enabled = "renamed", true
		assert.Equal(t, &want, got, "fields not in the patch keep their value")
		a = *got
	})

	t.Run("rotate", func(t *testing.T) {
		at := now()
		secret := chargenet.NewWebhookSecret()
		got, err := s.RotateWebhookSecret(ctx, "partner-a", a.ID, secret, at)
		require.NoError(t, err)
		assert.Equal(t, secret, got.Secret)
		assert.Equal(t, a.Secret, got.PreviousSecret, "the old secret stays valid for the overlap")
		assert.Equal(t, at.Add(chargenet.SecretOverlap), got.PreviousSecretUntil)
		reread, err := s.Webhook(ctx, "partner-a", a.ID)
		require.NoError(t, err)
		assert.Equal(t, got, reread)
	})

	t.Run("delete", func(t *testing.T) {
		require.NoError(t, s.DeleteWebhook(ctx, "partner-a", a.ID))
		_, err := s.Webhook(ctx, "partner-a", a.ID)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
		requireError(t, s.DeleteWebhook(ctx, "partner-a", a.ID), chargenet.ErrNotFound, chargenet.CodeNotFound, "webhookId")
	})
}

// claimAll claims every delivery due at at, with a one-minute lease.
func claimAll(t testing.TB, s chargenet.Store, at time.Time) []chargenet.Delivery {
	t.Helper()
	ds, err := s.ClaimDeliveries(t.Context(), at, 100, time.Minute)
	require.NoError(t, err)
	return ds
}

// claimAndAck claims every delivery due at at and records a successful attempt for each.
func claimAndAck(t testing.TB, s chargenet.Store, at time.Time) []chargenet.Delivery {
	t.Helper()
	ds := claimAll(t, s, at)
	for i := range ds {
		require.NoError(t, s.RecordAttempts(t.Context(), chargenet.AttemptRecord{Delivery: &ds[i], Attempt: &chargenet.DeliveryAttempt{Attempt: ds[i].Attempt, AttemptedAt: at,
			Outcome: chargenet.OutcomeSucceeded, HTTPStatus: 200}}))
	}
	return ds
}

func testOutbox(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now()

	// No subscriber: an update produces nothing to deliver.
	_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(20.0)}, "", "", start)
	require.NoError(t, err)
	assert.Empty(t, claimAll(t, s, start.Add(time.Hour)))

	w1 := NewWebhook("p", start, chargenet.EventConnectorUpdated)
	w2 := NewWebhook("p", start, chargenet.EventConnectorUpdated, chargenet.EventStatusChanged)
	w3 := NewWebhook("p", start, chargenet.EventStatusChanged)
	for _, w := range []*chargenet.Webhook{&w1, &w2, &w3} {
		require.NoError(t, s.CreateWebhook(ctx, w, nil))
	}

	at := now()
	e, err := s.UpdateConnector(ctx, 1002, 2, chargenet.ConnectorPatch{MaxElectricPower: ptr(99.0)}, "", "", at)
	require.NoError(t, err)

	t.Run("a refused update records nothing", func(t *testing.T) {
		_, err := s.UpdateConnector(ctx, 1002, 2, chargenet.ConnectorPatch{MaxElectricPower: ptr(-1.0)}, "", "", at)
		require.Error(t, err)
		_, err = s.UpdateConnector(ctx, 1002, 2, chargenet.ConnectorPatch{MaxElectricPower: ptr(50.0)}, `"1"`, "", at)
		require.ErrorIs(t, err, chargenet.ErrPreconditionFailed)
	})

	ds := claimAll(t, s, at)
	require.Len(t, ds, 2, "one delivery per subscribed webhook")
	hooks := map[string]bool{}
	for _, d := range ds {
		hooks[d.Webhook.ID] = true
		assert.Equal(t, 1, d.Attempt)
		assert.Equal(t, "1.0", d.APIVersion)
		assert.Equal(t, chargenet.EventConnectorUpdated, d.Event.Type)
		assert.Equal(t, ds[0].Event.ID, d.Event.ID, "the same event for both")
		assert.True(t, d.Event.Time.Equal(at.Truncate(time.Microsecond)), "event time %v is the update's time %v", d.Event.Time, at)
		var data struct {
			UID       int64 `json:"uid"`
			Version   int64 `json:"version"`
			Connector struct {
				ID               int64   `json:"id"`
				MaxElectricPower float64 `json:"maxElectricPower"`
			} `json:"connector"`
		}
		require.NoError(t, json.Unmarshal(d.Event.Data, &data))
		assert.Equal(t, int64(1002), data.UID)
		assert.Equal(t, e.Version, data.Version)
		assert.Equal(t, int64(2), data.Connector.ID)
		assert.Equal(t, 99.0, data.Connector.MaxElectricPower)
		assert.NotEmpty(t, d.Webhook.Secret)
		assert.Equal(t, w1.URL, d.Webhook.URL)
	}
	assert.Equal(t, map[string]bool{w1.ID: true, w2.ID: true}, hooks)
	assert.Empty(t, claimAll(t, s, at), "leased deliveries are not claimed again")

	byHook := map[string]*chargenet.Delivery{}
	for i := range ds {
		byHook[ds[i].Webhook.ID] = &ds[i]
	}

	t.Run("failure schedules a retry", func(t *testing.T) {
		d := byHook[w1.ID]
		next := at.Add(5 * time.Second)
		require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: d, Attempt: &chargenet.DeliveryAttempt{Attempt: 1, AttemptedAt: at, Outcome: chargenet.OutcomeFailed,
			HTTPStatus: 503, Error: "receiver answered 503", Duration: 12 * time.Millisecond, NextAttemptAt: &next}}))
		assert.Empty(t, claimAll(t, s, next.Add(-time.Millisecond)), "not due before the retry time")
		again := claimAll(t, s, next)
		require.Len(t, again, 1)
		assert.Equal(t, d.ID, again[0].ID)
		assert.Equal(t, 2, again[0].Attempt)
		require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &again[0], Attempt: &chargenet.DeliveryAttempt{Attempt: 2, AttemptedAt: next,
			Outcome: chargenet.OutcomeSucceeded, HTTPStatus: 204, Duration: 3 * time.Millisecond}}))
		assert.Empty(t, claimAll(t, s, next.Add(time.Second)), "a delivered event is not claimed again")

		attempts, err := s.ListDeliveryAttempts(ctx, "p", w1.ID, chargenet.Seek[int64]{Backward: true, Limit: 10})
		require.NoError(t, err)
		require.Len(t, attempts, 2)
		assert.Equal(t, chargenet.OutcomeSucceeded, attempts[0].Outcome, "newest first")
		assert.Equal(t, 2, attempts[0].Attempt)
		assert.Nil(t, attempts[0].NextAttemptAt)
		assert.Equal(t, chargenet.OutcomeFailed, attempts[1].Outcome)
		assert.Equal(t, 503, attempts[1].HTTPStatus)
		assert.Equal(t, "receiver answered 503", attempts[1].Error)
		assert.Equal(t, 12*time.Millisecond, attempts[1].Duration)
		require.NotNil(t, attempts[1].NextAttemptAt)
		assert.True(t, next.Equal(*attempts[1].NextAttemptAt))
		assert.Equal(t, ds[0].Event.ID, attempts[1].EventID)
		assert.Equal(t, chargenet.EventConnectorUpdated, attempts[1].EventType)
		assert.Greater(t, attempts[0].ID, attempts[1].ID)
	})

	t.Run("an expired lease makes it due again", func(t *testing.T) {
		again := claimAll(t, s, at.Add(2*time.Minute))
		require.Len(t, again, 1)
		assert.Equal(t, w2.ID, again[0].Webhook.ID)
		assert.Equal(t, 2, again[0].Attempt, "the lost attempt counts")
		byHook[w2.ID] = &again[0]
	})

	t.Run("410 disables the webhook", func(t *testing.T) {
		d := byHook[w2.ID]
		when := at.Add(2 * time.Minute)
		require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: d, Attempt: &chargenet.DeliveryAttempt{Attempt: 2, AttemptedAt: when, Outcome: chargenet.OutcomeGone, HTTPStatus: 410, Error: "receiver answered 410 Gone"}}))
		w, err := s.Webhook(ctx, "p", w2.ID)
		require.NoError(t, err)
		assert.False(t, w.Enabled)
		assert.Contains(t, w.DisabledReason, "410")
		// Later events for it wait while it is disabled.
		_, err = s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(45.0)}, "", "", when)
		require.NoError(t, err)
		ds := claimAll(t, s, when.Add(time.Hour))
		require.Len(t, ds, 1)
		assert.Equal(t, w1.ID, ds[0].Webhook.ID, "only the enabled webhook")
		_, err = s.UpdateWebhook(ctx, "p", w2.ID, chargenet.WebhookPatch{Enabled: ptr(true)}, when)
		require.NoError(t, err)
		ds = claimAll(t, s, when.Add(time.Hour))
		require.Len(t, ds, 1, "re-enabled: its waiting event is due")
		assert.Equal(t, w2.ID, ds[0].Webhook.ID)
		w, err = s.Webhook(ctx, "p", w2.ID)
		require.NoError(t, err)
		assert.Empty(t, w.DisabledReason)
	})

	t.Run("deleting a webhook drops its deliveries", func(t *testing.T) {
		when := at.Add(3 * time.Hour)
		_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(21.0)}, "", "", when)
		require.NoError(t, err)
		require.NoError(t, s.DeleteWebhook(ctx, "p", w1.ID))
		require.NoError(t, s.DeleteWebhook(ctx, "p", w2.ID))
		assert.Empty(t, claimAll(t, s, when.Add(time.Hour)))
	})
}

// testReceiverDown checks that a failure saying the receiver is down (no answer, 5xx,
// 429) holds back the webhook's other pending deliveries until its retry, and that a
// failure of one message (a 4xx) does not.
func testReceiverDown(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now()
	w := NewWebhook("p", start, chargenet.EventConnectorUpdated)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))
	update := func(p float64, at time.Time) {
		_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(p)}, "", "", at)
		require.NoError(t, err)
	}
	claimOne := func(at time.Time) chargenet.Delivery {
		ds, err := s.ClaimDeliveries(ctx, at, 1, time.Minute)
		require.NoError(t, err)
		require.Len(t, ds, 1)
		return ds[0]
	}
	fail := func(d chargenet.Delivery, status int, at, next time.Time) {
		require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &d, Attempt: &chargenet.DeliveryAttempt{
			Attempt: d.Attempt, AttemptedAt: at, Outcome: chargenet.OutcomeFailed, HTTPStatus: status, NextAttemptAt: &next}}))
	}

	for _, p := range []float64{31, 32, 33} {
		update(p, start)
	}
	first := claimOne(start)
	retry := start.Add(5 * time.Minute)
	fail(first, 503, start, retry)
	assert.Empty(t, claimAll(t, s, start.Add(time.Minute)), "the other two wait for the retry of a receiver that answered 503")
	ds := claimAndAck(t, s, retry)
	assert.Len(t, ds, 3, "all three are due at the retry")

	t2 := retry.Add(time.Hour)
	update(34, t2)
	update(35, t2)
	one := claimOne(t2)
	fail(one, 400, t2, t2.Add(5*time.Minute))
	ds = claimAll(t, s, t2.Add(time.Second))
	require.Len(t, ds, 1, "a 400 is about one message: the other delivery is still due")
	assert.NotEqual(t, one.ID, ds[0].ID)
}

func testStatusNotification(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now()
	w := NewWebhook("p", start, chargenet.EventStatusChanged)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))
	notify := func(n chargenet.StatusNotification, at time.Time) (*chargenet.StatusResult, error) {
		return s.ApplyStatusNotification(ctx, &n, "", at)
	}

	// Charge box 501 holds EVSE 1001 (OCPP connector 1) and 1002 (OCPP 2 and 3).
	before, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	require.Equal(t, chargenet.StatusCharging, before.Status)
	t1 := start.Add(-time.Minute)
	res, err := notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 3, Status: "Faulted", ErrorCode: "GroundFailure",
		Info: "pin 3", VendorErrorCode: "E-1", Timestamp: t1}, start)
	require.NoError(t, err)
	assert.Equal(t, &chargenet.StatusResult{Applied: true, EVSEs: []chargenet.StatusChange{
		{UID: 1002, Status: chargenet.StatusOutOfOrder, Previous: chargenet.StatusCharging, Version: before.Version + 1}}}, res)
	after, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, chargenet.StatusOutOfOrder, after.Status)
	assert.Equal(t, before.Version+1, after.Version)
	assert.Equal(t, &chargenet.ConnectorError{Code: "GroundFailure", Info: "pin 3", VendorErrorCode: "E-1"}, after.Connectors[1].Error)
	assert.Equal(t, before.Connectors[0], after.Connectors[0], "the other connector is unchanged")

	ds := claimAndAck(t, s, start)
	require.Len(t, ds, 1)
	assert.Equal(t, chargenet.EventStatusChanged, ds[0].Event.Type)
	var data map[string]any
	require.NoError(t, json.Unmarshal(ds[0].Event.Data, &data))
	assert.Equal(t, "OUTOFORDER", data["status"])
	assert.Equal(t, "CHARGING", data["previousStatus"])
	assert.EqualValues(t, 3, data["ocppConnectorId"])
	assert.EqualValues(t, after.Version, data["version"])

	t.Run("older or repeated notifications are ignored", func(t *testing.T) {
		for _, ts := range []time.Time{t1, t1.Add(-time.Second)} {
			res, err := notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 3, Status: "Available", ErrorCode: "NoError", Timestamp: ts}, start)
			require.NoError(t, err)
			assert.False(t, res.Applied)
			assert.Empty(t, res.EVSEs)
		}
		again, err := s.EVSE(ctx, 1002)
		require.NoError(t, err)
		assert.Equal(t, after, again)
		assert.Empty(t, claimAndAck(t, s, start.Add(time.Hour)))
	})

	t.Run("same status, new error: no event, version moves", func(t *testing.T) {
		res, err := notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 3, Status: "Faulted", ErrorCode: "HighTemperature", Timestamp: t1.Add(time.Second)}, start)
		require.NoError(t, err)
		assert.True(t, res.Applied)
		assert.Equal(t, after.Version+1, res.EVSEs[0].Version)
		assert.Empty(t, claimAndAck(t, s, start.Add(time.Hour)))
		e, err := s.EVSE(ctx, 1002)
		require.NoError(t, err)
		assert.Equal(t, &chargenet.ConnectorError{Code: "HighTemperature"}, e.Connectors[1].Error)
	})

	t.Run("NoError clears and connector 0 addresses the whole box", func(t *testing.T) {
		res, err := notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 0, Status: "Available", ErrorCode: "NoError", Timestamp: t1.Add(2 * time.Second)}, start)
		require.NoError(t, err)
		require.True(t, res.Applied)
		require.Len(t, res.EVSEs, 2)
		for i, uid := range []int64{1001, 1002} {
			assert.Equal(t, uid, res.EVSEs[i].UID)
			e, err := s.EVSE(ctx, uid)
			require.NoError(t, err)
			assert.Equal(t, chargenet.StatusAvailable, e.Status)
			for _, c := range e.Connectors {
				assert.Nil(t, c.Error, "EVSE %d connector %d", uid, c.ID)
			}
		}
		ds := claimAndAck(t, s, start.Add(time.Hour))
		require.Len(t, ds, 1, "1001 was AVAILABLE already: one status change, for 1002")
	})

	t.Run("errors", func(t *testing.T) {
		snap := takeSnapshot(t, s)
		ts := start.Add(time.Hour)
		_, err := notify(chargenet.StatusNotification{ChargeboxID: 9999, ConnectorID: 1, Status: "Available", ErrorCode: "NoError", Timestamp: ts}, ts)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "chargeboxId")
		_, err = notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 4, Status: "Available", ErrorCode: "NoError", Timestamp: ts}, ts)
		requireError(t, err, chargenet.ErrNotFound, chargenet.CodeNotFound, "connectorId")
		// Charge box 502: 1003 has connectors 1-3 (OCPP 1-3), 1004 has 1-4 (OCPP 4-7), its 4th deleted.
		_, err = notify(chargenet.StatusNotification{ChargeboxID: 502, ConnectorID: 7, Status: "Available", ErrorCode: "NoError", Timestamp: ts}, ts)
		requireError(t, err, chargenet.ErrConflict, chargenet.CodeConnectorDeleted, "connectorId")
		_, err = notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: "Sleeping", ErrorCode: "NoError", Timestamp: ts}, ts)
		requireError(t, err, chargenet.ErrInvalid, chargenet.CodeInvalidBody, "status")
		_, err = notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: "Available", ErrorCode: "NoError",
			Timestamp: ts.Add(chargenet.MaxClockSkew + time.Second)}, ts)
		requireError(t, err, chargenet.ErrInvalid, chargenet.CodeInvalidBody, "timestamp")
		_, err = notify(chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: "Available", ErrorCode: "OtherError",
			Info: "a\x00b", Timestamp: ts}, ts)
		requireError(t, err, chargenet.ErrInvalid, chargenet.CodeInvalidBody, "info")
		assert.Equal(t, snap, takeSnapshot(t, s), "nothing changed")
	})

	t.Run("OCPP numbering follows uid then connector id", func(t *testing.T) {
		ts := start.Add(2 * time.Hour)
		for k, want := range map[int]string{4: "1004/1", 6: "1004/3", 2: "1003/2"} {
			res, err := notify(chargenet.StatusNotification{ChargeboxID: 502, ConnectorID: k, Status: "Faulted", ErrorCode: "OtherError",
				Info: fmt.Sprint(k), Timestamp: ts}, ts)
			require.NoError(t, err)
			require.Len(t, res.EVSEs, 1)
			var uid, cid int64
			_, _ = fmt.Sscanf(want, "%d/%d", &uid, &cid)
			assert.Equal(t, uid, res.EVSEs[0].UID, "OCPP %d", k)
			e, err := s.EVSE(ctx, uid)
			require.NoError(t, err)
			require.NotNil(t, e.Connector(cid).Error, "OCPP %d is %s", k, want)
			assert.Equal(t, fmt.Sprint(k), e.Connector(cid).Error.Info)
		}
	})
}

// testAnnounce checks chargenet.Hooks.OnEvents: the store calls the function once per
// commit that queued deliveries, before the change returns, and never for a change
// without a subscriber or a refused one.
func testAnnounce(t *testing.T, open Opener) {
	hooks := new(chargenet.Hooks)
	s, _ := demoStoreWith(t, open, Options{Hooks: hooks})
	ctx := t.Context()
	var n atomic.Int64
	hooks.OnEvents(func() { n.Add(1) })
	patch := func(power float64) error {
		_, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: &power}, "", "", now())
		return err
	}
	status := func(ocpp string, at time.Time) {
		code := chargenet.ErrorCode("NoError")
		if ocpp == "Faulted" {
			code = "GroundFailure"
		}
		_, err := s.ApplyStatusNotification(ctx, &chargenet.StatusNotification{ChargeboxID: 501, ConnectorID: 1, Status: ocpp,
			ErrorCode: code, Timestamp: at}, "",
			at)

		require.NoError(t, err)
	}

	require.NoError(t, patch(11))
	status("Faulted", now())
	assert.Zero(t, n.Load(), "no subscriber: nothing to announce")

	w := NewWebhook("p", now(), chargenet.EventConnectorUpdated, chargenet.EventStatusChanged)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))
	require.NoError(t, patch(12))
	assert.Equal(t, int64(1), n.Load(), "a PATCH with a subscriber is announced before it returns")
	require.Error(t, patch(-1))
	assert.Equal(t, int64(1), n.Load(), "a refused PATCH queues nothing")
	status("Available", now())
	assert.Equal(t, int64(2), n.Load(), "a status change with a subscriber is announced")
	status("Available", now())
	assert.Equal(t, int64(2), n.Load(), "a notification that changes no status queues nothing")
}
