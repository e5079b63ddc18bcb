package postgres_test

import (
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
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
		_, err := s.UpdateConnector(ctx, 1, 1, chargenet.ConnectorPatch{MaxElectricPower: &p}, "", now)
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
