package reliability

import (
	"bytes"
	"context"
	"database/sql"
	"encoding/json"
	"fmt"
	"maps"
	"math/rand/v2"
	"net/http"
	"net/http/httptest"
	"net/http/httputil"
	"net/url"
	"os/exec"
	"regexp"
	"slices"
	"strconv"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/chargenet/chargenet/internal/proctest"
	"github.com/jackc/pgx/v5"
	"github.com/stretchr/testify/assert"
	"github.com/stretchr/testify/require"
	_ "modernc.org/sqlite" // the mutation writes to the SQLite file directly
)

// The partner-sync proof: while writers change the inventory, one partner keeps a copy
// with the change lists (updated_since and resume_cursor) and another with the event
// log (re-reading what each event names, as a webhook consumer would). Once the writers
// have stopped, each copy equals the server's state byte for byte, the event log holds
// one event per change, every event of it reached the log partner and a webhook
// receiver, and a receiver that was down for the whole run catches up with replay.

// syncSince is the updated_since of partner A: before anything in the store, so its
// first read is a full read and every later poll resumes from its resume_cursor.
const syncSince = "2000-01-01T00:00:00Z"

// pageLimit is the page size the partners read with.
const pageLimit = 100

// inventory is a copy of the network: every EVSE (key "evse/UID") and location (key
// "location/ID") as the JSON bytes the server sends for it.
type inventory map[string][]byte

func evseKey(uid int64) string     { return "evse/" + strconv.FormatInt(uid, 10) }
func locationKey(id string) string { return "location/" + id }

// difference is one item on which a partner's copy and the server disagree. Server or
// Copy is nil when the item is missing there.
type difference struct {
	Key          string
	Server, Copy []byte
}

func (d difference) String() string {
	show := func(b []byte) string {
		if b == nil {
			return "(missing)"
		}
		return string(b)
	}
	return fmt.Sprintf("%s\n    server: %s\n    copy:   %s", d.Key, show(d.Server), show(d.Copy))
}

// compareInventories returns every item that differs between the server's state and a
// partner's copy (missing on either side, or other bytes), ordered by key. The proof and
// the mutation test both decide with it.
func compareInventories(server, copy inventory) []difference {
	var out []difference
	for k, s := range server {
		if c, ok := copy[k]; !ok || !bytes.Equal(s, c) {
			out = append(out, difference{Key: k, Server: s, Copy: c})
		}
	}
	for k, c := range copy {
		if _, ok := server[k]; !ok {
			out = append(out, difference{Key: k, Copy: c})
		}
	}
	slices.SortFunc(out, func(a, b difference) int { return strings.Compare(a.Key, b.Key) })
	return out
}

func differenceKeys(ds []difference) []string {
	keys := make([]string, len(ds))
	for i, d := range ds {
		keys[i] = d.Key
	}
	return keys
}

func describe(ds []difference) string {
	var b strings.Builder
	for i, d := range ds {
		if i == 10 {
			fmt.Fprintf(&b, "  ... and %d more\n", len(ds)-10)
			break
		}
		fmt.Fprintf(&b, "  %s\n", d)
	}
	return b.String()
}

// page is one page of a list, a change list or the event log.
type page struct {
	Data       []json.RawMessage `json:"data"`
	Pagination struct {
		NextCursor   *string `json:"next_cursor"`
		HasMore      bool    `json:"has_more"`
		ResumeCursor *string `json:"resume_cursor"`
	} `json:"pagination"`
}

// getPage reads one page of path with query q.
func (a *api) getPage(path string, q url.Values) (*page, error) {
	res, err := a.do(http.MethodGet, path+"?"+q.Encode(), "")
	if err != nil {
		return nil, err
	}
	if res.status != http.StatusOK {
		return nil, fmt.Errorf("GET %s?%s: %d %s", path, q.Encode(), res.status, res.body)
	}
	var p page
	if err := json.Unmarshal(res.body, &p); err != nil {
		return nil, fmt.Errorf("GET %s: %w", path, err)
	}
	return &p, nil
}

// itemKey returns the inventory key of an EVSE or location JSON.
func itemKey(raw []byte) (string, error) {
	var item struct {
		UID *int64  `json:"uid"`
		ID  *string `json:"id"`
	}
	if err := json.Unmarshal(raw, &item); err != nil {
		return "", err
	}
	switch {
	case item.UID != nil:
		return evseKey(*item.UID), nil
	case item.ID != nil:
		return locationKey(*item.ID), nil
	}
	return "", fmt.Errorf("neither uid nor id in %s", raw)
}

// readAll reads every page of the plain list path and adds its items to inv.
func (a *api) readAll(path string, inv inventory) error {
	q := url.Values{"limit": {strconv.Itoa(pageLimit)}}
	for {
		p, err := a.getPage(path, q)
		if err != nil {
			return err
		}
		for _, raw := range p.Data {
			k, err := itemKey(raw)
			if err != nil {
				return err
			}
			inv[k] = slices.Clone(raw)
		}
		if !p.Pagination.HasMore {
			return nil
		}
		if p.Pagination.NextCursor == nil {
			return fmt.Errorf("%s: has_more without next_cursor", path)
		}
		q.Set("cursor", *p.Pagination.NextCursor)
	}
}

// getItem reads one EVSE or location by its inventory key: its bytes, or nil when it
// does not exist.
func (a *api) getItem(key string) ([]byte, error) {
	kind, id, _ := strings.Cut(key, "/")
	path := "/v2/evses/" + id
	if kind == "location" {
		path = "/v1/locations/" + id
	}
	res, err := a.do(http.MethodGet, path, "")
	if err != nil {
		return nil, err
	}
	switch res.status {
	case http.StatusOK:
		return bytes.TrimSpace(res.body), nil
	case http.StatusNotFound:
		return nil, nil
	}
	return nil, fmt.Errorf("GET %s: %d %s", path, res.status, res.body)
}

// serverState reads the server's whole inventory as the plain lists send it, and each
// location of also (deleted locations, which are in no list page, and anything a
// partner holds) that the lists did not hold, as GET sends it.
func serverState(a *api, also ...inventory) (inventory, error) {
	inv := inventory{}
	if err := a.readAll("/v2/evses", inv); err != nil {
		return nil, err
	}
	if err := a.readAll("/v1/locations", inv); err != nil {
		return nil, err
	}
	for _, other := range also {
		for k := range other {
			if _, ok := inv[k]; ok {
				continue
			}
			b, err := a.getItem(k)
			if err != nil {
				return nil, err
			}
			if b != nil {
				inv[k] = b
			}
		}
	}
	return inv, nil
}

// feed reads a change list or the event log forward: every poll reads pages until one
// says has_more false, and keeps that page's resume_cursor for the next poll.
type feed struct {
	path   string
	since  string // updated_since of a change list ("" for the event log)
	cursor string // next_cursor within a poll, resume_cursor between polls
}

// poll reads the feed up to its end through a, calling each for every item.
func (f *feed) poll(a *api, each func(raw json.RawMessage) error) error {
	for {
		q := url.Values{"limit": {strconv.Itoa(pageLimit)}}
		if f.since != "" {
			q.Set("updated_since", f.since)
		}
		if f.cursor != "" {
			q.Set("cursor", f.cursor)
		}
		p, err := a.getPage(f.path, q)
		if err != nil {
			return err
		}
		for _, raw := range p.Data {
			if err := each(raw); err != nil {
				return err
			}
		}
		if p.Pagination.ResumeCursor == nil {
			return fmt.Errorf("%s: a page without resume_cursor", f.path)
		}
		if !p.Pagination.HasMore {
			if p.Pagination.NextCursor != nil {
				return fmt.Errorf("%s: next_cursor on a page with has_more false", f.path)
			}
			f.cursor = *p.Pagination.ResumeCursor
			return nil
		}
		if p.Pagination.NextCursor == nil {
			return fmt.Errorf("%s: has_more without next_cursor", f.path)
		}
		f.cursor = *p.Pagination.NextCursor
	}
}

