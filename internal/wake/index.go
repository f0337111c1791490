package wake

import (
	"context"
	"fmt"

	toolscache "k8s.io/client-go/tools/cache"
	"sigs.k8s.io/controller-runtime/pkg/cache"

	"github.com/annex-platform/annex/api/v1alpha1"
)

const (
	// indexCluster indexes the cache's installations by spec.cluster.
	indexCluster = "annex.dev/cluster"
	// indexWaiting indexes by spec.cluster only the installations that
	// wait on others (WaitsOnOthers), so that a change wakes them without
	// a look at every installation on the cluster.
	indexWaiting = "annex.dev/waiting-on-cluster"
)

// Index reads the installations of one cluster straight from the
// informer's store: every reconcile resolves its whole cluster, and
// copying a thousand installations into a list on each reconcile and each
// event would cost more than the rest of the work together.
type Index struct {
	store toolscache.Indexer
}

// NewIndex adds the field indexes the mapping functions list by
// (IndexExtension, IndexValuesSource) and the cluster indexes to the
// cache's informer for ExtensionInstallations, and returns a reader of
// the latter. Call it once per cache.
func NewIndex(ctx context.Context, c cache.Cache) (*Index, error) {
	if err := c.IndexField(ctx, &v1alpha1.ExtensionInstallation{}, IndexExtension, Extension); err != nil {
		return nil, err
	}
	if err := c.IndexField(ctx, &v1alpha1.ExtensionInstallation{}, IndexValuesSource, ValuesSources); err != nil {
		return nil, err
	}
	inf, err := c.GetInformer(ctx, &v1alpha1.ExtensionInstallation{})
	if err != nil {
		return nil, err
	}
	withStore, ok := inf.(interface{ GetIndexer() toolscache.Indexer })
	if !ok {
		return nil, fmt.Errorf("the cache's informer for ExtensionInstallations (%T) does not expose its store", inf)
	}
	if err := inf.AddIndexers(indexers()); err != nil {
		return nil, err
	}
	return &Index{store: withStore.GetIndexer()}, nil
}

func indexers() toolscache.Indexers {
	return toolscache.Indexers{
		indexCluster: clusterKey(func(*v1alpha1.ExtensionInstallation) bool { return true }),
		indexWaiting: clusterKey(WaitsOnOthers),
	}
}

// clusterKey indexes an installation by its spec.cluster when keep says so.
func clusterKey(keep func(*v1alpha1.ExtensionInstallation) bool) toolscache.IndexFunc {
	return func(obj any) ([]string, error) {
		inst, ok := obj.(*v1alpha1.ExtensionInstallation)
		if !ok || !keep(inst) {
			return nil, nil
		}
		return []string{inst.Spec.Cluster}, nil
	}
}

// On returns the installations on cluster ("" is the hub). They are the
// cache's own objects, shared with every reader: never modify them.
func (x *Index) On(cluster string) ([]*v1alpha1.ExtensionInstallation, error) {
	return x.byIndex(indexCluster, cluster)
}

// WaitingOn returns the installations on cluster that wait on others
// (WaitsOnOthers), as On does.
func (x *Index) WaitingOn(cluster string) ([]*v1alpha1.ExtensionInstallation, error) {
	return x.byIndex(indexWaiting, cluster)
}

func (x *Index) byIndex(index, cluster string) ([]*v1alpha1.ExtensionInstallation, error) {
	objs, err := x.store.ByIndex(index, cluster)
	if err != nil {
		return nil, err
	}
	out := make([]*v1alpha1.ExtensionInstallation, 0, len(objs))
	for _, o := range objs {
		if inst, ok := o.(*v1alpha1.ExtensionInstallation); ok {
			out = append(out, inst)
		}
	}
	return out, nil
}
