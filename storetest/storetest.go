// Package storetest is the conformance suite of chargenet.Store. Every backend runs the
// same suite through Run, so that the server sees one behaviour whichever database is
// behind it:
//
//	func TestStore(t *testing.T) {
//		storetest.Run(t, func(t testing.TB, o storetest.Options) chargenet.Store { return MustOpenDB(t, o) })
//	}
//
// Besides the Store documentation, the suite pins down what that documentation leaves
// open: times come back in UTC; list keys compare byte by byte (location ids as in Go's
// string comparison, not by a locale's collation); slices (Connectors, TariffIDs,
// EvseUIDs, list results) are empty rather than nil; an EVSE's missing location on
// Import is ErrInvalid with Param "evses[i].locationId"; the message of a domain error
// names its Param; API key names and hashes are unique among all keys, revoked ones
// included; and Close may be called twice. For the inventory's life cycle: a REMOVED
// EVSE keeps its uid and its evseId, so new EVSEs get higher uids and cannot reuse the
// evseId; an idempotency key is refused before anything else a write checks, an answer
// is kept as of the write's now (a webhook's CreatedAt) and only by a write that
// commits; a change that leaves the Version returns the EVSE as read even if change
// edited it; of concurrent creates of one location id, one creates and the others
// replace. Fields the contract does not show (OperatorHold, status times) may be zero
// in what EVSE and ListEVSEs return.
package storetest

import (
	"context"
	"fmt"
	"slices"
	"testing"
	"time"

	"github.com/chargenet/chargenet"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
)

// Options are what a store is opened with that the suite checks: the options of
// sqlite.Open and postgres.Open.
type Options struct {
	// Hooks are the store's hooks (sqlite.WithHooks, postgres.Options.Hooks); nil: none.
	Hooks *chargenet.Hooks
	// CommitWait and CommitWaitTarget are the commit wait (sqlite.WithCommitWait,
	// postgres.Options.CommitWait and CommitWaitTarget); zero: none, and the store's
	// default target.
	CommitWait       time.Duration
	CommitWaitTarget int
}

// Opener returns a new, empty, migrated store opened with o, isolated from every other
// store it returns, and arranges for it to be closed when t ends. Close must tolerate a
// second call: one test closes the store itself.
type Opener = func(t testing.TB, o Options) chargenet.Store