// changesPartner keeps its copy with the change lists of EVSEs and locations.
type changesPartner struct {
	copy  inventory
	feeds []*feed
	// seen is when the partner first held each state (key and bytes).
	seen map[string]time.Time
	read int // items read
}

func newChangesPartner() *changesPartner {
	return &changesPartner{copy: inventory{}, seen: map[string]time.Time{}, feeds: []*feed{
		{path: "/v2/evses", since: syncSince},
		{path: "/v1/locations", since: syncSince},
	}}
}

// poll reads both change lists up to their end.
func (p *changesPartner) poll(a *api) error {
	for _, f := range p.feeds {
		err := f.poll(a, func(raw json.RawMessage) error {
			k, err := itemKey(raw)
			if err != nil {
				return err
			}
			p.read++
			p.copy[k] = slices.Clone(raw)
			if state := k + "\x00" + string(raw); p.seen[state].IsZero() {
				p.seen[state] = time.Now()
			}
			return nil
		})
		if err != nil {
			return err
		}
	}
	return nil
}

// logEvent is an item of the event log.
type logEvent struct {
	ID        string `json:"id"`
	Type      string `json:"type"`
	Timestamp string `json:"timestamp"`
	Data      struct {
		UID                int64  `json:"uid"`
		ID                 string `json:"id"`
		LocationID         string `json:"locationId"`
		PreviousLocationID string `json:"previousLocationId"`
	} `json:"data"`
}

// eventsPartner keeps its copy with a full read of the plain lists and then the event
// log: for every event it re-reads the EVSE or location the event names (and an EVSE's
// location, whose evseUids and lastUpdated an EVSE's change may move; for evse.updated
// also previousLocationId, the location an EVSE moved away from).
type eventsPartner struct {
	copy inventory
	feed feed
	ids  map[string]int // every event id seen, with how often
	log  []logEvent     // every event read, in order
}

func newEventsPartner() *eventsPartner {
	return &eventsPartner{copy: inventory{}, feed: feed{path: "/emsp/v1/events"}, ids: map[string]int{}}
}

func (p *eventsPartner) fullRead(a *api) error {
	if err := a.readAll("/v2/evses", p.copy); err != nil {
		return err
	}
	return a.readAll("/v1/locations", p.copy)
}

// poll reads the event log up to its end, then re-reads what the events named.
func (p *eventsPartner) poll(a *api) error {
	evses, locations := map[string]bool{}, map[string]bool{}
	err := p.feed.poll(a, func(raw json.RawMessage) error {
		var e logEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		if e.ID == "" {
			return fmt.Errorf("an event without id: %s", raw)
		}
		p.ids[e.ID]++
		p.log = append(p.log, e)
		switch {
		case strings.HasPrefix(e.Type, "evse."):
			evses[evseKey(e.Data.UID)] = true
			if e.Type == "evse.updated" && e.Data.PreviousLocationID != "" {
				locations[locationKey(e.Data.PreviousLocationID)] = true
			}
		case strings.HasPrefix(e.Type, "location."):
			locations[locationKey(e.Data.ID)] = true
		default:
			return fmt.Errorf("an event of unknown type: %s", raw)
		}
		return nil
	})
	if err != nil {
		return err
	}
	for k := range evses {
		b, err := p.reread(a, k)
		if err != nil {
			return err
		}
		var e struct {
			LocationID string `json:"locationId"`
		}
		if err := json.Unmarshal(b, &e); err != nil {
			return err
		}
		if e.LocationID != "" {
			locations[locationKey(e.LocationID)] = true
		}
	}
	for k := range locations {
		if _, err := p.reread(a, k); err != nil {
			return err
		}
	}
	return nil
}

// reread reads the item an event named into the copy.
func (p *eventsPartner) reread(a *api, key string) ([]byte, error) {
	b, err := a.getItem(key)
	if err == nil && b == nil {
		err = fmt.Errorf("%s named by an event does not exist", key)
	}
	if err != nil {
		return nil, err
	}
	p.copy[key] = b
	return b, nil
}

// readLog reads the whole event log from its start.
func readLog(a *api) ([]logEvent, error) {
	var out []logEvent
	f := feed{path: "/emsp/v1/events"}
	err := f.poll(a, func(raw json.RawMessage) error {
		var e logEvent
		if err := json.Unmarshal(raw, &e); err != nil {
			return err
		}
		out = append(out, e)
		return nil
	})
	return out, err
}

// write is one acknowledged change of an item whose new state the answer carried.
type write struct {
	key  string
	body []byte
	at   time.Time // when the writer had the answer
}

// syncWriters change the inventory at random through the servers, each writer its own
// locations and EVSEs (so that no change is refused), all of them the demo EVSEs'
// connectors. Every change they make changes what a partner copies and produces a known
// number of events: besides creations, renames, connector patches, status changes,
// removals and deletions, they move EVSEs between locations and charge boxes (PATCH
// locationId, chargeboxId: evse.updated, with previousLocationId for a move), hold and
// release EVSEs (created PLANNED, or set INOPERATIVE by the operator, then AVAILABLE),
// and send notifications that change only a connector's error, to EVSEs that follow
// their charge box and to held ones (evse.updated).
type syncWriters struct {
	t          *testing.T
	round      int // tells the ids of one run of writers from another's
	apis       []*api
	ingest     string
	mu         sync.Mutex
	writes     []write
	events     int      // events the changes produced, by the answers
	locations  []string // every location the writers created
	ops        histogram
	viaReplica []int // changes made through each server
}

// syncWriter is the state of one writer.
type syncWriter struct {
	round, w  int
	a         *api
	rnd       *rand.Rand
	next      int
	demo      int                           // demo EVSEs patched
	locations []string                      // live locations
	evses     map[string][]int64            // live EVSEs by location
	status    map[int64]string              // OCPP status last sent to each EVSE
	errCode   map[int64]string              // the error code of each EVSE's connector 1 ("" without error)
	held      map[int64]bool                // EVSEs whose status the operator holds
	chargebox map[int64]int64               // each EVSE's charge box
	byUID     map[int64]string              // each EVSE's location
	events    int                           // events produced
	writes    []write                       // acknowledged changes
	locIDs    []string                      // every location created
	ops       map[string]int                // operations done
	fail      func(format string, a ...any) // reports a refused change
}

func (s *syncWriters) run(stop <-chan struct{}, n int) {
	var wg sync.WaitGroup
	s.viaReplica = make([]int, len(s.apis))
	for w := range n {
		wg.Go(func() {
			wr := &syncWriter{round: s.round, w: w, a: s.apis[w%len(s.apis)], rnd: rand.New(rand.NewPCG(uint64(w), uint64(time.Now().UnixNano()))),
				evses: map[string][]int64{}, status: map[int64]string{}, chargebox: map[int64]int64{}, byUID: map[int64]string{},
				errCode: map[int64]string{}, held: map[int64]bool{}, ops: map[string]int{}}
			wr.fail = func(format string, a ...any) { s.t.Errorf("writer %d: "+format, append([]any{w}, a...)...) }
			for {
				select {
				case <-stop:
					s.mu.Lock()
					s.writes = append(s.writes, wr.writes...)
					s.events += wr.events
					s.locations = append(s.locations, wr.locIDs...)
					total := 0
					for op, k := range wr.ops {
						for range k {
							s.ops.add(opCode(op))
						}
						total += k
					}
					s.viaReplica[w%len(s.apis)] += total
					s.mu.Unlock()
					return
				default:
				}
				if !wr.step(s.ingest) {
					return
				}
			}
		})
	}
	wg.Wait()
}

