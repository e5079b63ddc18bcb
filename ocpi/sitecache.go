package ocpi

import (
	"sync"

	"github.com/chargenet/chargenet"
)

// siteCacheBytes bounds the encoded Locations a Service keeps (see siteCache): the
// pages partners read again and again, those that charge boxes keep changing included.
const siteCacheBytes = 32 << 20

// siteCache keeps the encoded OCPI Location of each site under the version it was
// encoded at, so that a page whose locations changed since it was last read reads and
// encodes only those (chargenet.SiteVersion). When it holds more than max bytes it
// forgets sites drawn at random (Go's map order) until what it adds fits.
// What it saves: docs/internals.md, "The OCPI Locations pages".
type siteCache struct {
	mu   sync.RWMutex
	m    map[string]encodedSite
	size int
	max  int
}

// encodedSite is one site's Location as JSON, at one version.
type encodedSite struct {
	version chargenet.SiteVersion
	json    []byte
}

func newSiteCache(max int) *siteCache {
	return &siteCache{m: map[string]encodedSite{}, max: max}
}

// get returns the Location of the site at version v, if it is kept.
func (c *siteCache) get(v chargenet.SiteVersion) ([]byte, bool) {
	c.mu.RLock()
	e, ok := c.m[v.ID]
	c.mu.RUnlock()
	if !ok || e.version.Version != v.Version || !e.version.LastUpdated.Equal(v.LastUpdated) {
		return nil, false
	}
	return e.json, true
}

// put keeps b as the Location of the site at version v, in place of any other version.
func (c *siteCache) put(v chargenet.SiteVersion, b []byte) {
	if len(b) > c.max {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if old, ok := c.m[v.ID]; ok {
		c.size -= len(old.json)
		delete(c.m, v.ID)
	}
	for id, e := range c.m {
		if c.size+len(b) <= c.max {
			break
		}
		c.size -= len(e.json)
		delete(c.m, id)
	}
	c.m[v.ID] = encodedSite{version: v, json: b}
	c.size += len(b)
}
