package cluster

import (
	"context"
	"sync"
	"time"

	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/log"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// VersionWatcher announces a cluster's new Kubernetes version (it was
// upgraded or downgraded) by sending an event for each installation on it,
// so that they are re-resolved. It observes the hub itself every Interval
// (it runs as a manager Runnable); the ManagedClusters' versions come from
// their probes (Observed), each on the cluster's own schedule, so the
// watcher does no work per cluster.
type VersionWatcher struct {
	Registry *Registry
	// Reader lists installations.
	Reader client.Reader
	// Interval between two observations of the hub (default 30s).
	Interval time.Duration
	// Events receives one GenericEvent per installation to re-resolve.
	Events chan<- event.GenericEvent
	// Serves says whether this manager's shard serves a cluster ("" is the
	// hub); the hub is observed only by the shard that serves it (the
	// ManagedClusters' probes are each shard's own). Nil: it is.
	Serves func(ctx context.Context, cluster string) (bool, error)

	mu   sync.Mutex
	seen map[string]string // cluster name → last observed version
}

// Start observes the hub until ctx ends.
func (w *VersionWatcher) Start(ctx context.Context) error {
	interval := w.Interval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		if w.servesHub(ctx) {
			if version, err := w.Registry.ObserveVersion(ctx, ""); err == nil {
				w.Observed(ctx, "", version)
			}
		}
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

func (w *VersionWatcher) servesHub(ctx context.Context) bool {
	if w.Serves == nil {
		return true
	}
	ok, err := w.Serves(ctx, "")
	return ok && err == nil
}

// Observed is told the version a probe of cluster ("" the hub) read;
// when it differs from the one before, the cluster's installations are
// announced. The first version seen of a cluster announces nothing (a
// version that changed while Annex was down is caught by the
// installations' own reconcile).
func (w *VersionWatcher) Observed(ctx context.Context, cluster, version string) {
	if !w.changed(cluster, version) {
		return
	}
	var list v1alpha1.ExtensionInstallationList
	if err := w.Reader.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		log.FromContext(ctx).Error(err, "listing installations to re-resolve after a cluster's version changed", "cluster", clusterLabel(cluster))
		return
	}
	var on []*v1alpha1.ExtensionInstallation
	for i := range list.Items {
		if list.Items[i].Spec.Cluster == cluster {
			on = append(on, &list.Items[i])
		}
	}
	log.FromContext(ctx).Info("cluster Kubernetes version changed; re-resolving its installations",
		"cluster", clusterLabel(cluster), "version", version, "installations", len(on))
	for _, inst := range on {
		// Only the name is read: the event's object is the cache's own.
		select {
		case w.Events <- event.GenericEvent{Object: inst}:
		case <-ctx.Done():
			return
		}
	}
}

// changed records version and reports whether it differs from the last
// observation; the first observation counts as a change only when an
// installation recorded another version (Annex restarted across an upgrade
// is caught by the installations' own reconcile).
func (w *VersionWatcher) changed(cluster, version string) bool {
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.seen == nil {
		w.seen = map[string]string{}
	}
	last, ok := w.seen[cluster]
	w.seen[cluster] = version
	return ok && last != version
}

func clusterLabel(name string) string {
	if name == "" {
		return "(hub)"
	}
	return name
}