// The operations, numbered for the histogram.
var syncOps = []string{"put location", "update location", "create EVSE", "patch connector", "status notification", "remove EVSE", "delete location",
	"move EVSE", "patch chargeboxId", "hold EVSE", "release EVSE", "error notification", "held error notification"}

func opCode(op string) int { return slices.Index(syncOps, op) + 1 }

func opNames(h *histogram) string {
	h.mu.Lock()
	defer h.mu.Unlock()
	var parts []string
	for i, op := range syncOps {
		if n := h.n[i+1]; n > 0 {
			parts = append(parts, fmt.Sprintf("%s %d", op, n))
		}
	}
	return strings.Join(parts, ", ")
}

// do sends one change and checks its status; it records the answer as the item's new
// state when key is set. It returns the answer, or nil when the change failed.
func (wr *syncWriter) do(op, key, method, path, body string, want int, header ...string) *response {
	res, err := wr.a.do(method, path, body, header...)
	if err != nil {
		wr.fail("%s %s %s: %v", op, method, path, err)
		return nil
	}
	if res.status != want {
		wr.fail("%s %s %s: %d %s", op, method, path, res.status, res.body)
		return nil
	}
	wr.ops[op]++
	if key != "" {
		wr.writes = append(wr.writes, write{key: key, body: bytes.TrimSpace(res.body), at: time.Now()})
	}
	return res
}

func namedLocation(name string) string {
	return fmt.Sprintf(`{"name": %q, "address": "Kai 7", "city": "Hamburg", "postalCode": "20457",
	"country": "DEU", "coordinates": {"latitude": 53.54, "longitude": 9.98}, "timeZone": "Europe/Berlin"}`, name)
}

// step makes one random change. It returns false when the writer should stop.
func (wr *syncWriter) step(ingest string) bool {
	live := func() []int64 {
		var all []int64
		for _, l := range wr.locations {
			all = append(all, wr.evses[l]...)
		}
		return all
	}
	r := wr.rnd.IntN(100)
	switch {
	case len(wr.locations) < 2 || r < 7: // a new location
		wr.next++
		id := fmt.Sprintf("SYNC-%d-%d-%d", wr.round, wr.w, wr.next)
		if wr.do("put location", locationKey(id), http.MethodPut, "/v1/locations/"+id, namedLocation("Sync "+id), http.StatusCreated) == nil {
			return false
		}
		wr.locations = append(wr.locations, id)
		wr.locIDs = append(wr.locIDs, id)
		wr.events++
	case r < 11: // a location renamed
		id := wr.locations[wr.rnd.IntN(len(wr.locations))]
		wr.next++
		if wr.do("update location", locationKey(id), http.MethodPut, "/v1/locations/"+id, namedLocation(fmt.Sprintf("Sync %s v%d", id, wr.next)), http.StatusOK) == nil {
			return false
		}
		wr.events++
	case r < 24: // a new EVSE, one in four PLANNED (held until the operator releases it)
		loc := wr.locations[wr.rnd.IntN(len(wr.locations))]
		wr.next++
		cb := wr.newChargebox()
		status := "AVAILABLE"
		if wr.rnd.IntN(4) == 0 {
			status = "PLANNED"
		}
		body := fmt.Sprintf(`{"evseId": "DE*CNT*E9%d%d*%d", "chargeboxId": %d, "locationId": %q, "status": %q, "connectors": [{"id": 1,
			"standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", "maxElectricPower": 22,
			"maxAmperage": 32, "maxVoltage": 400}]}`, wr.round, wr.w, wr.next, cb, loc, status)
		res := wr.do("create EVSE", "", http.MethodPost, "/v2/evses", body, http.StatusCreated)
		if res == nil {
			return false
		}
		var e created
		if err := json.Unmarshal(res.body, &e); err != nil {
			wr.fail("create EVSE: %v", err)
			return false
		}
		wr.writes = append(wr.writes, write{key: evseKey(e.UID), body: bytes.TrimSpace(res.body), at: time.Now()})
		wr.evses[loc] = append(wr.evses[loc], e.UID)
		wr.status[e.UID] = "Available"
		wr.chargebox[e.UID] = cb
		wr.byUID[e.UID] = loc
		wr.held[e.UID] = status == "PLANNED"
		wr.events++
	case r < 48: // a connector changed: an own EVSE or a demo EVSE shared by every writer
		// The demo EVSEs in turn, each writer from its own, so that together they reach
		// all 40 early however slow the machine.
		uid := int64(1001 + (wr.w*5+wr.demo)%40)
		if own := live(); len(own) > 0 && wr.rnd.IntN(2) == 0 {
			uid = own[wr.rnd.IntN(len(own))]
		} else {
			wr.demo++
		}
		wr.next++
		power := float64(wr.w+1) + float64(wr.next)/100000 // never the value it has: every PATCH changes it
		if wr.do("patch connector", evseKey(uid), http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", uid), patchBody("maxElectricPower", power), http.StatusOK) == nil {
			return false
		}
		wr.events++
	case r < 54: // an EVSE moved to another location, half the time to another charge box too
		own := live()
		if len(own) == 0 {
			return true
		}
		uid := own[wr.rnd.IntN(len(own))]
		from := wr.byUID[uid]
		to := wr.locations[wr.rnd.IntN(len(wr.locations))]
		for to == from {
			to = wr.locations[wr.rnd.IntN(len(wr.locations))]
		}
		body := fmt.Sprintf(`{"locationId": %q}`, to)
		cb := wr.chargebox[uid]
		if wr.rnd.IntN(2) == 0 {
			cb = wr.newChargebox()
			body = fmt.Sprintf(`{"locationId": %q, "chargeboxId": %d}`, to, cb)
		}
		if wr.do("move EVSE", evseKey(uid), http.MethodPatch, fmt.Sprintf("/v2/evses/%d", uid), body, http.StatusOK) == nil {
			return false
		}
		wr.evses[from] = slices.DeleteFunc(wr.evses[from], func(u int64) bool { return u == uid })
		wr.evses[to] = append(wr.evses[to], uid)
		wr.byUID[uid], wr.chargebox[uid] = to, cb
		wr.events++ // evse.updated
	case r < 58: // an EVSE moved to another charge box
		own := live()
		if len(own) == 0 {
			return true
		}
		uid := own[wr.rnd.IntN(len(own))]
		cb := wr.newChargebox()
		if wr.do("patch chargeboxId", evseKey(uid), http.MethodPatch, fmt.Sprintf("/v2/evses/%d", uid), fmt.Sprintf(`{"chargeboxId": %d}`, cb), http.StatusOK) == nil {
			return false
		}
		wr.chargebox[uid] = cb
		wr.events++ // evse.updated
	case r < 62: // the operator holds an EVSE (INOPERATIVE) or releases a held one (AVAILABLE)
		own := live()
		if len(own) == 0 {
			return true
		}
		uid := own[wr.rnd.IntN(len(own))]
		op, status := "hold EVSE", "INOPERATIVE"
		if wr.held[uid] {
			op, status = "release EVSE", "AVAILABLE"
		}
		if wr.do(op, evseKey(uid), http.MethodPatch, fmt.Sprintf("/v2/evses/%d", uid), fmt.Sprintf(`{"status": %q}`, status), http.StatusOK) == nil {
			return false
		}
		wr.held[uid] = !wr.held[uid]
		if !wr.held[uid] {
			wr.status[uid] = "Available"
		}
		wr.events++ // evse.status.changed
	case r < 80: // a charge box reports a new status
		var own []int64
		for _, uid := range live() {
			if !wr.held[uid] {
				own = append(own, uid)
			}
		}
		if len(own) == 0 {
			return true
		}
		uid := own[wr.rnd.IntN(len(own))]
		next := map[string]string{"Available": "Charging", "Charging": "Faulted", "Faulted": "Available"}[wr.status[uid]]
		errorCode := "NoError"
		if next == "Faulted" {
			errorCode = "GroundFailure"
		}
		sn, body, ok := wr.notify("status notification", uid, ingest, fmt.Sprintf(`"status": %q, "errorCode": %q`, next, errorCode))
		if !ok {
			return false
		}
		if !sn.Applied || len(sn.Evses) != 1 || sn.Evses[0].Status == sn.Evses[0].Previous {
			wr.fail("status notification %s to EVSE %d was not applied as a status change: %s", next, uid, body)
			return false
		}
		wr.status[uid] = next
		wr.errCode[uid] = map[bool]string{true: errorCode}[errorCode != "NoError"]
		wr.events++
	case r < 88: // a charge box reports only a new connector error, also for a held EVSE
		own := live()
		if len(own) == 0 {
			return true
		}
		uid := own[wr.rnd.IntN(len(own))]
		if !wr.errorOnly(uid, ingest) {
			return false
		}
	case r < 96: // an EVSE removed
		own := live()
		if len(own) == 0 {
			return true
		}
		uid := own[wr.rnd.IntN(len(own))]
		if !wr.remove(uid) {
			return false
		}
	default: // a location deleted, after its EVSEs
		if len(wr.locations) < 3 {
			return true
		}
		i := wr.rnd.IntN(len(wr.locations))
		id := wr.locations[i]
		for _, uid := range slices.Clone(wr.evses[id]) {
			if !wr.remove(uid) {
				return false
			}
		}
		if wr.do("delete location", locationKey(id), http.MethodDelete, "/v1/locations/"+id, "", http.StatusOK) == nil {
			return false
		}
		wr.locations = slices.Delete(wr.locations, i, i+1)
		delete(wr.evses, id)
		wr.events++
	}
	return true
}

