package client_test

import (
	"context"
	"strconv"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/chargenet/chargenet/client"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// registerBox registers charge box id for OCPP with its ID as identity.
func registerBox(t *testing.T, store chargenet.Store, id int64) {
	t.Helper()
	_, err := store.RegisterChargebox(context.Background(), id, strconv.FormatInt(id, 10),
		chargenet.HashChargeboxPassword("client-test-password-0123"), time.Now())
	require.NoError(t, err)
}

// wantChargebox is the registered charge box id as the store holds it, in the client's
// types.
func wantChargebox(t *testing.T, store chargenet.Store, id int64) client.Chargebox {
	t.Helper()
	b, err := store.Chargebox(context.Background(), id)
	require.NoError(t, err)
	out := client.Chargebox{ID: b.ID, Identity: b.Identity, Connected: b.Connected(), LastSeenAt: utcPtr(b.LastSeenAt),
		EVSEUIDs: b.EVSEUIDs, Availability: []client.Availability{}}
	if out.EVSEUIDs == nil {
		out.EVSEUIDs = []int64{}
	}
	if b.Connected() {
		out.Protocol, out.ConnectedAt = client.Protocol(b.Protocol), utcPtr(b.ConnectedAt)
	}
	if b.Boot != nil {
		out.Boot = &client.ChargeboxBoot{Vendor: b.Boot.Vendor, Model: b.Boot.Model, SerialNumber: b.Boot.SerialNumber,
			FirmwareVersion: b.Boot.FirmwareVersion, BootedAt: b.Boot.At.UTC()}
	}
	for _, a := range b.Availability {
		out.Availability = append(out.Availability, client.Availability{EVSEUID: a.EVSEUID, State: client.AvailabilityState(a.State),
			RequestedAt: a.RequestedAt.UTC(), Answer: client.AvailabilityAnswer(a.Answer), AnsweredAt: utcPtr(a.AnsweredAt)})
	}
	return out
}

func utcPtr(t *time.Time) *time.Time {
	if t == nil {
		return nil
	}
	u := t.UTC()
	return &u
}

// chargeboxIDs are the IDs of boxes, in order.
func chargeboxIDs(boxes []client.Chargebox) []int64 {
	ids := make([]int64, len(boxes))
	for i, b := range boxes {
		ids[i] = b.ID
	}
	return ids
}

func TestChargebox(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	c := newClient(t, srv.URL)
	now := time.Now().UTC().Truncate(time.Microsecond)

	// 501: connected over OCPP 1.6 after a boot; EVSE 1001 was set INOPERATIVE and the
	// box accepted.
	registerBox(t, srv.Store, 501)
	require.NoError(t, srv.Store.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: 501, Session: "s501", Protocol: chargenet.ProtocolOCPP16, At: now.Add(-time.Minute)},
		{Kind: chargenet.Booted, Chargebox: 501, Session: "s501", At: now.Add(-time.Minute),
			Boot: &chargenet.BootInfo{Vendor: "ACME", Model: "Wallbox 22", SerialNumber: "SN-0001", FirmwareVersion: "1.4.2", At: now.Add(-time.Minute)}},
		{Kind: chargenet.Seen, Chargebox: 501, Session: "s501", At: now},
	}))
	_, _, err := c.UpdateEVSE(ctx, 1001, client.EVSEPatch{Status: new(client.StatusInoperative)})
	require.NoError(t, err)
	asked, err := srv.Store.OweAvailability(ctx, 501, now)
	require.NoError(t, err)
	require.Len(t, asked, 1)
	require.NoError(t, srv.Store.AnswerAvailability(ctx, 1001, asked[0].RequestedAt, chargenet.AnswerAccepted, now.Add(time.Second)))

	// 502: registered, never connected; EVSE 1003 was set INOPERATIVE, still pending.
	registerBox(t, srv.Store, 502)
	_, _, err = c.UpdateEVSE(ctx, 1003, client.EVSEPatch{Status: new(client.StatusInoperative)})
	require.NoError(t, err)
	_, err = srv.Store.OweAvailability(ctx, 502, now)
	require.NoError(t, err)

	// 503: connected over OCPP 2.0.1, booted without serial number or firmware, then
	// disconnected.
	registerBox(t, srv.Store, 503)
	require.NoError(t, srv.Store.RecordConnections(ctx, []chargenet.ConnectionChange{
		{Kind: chargenet.Connected, Chargebox: 503, Session: "s503", Protocol: chargenet.ProtocolOCPP201, At: now.Add(-time.Hour)},
		{Kind: chargenet.Booted, Chargebox: 503, Session: "s503", At: now.Add(-time.Hour),
			Boot: &chargenet.BootInfo{Vendor: "Other", Model: "DC 150", At: now.Add(-time.Hour)}},
		{Kind: chargenet.Disconnected, Chargebox: 503, Session: "s503", Reason: chargenet.ReasonClosed, At: now.Add(-time.Minute)},
	}))

	// 900: registered before it has EVSEs.
	registerBox(t, srv.Store, 900)

	tests := []struct {
		id    int64
		check func(t *testing.T, b *client.Chargebox)
	}{
		{501, func(t *testing.T, b *client.Chargebox) {
			assert.True(t, b.Connected)
			assert.Equal(t, client.ProtocolOCPP16, b.Protocol)
			require.NotNil(t, b.ConnectedAt)
			assert.Equal(t, now.Add(-time.Minute), *b.ConnectedAt)
			require.NotNil(t, b.LastSeenAt)
			assert.Equal(t, now, *b.LastSeenAt)
			assert.Equal(t, &client.ChargeboxBoot{Vendor: "ACME", Model: "Wallbox 22", SerialNumber: "SN-0001",
				FirmwareVersion: "1.4.2", BootedAt: now.Add(-time.Minute)}, b.Boot)
			assert.Equal(t, []int64{1001, 1002}, b.EVSEUIDs)
			answered := now.Add(time.Second)
			assert.Equal(t, []client.Availability{{EVSEUID: 1001, State: client.AvailabilityInoperative, RequestedAt: now,
				Answer: client.AnswerAccepted, AnsweredAt: &answered}}, b.Availability)
		}},
		{502, func(t *testing.T, b *client.Chargebox) {
			assert.Equal(t, "502", b.Identity)
			assert.False(t, b.Connected)
			assert.Empty(t, b.Protocol)
			assert.Nil(t, b.ConnectedAt)
			assert.Nil(t, b.LastSeenAt)
			assert.Nil(t, b.Boot)
			assert.Equal(t, []int64{1003, 1004}, b.EVSEUIDs)
			require.Len(t, b.Availability, 1)
			assert.Equal(t, int64(1003), b.Availability[0].EVSEUID)
			assert.Equal(t, client.AvailabilityInoperative, b.Availability[0].State)
			assert.Equal(t, client.AnswerPending, b.Availability[0].Answer)
			assert.Nil(t, b.Availability[0].AnsweredAt)
		}},
		{503, func(t *testing.T, b *client.Chargebox) {
			assert.False(t, b.Connected)
			assert.Empty(t, b.Protocol, "no protocol once disconnected")
			assert.Nil(t, b.ConnectedAt)
			require.NotNil(t, b.LastSeenAt)
			require.NotNil(t, b.Boot)
			assert.Equal(t, "Other", b.Boot.Vendor)
			assert.Empty(t, b.Boot.SerialNumber)
			assert.Empty(t, b.Boot.FirmwareVersion)
			assert.Equal(t, now.Add(-time.Hour), b.Boot.BootedAt)
			assert.Equal(t, []client.Availability{}, b.Availability)
		}},
		{900, func(t *testing.T, b *client.Chargebox) {
			assert.Equal(t, []int64{}, b.EVSEUIDs)
			assert.False(t, b.Connected)
		}},
	}
	for _, tt := range tests {
		t.Run(strconv.FormatInt(tt.id, 10), func(t *testing.T) {
			b, err := c.Chargebox(ctx, tt.id)
			require.NoError(t, err)
			assert.Equal(t, wantChargebox(t, srv.Store, tt.id), *b)
			assert.Equal(t, tt.id, b.ID)
			tt.check(t, b)
		})
	}

	// The list holds the same charge boxes, each as Chargebox returns it.
	var listed []client.Chargebox
	for b, err := range c.Chargeboxes(ctx, client.ListOptions{}) {
		require.NoError(t, err)
		listed = append(listed, b)
	}
	require.Equal(t, []int64{501, 502, 503, 900}, chargeboxIDs(listed))
	for _, b := range listed {
		assert.Equal(t, wantChargebox(t, srv.Store, b.ID), b)
	}
}