// Run runs the conformance suite against the stores open returns, one or more per
// subtest.
func Run(t *testing.T, open Opener) {
	t.Run("EVSE", func(t *testing.T) { testEVSE(t, open) })
	t.Run("Location", func(t *testing.T) { testLocation(t, open) })
	t.Run("ListSeek", func(t *testing.T) { testListSeek(t, open) })
	t.Run("Pagination", func(t *testing.T) { testPagination(t, open) })
	t.Run("PaginationInsertDuringWalk", func(t *testing.T) { testPaginationInsertDuringWalk(t, open) })
	t.Run("PaginationBadCursor", func(t *testing.T) { testPaginationBadCursor(t, open) })
	t.Run("UpdateConnector", func(t *testing.T) { testUpdateConnector(t, open) })
	t.Run("UpdateConnectorSequence", func(t *testing.T) { testUpdateConnectorSequence(t, open) })
	t.Run("UpdateConnectorErrors", func(t *testing.T) { testUpdateConnectorErrors(t, open) })
	t.Run("UpdateConnectorConcurrent", func(t *testing.T) { testUpdateConnectorConcurrent(t, open) })
	t.Run("UpdateConnectorIfMatchRace", func(t *testing.T) { testUpdateConnectorIfMatchRace(t, open) })
	t.Run("UpdateConnectorMixedGroup", func(t *testing.T) { testUpdateConnectorMixedGroup(t, open) })
	t.Run("PatchAndStatusTogether", func(t *testing.T) { testPatchAndStatusTogether(t, open) })
	t.Run("StoredDocs", func(t *testing.T) { testStoredDocs(t, open) })
	t.Run("Import", func(t *testing.T) { testImport(t, open) })
	t.Run("ImportRoundTrip", func(t *testing.T) { testImportRoundTrip(t, open) })
	t.Run("ImportExistingLocation", func(t *testing.T) { testImportExistingLocation(t, open) })
	t.Run("ImportRollback", func(t *testing.T) { testImportRollback(t, open) })
	t.Run("APIKeys", func(t *testing.T) { testAPIKeys(t, open) })
	t.Run("APIKeyLifecycle", func(t *testing.T) { testAPIKeyLifecycle(t, open) })
	t.Run("Setting", func(t *testing.T) { testSetting(t, open) })
	t.Run("SettingConcurrent", func(t *testing.T) { testSettingConcurrent(t, open) })
	t.Run("Webhooks", func(t *testing.T) { testWebhooks(t, open) })
	t.Run("Outbox", func(t *testing.T) { testOutbox(t, open) })
	t.Run("OutboxReceiverDown", func(t *testing.T) { testReceiverDown(t, open) })
	t.Run("Partners", func(t *testing.T) { testPartners(t, open) })
	t.Run("PushOrder", func(t *testing.T) { testPushOrder(t, open) })
	t.Run("Sites", func(t *testing.T) { testSites(t, open) })
	t.Run("StatusNotification", func(t *testing.T) { testStatusNotification(t, open) })
	t.Run("Announce", func(t *testing.T) { testAnnounce(t, open) })
	t.Run("CreateEVSE", func(t *testing.T) { testCreateEVSE(t, open) })
	t.Run("ChangeEVSE", func(t *testing.T) { testChangeEVSE(t, open) })
	t.Run("ChangeEVSEUnchanged", func(t *testing.T) { testChangeEVSEUnchanged(t, open) })
	t.Run("ChangeEVSERefused", func(t *testing.T) { testChangeEVSERefused(t, open) })
	t.Run("ChangeEVSEConcurrent", func(t *testing.T) { testChangeEVSEConcurrent(t, open) })
	t.Run("StatusHeld", func(t *testing.T) { testStatusHeld(t, open) })
	t.Run("PutLocation", func(t *testing.T) { testPutLocation(t, open) })
	t.Run("DeleteLocation", func(t *testing.T) { testDeleteLocation(t, open) })
	t.Run("DeleteLocationRace", func(t *testing.T) { testDeleteLocationRace(t, open) })
	t.Run("ListDeletedLocations", func(t *testing.T) { testListDeletedLocations(t, open) })
	t.Run("ChangeLists", func(t *testing.T) { testChangeLists(t, open) })
	t.Run("ChangeListsSince", func(t *testing.T) { testChangeListsSince(t, open) })
	t.Run("ChangeListsMove", func(t *testing.T) { testChangeListsMove(t, open) })
	t.Run("ChangeListsRemovals", func(t *testing.T) { testChangeListsRemovals(t, open) })
	t.Run("ChangeListsWritePaths", func(t *testing.T) { testChangeListsWritePaths(t, open) })
	t.Run("ChangeListsConcurrent", func(t *testing.T) { testChangeListsConcurrent(t, open) })
	t.Run("Idempotency", func(t *testing.T) { testIdempotency(t, open) })
	t.Run("IdempotencyConcurrent", func(t *testing.T) { testIdempotencyConcurrent(t, open) })
	t.Run("EventLogEveryEvent", func(t *testing.T) { testEventLogEveryEvent(t, open) })
	t.Run("EventLogRead", func(t *testing.T) { testEventLogRead(t, open) })
	t.Run("EventLogNoMiss", func(t *testing.T) { testEventLogNoMiss(t, open) })
	t.Run("EventActor", func(t *testing.T) { testEventActor(t, open) })
	t.Run("SendTestEvent", func(t *testing.T) { testSendTestEvent(t, open) })
	t.Run("ReplayEvents", func(t *testing.T) { testReplayEvents(t, open) })
	t.Run("PruneEvents", func(t *testing.T) { testPruneEvents(t, open) })
	t.Run("Observe", func(t *testing.T) { testObserve(t, open) })
	t.Run("CommitWait", func(t *testing.T) { testCommitWait(t, open) })
	t.Run("ClockBackwards", func(t *testing.T) { testClockBackwards(t, open) })
	t.Run("Ping", func(t *testing.T) { testPing(t, open) })
	t.Run("CanceledContext", func(t *testing.T) { testCanceledContext(t, open) })
	t.Run("Chargeboxes", func(t *testing.T) { testChargeboxes(t, open) })
}

