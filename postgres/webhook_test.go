package postgres_test

import (
	"encoding/json"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/postgres"
	"github.com/chargenet/chargenet/storetest"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// TestClaimDeliveriesConcurrent claims from two stores on one database (two replicas)
// in several goroutines at once: every delivery is leased exactly once.
func TestClaimDeliveriesConcurrent(t *testing.T) {
	ctx := t.Context()
	stores := openReplicas(t)
	s := stores[0]
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, s.Import(ctx, &chargenet.Inventory{EVSEs: []chargenet.EVSE{{
		UID: 1, EvseID: "DE*TST*E1", ChargeboxID: 1, Status: chargenet.StatusAvailable, LastUpdated: now,
		Connectors: []chargenet.Connector{{
			ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
			MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400,
		}},
	}}}))
	w := storetest.NewWebhook("p", now, chargenet.EventConnectorUpdated)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))
	const events = 60
	for i := range events {
		p := float64(10 + i%10)
		_, err := s.UpdateConnector(ctx, 1, 1, chargenet.ConnectorPatch{MaxElectricPower: &p}, "", "", now)
		require.NoError(t, err)
	}

	at := now.Add(time.Second)
	var (
		mu      sync.Mutex
		claimed = map[int64]int{}
		wg      sync.WaitGroup
	)
	for g := range 8 {
		wg.Go(func() {
			for {
				ds, err := stores[g%2].ClaimDeliveries(ctx, at, 3, time.Minute)
				if !assert.NoError(t, err) || len(ds) == 0 {
					return
				}
				mu.Lock()
				for _, d := range ds {
					claimed[d.ID]++
					assert.Equal(t, 1, d.Attempt)
					assert.Equal(t, w.ID, d.Webhook.ID)
				}
				mu.Unlock()
			}
		})
	}
	wg.Wait()
	assert.Len(t, claimed, events)
	for id, n := range claimed {
		assert.Equal(t, 1, n, "delivery %d claimed %d times", id, n)
	}
	ds, err := s.ClaimDeliveries(ctx, at, 100, time.Minute)
	require.NoError(t, err)
	assert.Empty(t, ds, "all leased")
	ds, err = s.ClaimDeliveries(ctx, at.Add(time.Minute), 100, time.Minute)
	require.NoError(t, err)
	assert.Len(t, ds, events, "due again once the leases expire")
}

// TestListenWakesOtherReplicas checks LISTEN/NOTIFY between two stores on one database:
// a delivery queued through one (a group-committed PATCH, a location written in its own
// transaction, a replay) calls the announcer of the other, whose dispatcher runs, and
// the listener comes back after its connection is killed.
func TestListenWakesOtherReplicas(t *testing.T) {
	ctx := t.Context()
	hooks := new(chargenet.Hooks)
	stores := openReplicas(t, nil, hooks)
	writer, dispatching := stores[0], stores[1]
	now := time.Now().UTC().Truncate(time.Microsecond)
	require.NoError(t, writer.Import(ctx, chargenet.DemoInventory(now)))
	w := storetest.NewWebhook("p", now, chargenet.EventConnectorUpdated, chargenet.EventLocationCreated)
	require.NoError(t, writer.CreateWebhook(ctx, &w, nil))

	woken := make(chan struct{}, 64)
	hooks.OnEvents(func() {
		select {
		case woken <- struct{}{}:
		default:
		}
	})
	listening := func() {
		t.Helper()
		require.Eventually(t, dispatching.ListeningForTest, 10*time.Second, 5*time.Millisecond, "the listener listens")
		for len(woken) > 0 {
			<-woken
		}
	}
	wait := func(what string) {
		t.Helper()
		select {
		case <-woken:
		case <-time.After(10 * time.Second):
			t.Fatalf("%s through the other store did not wake this one", what)
		}
	}
	listening()
	p := 42.0
	_, err := writer.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: &p}, "", "", now)
	require.NoError(t, err)
	wait("a PATCH")
	l := chargenet.Location{ID: "LISTEN-1", Name: "n", Address: "a", City: "c", PostalCode: "1", Country: "DEU",
		Latitude: 1, Longitude: 1, TimeZone: "Europe/Berlin"}
	_, _, err = writer.PutLocation(ctx, &l, "", now)
	require.NoError(t, err)
	wait("a location")
	ds, err := writer.ClaimDeliveries(ctx, now, 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 2)
	for i := range ds {
		require.NoError(t, writer.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &ds[i], Attempt: &chargenet.DeliveryAttempt{
			Attempt: 1, AttemptedAt: now, Outcome: chargenet.OutcomeSucceeded, HTTPStatus: 200}}))
	}
	n, err := writer.ReplayEvents(ctx, "p", w.ID, chargenet.Replay{Since: now.Add(-time.Hour)}, now)
	require.NoError(t, err)
	require.Equal(t, 2, n)
	wait("a replay")

	_, err = writer.ExecForTest(ctx, `SELECT pg_terminate_backend(pid) FROM pg_stat_activity `+
		`WHERE datname = current_database() AND query = 'LISTEN chargenet_deliveries'`)
	require.NoError(t, err)
	wait("the listener's reconnection") // it announces what it may have missed
	listening()
	_, err = writer.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: &p}, "", "", now)
	require.NoError(t, err)
	wait("a PATCH after the reconnection")
}

