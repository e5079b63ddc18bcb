package storetest

import (
	"context"
	"fmt"
	"sync/atomic"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
)

// BenchCreateEVSE creates EVSEs at location LOC-0001 of the demo inventory in parallel,
// each with an Idempotency-Key, as POST /v2/evses does. s holds the demo inventory.
func BenchCreateEVSE(b *testing.B, s chargenet.Store) {
	var n atomic.Int64
	b.RunParallel(func(pb *testing.PB) {
		for pb.Next() {
			i := n.Add(1)
			e := chargenet.EVSE{EvseID: fmt.Sprintf("DE*CNT*E%d", 100000+i), ChargeboxID: 900, LocationID: "LOC-0001",
				Connectors: []chargenet.Connector{{ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket,
					PowerType: chargenet.PowerAC3Phase, MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400}}}
			now := time.Now().UTC().Truncate(time.Microsecond)
			if err := e.PrepareNew(now); err != nil {
				b.Fatal(err)
			}
			idem := &chargenet.Idempotency{Owner: "bench", Key: fmt.Sprint(i), Answer: func(any) (*chargenet.IdempotentAnswer, error) {
				return &chargenet.IdempotentAnswer{Status: 201, Header: map[string]string{}, Body: []byte(`{}`)}, nil
			}}
			if _, err := s.CreateEVSE(context.Background(), &e, idem, now); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchUpdateConnector PATCHes connector 1 of the demo EVSEs from 16 goroutines per
// CPU, each on EVSE 1001 + its number modulo 40, as concurrent PATCH requests spread
// over the inventory do: the changes are group committed, each with its
// evse.connector.updated event. s holds the demo inventory; with subscribed, a webhook
// subscribes to the event, so each change also queues a delivery.
func BenchUpdateConnector(b *testing.B, s chargenet.Store, subscribed bool) {
	if subscribed {
		w := NewWebhook("bench", time.Now().UTC().Truncate(time.Microsecond), chargenet.EventConnectorUpdated)
		if err := s.CreateWebhook(context.Background(), &w, nil); err != nil {
			b.Fatal(err)
		}
	}
	var next atomic.Int64
	b.SetParallelism(16)
	b.ResetTimer()
	b.RunParallel(func(pb *testing.PB) {
		uid := 1001 + next.Add(1)%40
		i := 0
		for pb.Next() {
			i++
			p := chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(i%20 + 1))}
			if _, err := s.UpdateConnector(context.Background(), uid, 1, p, "", time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}