// demoStore returns a store holding chargenet.DemoInventory and that inventory as the
// store holds it (see asImported).
func demoStore(t testing.TB, open Opener) (chargenet.Store, *chargenet.Inventory) {
	t.Helper()
	return demoStoreWith(t, open, Options{})
}

// demoStoreWith is demoStore with a store opened with o.
func demoStoreWith(t testing.TB, open Opener, o Options) (chargenet.Store, *chargenet.Inventory) {
	t.Helper()
	s := open(t, o)
	inv := chargenet.DemoInventory(time.Now())
	require.NoError(t, s.Import(t.Context(), inv))
	return s, asImported(chargenet.DemoInventory(inv.Locations[0].LastUpdated))
}

// asImported returns inv as a store holds it once imported: each location's EvseUIDs
// derived from the EVSEs (ascending, empty rather than nil), versions 1, times in UTC
// to the microsecond, each connector's LastUpdated its EVSE's, and each location's
// LastUpdated no earlier than its EVSEs'.
func asImported(inv *chargenet.Inventory) *chargenet.Inventory {
	byLoc := map[string][]int64{}
	newest := inv.NewestEVSEUpdates()
	for i := range inv.EVSEs {
		e := &inv.EVSEs[i]
		if e.LocationID != "" {
			byLoc[e.LocationID] = append(byLoc[e.LocationID], e.UID)
		}
		e.Version, e.LastUpdated = 1, e.LastUpdated.UTC().Truncate(chargenet.Precision)
		for j := range e.Connectors {
			c := &e.Connectors[j]
			c.LastUpdated = e.LastUpdated
			if c.DeletedAt != nil {
				at := c.DeletedAt.UTC().Truncate(chargenet.Precision)
				c.DeletedAt = &at
			}
		}
	}
	for i := range inv.Locations {
		l := &inv.Locations[i]
		uids := append([]int64{}, byLoc[l.ID]...)
		slices.Sort(uids)
		l.EvseUIDs, l.Version, l.LastUpdated = uids, 1, l.LastUpdated.UTC().Truncate(chargenet.Precision)
		if t := newest[l.ID]; t.After(l.LastUpdated) {
			l.LastUpdated = t
		}
	}
	return inv
}

// touched returns a copy of locations with those of ids touched (chargenet.Location.Touch)
// at at, as a change of one of their EVSEs with that LastUpdated leaves them.
func touched(locations []chargenet.Location, at time.Time, ids ...string) []chargenet.Location {
	out := make([]chargenet.Location, len(locations))
	for i, l := range locations {
		l.EvseUIDs = slices.Clone(l.EvseUIDs)
		if slices.Contains(ids, l.ID) {
			l.Touch(at)
		}
		out[i] = l
	}
	return out
}

// sortedEVSEs returns copies of the inventory's EVSEs in uid order, as lists return them.
func sortedEVSEs(inv *chargenet.Inventory) []chargenet.EVSE {
	out := make([]chargenet.EVSE, len(inv.EVSEs))
	for i := range inv.EVSEs {
		out[i] = cloneEVSE(inv.EVSEs[i])
	}
	slices.SortFunc(out, func(a, b chargenet.EVSE) int { return compare(a.UID, b.UID) })
	return out
}

// sortedLocations returns copies of the inventory's locations in id order.
func sortedLocations(inv *chargenet.Inventory) []chargenet.Location {
	out := append([]chargenet.Location{}, inv.Locations...)
	for i := range out {
		out[i].EvseUIDs = slices.Clone(out[i].EvseUIDs)
	}
	slices.SortFunc(out, func(a, b chargenet.Location) int { return compare(a.ID, b.ID) })
	return out
}

func compare[K int64 | string](a, b K) int {
	switch {
	case a < b:
		return -1
	case a > b:
		return 1
	}
	return 0
}

