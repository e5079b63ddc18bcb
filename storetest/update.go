package storetest

import (
	"encoding/json"
	"fmt"
	"math"
	"slices"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// In the demo inventory, EVSE 1001 has one AC connector (IEC_62196_T2, SOCKET,
// AC_3_PHASE, 22 kW); 1002 has two DC connectors (CHADEMO, IEC_62196_T1_COMBO); 1004
// has four DC connectors, the first with an error and the fourth deleted.

// checkUpdated checks an EVSE UpdateConnector returned for a patch of connector connID
// against want (the fixture with the patch applied), and that the store now holds
// exactly that, its location touched, and nothing else changed. want's LastUpdated, and
// its connector's, are set from now (the previous ones are older).
func checkUpdated(t *testing.T, s chargenet.Store, before snapshot, got *chargenet.EVSE, want chargenet.EVSE, connID int64, now time.Time) {
	t.Helper()
	require.NotNil(t, got)
	assert.Equal(t, "UTC", got.LastUpdated.Location().String(), "LastUpdated in UTC")
	assert.Equal(t, now.UTC().Truncate(time.Microsecond), got.LastUpdated, "LastUpdated is now, to the microsecond")
	want.LastUpdated = got.LastUpdated
	want.Connector(connID).LastUpdated = got.LastUpdated
	assert.Equal(t, &want, got, "the EVSE as committed")

	reread, err := s.EVSE(t.Context(), want.UID)
	require.NoError(t, err)
	assert.Equal(t, got, reread, "EVSE reads what UpdateConnector returned")

	after := takeSnapshot(t, s)
	assert.Equal(t, touched(before.Locations, got.LastUpdated, want.LocationID), after.Locations,
		"the EVSE's location touched, no other location changed")
	for i := range before.EVSEs {
		if before.EVSEs[i].UID == want.UID {
			before.EVSEs[i] = *got
		}
	}
	assert.Equal(t, before.EVSEs, after.EVSEs, "the list shows the update and no other change")
}

func testUpdateConnector(t *testing.T, open Opener) {
	tests := []struct {
		name        string
		uid, connID int64
		patch       chargenet.ConnectorPatch
		ifMatch     string
		apply       func(c *chargenet.Connector)
	}{
		{
			name: "one field", uid: 1001, connID: 1,
			patch: chargenet.ConnectorPatch{MaxElectricPower: ptr(11.0)},
			apply: func(c *chargenet.Connector) { c.MaxElectricPower = 11 },
		},
		{
			name: "every field", uid: 1001, connID: 1,
			patch: chargenet.ConnectorPatch{
				Standard: ptr(chargenet.StandardIEC62196T1), Format: ptr(chargenet.FormatCable),
				MaxElectricPower: ptr(7.4), MaxAmperage: ptr(16.5), MaxVoltage: ptr(230.0),
			},
			apply: func(c *chargenet.Connector) {
				c.Standard, c.Format = chargenet.StandardIEC62196T1, chargenet.FormatCable
				c.MaxElectricPower, c.MaxAmperage, c.MaxVoltage = 7.4, 16.5, 230
			},
		},
		{
			name: "DC standard on a DC connector", uid: 1002, connID: 2,
			patch: chargenet.ConnectorPatch{Standard: ptr(chargenet.StandardIEC62196T2Combo), MaxVoltage: ptr(1500.0)},
			apply: func(c *chargenet.Connector) { c.Standard, c.MaxVoltage = chargenet.StandardIEC62196T2Combo, 1500 },
		},
		{
			name: "connector with an error keeps it", uid: 1004, connID: 1,
			patch: chargenet.ConnectorPatch{MaxAmperage: ptr(0.1)},
			apply: func(c *chargenet.Connector) { c.MaxAmperage = 0.1 },
		},
		{
			name: "If-Match current ETag", uid: 1002, connID: 1, ifMatch: `"1"`,
			patch: chargenet.ConnectorPatch{MaxElectricPower: ptr(62.5)},
			apply: func(c *chargenet.Connector) { c.MaxElectricPower = 62.5 },
		},
		{
			name: "If-Match list with the current ETag", uid: 1002, connID: 1, ifMatch: `"7", "1"`,
			patch: chargenet.ConnectorPatch{Format: ptr(chargenet.FormatCable)},
			apply: func(c *chargenet.Connector) {},
		},
		{
			name: "If-Match star", uid: 1003, connID: 3, ifMatch: `*`,
			patch: chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)},
			apply: func(c *chargenet.Connector) { c.MaxVoltage = 400 },
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			s, inv := demoStore(t, open)
			before := takeSnapshot(t, s)
			want := findEVSE(inv, tt.uid)
			c := want.Connector(tt.connID)
			require.NotNil(t, c)
			tt.apply(c)
			want.Version = 2

			now := time.Now() // local, with a monotonic reading and nanoseconds
			got, err := s.UpdateConnector(t.Context(), tt.uid, tt.connID, tt.patch, tt.ifMatch, "", now)
			require.NoError(t, err)
			checkUpdated(t, s, before, got, want, tt.connID, now)
		})
	}
}

