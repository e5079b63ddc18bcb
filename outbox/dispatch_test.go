package outbox_test

import (
	"context"
	"encoding/json"
	"io"
	"net/http"
	"net/http/httptest"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/internal/sqlitetest"
	"github.com/chargenet/chargenet/outbox"
	"github.com/chargenet/chargenet/sqlite"
	standardwebhooks "github.com/standard-webhooks/standard-webhooks/libraries/go"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// delivery is one request a test receiver got.
type delivery struct {
	header http.Header
	body   []byte
}

// receiver is an httptest server answering each request with answer(n), n counting
// from 1, and keeping what it got.
type receiver struct {
	*httptest.Server
	mu  sync.Mutex
	got []delivery
}

func newReceiver(t *testing.T, answer func(n int, w http.ResponseWriter)) *receiver {
	r := &receiver{}
	r.Server = httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, req *http.Request) {
		body, _ := io.ReadAll(req.Body)
		r.mu.Lock()
		r.got = append(r.got, delivery{req.Header.Clone(), body})
		n := len(r.got)
		r.mu.Unlock()
		answer(n, w)
	}))
	t.Cleanup(r.Close)
	return r
}

func (r *receiver) deliveries() []delivery {
	r.mu.Lock()
	defer r.mu.Unlock()
	return append([]delivery(nil), r.got...)
}

func status(code int) func(int, http.ResponseWriter) {
	return func(_ int, w http.ResponseWriter) { w.WriteHeader(code) }
}

type fixture struct {
	store *sqlite.Store
	hook  *chargenet.Webhook
}

// newFixture opens a store with the demo inventory and a webhook on url subscribed to
// evse.connector.updated.
func newFixture(t *testing.T, url string) *fixture {
	ctx := context.Background()
	s, err := sqlite.Open(ctx, sqlitetest.NewFile(t))
	require.NoError(t, err)
	t.Cleanup(func() { _ = s.Close() })
	require.NoError(t, s.Import(ctx, chargenet.DemoInventory(time.Now())))
	now := time.Now()
	w := &chargenet.Webhook{ID: chargenet.NewID("wh_", now), Owner: "p", URL: url, Enabled: true, Secret: chargenet.NewWebhookSecret(),
		CreatedAt: now, UpdatedAt: now, Subscriptions: []chargenet.Subscription{{Type: chargenet.EventConnectorUpdated, APIVersion: "1.0"}}}
	require.NoError(t, s.CreateWebhook(ctx, w, nil))
	return &fixture{store: s, hook: w}
}

// change makes an update that produces one event and returns the EVSE version.
func (f *fixture) change(t *testing.T, power float64) int64 {
	e, err := f.store.UpdateConnector(context.Background(), 1002, 1, chargenet.ConnectorPatch{MaxElectricPower: &power}, "", "", time.Now())
	require.NoError(t, err)
	return e.Version
}

// run starts a dispatcher with cfg (Store set, fast defaults) until the test ends.
func (f *fixture) run(t *testing.T, cfg outbox.Config) *outbox.Dispatcher {
	cfg.Store = f.store
	if cfg.Schedule == nil {
		cfg.Schedule = []time.Duration{20 * time.Millisecond, 20 * time.Millisecond, 20 * time.Millisecond}
	}
	if cfg.Poll == 0 {
		cfg.Poll = 10 * time.Millisecond
	}
	if cfg.Timeout == 0 {
		cfg.Timeout = 2 * time.Second
	}
	cfg.Jitter = -1
	d, err := outbox.New(cfg)
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { defer close(done); d.Run(ctx) }()
	t.Cleanup(func() { cancel(); <-done })
	return d
}

