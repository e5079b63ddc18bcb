package client_test

import (
	"context"
	"encoding/json"
	"net/http"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// patchConnectors changes connector 1 of each EVSE through the client, in order.
func patchConnectors(t *testing.T, c *client.Client, power float64, uids ...int64) {
	t.Helper()
	for _, uid := range uids {
		_, _, err := c.UpdateConnector(context.Background(), uid, 1, client.ConnectorPatch{MaxElectricPower: &power})
		require.NoError(t, err)
	}
}

func TestEVSEsSinceAndResume(t *testing.T) {
	s := newServer(t, serverConfig{})
	c := newClient(t, s.URL)
	ctx := context.Background()
	t0 := time.Now()
	time.Sleep(2 * time.Millisecond)
	patchConnectors(t, c, 100, 1003, 1001, 1002)

	changes := c.EVSEsSince(t0, client.SyncOptions{PageSize: 2})
	assert.Empty(t, changes.Cursor(), "nothing fetched yet")
	var uids []int64
	for e, err := range changes.All(ctx) {
		require.NoError(t, err)
		uids = append(uids, e.UID)
	}
	assert.Equal(t, []int64{1003, 1001, 1002}, uids, "in change order, across pages of 2")
	resume := changes.Cursor()
	require.NotEmpty(t, resume)

	// Nothing new yet; then a later change, also of an EVSE seen before.
	for _, err := range c.EVSEsSince(t0, client.SyncOptions{Cursor: resume}).All(ctx) {
		require.NoError(t, err)
		t.Fatal("no change was made after the cursor")
	}
	patchConnectors(t, c, 90, 1001)
	later := c.EVSEsSince(t0, client.SyncOptions{Cursor: resume})
	var got []client.EVSE
	for e, err := range later.All(ctx) {
		require.NoError(t, err)
		got = append(got, e)
	}
	require.Len(t, got, 1)
	assert.Equal(t, int64(1001), got[0].UID)
	assert.InDelta(t, 90, got[0].Connectors[0].MaxElectricPower, 0.001)
	assert.NotEqual(t, resume, later.Cursor(), "the cursor moved past the new change")

	// Breaking out mid-page keeps the cursor before that page: nothing is skipped.
	partial := c.EVSEsSince(t0, client.SyncOptions{PageSize: 2})
	for range partial.All(ctx) {
		break
	}
	assert.Empty(t, partial.Cursor())

	// The cursor is bound to its since.
	for _, err := range c.EVSEsSince(t0.Add(time.Second), client.SyncOptions{Cursor: resume}).All(ctx) {
		requireAPIError(t, err, client.ErrInvalid, 400, client.CodeInvalidCursor)
	}
}

func TestLocationsSince(t *testing.T) {
	s := newServer(t, serverConfig{})
	c := newClient(t, s.URL)
	ctx := context.Background()
	t0 := time.Now()
	time.Sleep(2 * time.Millisecond)
	_, _, err := c.PutLocation(ctx, client.Location{ID: "LOC-9001", Name: "Depot", Address: "Kai 1", City: "Hamburg",
		PostalCode: "20457", Country: "DEU", Latitude: 53.54, Longitude: 9.98, TimeZone: "Europe/Berlin"})
	require.NoError(t, err)
	_, err = c.DeleteLocation(ctx, "LOC-9001")
	require.NoError(t, err)
	changes := c.LocationsSince(t0, client.SyncOptions{})
	var got []client.Location
	for l, err := range changes.All(ctx) {
		require.NoError(t, err)
		got = append(got, l)
	}
	require.Len(t, got, 1)
	assert.Equal(t, "LOC-9001", got[0].ID)
	assert.True(t, got[0].Deleted(), "deleted locations are in the change list")
	assert.NotEmpty(t, changes.Cursor())
}

func TestEventsAndEvent(t *testing.T) {
	s := newServer(t, serverConfig{})
	c := newClient(t, s.URL)
	ctx := context.Background()
	t0 := time.Now()
	patchConnectors(t, c, 77, 1001, 1002)
	_, _, err := c.RemoveEVSE(ctx, 1003)
	require.NoError(t, err)

	log := c.Events(client.EventQuery{Since: t0, Types: []string{chargenet.EventConnectorUpdated, chargenet.EventStatusChanged}, APIVersion: "1.0"},
		client.SyncOptions{PageSize: 1})
	var events []client.Event
	for e, err := range log.All(ctx) {
		require.NoError(t, err)
		events = append(events, e)
	}
	require.Len(t, events, 3)
	assert.Equal(t, []string{chargenet.EventConnectorUpdated, chargenet.EventConnectorUpdated, chargenet.EventStatusChanged},
		[]string{events[0].Type, events[1].Type, events[2].Type})
	var data struct {
		UID       int64  `json:"uid"`
		Source    string `json:"source"`
		Connector struct {
			MaxElectricPower float64 `json:"maxElectricPower"`
		} `json:"connector"`
	}
	require.NoError(t, json.Unmarshal(events[0].Data, &data))
	assert.Equal(t, int64(1001), data.UID)
	assert.InDelta(t, 77, data.Connector.MaxElectricPower, 0.001)
	assert.Equal(t, "1.0", events[2].APIVersion)

	one, err := c.Event(ctx, events[2].ID, "")
	require.NoError(t, err)
	assert.Equal(t, "1.2", one.APIVersion, "the latest by default")
	require.NoError(t, json.Unmarshal(one.Data, &data))
	assert.Equal(t, chargenet.SourceOperator, data.Source)

	for actor, want := range map[string]int{chargenet.DevKeyName: 4, "nobody": 0} {
		var n int
		for e, err := range c.Events(client.EventQuery{Since: t0, Actor: actor}, client.SyncOptions{}).All(ctx) {
			require.NoError(t, err)
			assert.Contains(t, string(e.Data), `"actor":"`+actor+`"`, "the latest version carries the actor")
			n++
		}
		assert.Equal(t, want, n, "the events of actor %q", actor)
	}

	_, err = c.Event(ctx, "evt_00000000000000000000000000", "")
	requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)
	for _, err := range c.Events(client.EventQuery{Types: []string{chargenet.EventWebhookPing}}, client.SyncOptions{}).All(ctx) {
		requireAPIError(t, err, client.ErrInvalid, 400, client.CodeInvalidParameter)
	}

	// Resume with the cursor and the same query.
	patchConnectors(t, c, 78, 1002)
	resumed := c.Events(client.EventQuery{Since: t0, Types: []string{chargenet.EventStatusChanged, chargenet.EventConnectorUpdated}, APIVersion: "1.0"},
		client.SyncOptions{Cursor: log.Cursor()})
	var ids []string
	for e, err := range resumed.All(ctx) {
		require.NoError(t, err)
		ids = append(ids, e.ID)
	}
	require.Len(t, ids, 1, "only the change made after the cursor")
	assert.NotContains(t, []string{events[0].ID, events[1].ID, events[2].ID}, ids[0])
}

