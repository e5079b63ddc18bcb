package storetest

import (
	"crypto/sha256"
	"encoding/json"
	"strconv"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// NewPartner returns a partner named name that has not registered yet, holding the
// registration token whose hash is returned, created at created.
func NewPartner(name string, created time.Time) (*chargenet.Partner, [sha256.Size]byte) {
	h := chargenet.HashToken("registration-" + name + "-" + created.String())
	return &chargenet.Partner{ID: chargenet.NewID("ptn_", created), Name: name, RegistrationHash: &h,
		CreatedAt: created, UpdatedAt: created}, h
}

// partnerCredentials returns credentials with a Locations RECEIVER at receiver ("" for
// none).
func partnerCredentials(token, receiver string) chargenet.PartnerCredentials {
	c := chargenet.PartnerCredentials{Token: token, VersionsURL: "https://emsp.example.com/ocpi/versions",
		Endpoints: []chargenet.PartnerEndpoint{{Module: chargenet.ModuleCredentials, Role: chargenet.RoleSender,
			URL: "https://emsp.example.com/ocpi/2.2.1/credentials"}},
		Roles: []chargenet.PartnerRole{{Role: "EMSP", CountryCode: "NL", PartyID: "EXA", Name: "Example"}}}
	if receiver != "" {
		c.Endpoints = append(c.Endpoints, chargenet.PartnerEndpoint{Module: chargenet.ModuleLocations, Role: chargenet.RoleReceiver, URL: receiver})
	}
	return c
}

func testPartners(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now()
	p, tokenA := NewPartner("emsp-a", start)
	require.NoError(t, s.CreatePartner(ctx, p))

	t.Run("a name or a token is taken once", func(t *testing.T) {
		dup, _ := NewPartner("emsp-a", start)
		assert.ErrorIs(t, s.CreatePartner(ctx, dup), chargenet.ErrConflict)
		other, _ := NewPartner("emsp-other", start)
		other.RegistrationHash = p.RegistrationHash
		err := s.CreatePartner(ctx, other)
		var de *chargenet.Error
		require.ErrorAs(t, err, &de)
		assert.Equal(t, chargenet.ErrConflict, de.Kind)
		assert.Equal(t, "token", de.Param)
		_, err = s.PartnerByName(ctx, "emsp-other")
		assert.ErrorIs(t, err, chargenet.ErrNotFound, "nothing stored")
	})

	t.Run("the registration token finds it", func(t *testing.T) {
		got, registration, err := s.PartnerByToken(ctx, tokenA)
		require.NoError(t, err)
		assert.True(t, registration)
		assert.Equal(t, p.ID, got.ID)
		assert.Equal(t, "emsp-a", got.Name)
		assert.False(t, got.Registered)
		assert.Nil(t, got.TokenHash)
		assert.Empty(t, got.Endpoints)
		assert.True(t, got.CreatedAt.Equal(start))
		_, _, err = s.PartnerByToken(ctx, chargenet.HashToken("unknown"))
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
	})

	tokenC := chargenet.HashToken("token-c")
	at := start.Add(time.Second)
	t.Run("the exchange registers it and kills the registration token", func(t *testing.T) {
		got, err := s.SetPartnerCredentials(ctx, p.ID, tokenA, partnerCredentials("token-b", "https://emsp.example.com/ocpi/2.2.1/locations"), tokenC, at)
		require.NoError(t, err)
		assert.True(t, got.Registered)
		assert.Nil(t, got.RegistrationHash)
		require.NotNil(t, got.TokenHash)
		assert.Equal(t, tokenC, *got.TokenHash)
		assert.Equal(t, "token-b", got.Token)
		assert.Equal(t, "https://emsp.example.com/ocpi/2.2.1/locations", got.ReceiverURL())
		assert.Equal(t, []chargenet.PartnerRole{{Role: "EMSP", CountryCode: "NL", PartyID: "EXA", Name: "Example"}}, got.Roles)
		assert.True(t, got.UpdatedAt.Equal(at))
		_, _, err = s.PartnerByToken(ctx, tokenA)
		assert.ErrorIs(t, err, chargenet.ErrNotFound, "token A is dead")
		byC, registration, err := s.PartnerByToken(ctx, tokenC)
		require.NoError(t, err)
		assert.False(t, registration)
		assert.Equal(t, p.ID, byC.ID)
		_, err = s.SetPartnerCredentials(ctx, p.ID, tokenA, partnerCredentials("token-x", ""), chargenet.HashToken("x"), at)
		assert.ErrorIs(t, err, chargenet.ErrConflict, "a second exchange with token A lost the race")
	})

	t.Run("a registered partner with a receiver gets the inventory events as pushes", func(t *testing.T) {
		_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(21.0)}, "", "", at)
		require.NoError(t, err)
		ds := claimAll(t, s, at)
		require.Len(t, ds, 1)
		d := ds[0]
		assert.Equal(t, p.ID, d.Webhook.Partner)
		assert.Equal(t, "", d.Webhook.Owner)
		assert.Equal(t, "https://emsp.example.com/ocpi/2.2.1/locations", d.Webhook.URL)
		assert.Equal(t, chargenet.PushAPIVersion, d.APIVersion)
		assert.Equal(t, chargenet.EventConnectorUpdated, d.Event.Type)
		stats, err := s.OutboxStats(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(1), stats.PendingPushes)
		assert.Equal(t, int64(0), stats.Pending, "pushes are not webhook deliveries")
		assert.True(t, stats.OldestPush.Equal(at))
		require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: &d, Attempt: &chargenet.DeliveryAttempt{
			Attempt: 1, AttemptedAt: at, Outcome: chargenet.OutcomeSucceeded, HTTPStatus: 200}}))
	})

	tokenC2 := chargenet.HashToken("token-c2")
	t.Run("an update rotates the token and moves the receiver", func(t *testing.T) {
		_, err := s.SetPartnerCredentials(ctx, p.ID, tokenA, partnerCredentials("token-b2", ""), tokenC2, at)
		require.ErrorIs(t, err, chargenet.ErrConflict, "token A no longer opens the exchange")
		got, err := s.SetPartnerCredentials(ctx, p.ID, tokenC, partnerCredentials("token-b2", "https://emsp.example.com/v2/locations"), tokenC2, at)
		require.NoError(t, err)
		assert.Equal(t, "token-b2", got.Token)
		_, _, err = s.PartnerByToken(ctx, tokenC)
		assert.ErrorIs(t, err, chargenet.ErrNotFound, "the previous token is dead")
		_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(22.0)}, "", "", at)
		require.NoError(t, err)
		ds := claimAll(t, s, at.Add(time.Hour))
		require.Len(t, ds, 1)
		assert.Equal(t, "https://emsp.example.com/v2/locations", ds[0].Webhook.URL)
	})

	t.Run("a partner without a receiver gets nothing, and its pending pushes are dropped", func(t *testing.T) {
		_, err := s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(23.0)}, "", "", at)
		require.NoError(t, err)
		_, err = s.SetPartnerCredentials(ctx, p.ID, tokenC2, partnerCredentials("token-b3", ""), tokenC2, at)
		require.NoError(t, err)
		assert.Empty(t, claimAll(t, s, at.Add(24*time.Hour)))
		_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(24.0)}, "", "", at)
		require.NoError(t, err)
		assert.Empty(t, claimAll(t, s, at.Add(24*time.Hour)))
	})

	t.Run("list and delete", func(t *testing.T) {
		b, _ := NewPartner("emsp-b", start)
		require.NoError(t, s.CreatePartner(ctx, b))
		ps, err := s.ListPartners(ctx)
		require.NoError(t, err)
		require.Len(t, ps, 2)
		assert.Equal(t, "emsp-a", ps[0].Name)
		assert.Equal(t, "emsp-b", ps[1].Name)
		byName, err := s.PartnerByName(ctx, "emsp-b")
		require.NoError(t, err)
		assert.Equal(t, b.ID, byName.ID)

		_, err = s.SetPartnerCredentials(ctx, p.ID, tokenC2, partnerCredentials("token-b4", "https://emsp.example.com/l"), tokenC2, at)
		require.NoError(t, err)
		_, err = s.UpdateConnector(ctx, 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(25.0)}, "", "", at)
		require.NoError(t, err)
		require.NoError(t, s.DeletePartner(ctx, p.ID))
		assert.Empty(t, claimAll(t, s, at.Add(24*time.Hour)), "its pushes went with it")
		assert.ErrorIs(t, s.DeletePartner(ctx, p.ID), chargenet.ErrNotFound)
		_, err = s.Partner(ctx, p.ID)
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
		_, _, err = s.PartnerByToken(ctx, tokenC2)
		assert.ErrorIs(t, err, chargenet.ErrNotFound)
		stats, err := s.OutboxStats(ctx)
		require.NoError(t, err)
		assert.Equal(t, int64(0), stats.PendingPushes)
	})
}