// attempts waits until n attempts are recorded for the fixture's webhook and returns
// them, oldest first.
func (f *fixture) attempts(t *testing.T, n int) []chargenet.DeliveryAttempt {
	var got []chargenet.DeliveryAttempt
	require.Eventually(t, func() bool {
		var err error
		got, err = f.store.ListDeliveryAttempts(context.Background(), "p", f.hook.ID, chargenet.Seek[int64]{Limit: 100})
		require.NoError(t, err)
		return len(got) >= n
	}, 10*time.Second, 5*time.Millisecond, "%d attempts recorded", n)
	return got
}

func TestDeliverySigned(t *testing.T) {
	rcv := newReceiver(t, status(http.StatusOK))
	f := newFixture(t, rcv.URL+"/hooks")
	version := f.change(t, 42)
	f.run(t, outbox.Config{AllowInsecure: true})
	a := f.attempts(t, 1)
	require.Len(t, a, 1)
	assert.Equal(t, chargenet.OutcomeSucceeded, a[0].Outcome)
	assert.Equal(t, 200, a[0].HTTPStatus)
	assert.Nil(t, a[0].NextAttemptAt)

	got := rcv.deliveries()
	require.Len(t, got, 1)
	d := got[0]
	assert.Regexp(t, `^evt_[0-9A-Z]{26}$`, d.header.Get("webhook-id"))
	assert.Equal(t, a[0].EventID, d.header.Get("webhook-id"))
	assert.Equal(t, "application/json", d.header.Get("Content-Type"))
	verifier, err := standardwebhooks.NewWebhook(f.hook.Secret)
	require.NoError(t, err)
	require.NoError(t, verifier.Verify(d.body, d.header), "the Standard Webhooks library accepts the signature")
	other, err := standardwebhooks.NewWebhook(chargenet.NewWebhookSecret())
	require.NoError(t, err)
	assert.Error(t, other.Verify(d.body, d.header), "another secret does not")

	var body struct {
		Type      string    `json:"type"`
		Timestamp time.Time `json:"timestamp"`
		Data      struct {
			UID       int64 `json:"uid"`
			Version   int64 `json:"version"`
			Connector struct {
				ID               int64   `json:"id"`
				MaxElectricPower float64 `json:"maxElectricPower"`
			} `json:"connector"`
		} `json:"data"`
	}
	require.NoError(t, json.Unmarshal(d.body, &body))
	assert.Equal(t, chargenet.EventConnectorUpdated, body.Type)
	assert.Equal(t, int64(1002), body.Data.UID)
	assert.Equal(t, version, body.Data.Version)
	assert.Equal(t, 42.0, body.Data.Connector.MaxElectricPower)
	assert.WithinDuration(t, time.Now(), body.Timestamp, time.Minute)
	var keys map[string]json.RawMessage
	require.NoError(t, json.Unmarshal(d.body, &keys))
	assert.Len(t, keys, 3, "the body is {type, timestamp, data}: %s", d.body)
}

func TestRetriesUntilSuccess(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n <= 2 {
			w.WriteHeader(http.StatusInternalServerError)
			return
		}
		w.WriteHeader(http.StatusNoContent)
	})
	f := newFixture(t, rcv.URL)
	f.change(t, 43)
	f.run(t, outbox.Config{AllowInsecure: true})
	a := f.attempts(t, 3)
	require.Len(t, a, 3)
	for i, want := range []string{chargenet.OutcomeFailed, chargenet.OutcomeFailed, chargenet.OutcomeSucceeded} {
		assert.Equal(t, want, a[i].Outcome, "attempt %d", i+1)
		assert.Equal(t, i+1, a[i].Attempt)
	}
	for _, failed := range a[:2] {
		assert.Contains(t, failed.Error, "500", "attempt %d", failed.Attempt)
		assert.Equal(t, http.StatusInternalServerError, failed.HTTPStatus, "attempt %d", failed.Attempt)
		if assert.NotNil(t, failed.NextAttemptAt, "attempt %d schedules a retry", failed.Attempt) {
			assert.False(t, failed.NextAttemptAt.Before(failed.AttemptedAt.Add(20*time.Millisecond)), "the retry waits for the schedule")
		}
	}
	assert.Nil(t, a[2].NextAttemptAt, "nothing after a success")
	got := rcv.deliveries()
	require.Len(t, got, 3)
	for _, d := range got {
		assert.Equal(t, a[0].EventID, d.header.Get("webhook-id"), "every attempt carries the same webhook-id")
	}
}

