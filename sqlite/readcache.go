package sqlite

import (
	"context"
	"database/sql"
	"math"
	"sync"
	"sync/atomic"

	"github.com/chargenet/chargenet"
)

// DefaultReadCacheSize is the default bound of the read cache (see
// Store.SetReadCacheSize): 32 MiB of cached JSON.
const DefaultReadCacheSize = 32 << 20

// walIndexHeaderWords is the size of one copy of the WAL-index header (WalIndexHdr),
// in 32-bit words: 48 bytes.
const walIndexHeaderWords = 12

// walVersion is a copy of the WAL-index header. SQLite rewrites the header on every
// commit (the last frame, its checksum, the salts after a WAL restart), so two equal
// versions read at different times mean that nothing was committed in between.
type walVersion [walIndexHeaderWords]uint32

// readCache keeps the answers of the store's hottest reads, an EVSE's JSON and a page
// of location JSON, for as long as the database has not changed what they show.
//
// The cache knows when anything was committed: SQLite rewrites the WAL-index header on
// every commit, by any connection or process (`chargenet import` beside a running
// server), before the commit returns, and the cache maps that header (walProbe). It
// learns what was committed from the database itself, from the change positions that
// triggers take in the transaction of every change, whoever writes (migrations 0011 and
// 0014): an EVSE or a location whose position is past the last one the cache read has
// changed. When a read finds the header moved since the cache's last sync, the cache
// reads the EVSEs and locations moved past its positions and drops them; entries a
// commit did not touch stay. More than syncLimit EVSEs or locations moved since the last
// sync drop everything (a sync reads at most that many rows of each).
//
// A page is kept as the ids of its locations, beside the JSON of each location. Every
// change of an EVSE changes its location (its version and lastUpdated), so a commit
// usually moves a location of a cached page: the cache then drops that location's JSON
// only, and the next read of the page encodes that one location again instead of reading
// the page. A location that moved and is not in a cached page, or is no longer listed
// (deleted, or its row gone), may have changed which ids a page holds: every page is
// dropped.
//
// An entry is served only while the header still equals the one of the last sync (no
// commit since), and stored only if no sync has happened since the reader probed the
// header (the sync's epoch): a read that began before a sync may have seen a state the
// sync has already accounted for, so its answer is not kept. A store that cannot map
// the header (an in-memory database, a system without mmap) has no cache.
type readCache struct {
	probe   *walProbe // never nil
	changes changeReader

	limit atomic.Int64 // bound in bytes; 0: off

	sync sync.Mutex // held by the one sync in progress

	mu        sync.Mutex
	at        walVersion // the header of the last sync
	synced    bool       // at, seq and gen hold a sync's result
	epoch     uint64     // incremented by every sync
	seq       int64      // the highest evse_changes position seen
	gen       int64      // the highest location_changes position seen
	size      int        // bytes held
	pageBytes int        // of which in pages and location JSON
	evses     map[int64]evseDocEntry
	pages     map[chargenet.Seek[string]][]string // the ids of each page
	inPages   map[string]int                      // how many pages hold each id
	locations map[string][]byte                   // the JSON of locations of the pages

	hits, misses atomic.Uint64
	filled       atomic.Uint64 // pages served after encoding only their changed locations
}

// cacheChanges is what a sync reads in one snapshot: the highest evse_changes and
// location_changes positions, and the EVSEs and locations whose position is past the
// ones it was given, at most syncLimit+1 of each.
type cacheChanges struct {
	evsePos, locationPos int64
	evses                []int64
	locations            []movedLocation
}

// movedLocation is a location past the position a sync was given: its id, and whether
// it is listed (its row exists and it is not deleted).
type movedLocation struct {
	id     string
	listed bool
}

// changeReader reads the cacheChanges after the given positions.
type changeReader func(ctx context.Context, evsesAfter, locationsAfter int64) (cacheChanges, error)

type evseDocEntry struct {
	doc     []byte
	version int64
}

// cacheView is what a reader saw when it probed the cache: the header and the epoch.
type cacheView struct {
	at    walVersion
	epoch uint64
}

func newReadCache(probe *walProbe, limit int, changes changeReader) *readCache {
	c := &readCache{probe: probe, changes: changes}
	c.limit.Store(int64(limit))
	return c
}

