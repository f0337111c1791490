package hookrequest

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/names"
)

// asking is one reconcile's asking of the hooks of a request.
type asking struct {
	k   *Asker
	c   gate.HookChange
	req *v1alpha1.HookRequest
	// fresh: the request was created by this reconcile, so none of its
	// resources exists yet (unless left by a deleted request).
	fresh bool
	// input is spec.annex, computed once the first resource is created.
	input map[string]any
	// deadline is the earliest timeout of a hook still pending.
	deadline time.Time
	// created holds the hook resources this reconcile created: the ones
	// whose answer it waits for.
	created map[types.NamespacedName]bool
	// waiter is woken by the watch when an expected resource changes.
	waiter *waiter
	// expected holds the hook resources registered with waiter.
	expected map[types.NamespacedName]bool
}

// answers asks the hooks and returns their results and verdict. When
// the verdict is pending on resources this reconcile created, it waits
// for the watch to see one of them change, up to AnswerWait or the
// first hook's deadline, and asks again (a hook of a higher spec.order
// is then asked in the same reconcile).
func (a *asking) answers(ctx context.Context, hooks map[string]*v1alpha1.Hook) ([]v1alpha1.HookResult, v1alpha1.HookState, string, error) {
	wait := a.k.AnswerWait
	if wait == 0 {
		wait = DefaultAnswerWait
	}
	until := time.Now().Add(wait) // real time, whatever clock the asker is given
	for {
		results, err := a.askAll(ctx, hooks)
		if err != nil {
			a.stopWaiting()
			return nil, "", "", err
		}
		state, message := gate.HookVerdict(results, hooks)
		if state == v1alpha1.HookPending && len(a.expected) > 0 {
			limit, atDeadline := until, false
			if !a.deadline.IsZero() {
				if d := time.Now().Add(a.deadline.Sub(a.k.now())); d.Before(limit) {
					limit, atDeadline = d, true
				}
			}
			if a.awaitChange(ctx, limit) || atDeadline && ctx.Err() == nil {
				continue // read the answers, or the timeout, now
			}
		}
		if a.stopWaiting() && state == v1alpha1.HookPending {
			// A resource changed as the wait ended; its event enqueued
			// nothing, so read it now.
			results, err = a.askAll(ctx, hooks)
			a.stopWaiting()
			if err != nil {
				return nil, "", "", err
			}
			state, message = gate.HookVerdict(results, hooks)
		}
		return results, state, message, nil
	}
}

// expect registers, before the resource at key is created or read, that
// this reconcile waits for the watch to see it change.
func (a *asking) expect(key types.NamespacedName) {
	if a.k.watches == nil || a.k.AnswerWait < 0 {
		return
	}
	if a.waiter == nil {
		a.waiter = &waiter{wake: make(chan struct{}, 1)}
	}
	if a.expected == nil { // first, or again after stopWaiting
		a.expected = map[types.NamespacedName]bool{}
	}
	a.k.watches.expect(key, a.waiter)
	a.expected[key] = true
}

// awaitChange waits until the watch saw an expected resource change
// (true), or until passes or ctx ends (false).
func (a *asking) awaitChange(ctx context.Context, until time.Time) bool {
	left := time.Until(until)
	if left <= 0 {
		return false
	}
	timer := time.NewTimer(left)
	defer timer.Stop()
	select {
	case <-a.waiter.wake:
		return true
	case <-timer.C:
		return false
	case <-ctx.Done():
		return false
	}
}

// stopWaiting withdraws this reconcile's waits; it reports whether the
// watch saw one of the resources change meanwhile (its event then
// enqueued nothing, so the caller reads the resources once more).
func (a *asking) stopWaiting() bool {
	signalled := false
	for key := range a.expected {
		if !a.k.watches.withdraw(key, a.waiter) {
			signalled = true
		}
	}
	a.expected = nil
	return signalled
}