func TestRetriesExhausted(t *testing.T) {
	rcv := newReceiver(t, status(http.StatusServiceUnavailable))
	f := newFixture(t, rcv.URL)
	f.change(t, 44)
	f.run(t, outbox.Config{AllowInsecure: true, Schedule: []time.Duration{20 * time.Millisecond}})
	a := f.attempts(t, 2)
	require.Len(t, a, 2)
	assert.NotNil(t, a[0].NextAttemptAt, "the schedule's one retry")
	assert.Nil(t, a[1].NextAttemptAt)
	assert.Contains(t, a[1].Error, "given up")
	ds, err := f.store.ClaimDeliveries(context.Background(), time.Now().Add(48*time.Hour), 10, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, ds, "nothing left to deliver")
	time.Sleep(60 * time.Millisecond) // a few polls: a bounded wait for what must not happen
	assert.Len(t, rcv.deliveries(), 2)
	a, err = f.store.ListDeliveryAttempts(context.Background(), "p", f.hook.ID, chargenet.Seek[int64]{Limit: 100})
	require.NoError(t, err)
	assert.Len(t, a, 2, "no third attempt")
}

func TestGoneDisables(t *testing.T) {
	var gone atomic.Bool
	gone.Store(true)
	rcv := newReceiver(t, func(_ int, w http.ResponseWriter) {
		if gone.Load() {
			w.WriteHeader(http.StatusGone)
			return
		}
		w.WriteHeader(http.StatusOK)
	})
	f := newFixture(t, rcv.URL)
	f.change(t, 45)
	d := f.run(t, outbox.Config{AllowInsecure: true})
	a := f.attempts(t, 1)
	assert.Equal(t, chargenet.OutcomeGone, a[0].Outcome)
	w, err := f.store.Webhook(context.Background(), "p", f.hook.ID)
	require.NoError(t, err)
	assert.False(t, w.Enabled)
	assert.Contains(t, w.DisabledReason, "410")

	f.change(t, 46.5)
	d.Notify()
	time.Sleep(100 * time.Millisecond) // ten polls
	assert.Len(t, rcv.deliveries(), 1, "nothing is sent to a disabled webhook")

	gone.Store(false)
	on := true
	_, err = f.store.UpdateWebhook(context.Background(), "p", f.hook.ID, chargenet.WebhookPatch{Enabled: &on}, time.Now())
	require.NoError(t, err)
	d.Notify()
	a = f.attempts(t, 2)
	assert.Equal(t, chargenet.OutcomeSucceeded, a[1].Outcome, "re-enabled: the waiting event is delivered")
	got := rcv.deliveries()
	require.Len(t, got, 2)
	assert.NotEqual(t, got[0].header.Get("webhook-id"), got[1].header.Get("webhook-id"), "the later event, not the one answered 410")
	assert.Equal(t, a[1].EventID, got[1].header.Get("webhook-id"))
	assert.Contains(t, string(got[1].body), `"maxElectricPower":46.5`)
	w, err = f.store.Webhook(context.Background(), "p", f.hook.ID)
	require.NoError(t, err)
	assert.True(t, w.Enabled)
	assert.Empty(t, w.DisabledReason)
}

func TestTimeout(t *testing.T) {
	rcv := newReceiver(t, func(n int, w http.ResponseWriter) {
		if n == 1 {
			time.Sleep(500 * time.Millisecond)
		}
		w.WriteHeader(http.StatusOK)
	})
	f := newFixture(t, rcv.URL)
	f.change(t, 47)
	f.run(t, outbox.Config{AllowInsecure: true, Timeout: 100 * time.Millisecond})
	a := f.attempts(t, 2)
	assert.Equal(t, chargenet.OutcomeFailed, a[0].Outcome)
	assert.Contains(t, a[0].Error, "timeout")
	assert.Zero(t, a[0].HTTPStatus)
	assert.Equal(t, chargenet.OutcomeSucceeded, a[1].Outcome)
	assert.Equal(t, http.StatusOK, a[1].HTTPStatus)
	assert.Len(t, rcv.deliveries(), 2)
}