// newChargebox returns a charge box number no other EVSE of any writer has.
func (wr *syncWriter) newChargebox() int64 {
	wr.next++
	return int64(100000 + wr.round*100000 + wr.w*10000 + wr.next)
}

// errorOnly sends a notification of the status last sent to EVSE uid's charge box with
// the connector's error set or cleared: the EVSE's status stays, its connector's error
// changes (evse.updated). A held EVSE records the error and refuses the status.
func (wr *syncWriter) errorOnly(uid int64, ingest string) bool {
	op := "error notification"
	if wr.held[uid] {
		op = "held error notification"
	}
	// An error where there is none; where there is one, none or another one.
	errorCode := "HighTemperature"
	switch current := wr.errCode[uid]; {
	case current == "OtherError":
		errorCode = "NoError"
	case current != "" && wr.rnd.IntN(2) == 0:
		errorCode = "NoError"
	case current != "":
		errorCode = "OtherError"
	}
	status := wr.status[uid]
	sn, body, ok := wr.notify(op, uid, ingest, fmt.Sprintf(`"status": %q, "errorCode": %q, "info": "run %d"`, status, errorCode, wr.next))
	wr.next++
	if !ok {
		return false
	}
	if len(sn.Evses) != 1 || sn.Evses[0].Status != sn.Evses[0].Previous ||
		sn.Applied == wr.held[uid] || (sn.Evses[0].Reason != "") != wr.held[uid] {
		wr.fail("%s %s %s to EVSE %d (held %v) changed the status or was not taken as its hold says: %s", op, status, errorCode, uid, wr.held[uid], body)
		return false
	}
	wr.errCode[uid] = map[bool]string{true: errorCode}[errorCode != "NoError"]
	wr.events++ // evse.updated
	return true
}

// notificationAnswer is the answer to a status notification.
type notificationAnswer struct {
	Applied bool `json:"applied"`
	Evses   []struct {
		Status   string `json:"status"`
		Previous string `json:"previousStatus"`
		Reason   string `json:"reason"`
	} `json:"evses"`
}

// notify sends a status notification of connector 1 of EVSE uid's charge box, with the
// fields given (JSON members) and the time now, and decodes the answer; false when it
// failed (recorded).
func (wr *syncWriter) notify(op string, uid int64, ingest, fields string) (notificationAnswer, []byte, bool) {
	var sn notificationAnswer
	body := fmt.Sprintf(`{"connectorId": 1, %s, "timestamp": %q}`, fields, time.Now().UTC().Format(time.RFC3339Nano))
	res := wr.do(op, "", http.MethodPost, fmt.Sprintf("/internal/v1/chargeboxes/%d/status-notifications", wr.chargebox[uid]),
		body, http.StatusOK, "Authorization", "Bearer "+ingest)
	if res == nil {
		return sn, nil, false
	}
	if err := json.Unmarshal(res.body, &sn); err != nil {
		wr.fail("%s to EVSE %d: the answer does not decode: %v: %s", op, uid, err, res.body)
		return sn, res.body, false
	}
	return sn, res.body, true
}

// remove removes an own EVSE: evse.status.changed and evse.removed.
func (wr *syncWriter) remove(uid int64) bool {
	if wr.do("remove EVSE", evseKey(uid), http.MethodDelete, fmt.Sprintf("/v2/evses/%d", uid), "", http.StatusOK) == nil {
		return false
	}
	loc := wr.byUID[uid]
	wr.evses[loc] = slices.DeleteFunc(wr.evses[loc], func(u int64) bool { return u == uid })
	wr.events += 2
	return true
}

// percentile returns the p-th percentile (0..100) of sorted values.
func percentile(sorted []float64, p float64) float64 {
	if len(sorted) == 0 {
		return 0
	}
	i := int(float64(len(sorted)-1) * p / 100)
	return sorted[i]
}

// downReceiver is a webhook receiver that answers every request 503 until up is
// called; then it forwards every request, path and all, to the verifying receiver.
type downReceiver struct {
	url   string
	mu    sync.Mutex
	to    http.Handler // nil while down
	last  time.Time    // the last request answered 503
	count int          // requests answered 503
}

func newDownReceiver(t *testing.T) *downReceiver {
	t.Helper()
	d := &downReceiver{}
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		d.mu.Lock()
		to := d.to
		if to == nil {
			d.last = time.Now()
			d.count++
		}
		d.mu.Unlock()
		if to == nil {
			w.WriteHeader(http.StatusServiceUnavailable)
			return
		}
		to.ServeHTTP(w, r)
	}))
	t.Cleanup(srv.Close)
	d.url = srv.URL
	return d
}

// quiet waits until no request came for quiet (the server has given up every delivery),
// and returns how many requests it answered 503.
func (d *downReceiver) quiet(t *testing.T, quiet, timeout time.Duration) int {
	t.Helper()
	deadline := time.Now().Add(timeout)
	for {
		d.mu.Lock()
		last, n := d.last, d.count
		d.mu.Unlock()
		if time.Since(last) >= quiet {
			return n
		}
		require.True(t, time.Now().Before(deadline), "the server still retried deliveries to the receiver that is down after %v", timeout)
		time.Sleep(100 * time.Millisecond)
	}
}

func (d *downReceiver) up(t *testing.T, rcv *receiver) {
	t.Helper()
	target, err := url.Parse(rcv.base)
	require.NoError(t, err)
	d.mu.Lock()
	d.to = httputil.NewSingleHostReverseProxy(target)
	d.mu.Unlock()
}

// TestSync is the partner-sync proof on the real binary: on SQLite one server, on
// PostgreSQL two replicas on one database with the writers split across both and only
// the first dispatching webhooks.
func TestSync(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) { testSync(t, b) })
	}
}

