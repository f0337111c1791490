package managedcluster

import (
	"hash/fnv"
	"time"
)

// probeWorkers bounds how many clusters are probed (and their statuses
// written) at once. A fleet of 1,000 clusters at the 30 s interval needs
// about 33 probes a second; a cluster that does not answer holds its
// worker for up to the discovery timeout (15 s), so a few such clusters
// must not stop the others' probes.
const probeWorkers = 16

// nextProbe is how long after now the cluster named name is probed
// again: at its own slot of the interval, an offset that a hash of its
// name fixes, so that a fleet registered at once is probed evenly over
// the interval instead of all together, and stays spread. The delay is
// more than half an interval and at most one and a half; a probe
// younger than half an interval is reused (probeOf), so each cluster is
// probed once per interval.
func nextProbe(name string, now time.Time, interval time.Duration) time.Duration {
	h := fnv.New64a()
	_, _ = h.Write([]byte(name))
	offset := time.Duration(h.Sum64() % uint64(interval))
	earliest := now.Add(interval / 2)
	// The first time ≥ earliest whose position in the interval is offset.
	base := earliest.Truncate(interval) // Truncate counts from the zero time: the same grid for every cluster
	next := base.Add(offset)
	if next.Before(earliest) {
		next = next.Add(interval)
	}
	return next.Sub(now)
}
