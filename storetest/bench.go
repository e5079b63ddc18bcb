package storetest

import (
	"context"
	"fmt"
	"os"
	"strconv"
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
			now := chargenet.Stamp(time.Now())
			if err := e.PrepareNew(now); err != nil {
				b.Fatal(err)
			}
			idem := &chargenet.Idempotency{Owner: "bench", Key: fmt.Sprint(i), Answer: func(any) ([]byte, error) {
				return []byte(`{}`), nil
			}}
			if _, err := s.CreateEVSE(context.Background(), &e, idem, "", now); err != nil {
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
		w := NewWebhook("bench", chargenet.Stamp(time.Now()), chargenet.EventConnectorUpdated)
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
			if _, err := s.UpdateConnector(context.Background(), uid, 1, p, "", "", time.Now()); err != nil {
				b.Fatal(err)
			}
		}
	})
}

// BenchLocationChanges measures one 25-item read of the location change list of s,
// which holds n locations changed before since and nothing else: "first" is the first
// page (GET /v1/locations?updated_since=<since>), "deep" the page after the item at
// depth n-25 (the same request with a cursor deep in the list), "recent" the first page
// with Since after all but the last 25 changes, which PutLocation makes at later.
func BenchLocationChanges(b *testing.B, s chargenet.Store, n int, since, later time.Time) {
	ctx := b.Context()
	// The list holds every location once (on PostgreSQL once the transactions that
	// began before the import's have ended); find the item at depth n-26.
	var deep chargenet.ChangeSeek[string]
	for deadline := time.Now().Add(time.Minute); ; {
		seek, count := chargenet.ChangeSeek[string]{Since: since, Limit: 10000}, 0
		for {
			page, err := s.ListLocationChanges(ctx, seek)
			if err != nil {
				b.Fatal(err)
			}
			if i := n - 26 - count; i >= 0 && i < len(page) {
				deep = chargenet.ChangeSeek[string]{Since: since, Pos: page[i].ChangePos, Key: page[i].ID, HasPos: true, Limit: 25}
			}
			count += len(page)
			if len(page) < seek.Limit {
				break
			}
			last := page[len(page)-1]
			seek.Pos, seek.Key, seek.HasPos = last.ChangePos, last.ID, true
		}
		if count == n {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("the change list holds %d locations, want %d", count, n)
		}
		time.Sleep(100 * time.Millisecond)
	}
	read := func(b *testing.B, seek chargenet.ChangeSeek[string], want int) {
		b.ResetTimer()
		for range b.N {
			page, err := s.ListLocationChanges(ctx, seek)
			if err != nil {
				b.Fatal(err)
			}
			if len(page) != want {
				b.Fatalf("%d locations, want %d", len(page), want)
			}
		}
	}
	b.Run("first", func(b *testing.B) { read(b, chargenet.ChangeSeek[string]{Since: since, Limit: 25}, 25) })
	b.Run("deep", func(b *testing.B) { read(b, deep, 25) })

	// The last 25 locations in id order change again at later.
	ids, err := s.ListLocations(ctx, chargenet.Seek[string]{Backward: true, Limit: 25})
	if err != nil {
		b.Fatal(err)
	}
	for i := range ids {
		l := ids[i]
		l.Name += " (renamed)"
		if _, _, err := s.PutLocation(ctx, &l, "", later); err != nil {
			b.Fatal(err)
		}
	}
	for deadline := time.Now().Add(time.Minute); ; time.Sleep(100 * time.Millisecond) {
		page, err := s.ListLocationChanges(ctx, chargenet.ChangeSeek[string]{Since: later, Limit: 25})
		if err != nil {
			b.Fatal(err)
		}
		if len(page) == 25 {
			break
		}
		if time.Now().After(deadline) {
			b.Fatalf("%d changes since %v, want 25", len(page), later)
		}
	}
	b.Run("recent", func(b *testing.B) { read(b, chargenet.ChangeSeek[string]{Since: later, Limit: 25}, 25) })
}

// ScaleInventory returns n locations with ids L00000000, L00000001, ..., changed at at.
func ScaleInventory(n int, at time.Time) *chargenet.Inventory {
	inv := &chargenet.Inventory{Locations: make([]chargenet.Location, n)}
	for i := range inv.Locations {
		inv.Locations[i] = chargenet.Location{
			ID: fmt.Sprintf("L%08d", i), Name: "Site", Address: "Street 1", City: "Berlin", PostalCode: "10115",
			Country: "DEU", Latitude: 52.5, Longitude: 13.4, TimeZone: "Europe/Berlin", LastUpdated: at,
		}
	}
	return inv
}

// ScaleLocations is the number of locations of the benchmarks at scale:
// CHARGENET_BENCH_LOCATIONS, default 1,000,000.
func ScaleLocations(b *testing.B) int {
	n, err := strconv.Atoi(os.Getenv("CHARGENET_BENCH_LOCATIONS"))
	if err != nil || n < 100 {
		return 1_000_000
	}
	return n
}