// testUpdateConnectorSequence patches one connector several times, each time with the
// ETag the previous update returned.
func testUpdateConnectorSequence(t *testing.T, open Opener) {
	s, inv := demoStore(t, open)
	ctx := t.Context()
	want := findEVSE(inv, 1002)
	etag := want.ETag()
	for i, patch := range []chargenet.ConnectorPatch{
		{MaxElectricPower: ptr(60.0)},
		{MaxAmperage: ptr(150.0)},
		{MaxElectricPower: ptr(55.0), MaxVoltage: ptr(480.0)},
	} {
		before := takeSnapshot(t, s)
		*want.Connector(1) = patch.Apply(*want.Connector(1))
		want.Version = int64(i + 2)
		ts := now()
		got, err := s.UpdateConnector(ctx, 1002, 1, patch, etag, "", ts)
		require.NoError(t, err, "update %d", i)
		checkUpdated(t, s, before, got, want, 1, ts)
		assert.NotEqual(t, etag, got.ETag())
		etag = got.ETag()
	}
	_, err := s.UpdateConnector(ctx, 1002, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(1.0)}, `"2"`, "", now())
	requireError(t, err, chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match")
}

func testUpdateConnectorErrors(t *testing.T, open Opener) {
	s, _ := demoStore(t, open)
	before := takeSnapshot(t, s)
	tests := []struct {
		name               string
		uid, connID        int64
		patch              chargenet.ConnectorPatch
		ifMatch            string
		kind               error
		code, param, inMsg string
	}{
		{"unknown EVSE", 9999, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, "",
			chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "9999"},
		{"unknown EVSE before If-Match", 9999, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, `"5"`,
			chargenet.ErrNotFound, chargenet.CodeNotFound, "uid", "9999"},
		{"unknown connector", 1001, 9, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, "",
			chargenet.ErrNotFound, chargenet.CodeNotFound, "connectorId", "9"},
		{"If-Match stale", 1001, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, `"7"`,
			chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match", `"7"`},
		{"If-Match weak", 1001, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, `W/"1"`,
			chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match", `"1"`},
		{"deleted connector", 1004, 4, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, "",
			chargenet.ErrConflict, chargenet.CodeConnectorDeleted, "connectorId", "deleted"},
		{"DC standard on an AC connector", 1001, 1, chargenet.ConnectorPatch{Standard: ptr(chargenet.StandardChademo)}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidConnector, "standard", "CHADEMO"},
		{"AC standard on a DC connector", 1002, 1, chargenet.ConnectorPatch{Standard: ptr(chargenet.StandardIEC62196T2)}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidConnector, "standard", "IEC_62196_T2"},
		{"DC connector as a socket", 1002, 1, chargenet.ConnectorPatch{Format: ptr(chargenet.FormatSocket)}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidConnector, "format", "SOCKET"},
		{"unknown standard", 1001, 1, chargenet.ConnectorPatch{Standard: ptr(chargenet.Standard("TESLA"))}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "standard", "TESLA"},
		{"zero voltage", 1001, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(0.0)}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxVoltage", "maxVoltage"},
		{"power too high", 1001, 1, chargenet.ConnectorPatch{MaxElectricPower: ptr(4000.5), MaxVoltage: ptr(500.0)}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxElectricPower", "maxElectricPower"},
		{"NaN amperage", 1001, 1, chargenet.ConnectorPatch{MaxAmperage: ptr(math.NaN())}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxAmperage", "maxAmperage"},
		{"empty patch", 1001, 1, chargenet.ConnectorPatch{}, "",
			chargenet.ErrInvalid, chargenet.CodeInvalidBody, "", "at least one field"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			got, err := s.UpdateConnector(t.Context(), tt.uid, tt.connID, tt.patch, tt.ifMatch, "", now())
			assert.Nil(t, got)
			msg := requireError(t, err, tt.kind, tt.code, tt.param)
			assert.Contains(t, msg, tt.inMsg)
			assert.Equal(t, before, takeSnapshot(t, s), "nothing changed")
		})
	}
	_, err := s.UpdateConnector(t.Context(), 9999, 1, chargenet.ConnectorPatch{MaxVoltage: ptr(400.0)}, "", "", now())
	assert.EqualError(t, err, "EVSE with uid 9999 not found")
}

// patchWrite is one successful concurrent update: the field it set, the value, and
// the EVSE it returned.
type patchWrite struct {
	field int
	patch chargenet.ConnectorPatch
	evse  *chargenet.EVSE
}

// concurrentPatch returns writer i's patch: one of the five fields, i%5, with a value
// no other writer uses for numbers (standards and formats have too few values, so they
// repeat, but every value keeps the AC connector valid).
func concurrentPatch(i int) chargenet.ConnectorPatch {
	acStandards := []chargenet.Standard{chargenet.StandardIEC62196T1, chargenet.StandardGBTAC, chargenet.StandardIEC62196T2}
	switch i % patchFieldCount {
	case 0:
		return chargenet.ConnectorPatch{Standard: ptr(acStandards[(i/patchFieldCount)%len(acStandards)])}
	case 1:
		return chargenet.ConnectorPatch{Format: ptr([]chargenet.Format{chargenet.FormatCable, chargenet.FormatSocket}[(i/patchFieldCount)%2])}
	case 2:
		return chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(i) + 0.5)}
	case 3:
		return chargenet.ConnectorPatch{MaxAmperage: ptr(float64(i) + 0.25)}
	default:
		return chargenet.ConnectorPatch{MaxVoltage: ptr(float64(i) + 100)}
	}
}

const patchFieldCount = 5

// testUpdateConnectorConcurrent runs 64 updates of one connector at once, each setting
// one field, while readers read the EVSE. Every update must succeed and be applied in
// one serial order: the versions are 2..65, each returned EVSE is the state after
// replaying the updates in version order up to its own, the final state is the last
// write of each field, and every read sees the state of one version, never a mix.
func testUpdateConnectorConcurrent(t *testing.T, open Opener) {
	const writers, readers = 64, 4
	s, inv := demoStore(t, open)
	ctx := t.Context()
	initial := findEVSE(inv, 1001)

	start := make(chan struct{})
	results := make([]patchWrite, writers)
	errs := make([]error, writers)
	var wg sync.WaitGroup
	for i := range writers {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			p := concurrentPatch(i)
			e, err := s.UpdateConnector(ctx, 1001, 1, p, "", "", time.Now())
			results[i], errs[i] = patchWrite{field: i % patchFieldCount, patch: p, evse: e}, err
		}()
	}
	done := make(chan struct{})
	reads := make([][]*chargenet.EVSE, readers)
	var rg sync.WaitGroup
	for r := range readers {
		rg.Add(1)
		go func() {
			defer rg.Done()
			<-start
			for n := 0; n < 500; n++ {
				select {
				case <-done:
					return
				default:
				}
				e, err := s.EVSE(ctx, 1001)
				if !assert.NoError(t, err) {
					return
				}
				reads[r] = append(reads[r], e)
			}
		}()
	}
	close(start)
	wg.Wait()
	close(done)
	rg.Wait()

	for i, err := range errs {
		require.NoError(t, err, "writer %d", i)
	}
	slices.SortFunc(results, func(a, b patchWrite) int { return compare(a.evse.Version, b.evse.Version) })
	state := map[int64]chargenet.Connector{1: initial.Connectors[0]}
	c := initial.Connectors[0]
	for i, w := range results {
		require.Equal(t, int64(i+2), w.evse.Version, "versions are 2..%d, each once", writers+1)
		assert.True(t, w.evse.LastUpdated.After(c.LastUpdated), "version %d: LastUpdated %s grows with the version (from %s)",
			w.evse.Version, w.evse.LastUpdated, c.LastUpdated)
		c = w.patch.Apply(c)
		c.LastUpdated = w.evse.LastUpdated // the patched connector's, as its EVSE's
		state[w.evse.Version] = c
		assert.Equal(t, []chargenet.Connector{c}, w.evse.Connectors,
			"the EVSE returned at version %d is the serial replay up to it", w.evse.Version)
	}

	final, err := s.EVSE(ctx, 1001)
	require.NoError(t, err)
	assert.Equal(t, int64(1+writers), final.Version, "Version is 1 + the number of successful updates")
	assert.Equal(t, []chargenet.Connector{c}, final.Connectors, "the final state is the last write of each field")
	assert.Equal(t, results[len(results)-1].evse, final)

	// Each field holds the value of its last write in version order (so one that a
	// writer wrote to it).
	assert.Equal(t, lastValue(results, 2, func(p chargenet.ConnectorPatch) any { return p.MaxElectricPower }), ptr(c.MaxElectricPower))
	assert.Equal(t, lastValue(results, 3, func(p chargenet.ConnectorPatch) any { return p.MaxAmperage }), ptr(c.MaxAmperage))
	assert.Equal(t, lastValue(results, 4, func(p chargenet.ConnectorPatch) any { return p.MaxVoltage }), ptr(c.MaxVoltage))
	assert.Equal(t, lastValue(results, 0, func(p chargenet.ConnectorPatch) any { return p.Standard }), ptr(c.Standard))
	assert.Equal(t, lastValue(results, 1, func(p chargenet.ConnectorPatch) any { return p.Format }), ptr(c.Format))

	// Reads are snapshots: the connectors a read returns are those of its Version.
	nReads, torn := 0, 0
	var firstTorn string
	for _, rs := range reads {
		for _, e := range rs {
			nReads++
			want, ok := state[e.Version]
			if !ok || !assert.ObjectsAreEqual([]chargenet.Connector{want}, e.Connectors) {
				if torn++; torn == 1 {
					firstTorn = fmt.Sprintf("version %d (known: %v) with connectors %+v, want %+v", e.Version, ok, e.Connectors, want)
				}
			}
		}
	}
	assert.Zero(t, torn, "of %d concurrent reads, %d returned connectors of another version than theirs; the first: %s", nReads, torn, firstTorn)
}