func TestWebhookTestAndReplay(t *testing.T) {
	s := newServer(t, serverConfig{})
	c := newClient(t, s.URL)
	ctx := context.Background()
	t0 := time.Now()
	patchConnectors(t, c, 55, 1001, 1002)
	t1 := time.Now()
	now := time.Now().UTC().Truncate(time.Microsecond)
	w := &chargenet.Webhook{ID: chargenet.NewID("wh_", now), Owner: "env", URL: "https://receiver.example.com/hooks",
		Subscriptions: []chargenet.Subscription{{Type: chargenet.EventConnectorUpdated, APIVersion: "1.0"}},
		Enabled:       true, Secret: chargenet.NewWebhookSecret(), CreatedAt: now, UpdatedAt: now}
	require.NoError(t, s.Store.CreateWebhook(ctx, w, nil))

	id, err := c.TestWebhook(ctx, w.ID)
	require.NoError(t, err)
	assert.Regexp(t, `^evt_`, id)

	n, err := c.ReplayWebhook(ctx, w.ID, client.Replay{Since: t0, Until: t1})
	require.NoError(t, err)
	assert.Equal(t, 2, n)
	n, err = c.ReplayWebhook(ctx, w.ID, client.Replay{Since: t0, Types: []string{chargenet.EventConnectorUpdated}})
	require.NoError(t, err)
	assert.Equal(t, 2, n, "both again, though still pending")

	_, err = c.ReplayWebhook(ctx, w.ID, client.Replay{Since: t1, Until: t0})
	apiErr := requireAPIError(t, err, client.ErrInvalid, 400, client.CodeInvalidBody)
	assert.Equal(t, "until", apiErr.Param)
	_, err = c.ReplayWebhook(ctx, w.ID, client.Replay{Since: t0, Types: []string{chargenet.EventEVSERemoved}})
	apiErr = requireAPIError(t, err, client.ErrInvalid, 400, client.CodeInvalidBody)
	assert.Equal(t, "types[0]", apiErr.Param)
	_, err = c.TestWebhook(ctx, "wh_00000000000000000000000000")
	requireAPIError(t, err, client.ErrNotFound, 404, client.CodeNotFound)

	// Neither is repeated after a lost answer: a repeat would ping or queue again.
	for name, call := range map[string]func(*client.Client) error{
		"test": func(c *client.Client) error { _, err := c.TestWebhook(ctx, w.ID); return err },
		"replay": func(c *client.Client) error {
			_, err := c.ReplayWebhook(ctx, w.ID, client.Replay{Since: t0, Until: t1})
			return err
		},
	} {
		var sl sleeps
		rec := newRecorder(t, loseAnswer)
		require.Error(t, call(newClient(t, s.URL, rec.option(), sl.option())), name)
		assert.Equal(t, 1, rec.count(), "%s is sent once", name)
		assert.Empty(t, rec.request(0).Header.Get("Idempotency-Key"), name)
		assert.Empty(t, sl.all(), name)
	}

	disabled := false
	_, err = s.Store.UpdateWebhook(ctx, "env", w.ID, chargenet.WebhookPatch{Enabled: &disabled}, time.Now())
	require.NoError(t, err)
	_, err = c.TestWebhook(ctx, w.ID)
	requireAPIError(t, err, client.ErrConflict, 409, client.CodeWebhookDisabled)
	_, err = c.ReplayWebhook(ctx, w.ID, client.Replay{Since: t0})
	requireAPIError(t, err, client.ErrConflict, 409, client.CodeWebhookDisabled)
}