// askAll asks each hook of the request whose turn it is, in order: the
// hooks of one order together, the next order once every one before
// succeeded or was ignored. A Hook deleted before it answered is
// Ignored; an answer it gave stays recorded.
func (a *asking) askAll(ctx context.Context, hooks map[string]*v1alpha1.Hook) ([]v1alpha1.HookResult, error) {
	results := make([]v1alpha1.HookResult, 0, len(a.req.Spec.Hooks))
	a.deadline = time.Time{}
	var holdAbove *int32
	for _, name := range a.req.Spec.Hooks {
		prev := v1alpha1.HookResult{Name: name, State: v1alpha1.HookWaiting}
		for _, old := range a.req.Status.Hooks {
			if old.Name == name {
				prev = old
			}
		}
		hook, exists := hooks[name]
		switch {
		case !exists || !hook.DeletionTimestamp.IsZero():
			if !answered(prev.State) {
				prev.State, prev.Message = v1alpha1.HookIgnored, "the Hook was deleted before it answered"
			}
			results = append(results, prev)
			continue
		case holdAbove != nil && hook.Spec.Order > *holdAbove:
			prev.State, prev.Message = v1alpha1.HookWaiting, "runs after the hooks of a lower spec.order"
			results = append(results, prev)
			continue
		}
		res, err := a.ask(ctx, hook, prev)
		if err != nil {
			return nil, err
		}
		if res.State != v1alpha1.HookSucceeded && res.State != v1alpha1.HookIgnored && holdAbove == nil {
			holdAbove = &hook.Spec.Order
		}
		results = append(results, res)
	}
	return results, nil
}

// answered reports whether a hook's state is an answer (or its absence
// past the timeout).
func answered(s v1alpha1.HookState) bool {
	return s == v1alpha1.HookSucceeded || s == v1alpha1.HookFailed || s == v1alpha1.HookTimedOut || s == v1alpha1.HookIgnored
}

// ask makes sure the hook's resource exists and reads its answer. A
// hook's answer is what its resource says now: a hook may revise it
// (after its policy changed) until the change is applied.
func (a *asking) ask(ctx context.Context, hook *v1alpha1.Hook, res v1alpha1.HookResult) (v1alpha1.HookResult, error) {
	k, ns := a.k, a.req.Namespace
	gv, err := schema.ParseGroupVersion(hook.Spec.Resource.APIVersion)
	if err != nil {
		return gate.HookNotServed(hook, res, fmt.Sprintf("spec.resource.apiVersion %q: %v", hook.Spec.Resource.APIVersion, err)), nil
	}
	gvk := gv.WithKind(hook.Spec.Resource.Kind)
	kind := fmt.Sprintf("kind %s of %s", gvk.Kind, hook.Spec.Resource.APIVersion)
	mapping, err := k.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return gate.HookNotServed(hook, res, kind+" is not served by the API server: install the hook's CustomResourceDefinition"), nil
	case err != nil:
		return res, err
	case mapping.Scope.Name() != meta.RESTScopeNameNamespace:
		return gate.HookNotServed(hook, res, kind+" is cluster-scoped: a hook's resources live in the installation's namespace; the Hook's spec.resource must name a namespaced kind"), nil
	}
	// Watch the kind before reading or making the resource, so that no
	// answer after the read is missed.
	if err := k.watches.watch(ctx, gvk); err != nil {
		return res, err
	}
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvk)
	key := types.NamespacedName{Namespace: ns, Name: names.Bounded(a.req.Name+"-"+hook.Name, names.MaxSubdomain)}
	if a.created[key] {
		// Register before reading, so that an answer after the read
		// ends the wait.
		a.expect(key)
	}
	if a.fresh && !a.created[key] {
		err = notFoundYet
	} else {
		err = k.Reader.Get(ctx, key, obj)
	}
	if errors.Is(err, notFoundYet) || apierrors.IsNotFound(err) && !kindGone(err) {
		a.expect(key)
		a.created[key] = true
		obj, err = a.create(ctx, hook, gvk, key)
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return gate.DecideHook(hook, res, v1alpha1.HookFailed, fmt.Sprintf("Annex cannot create its %s: %v; its schema must accept spec.annex", kind, err)), nil
		}
	}
	switch {
	case kindGone(err):
		return gate.HookNotServed(hook, res, kind+" is not served by the API server: install the hook's CustomResourceDefinition"), nil
	case err != nil:
		return res, err
	}
	if !metav1.IsControlledBy(obj, a.req) {
		// Left by a deleted request for the same change, and not yet
		// collected: its answer was to that request. Delete it; its
		// deletion wakes the installation, which then makes a fresh one.
		uid := obj.GetUID()
		err := k.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return res, err
		}
		res.State, res.Message, res.Resource, res.StartedAt = v1alpha1.HookPending, fmt.Sprintf("replacing the %s of an earlier request", gvk.Kind), nil, nil
		return res, nil
	}
	started := obj.GetCreationTimestamp()
	res.StartedAt = &started
	res.Resource = &v1alpha1.ObjectReference{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: ns, Name: obj.GetName()}
	if state, msg := gate.HookAnswer(obj); state != v1alpha1.HookPending {
		return gate.DecideHook(hook, res, state, msg), nil
	}
	timeout := cmp.Or(hook.Spec.Timeout.Duration, defaultTimeout)
	deadline := started.Add(timeout)
	if !k.now().Before(deadline) {
		return gate.DecideHook(hook, res, v1alpha1.HookTimedOut, fmt.Sprintf("did not answer within spec.timeout (%s)", timeout)), nil
	}
	if a.deadline.IsZero() || deadline.Before(a.deadline) {
		a.deadline = deadline
	}
	res.State, res.Message = v1alpha1.HookPending, fmt.Sprintf("waiting for the answer of %s %s", gvk.Kind, obj.GetName())
	return res, nil
}