func findEVSE(inv *chargenet.Inventory, uid int64) chargenet.EVSE {
	for _, e := range inv.EVSEs {
		if e.UID == uid {
			return cloneEVSE(e)
		}
	}
	panic(fmt.Sprintf("storetest: no EVSE %d in the fixture", uid))
}

// cloneEVSE returns a deep copy of e.
func cloneEVSE(e chargenet.EVSE) chargenet.EVSE { return *e.Clone() }

// snapshot reads every location and EVSE through the list methods.
type snapshot struct {
	Locations []chargenet.Location
	EVSEs     []chargenet.EVSE
}

func takeSnapshot(t testing.TB, s chargenet.Store) snapshot {
	t.Helper()
	return snapshot{
		Locations: readAll(t, s.ListLocations, func(l *chargenet.Location) string { return l.ID }),
		EVSEs:     readAll(t, s.ListEVSEs, func(e *chargenet.EVSE) int64 { return e.UID }),
	}
}

// readAll reads a whole list through forward keyset reads.
func readAll[T any, K int64 | string](t testing.TB, read func(context.Context, chargenet.Seek[K]) ([]T, error), key func(*T) K) []T {
	t.Helper()
	out := []T{}
	seek := chargenet.Seek[K]{Limit: chargenet.MaxPageSize}
	for {
		items, err := read(t.Context(), seek)
		require.NoError(t, err)
		out = append(out, items...)
		if len(items) < seek.Limit {
			return out
		}
		seek.Key, seek.HasKey = key(&items[len(items)-1]), true
	}
}

// requireError checks that err is a *chargenet.Error of the given kind, code and param,
// whose message names the param (the API shows it to clients), and returns the message.
func requireError(t testing.TB, err error, kind error, code, param string) string {
	t.Helper()
	require.Error(t, err)
	assert.ErrorIs(t, err, kind)
	var de *chargenet.Error
	require.ErrorAs(t, err, &de, "want a *chargenet.Error, got %T: %v", err, err)
	assert.Equal(t, code, de.Code, "Code of %q", de.Message)
	assert.Equal(t, param, de.Param, "Param of %q", de.Message)
	assert.NotEmpty(t, de.Message)
	assert.Contains(t, de.Message, param, "the message names the param")
	return de.Message
}

// Generators of valid records.

func newLocation(id string, now time.Time) chargenet.Location {
	return chargenet.Location{
		ID: id, Name: "Test site " + id, Address: "Teststrasse 1", City: "Berlin", PostalCode: "10115",
		Country: "DEU", Latitude: 52.5, Longitude: 13.4, TimeZone: "Europe/Berlin",
		EvseUIDs: []int64{}, LastUpdated: now,
	}
}

func newEVSE(uid int64, locationID string, now time.Time) chargenet.EVSE {
	return chargenet.EVSE{
		UID: uid, EvseID: fmt.Sprintf("DE*TST*E%d", uid), ChargeboxID: uid%97 + 1, LocationID: locationID,
		Status: chargenet.StatusAvailable, LastUpdated: now, Version: 1,
		Connectors: []chargenet.Connector{{
			ID: 1, Standard: chargenet.StandardIEC62196T2, Format: chargenet.FormatSocket, PowerType: chargenet.PowerAC3Phase,
			MaxElectricPower: 22, MaxAmperage: 32, MaxVoltage: 400, TariffIDs: []string{"AC-STANDARD"},
		}},
	}
}

// idAlphabet holds every character a location id may contain, so that generated ids
// check that lists order ids byte by byte.
const idAlphabet = "-0123456789ABCDEFGHIJKLMNOPQRSTUVWXYZ_abcdefghijklmnopqrstuvwxyz"

// mixedID returns the i-th of a set of distinct location ids that start with every
// kind of character.
func mixedID(i int) string {
	return fmt.Sprintf("%c%c%04d", idAlphabet[(i*7)%len(idAlphabet)], idAlphabet[(i*13+5)%len(idAlphabet)], i)
}

// now returns the current time in UTC at microsecond precision, which every backend
// stores exactly.
func now() time.Time { return chargenet.Stamp(time.Now()) }

func ptr[T any](v T) *T { return &v }