// view returns what a reader may serve and store now, first syncing the cache with the
// commits made since the last sync; false when nothing may be served from or stored in
// the cache now (no cache, the cache is off, the probe cannot vouch for the header, the
// sync failed).
func (c *readCache) view(ctx context.Context) (cacheView, bool) {
	if c == nil || c.limit.Load() == 0 {
		return cacheView{}, false
	}
	if view, ok, current := c.current(); current || !ok {
		return view, ok
	}
	// Readers that find the header moved wait for one sync (it reads a few rows) rather
	// than each reading the database meanwhile; one that waited finds the cache synced by
	// the reader before it, unless a commit came in between.
	c.sync.Lock()
	defer c.sync.Unlock()
	view, ok, current := c.current()
	if current || !ok {
		return view, ok
	}
	v := view.at
	c.mu.Lock()
	synced, evsesAfter, locationsAfter := c.synced, c.seq, c.gen
	c.mu.Unlock()
	if !synced {
		// Nothing cached to drop: read only the positions.
		evsesAfter, locationsAfter = math.MaxInt64, math.MaxInt64
	}
	// The header was read before the rows: the rows include every commit up to v, and
	// perhaps later ones (then the header has moved past v and nothing is served
	// until the next sync).
	ch, err := c.changes(ctx, evsesAfter, locationsAfter)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if err != nil {
		c.synced = false
		c.resetLocked()
		return cacheView{}, false
	}
	switch {
	case !synced || len(ch.evses) > syncLimit || len(ch.locations) > syncLimit:
		c.resetLocked() // the first sync, or too many changed to drop one by one
	default:
		for _, uid := range ch.evses {
			if e, ok := c.evses[uid]; ok {
				c.size -= evseEntrySize(e)
				delete(c.evses, uid)
			}
		}
		for _, l := range ch.locations {
			if !l.listed || c.inPages[l.id] == 0 {
				c.dropPagesLocked() // which ids a page holds may have changed
				break
			}
			if doc, ok := c.locations[l.id]; ok {
				n := locationEntrySize(l.id, doc)
				c.size, c.pageBytes = c.size-n, c.pageBytes-n
				delete(c.locations, l.id)
			}
		}
	}
	c.at, c.gen, c.seq, c.synced = v, ch.locationPos, ch.evsePos, true
	return cacheView{at: v, epoch: c.epoch}, true
}

