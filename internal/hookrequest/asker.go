// Package hookrequest asks the registered Hooks about a change: it makes
// the change's HookRequest, creates one resource of each selected Hook's
// kind, reads their answers and records them in the request's status
// (api/v1alpha1 Hook documents the contract). What it decides without
// I/O — which Hooks judge a change, what a resource answered, the
// verdict — is internal/gate's.
//
// The installation controller asks, within the installation's reconcile
// (its Hooks interface, which Asker implements), and the answers wake
// the installation directly through watches on that controller
// (WakeThrough, watch.go).
//
// The installation controller is the HookRequests' controller: its gate
// step asks the hooks (its Hooks interface, wired by internal/manager to
// this package), which creates the request, creates the hooks'
// resources, reads their answers and writes the request's status, all
// within the installation's reconcile. A separate HookRequest controller would add a round trip (hook
// resource → request status → installation) to every answer; here an
// answer wakes the installation directly. Hook kinds are only known at
// run time, so the first time the asker creates a resource of a kind it
// starts a metadata-only watch of that kind on the installation
// controller (Hooks.WakeThrough): any change of a hook resource — its
// answer — enqueues the installation named by its labels. Metadata is
// enough to know that a resource changed; its answer is read from the
// API server when the installation reconciles. Nothing polls: the only
// timed requeue is a hook's deadline.
//
// A hook that answers at once costs no second reconcile: the reconcile
// that creates a hook's resource waits, up to the asker's answer wait
// (DefaultAnswerWait), for the watch to see the resource
// change, then reads the answer and goes on to apply. The watch event it
// waited for does not also enqueue the installation; an answer that
// comes later does.
package hookrequest

import (
	"cmp"
	"context"
	"slices"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/names"
)

// DefaultAnswerWait is how long, by default, the reconcile that asks the
// hooks waits for their answers.
const DefaultAnswerWait = 2 * time.Second

// requestsKept is how many HookRequests of an installation stay, newest
// first: the current one and a few superseded ones to look at.
const requestsKept = 3

// defaultTimeout is the API's default Hook spec.timeout.
const defaultTimeout = 2 * time.Minute

// Asker asks the Hooks about the changes of installations. Ask may be
// called by many reconciles at once; WakeThrough once, before the first.
type Asker struct {
	// Client reads Hooks and HookRequests (cached) and writes the
	// requests, their status, the hooks' resources and the objects
	// Secrets; its RESTMapper says which hook kinds are served.
	Client client.Client
	// Reader reads the hooks' resources, and what was made by an
	// earlier reconcile that Client's cache may not show yet.
	Reader client.Reader
	// Cache runs the watches of the hook kinds (WakeThrough) and reads
	// the HookRequest that names a resource's installation in full.
	Cache cache.Cache
	// AnswerWait is how long the reconcile that asks the hooks waits for
	// their answers before it ends and leaves the answers to wake the
	// installation again (default DefaultAnswerWait; negative: it does
	// not wait). The wait is woken by the hook resources' watch, not by
	// polling, and holds the reconcile's worker.
	AnswerWait time.Duration
	// Now returns the current time, against which hooks time out;
	// default time.Now.
	Now func() time.Time

	watches *watches // the hook kinds watched so far; nil until WakeThrough
}

// WakeThrough makes the answers wake installations through c, the
// installation controller: the first time a hook of a kind is asked, a
// metadata-only watch of the kind starts on c, and any later change of
// a hook's resource enqueues the installation its labels name (or wakes
// the reconcile waiting for it). Without it, nothing waits or wakes.
func (k *Asker) WakeThrough(c controller.Controller) {
	k.watches = &watches{controller: c, cache: k.Cache, started: map[schema.GroupVersionKind]bool{}}
}

// Ask asks the Hooks that select c.Installation for c.Event about the
// change c: it makes or reads the change's HookRequest (named
// gate.HookRequestName), asks each selected Hook whose turn it is,
// records their answers in the request's status, and returns the
// verdict. While a hook it has just asked has not answered it waits,
// up to AnswerWait, for the answer. A request, once made, keeps the
// Hooks it was made with; a zero outcome's Request: no Hook selects the
// change, and none was asked. Errors are the API server's, unwrapped.
func (k *Asker) Ask(ctx context.Context, c gate.HookChange) (gate.HookOutcome, error) {
	var hooks v1alpha1.HookList
	if err := k.Client.List(ctx, &hooks); err != nil {
		return gate.HookOutcome{}, err
	}
	req, fresh, err := k.request(ctx, c, hooks.Items)
	if err != nil || req == nil {
		return gate.HookOutcome{}, err
	}
	byName := map[string]*v1alpha1.Hook{}
	for i := range hooks.Items {
		byName[hooks.Items[i].Name] = &hooks.Items[i]
	}
	a := &asking{k: k, c: c, req: req, fresh: fresh, created: map[types.NamespacedName]bool{}}
	results, state, message, err := a.answers(ctx, byName)
	if err != nil {
		return gate.HookOutcome{}, err
	}
	if err := k.writeStatus(ctx, req, results, state, message); err != nil {
		return gate.HookOutcome{}, err
	}
	return gate.HookOutcome{Request: req.Name, State: state, Message: message, Deadline: a.deadline}, nil
}

