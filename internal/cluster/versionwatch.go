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

// VersionWatcher observes the Kubernetes version of every cluster that has
// installations and, when one changes (the cluster was upgraded or
// downgraded), sends an event for each installation on it so that they are
// re-resolved. It runs as a manager Runnable.
type VersionWatcher struct {
	Registry *Registry
	// Reader lists installations.
	Reader client.Reader
	// Interval between two observations (default 30s).
	Interval time.Duration
	// Events receives one GenericEvent per installation to re-resolve.
	Events chan<- event.GenericEvent
	// Serves says whether this manager's shard serves a cluster ("" is the
	// hub); the others are not observed. Nil: every cluster is.
	Serves func(ctx context.Context, cluster string) (bool, error)

	mu   sync.Mutex
	seen map[string]string // cluster name → last observed version
}

// Start observes until ctx ends.
func (w *VersionWatcher) Start(ctx context.Context) error {
	interval := w.Interval
	if interval <= 0 {
		interval = 30 * time.Second
	}
	ticker := time.NewTicker(interval)
	defer ticker.Stop()
	for {
		w.observe(ctx)
		select {
		case <-ctx.Done():
			return nil
		case <-ticker.C:
		}
	}
}

// observe reads each cluster's version once and announces changes.
func (w *VersionWatcher) observe(ctx context.Context) {
	var list v1alpha1.ExtensionInstallationList
	if err := w.Reader.List(ctx, &list); err != nil {
		log.FromContext(ctx).Error(err, "listing installations to observe cluster versions")
		return
	}
	byCluster := map[string][]*v1alpha1.ExtensionInstallation{}
	for i := range list.Items {
		inst := &list.Items[i]
		byCluster[inst.Spec.Cluster] = append(byCluster[inst.Spec.Cluster], inst)
	}
	for name, insts := range byCluster {
		if w.Serves != nil {
			if ok, err := w.Serves(ctx, name); !ok || err != nil {
				continue
			}
		}
		version, err := w.Registry.ObserveVersion(ctx, name)
		if err != nil {
			continue // the installations report the unreachable cluster themselves
		}
		if !w.changed(name, version) {
			continue
		}
		log.FromContext(ctx).Info("cluster Kubernetes version changed; re-resolving its installations",
			"cluster", clusterLabel(name), "version", version, "installations", len(insts))
		for _, inst := range insts {
			select {
			case w.Events <- event.GenericEvent{Object: inst}:
			case <-ctx.Done():
				return
			}
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