func TestChangesResumeAfterAFailure(t *testing.T) {
	s := newServer(t, serverConfig{})
	c := newClient(t, s.URL)
	ctx := context.Background()
	t0 := time.Now()
	time.Sleep(2 * time.Millisecond)
	patchConnectors(t, c, 120, 1003, 1001, 1002)

	// The second page fails (a 500 is not retried): the walk ends with the error, and
	// the cursor stays after the first page.
	rec := newRecorder(t, nil, respond(http.StatusInternalServerError, `{"code": "internal_error", "message": "internal server error", "requestId": "r"}`))
	failing := newClient(t, s.URL, rec.option())
	changes := failing.EVSEsSince(t0, client.SyncOptions{PageSize: 2})
	var uids []int64
	var failure error
	for e, err := range changes.All(ctx) {
		if err != nil {
			failure = err
			break
		}
		uids = append(uids, e.UID)
	}
	requireAPIError(t, failure, nil, 500, client.CodeInternalError)
	assert.Equal(t, []int64{1003, 1001}, uids)
	afterFirst := changes.Cursor()
	require.NotEmpty(t, afterFirst)

	// Ranging again continues from there: nothing repeated, nothing skipped.
	for e, err := range changes.All(ctx) {
		require.NoError(t, err)
		uids = append(uids, e.UID)
	}
	assert.Equal(t, []int64{1003, 1001, 1002}, uids)
	assert.Equal(t, 3, rec.count(), "one request per page, the failed one included")
	assert.NotEqual(t, afterFirst, changes.Cursor())
}
