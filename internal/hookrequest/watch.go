package hookrequest

import (
	"context"
	"sync"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/names"
)

// watches starts, once per kind, the watch of hook resources on the
// installation controller, and hands their changes to the reconciles
// waiting for them.
type watches struct {
	mu         sync.Mutex
	controller controller.Controller
	cache      cache.Cache
	started    map[schema.GroupVersionKind]bool

	waitersMu sync.Mutex
	// waiters are the hook resources a running reconcile waits on: the
	// watch wakes it instead of enqueuing the installation.
	waiters map[types.NamespacedName]*waiter
}

// waiter is one reconcile waiting for hook resources to change.
type waiter struct {
	wake chan struct{} // buffered 1: a wake-up is kept until taken
}

// expect registers wt to be woken by the next change of the hook
// resource at key.
func (w *watches) expect(key types.NamespacedName, wt *waiter) {
	w.waitersMu.Lock()
	defer w.waitersMu.Unlock()
	if w.waiters == nil {
		w.waiters = map[types.NamespacedName]*waiter{}
	}
	w.waiters[key] = wt
}

// withdraw removes wt's wait for key; false when the watch had taken it
// (and woken wt) already.
func (w *watches) withdraw(key types.NamespacedName, wt *waiter) bool {
	w.waitersMu.Lock()
	defer w.waitersMu.Unlock()
	if w.waiters[key] == wt {
		delete(w.waiters, key)
		return true
	}
	return false
}

// handler routes each change of a hook resource once: to the reconcile
// waiting on it, or else to the queue, as the installation its labels
// name. (A map-function handler would map an update's old and new
// object both, waking the waiter and enqueuing the installation too.)
func (w *watches) handler() handler.EventHandler {
	return handler.Funcs{
		UpdateFunc: func(ctx context.Context, e event.UpdateEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			w.route(ctx, e.ObjectNew, q)
		},
		DeleteFunc: func(ctx context.Context, e event.DeleteEvent, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
			w.route(ctx, e.Object, q)
		},
	}
}

// route hands a change of a hook resource to the reconcile waiting on
// it, or else enqueues the installation its labels name.
func (w *watches) route(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	key := types.NamespacedName{Namespace: o.GetNamespace(), Name: o.GetName()}
	w.waitersMu.Lock()
	wt := w.waiters[key]
	delete(w.waiters, key)
	w.waitersMu.Unlock()
	if wt != nil {
		select {
		case wt.wake <- struct{}{}:
		default:
		}
		return
	}
	for _, req := range installationOf(ctx, w.cache, o) {
		q.Add(req)
	}
}

// watch starts watching the metadata of gvk's resources, if not yet, and
// returns once the watch has listed them and its handler has seen them.
// The kind must be served (a watch of an unknown kind retries forever).
// A nil w watches nothing.
//
// Only updates and deletions wake an installation: a resource's creation
// is Annex's own doing, and whatever the resources said before the watch
// listed them is read by the reconcile that starts it (every
// installation reconciles when the manager starts).
func (w *watches) watch(ctx context.Context, gvk schema.GroupVersionKind) error {
	if w == nil {
		return nil
	}
	w.mu.Lock()
	defer w.mu.Unlock()
	if w.started[gvk] {
		return nil
	}
	obj := &metav1.PartialObjectMetadata{}
	obj.SetGroupVersionKind(gvk)
	src := source.Kind[client.Object](w.cache, obj, w.handler())
	if err := w.controller.Watch(src); err != nil {
		return err
	}
	if err := src.WaitForSync(ctx); err != nil {
		return err
	}
	w.started[gvk] = true
	return nil
}

// installationOf maps a hook resource to the installation its labels
// name. The label holds the installation's name shortened beyond 63
// characters (names.LabelValue); the HookRequest that controls the
// resource, read from reader, names it in full.
func installationOf(ctx context.Context, reader client.Reader, o client.Object) []reconcile.Request {
	l := o.GetLabels()
	name, ns := l[v1alpha1.LabelInstallationName], l[v1alpha1.LabelInstallationNamespace]
	if l[v1alpha1.LabelHook] == "" || name == "" {
		return nil
	}
	if ref := metav1.GetControllerOf(o); reader != nil && ref != nil && ref.Kind == "HookRequest" {
		req := &v1alpha1.HookRequest{}
		if err := reader.Get(ctx, types.NamespacedName{Namespace: o.GetNamespace(), Name: ref.Name}, req); err == nil &&
			names.LabelValue(req.Spec.Installation) == name {
			name = req.Spec.Installation
		}
	}
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: ns, Name: name}}}
}