// current probes the header: ok is false when the probe cannot vouch for it, current
// reports whether the cache is synced with it (then view may be served).
func (c *readCache) current() (view cacheView, ok, current bool) {
	v, ok := c.probe.version()
	if !ok {
		return cacheView{}, false, false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	return cacheView{at: v, epoch: c.epoch}, true, c.synced && c.at == v
}

// setLimit changes the bound and empties the cache; 0 turns it off.
func (c *readCache) setLimit(limit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit.Store(int64(limit))
	c.resetLocked()
}

// resetLocked drops every entry.
func (c *readCache) resetLocked() {
	c.size, c.evses = 0, nil
	c.pageBytes, c.pages, c.inPages, c.locations = 0, nil, nil, nil
}

// dropPagesLocked drops every page and location JSON.
func (c *readCache) dropPagesLocked() {
	c.size -= c.pageBytes
	c.pageBytes, c.pages, c.inPages, c.locations = 0, nil, nil, nil
}

func evseEntrySize(e evseDocEntry) int { return len(e.doc) + 64 }

// locationEntrySize is the bytes the JSON of location id counts for.
func locationEntrySize(id string, doc []byte) int { return 48 + len(id) + len(doc) }

// servableLocked reports whether entries may be served to a reader with view v.
func (c *readCache) servableLocked(v cacheView) bool { return c.synced && c.at == v.at }

// evse returns the cached JSON and version of EVSE uid if it may be served to view v.
func (c *readCache) evse(v cacheView, uid int64) (evseDocEntry, bool) {
	c.mu.Lock()
	e, ok := c.evses[uid]
	ok = ok && c.servableLocked(v)
	c.mu.Unlock()
	c.count(ok)
	return e, ok
}

// putEVSE keeps what a read begun with view v returned for EVSE uid.
func (c *readCache) putEVSE(v cacheView, uid int64, e evseDocEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.makeRoomLocked(v, evseEntrySize(e)) {
		return
	}
	if c.evses == nil {
		c.evses = make(map[int64]evseDocEntry)
	}
	if old, ok := c.evses[uid]; ok {
		c.size -= evseEntrySize(old)
	}
	c.evses[uid] = e
}

// page returns the cached page of location JSON for seek, if it may be served to view
// v, and the indexes of its locations whose JSON the cache does not hold (their JSON is
// nil): the caller reads those and passes the page to fill.
func (c *readCache) page(v cacheView, seek chargenet.Seek[string]) (docs []chargenet.LocationDoc, missing []int, ok bool) {
	c.mu.Lock()
	ids, ok := c.pages[seek]
	ok = ok && c.servableLocked(v)
	if ok {
		docs = make([]chargenet.LocationDoc, len(ids))
		for i, id := range ids {
			docs[i] = chargenet.LocationDoc{ID: id, JSON: c.locations[id]}
			if docs[i].JSON == nil {
				missing = append(missing, i)
			}
		}
	}
	c.mu.Unlock()
	c.count(ok && len(missing) == 0)
	return docs, missing, ok
}

// fill keeps the JSON of the locations missing of a page (see page), which a reader
// with view v read from the database, and reports whether the page may be served: only
// while no commit has been made since the reader probed the header, so that its reads
// saw the state the rest of the page shows.
func (c *readCache) fill(v cacheView, docs []chargenet.LocationDoc, missing []int) bool {
	if now, ok := c.probe.version(); !ok || now != v.at {
		return false
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	for _, i := range missing {
		d := docs[i]
		n := locationEntrySize(d.ID, d.JSON)
		if c.inPages[d.ID] == 0 || c.locations[d.ID] != nil || !c.makeRoomLocked(v, n) {
			continue
		}
		c.size -= n              // counted by putLocationLocked
		if c.inPages[d.ID] > 0 { // makeRoomLocked may have dropped everything
			c.putLocationLocked(d.ID, d.JSON)
		}
	}
	c.filled.Add(1)
	return true
}

// putLocationLocked keeps the JSON of location id, a location of a kept page.
func (c *readCache) putLocationLocked(id string, doc []byte) {
	if old, ok := c.locations[id]; ok {
		n := locationEntrySize(id, old)
		c.size, c.pageBytes = c.size-n, c.pageBytes-n
	}
	c.locations[id] = doc
	n := locationEntrySize(id, doc)
	c.size, c.pageBytes = c.size+n, c.pageBytes+n
}

// pageSize is the bytes the ids of a cached page for seek count for.
func pageSize(seek chargenet.Seek[string], ids []string) int {
	n := 64 + len(seek.Key)
	for _, id := range ids {
		n += 16 + len(id)
	}
	return n
}

// putPage keeps what a read begun with view v returned for seek: the ids of the page
// and the JSON of each location.
func (c *readCache) putPage(v cacheView, seek chargenet.Seek[string], docs []chargenet.LocationDoc) {
	ids := make([]string, len(docs))
	for i, d := range docs {
		ids[i] = d.ID
	}
	idBytes := pageSize(seek, ids)
	n := idBytes
	for _, d := range docs {
		n += locationEntrySize(d.ID, d.JSON)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if _, ok := c.pages[seek]; ok || !c.makeRoomLocked(v, n) {
		return
	}
	c.size -= n // counted below, entry by entry
	if c.pages == nil {
		c.pages, c.inPages, c.locations = map[chargenet.Seek[string]][]string{}, map[string]int{}, map[string][]byte{}
	}
	c.pages[seek] = ids
	c.size, c.pageBytes = c.size+idBytes, c.pageBytes+idBytes
	for _, d := range docs {
		c.inPages[d.ID]++
		c.putLocationLocked(d.ID, d.JSON)
	}
}

// makeRoomLocked prepares the cache to take n bytes read with view v: it refuses when a
// sync has happened since the reader's probe or a commit since the last sync (the
// answer may predate what the cache accounts for), and drops everything when the bound
// would be passed. It reports whether the entry may be kept.
func (c *readCache) makeRoomLocked(v cacheView, n int) bool {
	limit := int(c.limit.Load())
	if limit == 0 || n > limit/4 || !c.servableLocked(v) || c.epoch != v.epoch {
		return false
	}
	if c.size+n > limit {
		c.resetLocked()
	}
	c.size += n
	return true
}

func (c *readCache) count(hit bool) {
	if hit {
		c.hits.Add(1)
	} else {
		c.misses.Add(1)
	}
}

// clip returns b with its capacity cut to its length, so that a caller appending to a
// cached slice copies it instead of writing into the cache.
func clip(b []byte) []byte { return b[:len(b):len(b)] }

// changesQuery reads, in one statement (one snapshot), the highest location_changes
// position (kind 0), the highest evse_changes position (kind 1), the EVSEs whose
// position is past ? (kind 2), at most ? of them, and the locations whose position is
// past ? (kind 3), at most ? of them, each with whether it is listed.
const changesQuery = `SELECT 0, coalesce(max(pos), 0), NULL, 0 FROM location_changes ` +
	`UNION ALL SELECT 1, coalesce(max(pos), 0), NULL, 0 FROM evse_changes ` +
	`UNION ALL SELECT * FROM (SELECT 2, uid, NULL, 0 FROM evse_changes WHERE pos > ? ORDER BY pos LIMIT ?) ` +
	`UNION ALL SELECT * FROM (SELECT 3, 0, c.id, l.id IS NOT NULL AND l.deleted_at IS NULL ` +
	`FROM location_changes c LEFT JOIN locations l ON l.id = c.id WHERE c.pos > ? ORDER BY c.pos LIMIT ?)`

// syncLimit is how many changed EVSEs, and locations, a sync drops one by one; past it,
// it starts afresh.
var syncLimit = 4096

// readChanges is the store's changeReader.
func (s *Store) readChanges(ctx context.Context, evsesAfter, locationsAfter int64) (cacheChanges, error) {
	var out cacheChanges
	rows, err := s.changes.QueryContext(ctx, evsesAfter, syncLimit+1, locationsAfter, syncLimit+1)
	if err != nil {
		return out, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var (
			kind, n int64
			id      sql.NullString
			listed  bool
		)
		if err := rows.Scan(&kind, &n, &id, &listed); err != nil {
			return out, err
		}
		switch kind {
		case 0:
			out.locationPos = n
		case 1:
			out.evsePos = n
		case 2:
			out.evses = append(out.evses, n)
		default:
			out.locations = append(out.locations, movedLocation{id: id.String, listed: listed})
		}
	}
	return out, rows.Err()
}