// TestEventLogMigration upgrades a database of the version before the event log, with
// events and pending deliveries, to the event log: the events are numbered in time
// order, the deliveries still find them, and new events come after them in the log.
func TestEventLogMigration(t *testing.T) {
	ctx := t.Context()
	u := NewSchemaURL(t)
	at := func(s int) string { return time.Date(2026, 11, 1, 10, 0, s, 0, time.UTC).Format(time.RFC3339) }
	require.NoError(t, postgres.MigrateBeforeForTest(ctx, u, "0012",
		`INSERT INTO webhooks (id, owner, url, enabled, secret, created_at, updated_at) VALUES ('wh_1', 'p', 'https://x.example.com', true, 's', '`+at(0)+`', '`+at(0)+`')`,
		`INSERT INTO webhook_event_types (webhook_id, type, api_version) VALUES ('wh_1', 'evse.connector.updated', '1.0')`,
		`INSERT INTO events (id, type, occurred_at, data) VALUES ('evt_B', 'evse.connector.updated', '`+at(2)+`', '{"uid":2}')`,
		`INSERT INTO events (id, type, occurred_at, data) VALUES ('evt_A', 'evse.connector.updated', '`+at(1)+`', '{"uid":1}')`,
		`INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) VALUES ('evt_B', 'wh_1', '1.0', '`+at(2)+`')`,
		`INSERT INTO outbox (event_id, webhook_id, api_version, next_attempt_at) VALUES ('evt_A', 'wh_1', '1.0', '`+at(1)+`')`,
	))
	s, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 4})
	require.NoError(t, err)
	defer s.Close()
	logged, err := s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 10}, nil, "")
	require.NoError(t, err)
	require.Len(t, logged, 2)
	assert.Equal(t, []string{"evt_A", "evt_B"}, []string{logged[0].ID, logged[1].ID}, "numbered in time order")
	assert.Equal(t, []int64{1, 2}, []int64{logged[0].Seq, logged[1].Seq})
	ds, err := s.ClaimDeliveries(ctx, time.Date(2026, 11, 2, 0, 0, 0, 0, time.UTC), 10, time.Minute)
	require.NoError(t, err)
	require.Len(t, ds, 2, "the pending deliveries survived")
	assert.Equal(t, "evt_A", ds[0].Event.ID)
	require.NoError(t, s.Import(ctx, chargenet.DemoInventory(time.Now())))
	p := 7.0
	_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: &p}, "", "", time.Now())
	require.NoError(t, err)
	require.Eventually(t, func() bool {
		logged, err = s.ListEvents(ctx, chargenet.ChangeSeek[int64]{Limit: 10}, nil, "")
		return err == nil && len(logged) == 3
	}, 10*time.Second, 10*time.Millisecond)
	assert.Equal(t, int64(3), logged[2].Seq, "the sequence continues after the migrated events")
	assert.Greater(t, logged[2].Pos, logged[1].Pos)
}

// TestIdempotencyAnswerMigration upgrades a database holding an answer kept in the
// columns before 0015 (status, header, body): the answer comes back as the one value the
// server reads, {"status", "header", "body"}, with the body's JSON as it was sent.
func TestIdempotencyAnswerMigration(t *testing.T) {
	ctx := t.Context()
	u := NewSchemaURL(t)
	kept := time.Now().UTC().Add(-time.Hour)
	body := `{"uid":1041,"evseId":"DE*TST*E9001","connectors":[{"id":1,"maxElectricPower":22.5}],"url":"https://x.example.com/a?b=1\u0026c=\u003c2\u003e","f":[7.4,1e-7,-0,12345678901234567890]}`
	require.NoError(t, postgres.MigrateBeforeForTest(ctx, u, "0015",
		`INSERT INTO idempotency_keys (owner, key, fingerprint, status, header, body, created_at) VALUES `+
			`('partner', 'key-1', '\x0102', 201, '{"ETag":"\"1\"","Location":"/v2/evses/1041"}', convert_to($$`+body+"\n"+`$$, 'UTF8'), '`+
			kept.Format(time.RFC3339Nano)+`')`,
	))
	s, err := postgres.Open(ctx, u, postgres.Options{MaxConns: 4})
	require.NoError(t, err)
	defer s.Close()
	a, err := s.IdempotentAnswer(ctx, "partner", "key-1", time.Now())
	require.NoError(t, err)
	assert.Equal(t, []byte{1, 2}, a.Fingerprint[:2])
	assert.JSONEq(t, `{"status":201,"header":{"ETag":"\"1\"","Location":"/v2/evses/1041"},"body":`+body+`}`, string(a.Answer))
	var answer struct{ Body json.RawMessage }
	require.NoError(t, json.Unmarshal(a.Answer, &answer))
	assert.Equal(t, body, string(answer.Body), "the body byte for byte")
}