// testPushOrder checks that a partner's pushes of one location are claimed one after
// the other, in event order, while those of other locations, and webhook deliveries,
// are not held back.
func testPushOrder(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	ctx := t.Context()
	start := now()
	p, tokenA := NewPartner("emsp", start)
	require.NoError(t, s.CreatePartner(ctx, p))
	_, err := s.SetPartnerCredentials(ctx, p.ID, tokenA, partnerCredentials("b", "https://emsp.example.com/locations"),
		chargenet.HashToken("c"), start)
	require.NoError(t, err)
	w := NewWebhook("k", start, chargenet.EventConnectorUpdated)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))

	// EVSEs 1001 and 1002 are at LOC-0001, 1003 at LOC-0002.
	for i, uid := range []int64{1001, 1002, 1003, 1001} {
		_, err := s.UpdateConnector(ctx, uid, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(30.0 + float64(i))}, "", "", start)
		require.NoError(t, err)
	}
	ack := func(d *chargenet.Delivery, outcome string, next *time.Time) {
		require.NoError(t, s.RecordAttempts(ctx, chargenet.AttemptRecord{Delivery: d, Attempt: &chargenet.DeliveryAttempt{
			Attempt: d.Attempt, AttemptedAt: start, Outcome: outcome, HTTPStatus: 400, NextAttemptAt: next}}))
	}
	pushes := func(ds []chargenet.Delivery) (out []string) {
		for _, d := range ds {
			if d.Webhook.Partner != "" {
				var e struct{ UID int64 }
				require.NoError(t, json.Unmarshal(d.Event.Data, &e))
				out = append(out, strconv.FormatInt(e.UID, 10))
			}
		}
		return out
	}

	ds := claimAll(t, s, start)
	assert.Len(t, ds, 6, "four webhook deliveries and the first push of each location")
	assert.Equal(t, []string{"1001", "1003"}, pushes(ds))
	var first *chargenet.Delivery
	for i := range ds {
		if ds[i].Webhook.Partner == "" {
			ack(&ds[i], chargenet.OutcomeSucceeded, nil)
		} else if pushes(ds[i : i+1])[0] == "1001" {
			first = &ds[i]
		} else {
			ack(&ds[i], chargenet.OutcomeSucceeded, nil)
		}
	}
	require.NotNil(t, first)
	assert.Empty(t, claimAll(t, s, start.Add(30*time.Second)), "LOC-0001's next push waits while the first is leased")

	retry := start.Add(time.Hour)
	ack(first, chargenet.OutcomeFailed, &retry) // a 400: about this message only
	assert.Empty(t, claimAll(t, s, start.Add(30*time.Minute)), "and while it waits for its retry")
	ds = claimAll(t, s, retry)
	require.Len(t, ds, 1)
	assert.Equal(t, []string{"1001"}, pushes(ds), "the retry comes first")
	ack(&ds[0], chargenet.OutcomeSucceeded, nil)
	ds = claimAll(t, s, retry)
	assert.Equal(t, []string{"1002"}, pushes(ds))
	ack(&ds[0], chargenet.OutcomeSucceeded, nil)
	ds = claimAll(t, s, retry)
	assert.Equal(t, []string{"1001"}, pushes(ds), "the fourth change, last")
	ack(&ds[0], chargenet.OutcomeSucceeded, nil)
	assert.Empty(t, claimAll(t, s, retry))
}
