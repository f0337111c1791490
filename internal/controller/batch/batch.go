// Package batch is an event handler that wakes a controller for the
// object another object names — a profile for its installations, a
// ManagedCluster for the installations on it — at once after a quiet
// spell, then at most once per window (Window) while the named object's
// objects keep changing. A reconcile that reads all of them then runs once per
// window, not once per change: during a rollout on a large fleet they
// change by the thousand.
package batch

import (
	"context"
	"sync"
	"time"

	"k8s.io/client-go/util/workqueue"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
)

// Window is the batch window the controllers use: at 1,000 clusters × 10
// extensions a profile's planning alone takes about 14 ms
// (BenchmarkDecideFleet), so four reconciles a second cost little, and a
// small fleet sees its installations' readiness at most a quarter of a
// second late (BenchmarkFleet's hub row: with a window of one second, its
// profile was Ready 0.4 s later).
const Window = 250 * time.Millisecond

// Batcher enqueues the request an object names, at most once per window
// per request. The queue keeps the earliest of several delayed adds of
// one request, so the changes within a window wake it once, at its end.
type Batcher struct {
	window time.Duration
	named  func(client.Object) (reconcile.Request, bool)
	now    func() time.Time

	mu   sync.Mutex
	last map[reconcile.Request]time.Time // when each was last woken at once
}

// New returns a Batcher of window for the request named reports for an
// object (false: it names none).
func New(window time.Duration, named func(client.Object) (reconcile.Request, bool)) *Batcher {
	return &Batcher{window: window, named: named, now: time.Now, last: map[reconcile.Request]time.Time{}}
}

// Add wakes the request o names, if any: at once when it was not woken
// within the window, else when the window ends.
func (b *Batcher) Add(o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
	req, ok := b.named(o)
	if !ok {
		return
	}
	b.mu.Lock()
	now := b.now()
	since := now.Sub(b.last[req])
	if since >= b.window {
		b.last[req] = now
	}
	b.mu.Unlock()
	if since >= b.window {
		q.Add(req)
		return
	}
	q.AddAfter(req, b.window-since)
}

// Handler is the Batcher as an event handler: an update wakes what the
// old object named too, when the new one names something else.
func (b *Batcher) Handler() handler.EventHandler {
	type queue = workqueue.TypedRateLimitingInterface[reconcile.Request]
	return handler.Funcs{
		CreateFunc: func(_ context.Context, e event.CreateEvent, q queue) { b.Add(e.Object, q) },
		UpdateFunc: func(_ context.Context, e event.UpdateEvent, q queue) {
			b.Add(e.ObjectNew, q)
			oldReq, oldOK := b.named(e.ObjectOld)
			newReq, newOK := b.named(e.ObjectNew)
			if oldOK && (!newOK || oldReq != newReq) {
				b.Add(e.ObjectOld, q)
			}
		},
		DeleteFunc:  func(_ context.Context, e event.DeleteEvent, q queue) { b.Add(e.Object, q) },
		GenericFunc: func(_ context.Context, e event.GenericEvent, q queue) { b.Add(e.Object, q) },
	}
}