func testSync(t *testing.T, b backend) {
	const nWriters = 8
	duration := 10 * time.Second
	rcv := startReceiver(t)
	db := b.database(t)
	out, err := exec.Command(proctest.Binary(t), "apikey", "create", "--name", "ingest", "--scope", "ingest", "--database", db).Output()
	require.NoError(t, err)
	ingest := strings.TrimSpace(string(out))

	// No retries: each delivery to the receiver that is down fails once and is given up,
	// so that replay alone brings it what it missed. (With retries, a receiver that is
	// down makes the dispatcher defer its whole backlog at each failed attempt, which on
	// PostgreSQL holds a transaction open for seconds under this load and with it the
	// change lists' horizon: that is measured apart, not proven here.)
	args := []string{"--webhook-allow-insecure", "--webhook-retry-schedule=", "--webhook-poll", "50ms", "--webhook-timeout", "5s"}
	servers := []*proctest.Server{serve(t, db, args...)}
	if b.name == "postgres" {
		servers = append(servers, serve(t, db, append([]string{"--webhook-dispatch=false"}, args...)...))
	}
	apis := make([]*api, len(servers))
	for i, s := range servers {
		apis[i] = newAPI(s.Base, true)
	}
	a := apis[0]
	logs := func() string {
		var b strings.Builder
		for i, s := range servers {
			fmt.Fprintf(&b, "server %d log:\n%s\n", i, s.Log())
		}
		return b.String()
	}

	// Subscriptions to every type: one receiver that is up, one that is not listening.
	res, err := a.do(http.MethodGet, "/emsp/v1/webhooks/event_types", "")
	require.NoError(t, err)
	var catalogue struct {
		EventTypes []struct {
			Type string `json:"type"`
		} `json:"event_types"`
	}
	require.NoError(t, json.Unmarshal(res.body, &catalogue))
	var types []string
	for _, et := range catalogue.EventTypes {
		if et.Type != "webhook.ping" {
			types = append(types, et.Type)
		}
	}
	require.NotEmpty(t, types)
	subscribe(t, a, rcv, "/ok/all", types...)
	down := newDownReceiver(t)
	downHook := createWebhook(t, a, down.url+"/ok/down", types...)
	rcv.secret(t, "/ok/down", downHook.Secret)

	before, err := readLog(a)
	require.NoError(t, err)
	start := time.Now()
	var phases []string
	last := start
	phase := func(name string) {
		phases = append(phases, fmt.Sprintf("%s %v", name, time.Since(last).Round(10*time.Millisecond)))
		last = time.Now()
	}

	// The writers, and both partners polling, each through the servers in turn.
	writers := &syncWriters{t: t, apis: apis, ingest: ingest}
	stop := make(chan struct{})
	partnerA, partnerB := newChangesPartner(), newEventsPartner()
	var wg sync.WaitGroup
	var pollsA, pollsB int
	poll := func(stop <-chan struct{}, name string, polls *int, f func(a *api) error) {
		for {
			select {
			case <-stop:
				return
			default:
			}
			if err := f(apis[*polls%len(apis)]); err != nil {
				t.Errorf("partner %s: %v", name, err)
				return
			}
			*polls++
			time.Sleep(20 * time.Millisecond)
		}
	}
	wg.Go(func() { poll(stop, "A", &pollsA, partnerA.poll) })
	wg.Go(func() {
		if err := partnerB.fullRead(apis[len(apis)-1]); err != nil {
			t.Errorf("partner B: %v", err)
			return
		}
		poll(stop, "B", &pollsB, partnerB.poll)
	})
	writersDone := make(chan struct{})
	go func() {
		writers.run(stop, nWriters)
		close(writersDone)
	}()
	time.Sleep(duration)
	close(stop)
	<-writersDone
	wg.Wait()
	require.False(t, t.Failed(), "the writers and the partners ran without error\n%s", logs())
	phase("writers")

	fenceID := "SYNC-FENCE"
	fence := makeFence(t, apis, fenceID, 99999)
	writers.events += 2
	writers.locations = append(writers.locations, fenceID)

	// The last polls: until each partner has read the fence (and its poll ended on a
	// page with has_more false).
	untilRead(t, partnerA, apis, fenceID, fence)
	deadline := time.Now().Add(30 * time.Second)
	fenceEvents := func() bool {
		n := 0
		for _, e := range partnerB.log {
			if (e.Type == "location.created" && e.Data.ID == fenceID) || (e.Type == "evse.created" && e.Data.UID == fence) {
				n++
			}
		}
		return n == 2
	}
	for i := 0; ; i++ {
		require.NoError(t, partnerB.poll(apis[i%len(apis)]), "partner B's last poll")
		if fenceEvents() {
			break
		}
		require.True(t, time.Now().Before(deadline), "partner B did not read the fence's events within 30 s")
		time.Sleep(20 * time.Millisecond)
	}

	phase("last polls")

	// Each copy equals the server's state, byte for byte.
	extra := inventory{}
	for _, id := range writers.locations {
		extra[locationKey(id)] = nil
	}
	server, err := serverState(a, extra, partnerA.copy, partnerB.copy)
	require.NoError(t, err)
	removed, deleted := 0, 0
	for k, v := range server {
		if strings.HasPrefix(k, "evse/") && bytes.Contains(v, []byte(`"status":"REMOVED"`)) {
			removed++
		}
		if strings.HasPrefix(k, "location/") && bytes.Contains(v, []byte(`"deletedAt"`)) {
			deleted++
		}
	}
	assert.Positive(t, removed, "the run removed EVSEs")
	assert.Positive(t, deleted, "the run deleted locations")
	diffA := compareInventories(server, partnerA.copy)
	assert.Empty(t, diffA, "partner A (change lists) differs from the server on %d item(s):\n%s", len(diffA), describe(diffA))
	diffB := compareInventories(server, partnerB.copy)
	assert.Empty(t, diffB, "partner B (event log) differs from the server on %d item(s):\n%s", len(diffB), describe(diffB))

	// Version and lastUpdated rise together: for every EVSE and location, across every
	// acknowledged answer (the writers go through every server) and every change-list
	// item partner A read, a higher version has a later lastUpdated.
	states := map[string][][]byte{}
	for _, w := range writers.writes {
		states[w.key] = append(states[w.key], w.body)
	}
	for state := range partnerA.seen {
		k, raw, _ := strings.Cut(state, "\x00")
		states[k] = append(states[k], []byte(raw))
	}
	problems, items, compared := risingTogether(states)
	assert.Empty(t, problems, "version and lastUpdated disagree (%d):\n%s", len(problems), strings.Join(first(problems, 10), "\n"))
	sharedEVSEs := 0
	for uid := 1001; uid <= 1040; uid++ {
		if len(states[evseKey(int64(uid))]) > 1 {
			sharedEVSEs++
		}
	}
	assert.Equal(t, 40, sharedEVSEs, "every demo EVSE, changed by every writer through every server, is compared")
	for _, e := range partnerB.log {
		assert.Regexp(t, sixDigits, e.Timestamp, "event %s", e.ID)
	}
	t.Logf("%s: version and lastUpdated compared on %d states of %d EVSEs and locations (answers through %d server(s) and change-list items)",
		b.name, compared, items, len(apis))

	// The event log: one event per change, every one seen by partner B and delivered to
	// the receiver subscribed to every type.
	logged, err := readLog(apis[len(apis)-1])
	require.NoError(t, err)
	old := map[string]bool{}
	for _, e := range before {
		old[e.ID] = true
	}
	var produced []logEvent
	ids := map[string]bool{}
	for _, e := range logged {
		assert.False(t, ids[e.ID], "event %s is in the log once", e.ID)
		ids[e.ID] = true
		if !old[e.ID] {
			produced = append(produced, e)
		}
	}
	assert.Len(t, produced, writers.events, "one logged event per change the writers made")
	for i, op := range syncOps {
		assert.Positive(t, writers.ops.n[i+1], "the writers made the change %q", op)
	}
	updated, moved := 0, 0
	for _, e := range produced {
		if e.Type == "evse.updated" {
			updated++
			if e.Data.PreviousLocationID != "" {
				moved++
			}
		}
	}
	assert.Positive(t, moved, "evse.updated events of moves (with previousLocationId)")
	assert.Positive(t, updated-moved, "evse.updated events of changes that did not move an EVSE")
	var unseen []string
	for id := range ids {
		if partnerB.ids[id] == 0 {
			unseen = append(unseen, id)
		}
	}
	assert.Empty(t, unseen, "partner B saw every event id of the log")
	for id := range partnerB.ids {
		assert.True(t, ids[id], "partner B's event %s is in the log", id)
	}
	want := map[string]bool{}
	for _, e := range produced {
		want[e.ID] = true
	}
	var got map[string]receipt
	waitReceipts := func(path string, want map[string]bool) {
		t.Helper()
		deadline := time.Now().Add(150 * time.Second)
		for {
			got = acked(rcv.receipts(t), path)
			missing := 0
			for id := range want {
				if _, ok := got[id]; !ok {
					missing++
				}
			}
			if missing == 0 {
				return
			}
			if time.Now().After(deadline) {
				t.Fatalf("%s: %d of %d events not received within 150 s\n%s", path, missing, len(want), logs())
			}
			time.Sleep(50 * time.Millisecond)
		}
	}
	waitReceipts("/ok/all", want)
	for id, r := range got {
		assert.True(t, want[id], "/ok/all received %s (%s), an event of the run", id, r.Type)
		assert.True(t, r.Verified, r.Error)
	}

	phase("webhook receipts")

	// The receiver that was down for the whole run comes back and catches up: once the
	// server has tried every delivery to it (no request for 2 s), replay queues what it
	// missed.
	failed := down.quiet(t, 2*time.Second, 150*time.Second)
	assert.Positive(t, failed, "the server tried the receiver that was down")
	assert.Empty(t, acked(rcv.receipts(t), "/ok/down"), "nothing reached the receiver that was down")
	phase("deliveries to the receiver that was down tried")
	since := start.UTC().Truncate(time.Second).Add(-time.Second)
	wantDown := map[string]bool{}
	for _, e := range logged {
		ts, err := time.Parse(time.RFC3339Nano, e.Timestamp)
		require.NoError(t, err)
		if !ts.Before(since) {
			wantDown[e.ID] = true
		}
	}
	for id := range want {
		require.True(t, wantDown[id], "event %s of the run is in the replay window", id)
	}
	down.up(t, rcv)
	res, err = a.do(http.MethodPost, "/emsp/v1/webhooks/"+downHook.ID+"/replay", fmt.Sprintf(`{"since": %q}`, since.Format(time.RFC3339)))
	require.NoError(t, err)
	require.Equal(t, http.StatusAccepted, res.status, "%s", res.body)
	var replay struct {
		Queued int `json:"queued"`
	}
	require.NoError(t, json.Unmarshal(res.body, &replay))
	assert.Equal(t, len(wantDown), replay.Queued, "replay queued every event of the window (none was still pending)")
	waitReceipts("/ok/down", wantDown)
	for id := range got {
		assert.True(t, wantDown[id], "/ok/down received %s, an event of the replay window", id)
	}
	phase("replay")

	// The sync lag once every receiver is up: the writers again for 3 s, partner A
	// polling.
	lagWriters := &syncWriters{t: t, apis: apis, ingest: ingest, round: 1}
	stop = make(chan struct{})
	wg.Go(func() { poll(stop, "A", &pollsA, partnerA.poll) })
	writersDone = make(chan struct{})
	go func() {
		lagWriters.run(stop, nWriters)
		close(writersDone)
	}()
	time.Sleep(3 * time.Second)
	close(stop)
	<-writersDone
	wg.Wait()
	require.False(t, t.Failed(), "the writers and partner A ran without error\n%s", logs())
	untilRead(t, partnerA, apis, "SYNC-FENCE-2", makeFence(t, apis, "SYNC-FENCE-2", 99998))
	phase("writers with every receiver up")

	// The log read again, without checking each page against the contract in this
	// process: the events per second a partner reads.
	raw := *apis[len(apis)-1]
	raw.check = false
	readStart := time.Now()
	again, err := readLog(&raw)
	require.NoError(t, err)
	readTook := time.Since(readStart)
	require.GreaterOrEqual(t, len(again), len(logged))

	// Figures (not asserted).
	t.Logf("%s: %d writers for %v through %d server(s) (changes per server %v): %s; %d events logged (%.0f changes/s)",
		b.name, nWriters, duration, len(apis), writers.viaReplica, opNames(&writers.ops), len(produced), float64(len(produced))/duration.Seconds())
	t.Logf("%s: partner A read %d change-list items in %d polls; partner B %d events in %d polls; %d EVSEs (%d removed) and %d locations (%d deleted) compared byte for byte",
		b.name, partnerA.read, pollsA, len(partnerB.log), pollsB, countPrefix(server, "evse/"), removed, countPrefix(server, "location/"), deleted)
	t.Logf("%s: sync lag (writer's answer → partner A, polling every 20 ms, holds that state) while a receiver is down: %s", b.name, syncLag(writers.writes, partnerA.seen))
	t.Logf("%s: sync lag with every receiver up, %d writers for 3 s: %s", b.name, nWriters, syncLag(lagWriters.writes, partnerA.seen))
	t.Logf("%s: the whole log, %d events, read in pages of %d in %v: %.0f events/s", b.name, len(again), pageLimit, readTook.Round(time.Millisecond),
		float64(len(again))/readTook.Seconds())
	t.Logf("%s: the receiver that was down answered %d requests 503; replay queued %d events; it now holds all %d of the window",
		b.name, failed, replay.Queued, len(wantDown))
	t.Logf("%s: phases: %s", b.name, strings.Join(phases, ", "))

	// Commit → receipt of webhook deliveries for changes made through the last server
	// (on PostgreSQL the replica that does not dispatch), one at a time.
	var lat []float64
	via := apis[len(apis)-1]
	for i := range 40 {
		res, err := via.do(http.MethodPatch, "/v2/evses/1003/connectors/1", patchBody("maxElectricPower", float64(20+i)/10))
		committed := time.Now()
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
		v := version(t, res.header.Get("ETag"))
		var r receipt
		require.Eventually(t, func() bool {
			for _, x := range at(rcv.receipts(t), "/ok/all") {
				if x.Type == "evse.connector.updated" && x.Data.UID == 1003 && x.Data.Version == v {
					r = x
					return true
				}
			}
			return false
		}, 10*time.Second, 5*time.Millisecond)
		lat = append(lat, r.ReceivedAt-float64(committed.UnixNano())/1e6)
		time.Sleep(time.Duration(20+rand.IntN(30)) * time.Millisecond)
	}
	slices.Sort(lat)
	which := "the only server"
	if len(apis) > 1 {
		which = "the replica that does not dispatch"
	}
	t.Logf("%s: commit (writer's answer) → receipt of the webhook delivery, 40 changes through %s one at a time: p50 %.1f ms, p90 %.1f ms, max %.1f ms",
		b.name, which, percentile(lat, 50), percentile(lat, 90), percentile(lat, 100))
}

