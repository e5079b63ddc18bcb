package sqlite

import (
	"context"
	"math"
	"slices"
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
// 0014): an EVSE whose evse_changes position is past the last one the cache read has
// changed (its row or its connectors), and the location pages have changed when the
// highest location_changes position has moved. When a read finds the header moved since
// the cache's last sync, the cache reads the EVSEs moved past its position, drops them,
// and drops its pages if the location position moved; entries a commit did not touch
// stay. More than syncLimit EVSEs moved since the last sync drop everything (a sync
// reads at most that many rows).
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
	pageBytes int        // of which in pages
	evses     map[int64]evseDocEntry
	pages     map[chargenet.Seek[string]][]chargenet.LocationDoc
	memoBytes int // of which in memos
	memos     map[string]memoEntry

	hits, misses atomic.Uint64
}

// changeReader reads, in one snapshot, the highest location_changes position (gen), the
// highest evse_changes position (last) and the uids of the EVSEs whose position is past
// after, at most syncLimit+1 of them.
type changeReader func(ctx context.Context, after int64) (gen, last int64, uids []int64, err error)

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
	synced, after := c.synced, c.seq
	c.mu.Unlock()
	if !synced {
		after = math.MaxInt64 // nothing cached to drop: read only the positions
	}
	// The header was read before the rows: the rows include every commit up to v, and
	// perhaps later ones (then the header has moved past v and nothing is served
	// until the next sync).
	gen, last, uids, err := c.changes(ctx, after)
	c.mu.Lock()
	defer c.mu.Unlock()
	c.epoch++
	if err != nil {
		c.synced = false
		c.resetLocked()
		return cacheView{}, false
	}
	switch {
	case !synced || len(uids) > syncLimit:
		c.resetLocked() // the first sync, or too many EVSEs changed to drop one by one
	default:
		for _, uid := range uids {
			if e, ok := c.evses[uid]; ok {
				c.size -= evseEntrySize(e)
				delete(c.evses, uid)
			}
		}
		if gen != c.gen {
			c.size -= c.pageBytes
			c.pages, c.pageBytes = nil, 0
		}
		if gen != c.gen || last != c.seq {
			c.size -= c.memoBytes
			c.memos, c.memoBytes = nil, 0
		}
	}
	c.at, c.gen, c.seq, c.synced = v, gen, last, true
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
	c.size, c.pageBytes, c.evses, c.pages, c.memoBytes, c.memos = 0, 0, nil, nil, 0, nil
}

func evseEntrySize(e evseDocEntry) int { return len(e.doc) + 64 }

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

// page returns a copy of the cached page of location JSON for seek if it may be served
// to view v.
func (c *readCache) page(v cacheView, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, bool) {
	c.mu.Lock()
	p, ok := c.pages[seek]
	ok = ok && c.servableLocked(v)
	c.mu.Unlock()
	c.count(ok)
	if !ok {
		return nil, false
	}
	return slices.Clone(p), true
}

// pageSize is the bytes a cached page of docs for seek counts for.
func pageSize(seek chargenet.Seek[string], docs []chargenet.LocationDoc) int {
	n := 64 + len(seek.Key)
	for _, d := range docs {
		n += 48 + len(d.ID) + len(d.JSON)
	}
	return n
}

// putPage keeps what a read begun with view v returned for seek.
func (c *readCache) putPage(v cacheView, seek chargenet.Seek[string], docs []chargenet.LocationDoc) {
	n := pageSize(seek, docs)
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.makeRoomLocked(v, n) {
		return
	}
	if c.pages == nil {
		c.pages = make(map[chargenet.Seek[string]][]chargenet.LocationDoc)
	}
	if old, ok := c.pages[seek]; ok {
		c.size -= pageSize(seek, old)
		c.pageBytes -= pageSize(seek, old)
	}
	c.pages[seek] = slices.Clone(docs)
	c.pageBytes += n
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
// position (the row with uid -1), the highest evse_changes position (uid -2) and the
// EVSEs whose position is past ?, at most ? of them.
const changesQuery = `SELECT -1, coalesce(max(pos), 0) FROM location_changes ` +
	`UNION ALL SELECT -2, coalesce(max(pos), 0) FROM evse_changes ` +
	`UNION ALL SELECT * FROM (SELECT uid, pos FROM evse_changes WHERE pos > ? ORDER BY pos LIMIT ?)`

// syncLimit is how many changed EVSEs a sync drops one by one; past it, it starts afresh.
var syncLimit = 4096

// readChanges is the store's changeReader.
func (s *Store) readChanges(ctx context.Context, after int64) (gen, last int64, uids []int64, err error) {
	rows, err := s.changes.QueryContext(ctx, after, syncLimit+1)
	if err != nil {
		return 0, 0, nil, err
	}
	defer func() { _ = rows.Close() }()
	for rows.Next() {
		var uid, pos int64
		if err := rows.Scan(&uid, &pos); err != nil {
			return 0, 0, nil, err
		}
		switch uid {
		case -1:
			gen = pos
		case -2:
			last = pos
		default:
			uids = append(uids, uid)
		}
	}
	return gen, last, uids, rows.Err()
}