func TestChargeboxesPagination(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	var ids []int64
	for id := int64(501); id <= 512; id++ {
		registerBox(t, srv.Store, id)
		ids = append(ids, id)
	}

	for _, size := range []int{1, 5, 12, 0} {
		t.Run("iterator page size "+strconv.Itoa(size), func(t *testing.T) {
			rec := newRecorder(t)
			c := newClient(t, srv.URL, rec.option())
			var got []int64
			for b, err := range c.Chargeboxes(ctx, client.ListOptions{PageSize: size}) {
				require.NoError(t, err)
				got = append(got, b.ID)
				assert.Equal(t, wantChargebox(t, srv.Store, b.ID), b)
			}
			assert.Equal(t, ids, got) // every one, once, in order
			limit := size
			if limit == 0 {
				limit = client.MaxPageSize
			}
			assert.Equal(t, (len(ids)+limit-1)/limit, rec.count())
			for i := range rec.count() {
				assert.Equal(t, "/v2/chargeboxes", rec.request(i).URL.Path)
				assert.Equal(t, i > 0, rec.request(i).URL.Query().Get("cursor") != "", "request %d", i)
			}
		})
	}

	t.Run("iterator break stops fetching", func(t *testing.T) {
		rec := newRecorder(t)
		c := newClient(t, srv.URL, rec.option())
		n := 0
		for _, err := range c.Chargeboxes(ctx, client.ListOptions{PageSize: 5}) {
			require.NoError(t, err)
			if n++; n == 7 {
				break
			}
		}
		assert.Equal(t, 2, rec.count())
	})

	t.Run("pages", func(t *testing.T) {
		c := newClient(t, srv.URL)
		first, err := c.ChargeboxesPage(ctx, client.PageRequest{Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, ids[:5], chargeboxIDs(first.Items))
		assert.True(t, first.HasMore)
		assert.NotEmpty(t, first.NextCursor)
		assert.Empty(t, first.PreviousCursor)

		second, err := c.ChargeboxesPage(ctx, client.PageRequest{Cursor: first.NextCursor, Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, ids[5:10], chargeboxIDs(second.Items))
		assert.NotEmpty(t, second.PreviousCursor)

		last, err := c.ChargeboxesPage(ctx, client.PageRequest{Cursor: second.NextCursor, Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, ids[10:], chargeboxIDs(last.Items))
		assert.False(t, last.HasMore)
		assert.Empty(t, last.NextCursor)

		back, err := c.ChargeboxesPage(ctx, client.PageRequest{Cursor: second.PreviousCursor, Limit: 5})
		require.NoError(t, err)
		assert.Equal(t, ids[:5], chargeboxIDs(back.Items))

		defaultSize, err := c.ChargeboxesPage(ctx, client.PageRequest{})
		require.NoError(t, err)
		assert.Equal(t, ids, chargeboxIDs(defaultSize.Items))
		assert.False(t, defaultSize.HasMore)
	})
}

func TestChargeboxErrors(t *testing.T) {
	t.Parallel()
	ctx := context.Background()
	srv := newServer(t, serverConfig{})
	registerBox(t, srv.Store, 501)
	ingestKey := storedKey(t, srv, "ocpp-gateway", chargenet.ScopeIngest)
	readKey := storedKey(t, srv, "emsp-read", chargenet.ScopeInventoryRead)
	evses, err := newClient(t, srv.URL).EVSEsPage(ctx, client.PageRequest{Limit: 1})
	require.NoError(t, err)

	tests := []struct {
		name      string
		key       string
		call      func(c *client.Client) error
		sentinel  error
		status    int
		code      string
		wantParam string
		wantScope string
	}{
		{"registered box with a read key", readKey, func(c *client.Client) error { _, err := c.Chargebox(ctx, 501); return err },
			nil, 200, "", "", ""},
		{"box with EVSEs but not registered", demoKey, func(c *client.Client) error { _, err := c.Chargebox(ctx, 502); return err },
			client.ErrNotFound, 404, client.CodeNotFound, "chargeboxId", ""},
		{"unknown box", demoKey, func(c *client.Client) error { _, err := c.Chargebox(ctx, 999999); return err },
			client.ErrNotFound, 404, client.CodeNotFound, "chargeboxId", ""},
		{"id not positive", demoKey, func(c *client.Client) error { _, err := c.Chargebox(ctx, 0); return err },
			client.ErrInvalid, 400, client.CodeInvalidParameter, "chargeboxId", ""},
		{"limit too large", demoKey, func(c *client.Client) error {
			_, err := c.ChargeboxesPage(ctx, client.PageRequest{Limit: client.MaxPageSize + 1})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidParameter, "limit", ""},
		{"cursor of the EVSE list", demoKey, func(c *client.Client) error {
			_, err := c.ChargeboxesPage(ctx, client.PageRequest{Cursor: evses.NextCursor})
			return err
		}, client.ErrInvalid, 400, client.CodeInvalidCursor, "cursor", ""},
		{"key without inventory:read", ingestKey, func(c *client.Client) error { _, err := c.Chargebox(ctx, 501); return err },
			client.ErrForbidden, 403, client.CodeInsufficientScope, "Authorization", chargenet.ScopeInventoryRead},
		{"list with a key without inventory:read", ingestKey, func(c *client.Client) error {
			_, err := c.ChargeboxesPage(ctx, client.PageRequest{})
			return err
		}, client.ErrForbidden, 403, client.CodeInsufficientScope, "Authorization", chargenet.ScopeInventoryRead},
		{"unknown key", "not-a-known-key-0123456789", func(c *client.Client) error { _, err := c.Chargebox(ctx, 501); return err },
			client.ErrForbidden, 403, client.CodeUnauthorized, "Authorization", ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := tt.call(newClient(t, srv.URL, client.WithAPIKey(tt.key)))
			if tt.status == 200 {
				require.NoError(t, err)
				return
			}
			apiErr := requireAPIError(t, err, tt.sentinel, tt.status, tt.code)
			assert.Equal(t, tt.wantParam, apiErr.Param)
			assert.Equal(t, tt.wantScope, apiErr.Scope)
			assert.NotEmpty(t, apiErr.Message)
		})
	}

	t.Run("iterator yields the error once", func(t *testing.T) {
		c := newClient(t, srv.URL, client.WithAPIKey(ingestKey))
		n := 0
		for b, err := range c.Chargeboxes(ctx, client.ListOptions{}) {
			n++
			assert.Equal(t, client.Chargebox{}, b)
			_ = requireAPIError(t, err, client.ErrForbidden, 403, client.CodeInsufficientScope)
		}
		assert.Equal(t, 1, n)
	})
}