func TestPrivateAddressRefused(t *testing.T) {
	rcv := newReceiver(t, status(http.StatusOK))
	f := newFixture(t, rcv.URL) // 127.0.0.1: refused without AllowInsecure
	f.change(t, 48)
	f.run(t, outbox.Config{})
	a := f.attempts(t, 1)
	assert.Equal(t, chargenet.OutcomeFailed, a[0].Outcome)
	assert.Contains(t, a[0].Error, "not public")
	assert.Empty(t, rcv.deliveries(), "no connection was made")
}

func TestRedirectNotFollowed(t *testing.T) {
	target := newReceiver(t, status(http.StatusOK))
	rcv := newReceiver(t, func(_ int, w http.ResponseWriter) {
		w.Header().Set("Location", target.URL)
		w.WriteHeader(http.StatusFound)
	})
	f := newFixture(t, rcv.URL)
	f.change(t, 49)
	f.run(t, outbox.Config{AllowInsecure: true})
	a := f.attempts(t, 1)
	assert.Equal(t, chargenet.OutcomeFailed, a[0].Outcome)
	assert.Equal(t, http.StatusFound, a[0].HTTPStatus)
	assert.Empty(t, target.deliveries())
}

func TestSignDuringRotation(t *testing.T) {
	now := time.Now()
	w := &chargenet.Webhook{ID: "wh_x", Secret: chargenet.NewWebhookSecret(), PreviousSecret: chargenet.NewWebhookSecret(),
		PreviousSecretUntil: now.Add(time.Hour)}
	body := []byte(`{"type":"evse.status.changed"}`)
	header := func(sig string) http.Header {
		h := http.Header{}
		h.Set("webhook-id", "evt_1")
		h.Set("webhook-timestamp", strconv.FormatInt(now.Unix(), 10))
		h.Set("webhook-signature", sig)
		return h
	}
	sig, err := outbox.Sign(w, "evt_1", now, body)
	require.NoError(t, err)
	parts := strings.Split(sig, " ")
	require.Len(t, parts, 2, "both secrets sign during the overlap")
	verifier := func(secret string) *standardwebhooks.Webhook {
		v, err := standardwebhooks.NewWebhook(secret)
		require.NoError(t, err)
		return v
	}
	current, previous := verifier(w.Secret), verifier(w.PreviousSecret)
	for i, v := range []*standardwebhooks.Webhook{current, previous} {
		assert.True(t, strings.HasPrefix(parts[i], "v1,"), parts[i])
		assert.NoError(t, v.Verify(body, header(parts[i])), "signature %d alone, with its secret", i)
		assert.Error(t, v.Verify(body, header(parts[1-i])), "signature %d is not made with the other secret", 1-i)
		assert.NoError(t, v.Verify(body, header(sig)), "the whole header")
	}
	later := now.Add(2 * time.Hour)
	sig, err = outbox.Sign(w, "evt_1", later, body)
	require.NoError(t, err)
	require.Len(t, strings.Fields(sig), 1, "after the overlap only the current secret signs")
	assert.True(t, strings.HasPrefix(sig, "v1,"), sig)
	// Verify would refuse the future timestamp, so compare with the library's own
	// signature made with the current secret.
	want, err := current.Sign("evt_1", later, body)
	require.NoError(t, err)
	assert.Equal(t, want, sig, "signed with the current secret")
	w.Secret = "whsec_not base64!"
	_, err = outbox.Sign(w, "evt_1", now, body)
	assert.Error(t, err)
}
