package installation

import (
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// clusterShare bounds how many of one managed cluster's installations
// reconcile at once. A cluster that answers slowly or not at all makes
// each of its reconciles wait for a request's timeout; bounded, it holds
// at most its share of the workers, and every other cluster's
// installations go on at full speed. The hub's own installations (cluster
// "") are not bounded: without the hub nothing proceeds anyway. The zero
// value (or nil) bounds nothing.
type clusterShare struct {
	limit int

	mu      sync.Mutex
	running map[string]int
}

// newClusterShare gives each cluster a quarter of workers, at least 2.
func newClusterShare(workers int) *clusterShare {
	return &clusterShare{limit: max(2, workers/4), running: map[string]int{}}
}

// clusterShareWait is how long an installation whose cluster has used its
// share waits before it is tried again: a reconcile that took its turn
// costs one read of the cache.
const clusterShareWait = time.Second

// take reports whether a reconcile of an installation on cluster may run
// now; if so, give must follow it.
func (c *clusterShare) take(cluster string) bool {
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

// give ends a reconcile that take let run.
func (c *clusterShare) give(cluster string) {
	if c == nil || c.limit == 0 || cluster == "" {
		return
	}
	c.mu.Lock()
	defer c.mu.Unlock()
	if c.running[cluster]--; c.running[cluster] <= 0 {
		delete(c.running, cluster)
	}
}

// becameReachable passes a ManagedCluster whose condition Reachable turned
// True: its installations (installationsOnCluster) are retried at once
// instead of at the end of their backoff.
func becameReachable() predicate.Funcs {
	reachable := func(o any) bool {
		mc, ok := o.(*v1alpha1.ManagedCluster)
		return ok && meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReachable)
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !reachable(e.ObjectOld) && reachable(e.ObjectNew)
		},
	}
}