// sixDigits is the form of every time the service sends: RFC 3339 in UTC with six
// fractional digits.
var sixDigits = regexp.MustCompile(`^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$`)

// risingTogether checks the states of each item (by key, as JSON with version and
// lastUpdated) seen anywhere: one version has one lastUpdated, a higher version a later
// one, and every lastUpdated has the six-digit form (so its text sorts as the time
// does). It returns what it found wrong, and how many items and states it compared.
func risingTogether(states map[string][][]byte) (problems []string, items, compared int) {
	type state struct {
		Version     int64  `json:"version"`
		LastUpdated string `json:"lastUpdated"`
	}
	for _, key := range slices.Sorted(maps.Keys(states)) {
		byVersion := map[int64]string{}
		for _, raw := range states[key] {
			var st state
			if err := json.Unmarshal(raw, &st); err != nil || st.Version < 1 {
				problems = append(problems, fmt.Sprintf("%s: no version in %s", key, raw))
				continue
			}
			if !sixDigits.MatchString(st.LastUpdated) {
				problems = append(problems, fmt.Sprintf("%s version %d: lastUpdated %q is not RFC 3339 UTC with six digits", key, st.Version, st.LastUpdated))
			}
			compared++
			if old, ok := byVersion[st.Version]; ok && old != st.LastUpdated {
				problems = append(problems, fmt.Sprintf("%s version %d: lastUpdated %s and %s", key, st.Version, old, st.LastUpdated))
			}
			byVersion[st.Version] = st.LastUpdated
		}
		items++
		versions := slices.Sorted(maps.Keys(byVersion))
		for i := 1; i < len(versions); i++ {
			if prev, cur := byVersion[versions[i-1]], byVersion[versions[i]]; cur <= prev {
				problems = append(problems, fmt.Sprintf("%s: version %d has lastUpdated %s, not later than version %d's %s",
					key, versions[i], cur, versions[i-1], prev))
			}
		}
	}
	return problems, items, compared
}