// lastValue returns the value the last write (in version order) of a field set.
func lastValue(results []patchWrite, field int, get func(chargenet.ConnectorPatch) any) any {
	var v any
	for _, w := range results {
		if w.field == field {
			v = get(w.patch)
		}
	}
	return v
}

// testUpdateConnectorIfMatchRace sends updates that all carry the same If-Match at
// once: exactly one succeeds, the others fail with ErrPreconditionFailed, and the
// winner's value is stored.
func testUpdateConnectorIfMatchRace(t *testing.T, open Opener) {
	const writers = 16
	s, _ := demoStore(t, open)
	ctx := t.Context()
	type result struct {
		evse *chargenet.EVSE
		err  error
	}
	results := make([]result, writers)
	atOnce(writers, func(i int) {
		e, err := s.UpdateConnector(ctx, 1002, 2, chargenet.ConnectorPatch{MaxElectricPower: ptr(float64(100 + i))}, `"1"`, "", time.Now())
		results[i] = result{e, err}
	})

	winner := -1
	for i, r := range results {
		if r.err == nil {
			assert.Equal(t, -1, winner, "only one update with If-Match \"1\" succeeds")
			winner = i
			continue
		}
		requireError(t, r.err, chargenet.ErrPreconditionFailed, chargenet.CodePreconditionFailed, "If-Match")
	}
	require.NotEqual(t, -1, winner, "one update succeeds")
	final, err := s.EVSE(ctx, 1002)
	require.NoError(t, err)
	assert.Equal(t, int64(2), final.Version)
	assert.Equal(t, float64(100+winner), final.Connector(2).MaxElectricPower, fmt.Sprintf("writer %d's value", winner))
	assert.Equal(t, results[winner].evse, final)
}