func (k *Asker) now() time.Time {
	if k.Now != nil {
		return k.Now()
	}
	return time.Now()
}

// request returns the HookRequest of c, creating it when the change has
// none and some Hook selects it (fresh); nil when no Hook does.
func (k *Asker) request(ctx context.Context, c gate.HookChange, hooks []v1alpha1.Hook) (req *v1alpha1.HookRequest, fresh bool, err error) {
	inst := c.Installation
	key := types.NamespacedName{Namespace: inst.Namespace, Name: gate.HookRequestName(inst.Name, c.Event, c.Digest)}
	req = &v1alpha1.HookRequest{}
	err = k.Client.Get(ctx, key, req)
	if err == nil || !apierrors.IsNotFound(err) {
		return req, false, err
	}
	selected := gate.SelectHooks(hooks, inst, c.Event)
	if len(selected) == 0 {
		return nil, false, nil
	}
	req = &v1alpha1.HookRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
			v1alpha1.LabelInstallationName: names.LabelValue(inst.Name), v1alpha1.LabelInstallationNamespace: inst.Namespace,
		}},
		Spec: v1alpha1.HookRequestSpec{
			Installation: inst.Name, Event: v1alpha1.HookEvent(c.Event), Digest: c.Digest,
			FromVersion: c.From, ToVersion: c.To, Hooks: selected,
		},
	}
	if err := controllerutil.SetControllerReference(inst, req, k.Client.Scheme()); err != nil {
		return nil, false, err
	}
	switch err := k.Client.Create(ctx, req); {
	case apierrors.IsAlreadyExists(err):
		// Made by an earlier reconcile that the cache does not show yet.
		return req, false, k.Reader.Get(ctx, key, req)
	case err != nil:
		return nil, false, err
	}
	k.trim(ctx, inst, req.Name)
	return req, true, nil
}

// trim deletes the installation's oldest HookRequests beyond
// requestsKept, never current; their hook resources and objects Secret
// go with them (owner references). Failing to is harmless: the next new
// request tries again.
func (k *Asker) trim(ctx context.Context, inst *v1alpha1.ExtensionInstallation, current string) {
	var list v1alpha1.HookRequestList
	if err := k.Client.List(ctx, &list, client.InNamespace(inst.Namespace),
		client.MatchingLabels{v1alpha1.LabelInstallationName: names.LabelValue(inst.Name)}); err != nil {
		return
	}
	old := slices.DeleteFunc(list.Items, func(q v1alpha1.HookRequest) bool { return q.Name == current })
	slices.SortFunc(old, func(a, b v1alpha1.HookRequest) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(b.Name, a.Name))
	})
	for i := requestsKept - 1; i < len(old); i++ {
		_ = k.Client.Delete(ctx, &old[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
	}
}

// writeStatus records the hooks' states and the verdict in the
// request's status, when they changed.
func (k *Asker) writeStatus(ctx context.Context, req *v1alpha1.HookRequest, results []v1alpha1.HookResult, state v1alpha1.HookState, message string) error {
	before := req.DeepCopy()
	req.Status.Hooks = results
	succeeded, failed := metav1.ConditionFalse, metav1.ConditionFalse
	reason := v1alpha1.ReasonHookPending
	switch state {
	case v1alpha1.HookSucceeded:
		succeeded, reason = metav1.ConditionTrue, v1alpha1.ReasonSucceeded
	case v1alpha1.HookFailed:
		failed, reason = metav1.ConditionTrue, v1alpha1.ReasonHookRefused
	}
	for _, c := range []struct {
		t      string
		status metav1.ConditionStatus
	}{{v1alpha1.ConditionSucceeded, succeeded}, {v1alpha1.ConditionFailed, failed}} {
		meta.SetStatusCondition(&req.Status.Conditions, metav1.Condition{
			Type: c.t, Status: c.status, Reason: reason, Message: message, ObservedGeneration: req.Generation,
		})
	}
	if equality.Semantic.DeepEqual(before.Status, req.Status) {
		return nil
	}
	return client.IgnoreNotFound(k.Client.Status().Patch(ctx, req, client.MergeFrom(before)))
}
