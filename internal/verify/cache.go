package verify

import "sync"

// maxCached bounds the Cache; past it, the cache starts again empty.
const maxCached = 4096

// Cache remembers verified identities by artifact digest and key set, so
// that each artifact is verified once for a given policy: a digest names
// content that never changes, and a change of the trusted keys is a new
// key set. Failures are not cached: a signature pushed later is found at
// the next fetch. The zero value is ready; it is safe for concurrent use.
type Cache struct {
	mu  sync.Mutex
	ids map[cacheKey]Identity
}

type cacheKey struct{ digest, keys string }

// Get returns the identity that verified digest under keySet (KeySetID).
func (c *Cache) Get(digest, keySet string) (Identity, bool) {
	c.mu.Lock()
	defer c.mu.Unlock()
	id, ok := c.ids[cacheKey{digest, keySet}]
	return id, ok
}

// Put records that id verified digest under keySet.
func (c *Cache) Put(digest, keySet string, id Identity) {
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.ids == nil || len(c.ids) >= maxCached {
		c.ids = map[cacheKey]Identity{}
	}
	c.ids[cacheKey{digest, keySet}] = id
}
