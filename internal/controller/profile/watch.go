package profile

import (
	"context"
	"maps"
	"sync"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// installationBatch bounds how often changes of its installations wake a
// profile. A profile's reconcile reads every installation it holds, and
// during a rollout on a large fleet they change by the thousand: each
// change waking the profile at once kept one core busy re-reading them
// (make bench-fleet). The first change after a quiet batch wakes it at
// once; the changes that follow within the batch wake it once, at the
// batch's end.
const installationBatch = time.Second

// batcher enqueues the profile of an installation that changed, at most
// once per installationBatch per profile (the queue keeps the earliest
// of several delayed adds of one request).
type batcher struct {
	batch time.Duration
	now   func() time.Time

	mu   sync.Mutex
	last map[string]time.Time // by profile: when it was last woken at once
}

func newBatcher(batch time.Duration) *batcher {
	return &batcher{batch: batch, now: time.Now, last: map[string]time.Time{}}
}

// add wakes the profile o is labelled for, if any: at once when it was
// not woken within the batch, else when the batch ends.
func (b *batcher) add(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	name := o.GetLabels()[v1alpha1.LabelProfile]
	if name == "" {
		return
	}
	req := reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}
	b.mu.Lock()
	now := b.now()
	since := now.Sub(b.last[name])
	if since >= b.batch {
		b.last[name] = now
	}
	b.mu.Unlock()
	if since >= b.batch {
		q.Add(req)
		return
	}
	q.AddAfter(req, b.batch-since)
}

// handler is the installations' event handler: an update wakes the
// profiles of both its old and new labels (a relabel moves it).
func (b *batcher) handler() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { b.add(e.Object, q) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			b.add(e.ObjectNew, q)
			if e.ObjectOld.GetLabels()[v1alpha1.LabelProfile] != e.ObjectNew.GetLabels()[v1alpha1.LabelProfile] {
				b.add(e.ObjectOld, q)
			}
		},
		DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { b.add(e.Object, q) },
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { b.add(e.Object, q) },
	}
}

// clusterChangeMatters passes the updates of a ManagedCluster that change
// what a profile reads of it (clusters): its labels, its annotations (the
// record of Default extensions among them), its deletion, its Kubernetes
// version, whether it is reachable, and its maintenance windows. Its
// probe's other findings, such as the count of Ready installations that
// changes with every installation during a rollout, wake no profile.
func clusterChangeMatters() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.ManagedCluster)
		cur, okNew := e.ObjectNew.(*v1alpha1.ManagedCluster)
		if !okOld || !okNew {
			return true
		}
		unreachable := func(mc *v1alpha1.ManagedCluster) bool {
			return meta.IsStatusConditionFalse(mc.Status.Conditions, v1alpha1.ConditionReachable)
		}
		return !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
			old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() ||
			old.Status.KubernetesVersion != cur.Status.KubernetesVersion || unreachable(old) != unreachable(cur) ||
			!equality.Semantic.DeepEqual(old.Spec.MaintenanceWindows, cur.Spec.MaintenanceWindows)
	}}
}