// notFoundYet stands for the Get that ask skips for a request made by
// the same reconcile: its resources do not exist yet.
var notFoundYet = errors.New("not created yet")

// kindGone reports whether err says the resource's kind itself is not
// there (its CRD was deleted after the mapping was cached): a 404 that
// names no object.
func kindGone(err error) bool {
	if meta.IsNoMatchError(err) {
		return true
	}
	var status apierrors.APIStatus
	if !apierrors.IsNotFound(err) || !errors.As(err, &status) {
		return false
	}
	d := status.Status().Details
	return d == nil || d.Name == ""
}

// create makes the hook's resource, with spec.annex, and the objects
// Secret it refers to. The kind is watched already (ask).
func (a *asking) create(ctx context.Context, hook *v1alpha1.Hook, gvk schema.GroupVersionKind, key types.NamespacedName) (*unstructured.Unstructured, error) {
	k, inst := a.k, a.c.Installation
	input, err := a.hookInput(ctx)
	if err != nil {
		return nil, err
	}
	obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"annex": input}}}
	obj.SetGroupVersionKind(gvk)
	obj.SetNamespace(key.Namespace)
	obj.SetName(key.Name)
	obj.SetLabels(map[string]string{
		v1alpha1.LabelHook:                  hook.Name,
		v1alpha1.LabelInstallationName:      names.LabelValue(inst.Name),
		v1alpha1.LabelInstallationNamespace: inst.Namespace,
	})
	if err := controllerutil.SetControllerReference(a.req, obj, k.Client.Scheme()); err != nil {
		return nil, err
	}
	err = k.Client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		err = k.Reader.Get(ctx, key, obj)
	}
	return obj, err
}

// hookInput returns spec.annex for the request's resources (the same for
// every hook, gate.HookInput), making the objects Secret it refers to.
func (a *asking) hookInput(ctx context.Context) (map[string]any, error) {
	if a.input != nil {
		return a.input, nil
	}
	ref, err := a.k.writeObjects(ctx, a.req, a.c.Objects)
	if err != nil {
		return nil, err
	}
	data, err := json.Marshal(gate.HookInput(a.c, ref))
	if err != nil {
		return nil, err
	}
	a.input = map[string]any{}
	return a.input, json.Unmarshal(data, &a.input)
}
