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
// of location JSON, for as long as the database has not changed what they show (what it
// saves: docs/internals.md, The SQLite read cache).
//
// It knows that something was committed from the WAL-index header, which SQLite rewrites
// on every commit of any process (walProbe), and what from the change positions triggers
// take (migrations 0011 and 0014): a sync drops the EVSEs and locations moved past its
// last position, or everything when more than syncLimit moved. A page is its location
// ids beside each location's JSON, which the sync encodes again when a commit moved it.
// An entry is served only while the header equals that of the last sync, and stored only
// if no sync happened since its read began. docs/internals.md has the whole design.
type readCache struct {
	probe   *walProbe // never nil
	changes changeReader
	encode  locationEncoder

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
	memoBytes int                                 // of which in memos
	memos     map[string]memoEntry

	hits, misses atomic.Uint64
	reencoded    atomic.Uint64 // locations of cached pages encoded again by a sync
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

// locationEncoder reads the locations ids from the database and returns the JSON of
// each by id.
type locationEncoder func(ctx context.Context, ids []string) (map[string][]byte, error)

type evseDocEntry struct {
	doc     []byte
	version int64
}

// memoEntry is a value kept by Store.Memo, with the bytes it counts for.
type memoEntry struct {
	value any
	size  int
}

// cacheView is what a reader saw when it probed the cache: the header and the epoch.
type cacheView struct {
	at    walVersion
	epoch uint64
}

func newReadCache(probe *walProbe, limit int, changes changeReader, encode locationEncoder) *readCache {
	c := &readCache{probe: probe, changes: changes, encode: encode}
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
	// Every change of an EVSE changes its location: the moved locations of cached pages
	// are encoded again here, once per commit, rather than by every reader of a page.
	// What they read may be newer than v; it is served only once a sync has reached it.
	var docs map[string][]byte
	if ids := c.movedInPages(synced, ch); err == nil && len(ids) > 0 {
		if docs, err = c.encode(ctx, ids); err == nil {
			c.reencoded.Add(uint64(len(ids)))
		}
	}
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
			doc, ok := docs[l.id]
			if !l.listed || c.inPages[l.id] == 0 || !ok {
				c.dropPagesLocked() // which ids a page holds may have changed
				break
			}
			c.putLocationLocked(l.id, doc)
		}
		if ch.locationPos != c.gen || ch.evsePos != c.seq {
			c.size -= c.memoBytes
			c.memos, c.memoBytes = nil, 0
		}
	}
	c.at, c.gen, c.seq, c.synced = v, ch.locationPos, ch.evsePos, true
	return cacheView{at: v, epoch: c.epoch}, true
}

// movedInPages returns the ids of the locations ch moved when each of them is listed
// and on a cached page, so that a sync can keep the pages with their JSON encoded
// again; nil when there is none, or when the sync drops the pages anyway.
func (c *readCache) movedInPages(synced bool, ch cacheChanges) []string {
	if !synced || len(ch.locations) == 0 || len(ch.evses) > syncLimit || len(ch.locations) > syncLimit {
		return nil
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	ids := make([]string, len(ch.locations))
	for i, l := range ch.locations {
		if !l.listed || c.inPages[l.id] == 0 {
			return nil
		}
		ids[i] = l.id
	}
	return ids
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
	c.memoBytes, c.memos = 0, nil
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
// v.
func (c *readCache) page(v cacheView, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, bool) {
	c.mu.Lock()
	ids, ok := c.pages[seek]
	ok = ok && c.servableLocked(v)
	var docs []chargenet.LocationDoc
	if ok {
		docs = make([]chargenet.LocationDoc, len(ids))
		for i, id := range ids {
			docs[i] = chargenet.LocationDoc{ID: id, JSON: c.locations[id]}
		}
	}
	c.mu.Unlock()
	c.count(ok)
	return docs, ok
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

// memo returns the value kept under key if it may be served to view v.
func (c *readCache) memo(v cacheView, key string) (any, bool) {
	c.mu.Lock()
	m, ok := c.memos[key]
	ok = ok && c.servableLocked(v)
	c.mu.Unlock()
	c.count(ok)
	return m.value, ok
}

// putMemo keeps what a read begun with view v returned for key; size is what it counts
// for.
func (c *readCache) putMemo(v cacheView, key string, value any, size int) {
	n := size + len(key) + 64
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.makeRoomLocked(v, n) {
		return
	}
	if c.memos == nil {
		c.memos = make(map[string]memoEntry)
	}
	if old, ok := c.memos[key]; ok {
		c.size -= old.size
		c.memoBytes -= old.size
	}
	c.memos[key] = memoEntry{value: value, size: n}
	c.memoBytes += n
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
