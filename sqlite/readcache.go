package sqlite

import (
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
// of location JSON, for as long as the database has not changed.
//
// Every entry carries the WAL-index version read before the query that produced it,
// and is served only while the database still has that version: the query saw that
// state or a newer one, and an unchanged version means there is no newer one. A commit
// by this store, by another connection or by another process (`chargenet import`
// beside a running server) changes the version and so retires every entry at once;
// there is no invalidation to forget. A store that cannot map the header (an in-memory
// database, a system without mmap) has no cache.
type readCache struct {
	probe *walProbe // never nil

	limit atomic.Int64 // bound in bytes; 0: off

	mu    sync.Mutex
	at    walVersion // the version of every entry
	size  int        // bytes held
	evses map[int64]evseDocEntry
	pages map[chargenet.Seek[string]][]chargenet.LocationDoc

	hits, misses atomic.Uint64
}

type evseDocEntry struct {
	doc     []byte
	version int64
}

func newReadCache(probe *walProbe, limit int) *readCache {
	c := &readCache{probe: probe}
	c.limit.Store(int64(limit))
	return c
}

// version returns the database's current version, and false when nothing may be
// served from or stored in the cache now (no cache, the cache is off, the probe cannot
// vouch for the header).
func (c *readCache) version() (walVersion, bool) {
	if c == nil || c.limit.Load() == 0 {
		return walVersion{}, false
	}
	return c.probe.version()
}

// setMax changes the bound and empties the cache; 0 turns it off.
func (c *readCache) setLimit(limit int) {
	c.mu.Lock()
	defer c.mu.Unlock()
	c.limit.Store(int64(limit))
	c.resetLocked(c.at)
}

func (c *readCache) resetLocked(v walVersion) {
	c.at, c.size, c.evses, c.pages = v, 0, nil, nil
}

// evse returns the cached JSON and version of EVSE uid if it was read at version v.
func (c *readCache) evse(v walVersion, uid int64) (evseDocEntry, bool) {
	c.mu.Lock()
	e, ok := c.evses[uid]
	ok = ok && c.at == v
	c.mu.Unlock()
	c.count(ok)
	return e, ok
}

// putEVSE keeps what a read begun at version v returned for EVSE uid.
func (c *readCache) putEVSE(v walVersion, uid int64, e evseDocEntry) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.makeRoomLocked(v, len(e.doc)+64) {
		return
	}
	if c.evses == nil {
		c.evses = make(map[int64]evseDocEntry)
	}
	c.evses[uid] = e
}

// page returns a copy of the cached page of location JSON for seek if it was read at
// version v.
func (c *readCache) page(v walVersion, seek chargenet.Seek[string]) ([]chargenet.LocationDoc, bool) {
	c.mu.Lock()
	p, ok := c.pages[seek]
	ok = ok && c.at == v
	c.mu.Unlock()
	c.count(ok)
	if !ok {
		return nil, false
	}
	return slices.Clone(p), true
}

// putPage keeps what a read begun at version v returned for seek.
func (c *readCache) putPage(v walVersion, seek chargenet.Seek[string], docs []chargenet.LocationDoc) {
	n := 64 + len(seek.Key)
	for _, d := range docs {
		n += 48 + len(d.ID) + len(d.JSON)
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if !c.makeRoomLocked(v, n) {
		return
	}
	if c.pages == nil {
		c.pages = make(map[chargenet.Seek[string]][]chargenet.LocationDoc)
	}
	c.pages[seek] = slices.Clone(docs)
}

// makeRoomLocked prepares the cache to take n bytes read at version v: entries of
// another version are dropped (they are stale, or the new entry is), and so is
// everything when the bound would be passed. It reports false when the entry cannot be
// kept at all.
func (c *readCache) makeRoomLocked(v walVersion, n int) bool {
	limit := int(c.limit.Load())
	if limit == 0 || n > limit/4 {
		return false
	}
	if c.at != v || c.size+n > limit {
		c.resetLocked(v)
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