func first(s []string, n int) []string { return s[:min(n, len(s))] }

// makeFence creates location id and then an EVSE at it (evseId DE*CNT*E<n>, charge box
// n), once every writer had its answer, and returns the EVSE's uid. A partner that has
// read both has read every change committed before them: on PostgreSQL a change list
// shows a change once every transaction that started before it has ended, so it shows
// the fence only after the writers' changes.
func makeFence(t *testing.T, apis []*api, id string, n int) int64 {
	t.Helper()
	res, err := apis[0].do(http.MethodPut, "/v1/locations/"+id, namedLocation("Fence "+id))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	res, err = apis[len(apis)-1].do(http.MethodPost, "/v2/evses", fmt.Sprintf(`{"evseId": "DE*CNT*E%d", "chargeboxId": %d, "locationId": %q, "connectors": [{"id": 1,
		"standard": "IEC_62196_T2", "format": "SOCKET", "powerType": "AC_3_PHASE", "maxElectricPower": 22, "maxAmperage": 32, "maxVoltage": 400}]}`, n, n, id))
	require.NoError(t, err)
	require.Equal(t, http.StatusCreated, res.status, "%s", res.body)
	var e created
	require.NoError(t, json.Unmarshal(res.body, &e))
	return e.UID
}

// untilRead polls the change lists of p until it holds the fence (location id and EVSE
// uid), each poll up to a page with has_more false.
func untilRead(t *testing.T, p *changesPartner, apis []*api, id string, uid int64) {
	t.Helper()
	deadline := time.Now().Add(30 * time.Second)
	for i := 0; ; i++ {
		require.NoError(t, p.poll(apis[i%len(apis)]), "partner A's last poll")
		_, evseSeen := p.copy[evseKey(uid)]
		_, locSeen := p.copy[locationKey(id)]
		if evseSeen && locSeen {
			return
		}
		require.True(t, time.Now().Before(deadline), "partner A did not read the fence within 30 s")
		time.Sleep(20 * time.Millisecond)
	}
}

// syncLag describes the time from each write's answer to when the partner first held
// the state it answered, over the writes whose state the partner saw (a state changed
// again before a poll reached it is never seen).
func syncLag(writes []write, seen map[string]time.Time) string {
	var lags []float64
	for _, w := range writes {
		if at, ok := seen[w.key+"\x00"+string(w.body)]; ok {
			lags = append(lags, float64(at.Sub(w.at).Microseconds())/1000)
		}
	}
	slices.Sort(lags)
	return fmt.Sprintf("%d of %d changes seen in the state they answered: p50 %.1f ms, p99 %.1f ms, max %.1f ms",
		len(lags), len(writes), percentile(lags, 50), percentile(lags, 99), percentile(lags, 100))
}

func countPrefix(inv inventory, prefix string) int {
	n := 0
	for k := range inv {
		if strings.HasPrefix(k, prefix) {
			n++
		}
	}
	return n
}

// commitDirect changes EVSE uid in the database behind the server's back: its status
// becomes INOPERATIVE and its version moves on, while its lastUpdated keeps the time it
// had (older than anything a partner polled since). With olderPosition the change also
// keeps the change position the EVSE had, as if it had committed before the partner's
// resume point: on SQLite the position the triggers gave it is put back in the same
// transaction, on PostgreSQL the triggers are bypassed (session_replication_role).
func commitDirect(t *testing.T, database string, uid int64, olderPosition bool) {
	t.Helper()
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	const change = `UPDATE evses SET status = 'INOPERATIVE', version = version + 1 WHERE uid = $1`
	if path, ok := strings.CutPrefix(database, "sqlite:"); ok {
		db, err := sql.Open("sqlite", "file:"+path+"?_pragma=busy_timeout(10000)")
		require.NoError(t, err)
		defer db.Close()
		tx, err := db.BeginTx(ctx, nil)
		require.NoError(t, err)
		defer func() { _ = tx.Rollback() }()
		var pos int64
		require.NoError(t, tx.QueryRowContext(ctx, `SELECT pos FROM evse_changes WHERE uid = ?`, uid).Scan(&pos))
		res, err := tx.ExecContext(ctx, strings.Replace(change, "$1", "?", 1), uid)
		require.NoError(t, err)
		n, err := res.RowsAffected()
		require.NoError(t, err)
		require.EqualValues(t, 1, n)
		if olderPosition {
			_, err = tx.ExecContext(ctx, `UPDATE evse_changes SET pos = ? WHERE uid = ?`, pos, uid)
			require.NoError(t, err)
		}
		require.NoError(t, tx.Commit())
		return
	}
	conn, err := pgx.Connect(ctx, database)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	tx, err := conn.Begin(ctx)
	require.NoError(t, err)
	defer func() { _ = tx.Rollback(context.Background()) }()
	if olderPosition {
		_, err = tx.Exec(ctx, `SET LOCAL session_replication_role = replica`)
		require.NoError(t, err)
	}
	tag, err := tx.Exec(ctx, change, uid)
	require.NoError(t, err)
	require.EqualValues(t, 1, tag.RowsAffected())
	require.NoError(t, tx.Commit(ctx))
}

