package shard

import (
	"sync"
	"time"
)

// Share bounds how many of one managed cluster's installations
// reconcile at once. A cluster that answers slowly or not at all makes
// each of its reconciles wait for a request's timeout; bounded, it holds
// at most its share of the workers, and every other cluster's
// installations go on at full speed. The hub's own installations (cluster
// "") are not bounded: without the hub nothing proceeds anyway. The zero
// value (or nil) bounds nothing.
type Share struct {
	limit int

	mu      sync.Mutex
	running map[string]int
}

// NewShare gives each cluster a quarter of workers, at least 2.
func NewShare(workers int) *Share {
	return &Share{limit: max(2, workers/4), running: map[string]int{}}
}

// ShareWait is how long an installation whose cluster has used its
// share waits before it is tried again: a reconcile that took its turn
// costs one read of the cache.
const ShareWait = time.Second

// Take reports whether a reconcile of an installation on cluster may run
// now; if so, Give must follow it.
func (c *Share) Take(cluster string) bool {
	if c == nil || c.limit == 0 || cluster == "" {
		return true
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[cluster] >= c.limit {
		return false
	}
	c.running[cluster]++
	return true
}

// Give ends a reconcile that Take let run.
func (c *Share) Give(cluster string) {
	if c == nil || c.limit == 0 || cluster == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[cluster]--; c.running[cluster] <= 0 {
		delete(c.running, cluster)
	}
}
