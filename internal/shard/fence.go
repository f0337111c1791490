package shard

import (
	"context"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Fence admits work on a cluster only while this shard serves it, and
// counts the work under way on each cluster so that a handover waits for
// it.
//
// Enter reads the ManagedCluster from Clusters, a cache, under the same
// lock as Idle. The ManagedCluster controller calls Idle after it read,
// from the same cache, a label naming another shard; a cache never goes
// back in time, so every Enter after that Idle reads that label too and is
// refused, and every Enter before it is counted. No flag has to be set or
// cleared for a cluster that leaves and comes back.
type Fence struct {
	// Shard is this manager's shard.
	Shard string
	// Clusters reads ManagedClusters: the manager's cache, the same one
	// the ManagedCluster controller reads.
	Clusters client.Reader

	mu       sync.Mutex
	inflight map[string]int
}

// Enter admits one piece of work on cluster ("" for the hub) when this
// shard serves it, and returns the function that ends it. ok false: the
// work must not touch the cluster (another shard's, or being handed over);
// err: the cluster could not be read, try again.
//
// A cluster with no ManagedCluster belongs to the default shard, which
// reports that it does not exist.
func (f *Fence) Enter(ctx context.Context, cluster string) (leave func(), ok bool, err error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	if ok, err := f.serves(ctx, cluster); !ok || err != nil {
		return nil, false, err
	}
	if f.inflight == nil {
		f.inflight = map[string]int{}
	}
	f.inflight[cluster]++
	var once sync.Once
	return func() {
		once.Do(func() {
			f.mu.Lock()
			defer f.mu.Unlock()
			if f.inflight[cluster]--; f.inflight[cluster] <= 0 {
				delete(f.inflight, cluster)
			}
		})
	}, true, nil
}

// Serves reports whether this shard serves cluster now, as Enter decides,
// without admitting anything.
func (f *Fence) Serves(ctx context.Context, cluster string) (bool, error) {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.serves(ctx, cluster)
}

// Idle reports whether no work admitted by Enter is under way on cluster.
// Called once the caller has seen, in the cache, that the cluster is not
// this shard's any more, true means that none will be admitted again
// until the shard claims it back.
func (f *Fence) Idle(cluster string) bool {
	f.mu.Lock()
	defer f.mu.Unlock()
	return f.inflight[cluster] == 0
}

func (f *Fence) serves(ctx context.Context, cluster string) (bool, error) {
	if cluster == "" {
		return f.shard() == Default, nil
	}
	mc := &v1alpha1.ManagedCluster{}
	if err := f.Clusters.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
		if apierrors.IsNotFound(err) {
			return f.shard() == Default, nil
		}
		return false, err
	}
	return Decide(f.shard(), mc.Labels, mc.Status.Shard, false) == Serve, nil
}

// Owns reports whether the cluster is this shard's by its label or served
// by it: the installations whose events this shard's controllers look at.
// It admits nothing.
func (f *Fence) Owns(ctx context.Context, cluster string) bool {
	if cluster == "" {
		return f.shard() == Default
	}
	mc := &v1alpha1.ManagedCluster{}
	if err := f.Clusters.Get(ctx, client.ObjectKey{Name: cluster}, mc); err != nil {
		return f.shard() == Default || !apierrors.IsNotFound(err)
	}
	return Of(mc.Labels) == f.shard() || mc.Status.Shard == f.shard()
}

func (f *Fence) shard() string {
	if f.Shard == "" {
		return Default
	}
	return f.Shard
}
