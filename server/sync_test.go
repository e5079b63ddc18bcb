package server_test

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"net/http"
	"net/http/httptest"
	"net/url"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/gen"
	"github.com/chargenet/chargenet/outbox"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// since formats t as an updated_since or since query value.
func since(t time.Time) string { return url.QueryEscape(t.UTC().Format(time.RFC3339Nano)) }

// changes makes, through the API, after the demo import: a connector change of EVSE
// 1002, then of 1001, a new location, the removal of EVSE 1003 and the deletion of the
// new location. It returns the time before the first change.
func changes(t *testing.T, v *env) time.Time {
	t.Helper()
	t0 := time.Now().UTC()
	time.Sleep(2 * time.Millisecond) // the import's lastUpdated is before t0
	for _, uid := range []int{1002, 1001} {
		rec := v.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", uid), `{"maxElectricPower": 123}`)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	}
	require.Equal(t, http.StatusCreated, v.do(http.MethodPut, "/v1/locations/HAFEN-1", newLocation).Code)
	rec := v.do(http.MethodDelete, "/v2/evses/1003", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	rec = v.do(http.MethodDelete, "/v1/locations/HAFEN-1", "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	return t0
}

// walkChanges reads a change list (path with its query) page by page with limit and
// returns the items and the last page's pagination; every page is checked.
func walkChanges[T any](t *testing.T, v *env, path string, limit int) ([]T, gen.Pagination) {
	t.Helper()
	var items []T
	cursor := ""
	for range 100 {
		rec := v.do(http.MethodGet, fmt.Sprintf("%s&limit=%d%s", path, limit, cursor), "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		var page struct {
			Data       []T            `json:"data"`
			Pagination gen.Pagination `json:"pagination"`
		}
		require.NoError(t, json.Unmarshal(rec.Body.Bytes(), &page))
		assert.Nil(t, page.Pagination.PreviousCursor, "forward only")
		require.NotNil(t, page.Pagination.ResumeCursor, "a resume cursor on every page")
		assert.Equal(t, page.Pagination.HasMore, page.Pagination.NextCursor != nil)
		items = append(items, page.Data...)
		if !page.Pagination.HasMore {
			return items, page.Pagination
		}
		cursor = "&cursor=" + *page.Pagination.NextCursor
	}
	t.Fatal("the walk did not end")
	return nil, gen.Pagination{}
}

func TestChangeListOfEVSEs(t *testing.T) {
	v := newEnv(t, false)
	t0 := changes(t, v)
	path := "/v2/evses?updated_since=" + since(t0)

	evses, last := walkChanges[gen.EVSE](t, v, path, 1)
	var uids []int64
	for _, e := range evses {
		uids = append(uids, e.Uid)
		assert.False(t, e.LastUpdated.Before(t0), "EVSE %d changed before updated_since", e.Uid)
	}
	assert.Equal(t, []int64{1002, 1001, 1003}, uids, "change order, not uid order")
	assert.Equal(t, gen.REMOVED, evses[2].Status, "a removed EVSE is in the change list")

	t.Run("resume after the last page", func(t *testing.T) {
		resume := "&cursor=" + *last.ResumeCursor
		rec := v.do(http.MethodGet, path+resume, "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		page := decode[gen.EvsePage](t, rec)
		assert.Empty(t, page.Data)
		require.NotNil(t, page.Pagination.ResumeCursor)
		assert.False(t, page.Pagination.HasMore)
		assert.Nil(t, page.Pagination.NextCursor)

		// A change to an EVSE seen before moves it after the cursor of the empty page.
		require.Equal(t, http.StatusOK, v.do(http.MethodPatch, "/v2/evses/1002/connectors/1", `{"maxElectricPower": 99}`).Code)
		rec = v.do(http.MethodGet, path+"&cursor="+*page.Pagination.ResumeCursor, "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		later := decode[gen.EvsePage](t, rec)
		require.Len(t, later.Data, 1)
		assert.Equal(t, int64(1002), later.Data[0].Uid)
		assert.InDelta(t, 99, later.Data[0].Connectors[0].MaxElectricPower, 0.001)
	})

	t.Run("updated_since leaves out older changes", func(t *testing.T) {
		future := time.Now().Add(time.Hour)
		rec := v.do(http.MethodGet, "/v2/evses?updated_since="+since(future), "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		assert.Empty(t, decode[gen.EvsePage](t, rec).Data)
	})

	t.Run("without updated_since the list is unchanged", func(t *testing.T) {
		rec := v.do(http.MethodGet, "/v2/evses?limit=2", "")
		require.Equal(t, http.StatusOK, rec.Code)
		page := decode[gen.EvsePage](t, rec)
		assert.Equal(t, []int64{1001, 1002}, []int64{page.Data[0].Uid, page.Data[1].Uid})
		assert.Nil(t, page.Pagination.ResumeCursor)
		assert.NotContains(t, rec.Body.String(), "resume_cursor")
	})

	t.Run("cursors are bound to the list and the filter", func(t *testing.T) {
		rec := v.do(http.MethodGet, path+"&limit=1", "")
		first := decode[gen.EvsePage](t, rec)
		require.NotNil(t, first.Pagination.NextCursor)
		changeCursor := *first.Pagination.NextCursor
		plain := decode[gen.EvsePage](t, v.do(http.MethodGet, "/v2/evses?limit=1", ""))
		require.NotNil(t, plain.Pagination.NextCursor)
		locs := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=1&updated_since="+since(t0), ""))
		require.NotNil(t, locs.Pagination.ResumeCursor)
		before := v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String()
		for name, query := range map[string]string{
			"another updated_since":             "updated_since=" + since(t0.Add(time.Millisecond)) + "&cursor=" + changeCursor,
			"no updated_since":                  "cursor=" + changeCursor,
			"a plain cursor with updated_since": "updated_since=" + since(t0) + "&cursor=" + *plain.Pagination.NextCursor,
			"the location change list's cursor": "updated_since=" + since(t0) + "&cursor=" + *locs.Pagination.ResumeCursor,
			"an altered cursor":                 "updated_since=" + since(t0) + "&cursor=" + changeCursor[:len(changeCursor)-3] + "abc",
		} {
			t.Run(name, func(t *testing.T) {
				assertError(t, v.do(http.MethodGet, "/v2/evses?"+query, ""), http.StatusBadRequest, chargenet.CodeInvalidCursor, "cursor")
			})
		}
		assertError(t, v.do(http.MethodGet, "/v2/evses?updated_since=yesterday", ""), http.StatusBadRequest, chargenet.CodeInvalidParameter, "updated_since")
		assert.Equal(t, before, v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String(), "nothing changed")
	})
}

func TestChangeListOfLocations(t *testing.T) {
	v := newEnv(t, false)
	t0 := changes(t, v)
	path := "/v1/locations?updated_since=" + since(t0)

	locs, last := walkChanges[gen.Location](t, v, path, 2)
	var ids []string
	for _, l := range locs {
		ids = append(ids, l.Id)
	}
	// The EVSE changes moved their locations' lastUpdated; HAFEN-1 changed last.
	require.NotEmpty(t, ids)
	assert.Equal(t, "HAFEN-1", ids[len(ids)-1])
	require.NotNil(t, locs[len(locs)-1].DeletedAt, "a deleted location is in the change list")
	all := decode[gen.LocationPage](t, v.do(http.MethodGet, "/v1/locations?limit=100", ""))
	for _, l := range all.Data {
		changed := !l.LastUpdated.Before(t0)
		assert.Equal(t, changed, contains(ids, l.Id), "location %s (lastUpdated %s)", l.Id, l.LastUpdated)
	}

	rec := v.do(http.MethodPut, "/v1/locations/HAFEN-2", newLocation)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	rec = v.do(http.MethodGet, path+"&cursor="+*last.ResumeCursor, "")
	require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
	later := decode[gen.LocationPage](t, rec)
	require.Len(t, later.Data, 1)
	assert.Equal(t, "HAFEN-2", later.Data[0].Id)

	evses := decode[gen.EvsePage](t, v.do(http.MethodGet, "/v2/evses?limit=1&updated_since="+since(t0), ""))
	require.NotNil(t, evses.Pagination.NextCursor)
	assertError(t, v.do(http.MethodGet, path+"&cursor="+*evses.Pagination.NextCursor, ""), http.StatusBadRequest, chargenet.CodeInvalidCursor, "cursor")
}

func contains(list []string, s string) bool {
	for _, x := range list {
		if x == s {
			return true
		}
	}
	return false
}

func TestEventLog(t *testing.T) {
	v := withKeys(t, newEnv(t, false))
	t0 := changes(t, v)
	base := "/emsp/v1/events?since=" + since(t0)

	events, last := walkChanges[gen.LoggedEvent](t, v, base, 2)
	var types []string
	for _, e := range events {
		types = append(types, e.Type)
		assert.Regexp(t, `^evt_`, e.Id)
		assert.False(t, e.Timestamp.Before(t0))
	}
	assert.Equal(t, []string{chargenet.EventConnectorUpdated, chargenet.EventConnectorUpdated, chargenet.EventLocationCreated,
		chargenet.EventStatusChanged, chargenet.EventEVSERemoved, chargenet.EventLocationDeleted}, types, "in the order the changes were made")

	t.Run("any partner key reads the log", func(t *testing.T) {
		rec := v.do(http.MethodGet, base+"&limit=100", "", "Authorization", "Bearer "+otherKey)
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Len(t, decode[gen.EventPage](t, rec).Data, len(events))
	})

	t.Run("type filter", func(t *testing.T) {
		got, _ := walkChanges[gen.LoggedEvent](t, v, base+"&type=evse.removed&type=location.deleted", 1)
		require.Len(t, got, 2)
		assert.Equal(t, chargenet.EventEVSERemoved, got[0].Type)
		assert.Equal(t, chargenet.EventLocationDeleted, got[1].Type)
	})

	t.Run("api_version", func(t *testing.T) {
		status := "&type=" + chargenet.EventStatusChanged
		latest := decode[gen.EventPage](t, v.do(http.MethodGet, base+status, ""))
		require.Len(t, latest.Data, 1)
		assert.Equal(t, "1.2", latest.Data[0].ApiVersion)
		data, err := latest.Data[0].Data.AsStatusChangedData()
		require.NoError(t, err)
		require.NotNil(t, data.Source)
		assert.Equal(t, chargenet.SourceOperator, *data.Source)
		if assert.NotNil(t, data.Actor, "1.2 has actor") {
			assert.Equal(t, chargenet.DevKeyName, *data.Actor)
		}
		prev := decode[gen.EventPage](t, v.do(http.MethodGet, base+status+"&api_version=1.1", ""))
		require.Len(t, prev.Data, 1)
		raw, err := prev.Data[0].Data.MarshalJSON()
		require.NoError(t, err)
		assert.Contains(t, string(raw), `"source":"operator"`)
		assert.NotContains(t, string(raw), "actor", "1.1 has no actor")

		old := decode[gen.EventPage](t, v.do(http.MethodGet, base+status+"&api_version=1.0", ""))
		require.Len(t, old.Data, 1)
		assert.Equal(t, "1.0", old.Data[0].ApiVersion)
		raw, err = old.Data[0].Data.MarshalJSON()
		require.NoError(t, err)
		assert.NotContains(t, string(raw), "source", "1.0 has no source")
		assert.Contains(t, string(raw), `"ocppConnectorId":0`, "1.0 gives an operator's change connector 0")
		assert.NotContains(t, string(raw), "actor", "1.0 has no actor")

		// Every type is rendered in the highest version not newer than the one asked.
		all := decode[gen.EventPage](t, v.do(http.MethodGet, base+"&limit=100&api_version=1.0", ""))
		for _, e := range all.Data {
			assert.Equal(t, "1.0", e.ApiVersion, e.Type)
			raw, err := e.Data.MarshalJSON()
			require.NoError(t, err)
			assert.NotContains(t, string(raw), "actor", e.Type)
		}
		assertError(t, v.do(http.MethodGet, base+"&api_version=9.9", ""), http.StatusBadRequest, chargenet.CodeInvalidParameter, "api_version")
		assertError(t, v.do(http.MethodGet, "/emsp/v1/events/"+events[0].Id+"?api_version=9.9", ""), http.StatusBadRequest, chargenet.CodeInvalidParameter, "api_version")
	})

	t.Run("get by id", func(t *testing.T) {
		for _, want := range events {
			rec := v.do(http.MethodGet, "/emsp/v1/events/"+want.Id, "")
			require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
			got := decode[gen.LoggedEvent](t, rec)
			assert.Equal(t, want.Id, got.Id)
			assert.Equal(t, want.Type, got.Type)
			assert.True(t, want.Timestamp.Equal(got.Timestamp.Time))
		}
		rec := v.do(http.MethodGet, "/emsp/v1/events/"+events[3].Id+"?api_version=1.0", "")
		require.Equal(t, http.StatusOK, rec.Code)
		assert.Equal(t, "1.0", decode[gen.LoggedEvent](t, rec).ApiVersion)
		assertError(t, v.do(http.MethodGet, "/emsp/v1/events/evt_00000000000000000000000000", ""), http.StatusNotFound, chargenet.CodeNotFound, "")
		assertError(t, v.do(http.MethodGet, "/emsp/v1/events/not-an-event", ""), http.StatusBadRequest, chargenet.CodeInvalidParameter, "eventId")
	})

	t.Run("refusals", func(t *testing.T) {
		page := decode[gen.EventPage](t, v.do(http.MethodGet, base+"&limit=1&type=evse.removed&type=location.deleted", ""))
		require.NotNil(t, page.Pagination.NextCursor)
		cursor := "&cursor=" + *page.Pagination.NextCursor
		for name, tc := range map[string]struct{ query, code, param string }{
			"webhook.ping":                 {base + "&type=webhook.ping", chargenet.CodeInvalidParameter, "type"},
			"an unknown type":              {base + "&type=evse.exploded", chargenet.CodeInvalidParameter, "type"},
			"a cursor with other types":    {base + "&type=evse.removed" + cursor, chargenet.CodeInvalidCursor, "cursor"},
			"a cursor without since":       {"/emsp/v1/events?type=evse.removed&type=location.deleted" + cursor, chargenet.CodeInvalidCursor, "cursor"},
			"types in another order agree": {base + "&type=location.deleted&type=evse.removed" + cursor, "", ""},
			"a change list's cursor":       {base + "&cursor=" + *decode[gen.EvsePage](t, v.do(http.MethodGet, "/v2/evses?limit=1&updated_since="+since(t0), "")).Pagination.NextCursor, chargenet.CodeInvalidCursor, "cursor"},
			"a bad since":                  {"/emsp/v1/events?since=monday", chargenet.CodeInvalidParameter, "since"},
		} {
			t.Run(name, func(t *testing.T) {
				rec := v.do(http.MethodGet, tc.query, "")
				if tc.code == "" {
					assert.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
					return
				}
				assertError(t, rec, http.StatusBadRequest, tc.code, tc.param)
			})
		}
	})

	t.Run("resume picks up later events", func(t *testing.T) {
		require.Equal(t, http.StatusOK, v.do(http.MethodPatch, "/v2/evses/1001/connectors/1", `{"maxElectricPower": 50}`).Code)
		rec := v.do(http.MethodGet, base+"&cursor="+*last.ResumeCursor, "")
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		page := decode[gen.EventPage](t, rec)
		require.Len(t, page.Data, 1)
		assert.Equal(t, chargenet.EventConnectorUpdated, page.Data[0].Type)
	})

	t.Run("actor", func(t *testing.T) {
		other := []string{"Authorization", "Bearer " + otherKey}
		rec := v.do(http.MethodPatch, "/v2/evses/1004/connectors/1", `{"maxElectricPower": 44}`, other...)
		require.Equal(t, http.StatusOK, rec.Code, rec.Body.String())
		mine, _ := walkChanges[gen.LoggedEvent](t, v, base+"&actor=other", 1)
		require.Len(t, mine, 1, "exactly the events of key other")
		data, err := mine[0].Data.AsConnectorUpdatedData()
		require.NoError(t, err)
		assert.Equal(t, int64(1004), data.Uid)
		assert.Equal(t, ptr("other"), data.Actor)
		env, _ := walkChanges[gen.LoggedEvent](t, v, base+"&actor="+chargenet.DevKeyName, 2)
		all, _ := walkChanges[gen.LoggedEvent](t, v, base, 100)
		var want []string
		for _, e := range all {
			if e.Id != mine[0].Id {
				want = append(want, e.Id)
			}
		}
		got := make([]string, len(env))
		for i, e := range env {
			got[i] = e.Id
		}
		assert.Equal(t, want, got, "exactly the events of the development key, in log order")
		assert.Empty(t, decode[gen.EventPage](t, v.do(http.MethodGet, base+"&actor=nobody", "")).Data)

		page := decode[gen.EventPage](t, v.do(http.MethodGet, base+"&limit=1&actor=env", ""))
		require.NotNil(t, page.Pagination.NextCursor)
		assertError(t, v.do(http.MethodGet, base+"&actor=other&cursor="+*page.Pagination.NextCursor, ""),
			http.StatusBadRequest, chargenet.CodeInvalidCursor, "cursor")
		assertError(t, v.do(http.MethodGet, base+"&cursor="+*page.Pagination.NextCursor, ""),
			http.StatusBadRequest, chargenet.CodeInvalidCursor, "cursor")
		assertError(t, v.do(http.MethodGet, base+"&actor=", ""), http.StatusBadRequest, chargenet.CodeInvalidParameter, "actor")
	})
}

// receiver records the bodies POSTed to it.
type receiver struct {
	mu     sync.Mutex
	bodies map[string][]byte // by webhook-id
}

func (r *receiver) ServeHTTP(w http.ResponseWriter, req *http.Request) {
	body, _ := io.ReadAll(req.Body)
	r.mu.Lock()
	r.bodies[req.Header.Get("webhook-id")] = body
	r.mu.Unlock()
	w.WriteHeader(http.StatusNoContent)
}

func (r *receiver) body(id string) []byte {
	r.mu.Lock()
	defer r.mu.Unlock()
	return r.bodies[id]
}

func TestWebhookTest(t *testing.T) {
	store := newEnv(t, false).store
	e, err := newServer(store, true)
	require.NoError(t, err)
	v := withKeys(t, &env{t: t, e: e, store: store})
	rcv := &receiver{bodies: map[string][]byte{}}
	srv := httptest.NewServer(rcv)
	t.Cleanup(srv.Close)
	d, err := outbox.New(outbox.Config{Store: store, AllowInsecure: true, Poll: 20 * time.Millisecond})
	require.NoError(t, err)
	ctx, cancel := context.WithCancel(context.Background())
	done := make(chan struct{})
	go func() { d.Run(ctx); close(done) }()
	t.Cleanup(func() { cancel(); <-done })

	rec := v.do(http.MethodPost, "/emsp/v1/webhooks", `{"url": "`+srv.URL+`/hook", "event_types": [{"type": "evse.removed"}]}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	wh := decode[gen.WebhookWithSecret](t, rec)
	path := "/emsp/v1/webhooks/" + wh.Id + "/test"

	rec = v.do(http.MethodPost, path, "")
	require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
	ping := decode[gen.WebhookTestResult](t, rec)
	assert.Regexp(t, `^evt_[0-9A-Z]{26}$`, ping.Id)

	var attempt *gen.Delivery
	require.Eventually(t, func() bool {
		page := decode[gen.DeliveryPage](t, v.do(http.MethodGet, "/emsp/v1/webhooks/"+wh.Id+"/deliveries", ""))
		for i := range page.Data {
			if page.Data[i].EventId == ping.Id {
				attempt = &page.Data[i]
				return true
			}
		}
		return false
	}, 10*time.Second, 20*time.Millisecond, "the ping's attempt appears in the deliveries")
	assert.Equal(t, chargenet.EventWebhookPing, attempt.EventType)
	assert.Equal(t, gen.Succeeded, attempt.Outcome)
	var got struct {
		Type string       `json:"type"`
		Data gen.PingData `json:"data"`
	}
	require.NoError(t, json.Unmarshal(rcv.body(ping.Id), &got))
	assert.Equal(t, chargenet.EventWebhookPing, got.Type)
	assert.Equal(t, gen.PingData{WebhookId: wh.Id, Url: srv.URL + "/hook", Actor: ptr(chargenet.DevKeyName)}, got.Data,
		"the latest version, with the key that asked for the test")

	// The ping is not in the event log.
	assertError(t, v.do(http.MethodGet, "/emsp/v1/events/"+ping.Id, ""), http.StatusNotFound, chargenet.CodeNotFound, "")
	for _, e := range decode[gen.EventPage](t, v.do(http.MethodGet, "/emsp/v1/events?limit=100", "")).Data {
		assert.NotEqual(t, chargenet.EventWebhookPing, e.Type)
	}

	// Another ping each time: no idempotency.
	again := decode[gen.WebhookTestResult](t, v.do(http.MethodPost, path, ""))
	assert.NotEqual(t, ping.Id, again.Id)

	assertError(t, v.do(http.MethodPost, path, "", "Authorization", "Bearer "+otherKey), http.StatusNotFound, chargenet.CodeNotFound, "webhookId")
	assertError(t, v.do(http.MethodPost, "/emsp/v1/webhooks/wh_00000000000000000000000000/test", ""), http.StatusNotFound, chargenet.CodeNotFound, "webhookId")
	assertError(t, v.do(http.MethodPost, "/emsp/v1/webhooks/nope/test", ""), http.StatusBadRequest, chargenet.CodeInvalidParameter, "webhookId")
	require.Equal(t, http.StatusOK, v.do(http.MethodPatch, "/emsp/v1/webhooks/"+wh.Id, `{"enabled": false}`).Code)
	body := assertError(t, v.do(http.MethodPost, path, ""), http.StatusConflict, chargenet.CodeWebhookDisabled, "")
	assert.Contains(t, body.Message, "enable it first")
}

func TestWebhookReplay(t *testing.T) {
	v := withKeys(t, newEnv(t, false))
	t0 := changes(t, v)
	t1 := time.Now().UTC()

	// Subscribed after the changes: nothing of them is pending for it.
	rec := v.do(http.MethodPost, "/emsp/v1/webhooks", `{"url": "https://receiver.example.com/hooks",
		"event_types": [{"type": "evse.connector.updated"}, {"type": "evse.status.changed", "api_version": "1.0"}, {"type": "location.deleted"}]}`)
	require.Equal(t, http.StatusCreated, rec.Code, rec.Body.String())
	wh := decode[gen.WebhookWithSecret](t, rec)
	path := "/emsp/v1/webhooks/" + wh.Id + "/replay"
	queued := func(body string) int {
		t.Helper()
		rec := v.do(http.MethodPost, path, body)
		require.Equal(t, http.StatusAccepted, rec.Code, rec.Body.String())
		return decode[gen.WebhookReplayResult](t, rec).Queued
	}
	window := fmt.Sprintf(`"since": %q, "until": %q`, t0.Format(time.RFC3339Nano), t1.Format(time.RFC3339Nano))

	before := v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String()
	t.Run("refusals", func(t *testing.T) {
		for name, tc := range map[string]struct {
			path, body  string
			status      int
			code, param string
		}{
			"until before since":    {path, fmt.Sprintf(`{"since": %q, "until": %q}`, t1.Format(time.RFC3339Nano), t0.Format(time.RFC3339Nano)), 400, chargenet.CodeInvalidBody, "until"},
			"until equal to since":  {path, fmt.Sprintf(`{"since": %q, "until": %q}`, t0.Format(time.RFC3339Nano), t0.Format(time.RFC3339Nano)), 400, chargenet.CodeInvalidBody, "until"},
			"a type not subscribed": {path, `{` + window + `, "types": ["evse.connector.updated", "evse.removed"]}`, 400, chargenet.CodeInvalidBody, "types[1]"},
			"no since":              {path, `{"types": ["evse.connector.updated"]}`, 400, chargenet.CodeInvalidBody, "since"},
			"an unknown field":      {path, `{` + window + `, "from": "x"}`, 400, chargenet.CodeInvalidBody, "from"},
			"empty types":           {path, `{` + window + `, "types": []}`, 400, chargenet.CodeInvalidBody, "types"},
			"another key's webhook": {path, `{` + window + `}`, 404, chargenet.CodeNotFound, "webhookId"},
			"an unknown webhook":    {"/emsp/v1/webhooks/wh_00000000000000000000000000/replay", `{` + window + `}`, 404, chargenet.CodeNotFound, "webhookId"},
		} {
			t.Run(name, func(t *testing.T) {
				auth := []string{}
				if name == "another key's webhook" {
					auth = []string{"Authorization", "Bearer " + otherKey}
				}
				assertError(t, v.do(http.MethodPost, tc.path, tc.body, auth...), tc.status, tc.code, tc.param)
			})
		}
	})

	// The window holds 2 connector changes, 1 status change and 1 location deletion of
	// the subscribed types (and 2 events of other types).
	assert.Equal(t, 1, queued(`{`+window+`, "types": ["evse.status.changed"]}`))
	assert.Equal(t, 4, queued(`{`+window+`}`), "the status change again, though it is still pending")
	assert.Equal(t, 4, queued(`{`+window+`}`), "everything again, though it is all pending")
	assert.Equal(t, 0, queued(fmt.Sprintf(`{"since": %q}`, t1.Add(time.Hour).Format(time.RFC3339Nano))))

	var deliveries []chargenet.Delivery
	require.Eventually(t, func() bool {
		got, err := v.store.ClaimDeliveries(context.Background(), time.Now(), 100, time.Minute)
		deliveries = append(deliveries, got...)
		return err == nil && len(got) == 0
	}, 5*time.Second, 10*time.Millisecond)
	seen := map[string]string{}
	for _, d := range deliveries {
		if d.Webhook.ID == wh.Id {
			seen[d.Event.Type] += d.APIVersion + " "
		}
	}
	assert.Equal(t, map[string]string{chargenet.EventConnectorUpdated: "1.1 1.1 1.1 1.1 ", chargenet.EventStatusChanged: "1.0 1.0 1.0 ",
		chargenet.EventLocationDeleted: "1.1 1.1 "},
		seen, "each queued in the version of the webhook's subscription")

	require.Equal(t, http.StatusOK, v.do(http.MethodPatch, "/emsp/v1/webhooks/"+wh.Id, `{"enabled": false}`).Code)
	body := assertError(t, v.do(http.MethodPost, path, `{`+window+`}`), http.StatusConflict, chargenet.CodeWebhookDisabled, "")
	assert.Contains(t, body.Message, "enable it first")
	assert.Equal(t, before, v.do(http.MethodGet, "/v2/evses?limit=100", "").Body.String())
}