// testUpdateConnectorMixedGroup sends updates of several EVSEs at once, a quarter of
// them refused by a rule, with a webhook subscribed, so that the store commits refused
// and accepted updates of several EVSEs together: per EVSE, the accepted updates get
// the versions 2..n+1 once each and each returns the serial replay up to it, the
// refused ones change nothing, and exactly one event is recorded per accepted update,
// carrying its version.
func testUpdateConnectorMixedGroup(t *testing.T, open Opener) {
	const writers = 60
	s, inv := demoStore(t, open)
	ctx := t.Context()
	w := NewWebhook("mixed", time.Now(), chargenet.EventConnectorUpdated)
	require.NoError(t, s.CreateWebhook(ctx, &w, nil))
	uids := []int64{1001, 1002, 1003}

	type result struct {
		uid   int64
		power float64
		evse  *chargenet.EVSE
		err   error
	}
	results := make([]result, writers)
	atOnce(writers, func(i int) {
		r := result{uid: uids[i%len(uids)], power: float64(i) + 1}
		if i%4 == 3 {
			r.power = -r.power // refused: a rating must be positive
		}
		r.evse, r.err = s.UpdateConnector(ctx, r.uid, 1, chargenet.ConnectorPatch{MaxElectricPower: &r.power}, "", "", time.Now())
		results[i] = r
	})

	accepted := map[int64][]result{}
	for i, r := range results {
		if r.power < 0 {
			requireError(t, r.err, chargenet.ErrInvalid, chargenet.CodeInvalidBody, "maxElectricPower")
			continue
		}
		require.NoError(t, r.err, "writer %d", i)
		accepted[r.uid] = append(accepted[r.uid], r)
	}
	for _, uid := range uids {
		rs := accepted[uid]
		slices.SortFunc(rs, func(a, b result) int { return compare(a.evse.Version, b.evse.Version) })
		c := findEVSE(inv, uid).Connectors[0]
		for i, r := range rs {
			require.Equal(t, int64(i+2), r.evse.Version, "EVSE %d: versions 2..%d, each once", uid, len(rs)+1)
			assert.True(t, r.evse.LastUpdated.After(c.LastUpdated), "EVSE %d: LastUpdated grows with the version", uid)
			c.MaxElectricPower, c.LastUpdated = r.power, r.evse.LastUpdated
			assert.Equal(t, c, *r.evse.Connector(1), "EVSE %d at version %d is the serial replay up to it", uid, r.evse.Version)
		}
		final, err := s.EVSE(ctx, uid)
		require.NoError(t, err)
		assert.Equal(t, rs[len(rs)-1].evse, final, "EVSE %d is stored as its last accepted update left it", uid)
	}

	events := map[int64][]int64{} // uid → versions
	for _, d := range claimAll(t, s, time.Now().Add(time.Hour)) {
		var data struct {
			UID       int64 `json:"uid"`
			Version   int64 `json:"version"`
			Connector struct {
				MaxElectricPower float64 `json:"maxElectricPower"`
			} `json:"connector"`
		}
		require.NoError(t, json.Unmarshal(d.Event.Data, &data))
		assert.Positive(t, data.Connector.MaxElectricPower, "no event of a refused update")
		events[data.UID] = append(events[data.UID], data.Version)
	}
	for _, uid := range uids {
		want := make([]int64, len(accepted[uid]))
		for i := range want {
			want[i] = int64(i + 2)
		}
		got := events[uid]
		slices.Sort(got)
		assert.Equal(t, want, got, "EVSE %d: one event per accepted update, with its version", uid)
	}
}

// atOnce runs f(0) … f(n-1) in n goroutines released together, and waits for them.
func atOnce(n int, f func(i int)) {
	start := make(chan struct{})
	var wg sync.WaitGroup
	for i := range n {
		wg.Add(1)
		go func() {
			defer wg.Done()
			<-start
			f(i)
		}()
	}
	close(start)
	wg.Wait()
}