// TestSyncOlderPosition shows that the proof's comparison catches a missed change: after
// partner A has read the change lists to their end, a change committed with an older
// timestamp but a new position reaches it, and a change committed with a position older
// than its resume point does not, and compareInventories reports exactly that EVSE.
func TestSyncOlderPosition(t *testing.T) {
	for _, b := range backends() {
		t.Run(b.name, func(t *testing.T) {
			db := b.database(t)
			a := newAPI(serve(t, db).Base, true)
			partner := newChangesPartner()
			require.NoError(t, partner.poll(a))
			server, err := serverState(a, partner.copy)
			require.NoError(t, err)
			require.Empty(t, compareInventories(server, partner.copy), "the full read equals the server")

			// An older timestamp, a new position: the partner's next poll has it. (On
			// PostgreSQL a change shows once no earlier transaction can still commit, and
			// a test of another package on the same cluster can hold that back for a
			// moment: the partner polls until it has the change or 10 s have passed.)
			before := partner.copy[evseKey(1005)]
			commitDirect(t, db, 1005, false)
			for deadline := time.Now().Add(10 * time.Second); ; time.Sleep(50 * time.Millisecond) {
				require.NoError(t, partner.poll(a))
				if string(partner.copy[evseKey(1005)]) != string(before) || time.Now().After(deadline) {
					break
				}
			}
			server, err = serverState(a, partner.copy)
			require.NoError(t, err)
			assert.Empty(t, compareInventories(server, partner.copy), "a change with an older lastUpdated is read from its position")
			assert.NotEqual(t, string(before), string(partner.copy[evseKey(1005)]), "the change reached the partner")
			assert.Contains(t, string(partner.copy[evseKey(1005)]), `"status":"INOPERATIVE"`)

			// An older position: the partner's poll cannot have it, and the comparison
			// says so, for that EVSE alone.
			commitDirect(t, db, 1007, true)
			require.NoError(t, partner.poll(a))
			server, err = serverState(a, partner.copy)
			require.NoError(t, err)
			diff := compareInventories(server, partner.copy)
			assert.Equal(t, []string{evseKey(1007)}, differenceKeys(diff))
			if assert.Len(t, diff, 1) {
				assert.Contains(t, string(diff[0].Server), `"status":"INOPERATIVE"`)
				assert.NotContains(t, string(diff[0].Copy), `"status":"INOPERATIVE"`)
			}
			t.Logf("%s: with one change committed behind partner A's resume point, the proof reports:\npartner A (change lists) differs from the server on %d item(s):\n%s",
				b.name, len(diff), describe(diff))
		})
	}
}

// TestSyncPositionWidths walks the change lists and the event log of PostgreSQL in small
// pages after moving every demo EVSE, demo location and logged event to transaction ids
// that cross from two digits to three (95, 96, ..., 99, 100, ...): each walk returns
// every item once, in the numeric order of its position. (A list ordered by the text of
// the position, "100" before "99", skips items at such a crossing.)
func TestSyncPositionWidths(t *testing.T) {
	db := postgresBackend().database(t)
	a := newAPI(serve(t, db).Base, true)
	for i := range 40 {
		res, err := a.do(http.MethodPatch, fmt.Sprintf("/v2/evses/%d/connectors/1", 1001+i), patchBody("maxElectricPower", 5))
		require.NoError(t, err)
		require.Equal(t, http.StatusOK, res.status, "%s", res.body)
	}
	ctx, cancel := context.WithTimeout(context.Background(), 30*time.Second)
	defer cancel()
	conn, err := pgx.Connect(ctx, db)
	require.NoError(t, err)
	defer func() { _ = conn.Close(context.Background()) }()
	// The triggers that set positions are bypassed; the events' xid is a column default.
	for _, q := range []string{
		`SET session_replication_role = replica`,
		`UPDATE evse_changes c SET change_xid = (94 + n.i)::text::xid8 FROM (SELECT uid, row_number() OVER (ORDER BY uid DESC) AS i FROM evse_changes) n WHERE n.uid = c.uid`,
		`UPDATE locations l SET change_xid = (94 + n.i)::text::xid8 FROM (SELECT id, row_number() OVER (ORDER BY id DESC) AS i FROM locations) n WHERE n.id = l.id`,
		`UPDATE events v SET xid = (94 + n.i)::text::xid8 FROM (SELECT id, row_number() OVER (ORDER BY seq DESC) AS i FROM events) n WHERE n.id = v.id`,
	} {
		_, err := conn.Exec(ctx, q)
		require.NoError(t, err, q)
	}
	// walk returns what key gives of every item of the list, in the order of the walk.
	walk := func(path, since string, key func(item map[string]any) any) []string {
		t.Helper()
		f := feed{path: path, since: since}
		var keys []string
		for {
			q := url.Values{"limit": {"7"}}
			if since != "" {
				q.Set("updated_since", since)
			}
			if f.cursor != "" {
				q.Set("cursor", f.cursor)
			}
			p, err := a.getPage(path, q)
			require.NoError(t, err)
			for _, raw := range p.Data {
				var item map[string]any
				require.NoError(t, json.Unmarshal(raw, &item))
				keys = append(keys, fmt.Sprint(key(item)))
			}
			if !p.Pagination.HasMore {
				return keys
			}
			f.cursor = *p.Pagination.NextCursor
		}
	}
	// Positions were given in descending key order, so the numeric order of positions
	// is the descending order of the keys.
	field := func(name string) func(map[string]any) any {
		return func(item map[string]any) any { return item[name] }
	}
	uids := walk("/v2/evses", syncSince, field("uid"))
	require.Len(t, uids, 40, "every EVSE once: %v", uids)
	for i, uid := range uids {
		assert.Equal(t, strconv.Itoa(1040-i), uid, "EVSE %d of the walk", i)
	}
	ids := walk("/v1/locations", syncSince, field("id"))
	require.Len(t, ids, 120, "every location once: %v", ids)
	for i, id := range ids {
		assert.Equal(t, fmt.Sprintf("LOC-%04d", 120-i), id, "location %d of the walk", i)
	}
	// The events, one per PATCH of EVSE 1001, 1002, ...: their positions in reverse.
	events := walk("/emsp/v1/events", "", func(item map[string]any) any { return item["data"].(map[string]any)["uid"] })
	require.Len(t, events, 40, "every event once: %v", events)
	for i, uid := range events {
		assert.Equal(t, strconv.Itoa(1040-i), uid, "event %d of the walk", i)
	}
}

// TestRisingTogether shows that the proof's check of versions and times catches what a
// partner that trusts "newer lastUpdated wins" would get wrong: a higher version with an
// older lastUpdated (two replicas' clocks), one version with two times, and a time
// without six digits.
func TestRisingTogether(t *testing.T) {
	ok := map[string][][]byte{
		"evse/1035": {[]byte(`{"version":117,"lastUpdated":"2026-11-26T10:00:37.432242Z"}`),
			[]byte(`{"version":118,"lastUpdated":"2026-11-26T10:00:37.432243Z"}`),
			[]byte(`{"version":117,"lastUpdated":"2026-11-26T10:00:37.432242Z"}`)},
		"location/LOC-0018": {[]byte(`{"version":3,"lastUpdated":"2026-11-26T10:00:37.432243Z"}`)},
	}
	problems, items, compared := risingTogether(ok)
	assert.Empty(t, problems)
	assert.Equal(t, 2, items)
	assert.Equal(t, 4, compared)

	for name, tc := range map[string]struct {
		states [][]byte
		want   string
	}{
		"a higher version with an older time": {[][]byte{[]byte(`{"version":118,"lastUpdated":"2026-11-26T10:00:37.432143Z"}`),
			[]byte(`{"version":117,"lastUpdated":"2026-11-26T10:00:37.432242Z"}`)}, "not later than version 117's"},
		"one version, two times": {[][]byte{[]byte(`{"version":5,"lastUpdated":"2026-11-26T10:00:37.432242Z"}`),
			[]byte(`{"version":5,"lastUpdated":"2026-11-26T10:00:37.432243Z"}`)}, "version 5: lastUpdated"},
		"nanoseconds": {[][]byte{[]byte(`{"version":5,"lastUpdated":"2026-11-26T10:00:37.432242123Z"}`)}, "six digits"},
		"no version":  {[][]byte{[]byte(`{"lastUpdated":"2026-11-26T10:00:37.432242Z"}`)}, "no version"},
	} {
		t.Run(name, func(t *testing.T) {
			problems, _, _ := risingTogether(map[string][][]byte{"evse/1035": tc.states})
			require.Len(t, problems, 1)
			assert.Contains(t, problems[0], tc.want)
		})
	}
}
