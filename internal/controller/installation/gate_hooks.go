package installation

// The hooks gate: Annex asks the registered Hooks about a change by
// creating one custom resource of each Hook's kind, and goes on when they
// answered (api/v1alpha1 Hook documents the contract).
//
// The installation controller is the HookRequests' controller: the gate
// step creates the request, creates the hooks' resources, reads their
// answers and writes the request's status, all within the installation's
// reconcile. A separate HookRequest controller would add a round trip
// (hook resource → request status → installation) to every answer; here
// an answer wakes the installation directly. Hook kinds are only known at
// run time, so the first time the gate creates a resource of a kind it
// starts a metadata-only watch of that kind on the installation
// controller (hookWatches): any change of a hook resource — its answer —
// enqueues the installation named by its labels. Metadata is enough to
// know that a resource changed; its answer is read from the API server
// when the installation reconciles. Nothing polls: the only timed
// requeue is a hook's deadline.
//
// A hook that answers at once costs no second reconcile: the reconcile
// that creates a hook's resource waits, up to HookAnswerWait, for the
// watch to see the resource change (hookWatches.expect), then reads the
// answer and goes on to apply. The watch event it waited for does not
// also enqueue the installation; an answer that comes later does.

import (
	"cmp"
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"slices"
	"strings"
	"sync"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/util/workqueue"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/cache"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/names"
	"github.com/annex-platform/annex/internal/render"
)

// EventPreUninstall is the change an uninstall is, for the hooks.
const EventPreUninstall = string(v1alpha1.HookPreUninstall)

// hookRequestsKept is how many HookRequests of an installation stay,
// newest first: the current one and a few superseded ones to look at.
const hookRequestsKept = 3

// defaultHookTimeout is the API's default Hook spec.timeout.
const defaultHookTimeout = 2 * time.Minute

// hubClusterName is how a Hook's selector names the hub cluster.
const hubClusterName = "hub"

// +kubebuilder:rbac:groups=annex.dev,resources=hooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=hookrequests,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=annex.dev,resources=hookrequests/status,verbs=get;update;patch
// Hooks' resources are of any kind: on the hub the manager holds the
// extension applier's cluster-admin binding (config/rbac/extension_applier.yaml),
// which covers creating, reading and watching them; a narrowed
// deployment must grant create, get, list and watch on every Hook kind.

// runHooks is the gate step for hooks: it makes or reads the HookRequest
// of s.change, asks each selected Hook, records their answers, and blocks
// while one has not answered (wait) or when one refused under
// failurePolicy Fail (terminal: the change waits until the hook answers
// otherwise, or the spec changes and with it the change's digest).
func (r *Reconciler) runHooks(ctx context.Context, s *scope) (ctrl.Result, error) {
	var hooks v1alpha1.HookList
	if err := r.Client.List(ctx, &hooks); err != nil {
		return ctrl.Result{}, err
	}
	req, fresh, err := r.hookRequest(ctx, s, hooks.Items)
	if err != nil || req == nil {
		return ctrl.Result{}, err
	}
	byName := map[string]*v1alpha1.Hook{}
	for i := range hooks.Items {
		byName[hooks.Items[i].Name] = &hooks.Items[i]
	}
	asked := &hookAsking{r: r, s: s, req: req, fresh: fresh, created: map[types.NamespacedName]bool{}}
	results, state, message, err := asked.answers(ctx, byName)
	if err != nil {
		return ctrl.Result{}, err
	}
	if err := r.writeHookRequestStatus(ctx, req, results, state, message); err != nil {
		return ctrl.Result{}, err
	}
	if s.inst.Status.Change != nil {
		s.inst.Status.Change.Hooks = &v1alpha1.HooksSummary{Request: req.Name, State: state, Message: message}
	}
	switch state {
	case v1alpha1.HookFailed:
		next := "the change waits until the hook answers otherwise or the change's content changes (spec.values, spec.version)"
		if s.change.event == EventPreUninstall {
			next = "the uninstall waits until the hook answers otherwise"
		}
		s.block = terminal(v1alpha1.ReasonHookRefused, fmt.Sprintf("%s; %s; delete HookRequest %s to ask the hooks again", message, next, req.Name))
		return ctrl.Result{}, nil
	case v1alpha1.HookPending:
		s.block = wait(v1alpha1.ReasonHookPending, message)
		if !asked.deadline.IsZero() {
			return ctrl.Result{RequeueAfter: max(asked.deadline.Sub(r.now()), 100*time.Millisecond)}, nil
		}
	}
	return ctrl.Result{}, nil
}

// hookRequest returns the HookRequest of s.change, creating it when the
// change has none and some Hook selects it (fresh); nil when no Hook
// does.
func (r *Reconciler) hookRequest(ctx context.Context, s *scope, hooks []v1alpha1.Hook) (req *v1alpha1.HookRequest, fresh bool, err error) {
	c := s.change
	key := types.NamespacedName{Namespace: s.inst.Namespace, Name: hookRequestName(s.inst.Name, c.event, c.digest)}
	req = &v1alpha1.HookRequest{}
	err = r.Client.Get(ctx, key, req)
	if err == nil || !apierrors.IsNotFound(err) {
		return req, false, err
	}
	selected := selectHooks(hooks, s.inst, c.event)
	if len(selected) == 0 {
		return nil, false, nil
	}
	req = &v1alpha1.HookRequest{
		ObjectMeta: metav1.ObjectMeta{Namespace: key.Namespace, Name: key.Name, Labels: map[string]string{
			v1alpha1.LabelInstallationName: names.LabelValue(s.inst.Name), v1alpha1.LabelInstallationNamespace: s.inst.Namespace,
		}},
		Spec: v1alpha1.HookRequestSpec{
			Installation: s.inst.Name, Event: v1alpha1.HookEvent(c.event), Digest: c.digest,
			FromVersion: c.from, ToVersion: c.to, Hooks: selected,
		},
	}
	if err := controllerutil.SetControllerReference(s.inst, req, r.Client.Scheme()); err != nil {
		return nil, false, err
	}
	switch err := r.Client.Create(ctx, req); {
	case apierrors.IsAlreadyExists(err):
		// Made by an earlier reconcile that the cache does not show yet.
		return req, false, r.Reader.Get(ctx, key, req)
	case err != nil:
		return nil, false, err
	}
	r.trimHookRequests(ctx, s, req.Name)
	return req, true, nil
}

// selectHooks returns the names of the Hooks that judge event for inst,
// in the order they run: by spec.order, then by name.
func selectHooks(hooks []v1alpha1.Hook, inst *v1alpha1.ExtensionInstallation, event string) []string {
	var selected []*v1alpha1.Hook
	for i := range hooks {
		h := &hooks[i]
		if h.DeletionTimestamp.IsZero() && slices.Contains(h.Spec.Events, v1alpha1.HookEvent(event)) && hookSelects(h.Spec.Selector, inst) {
			selected = append(selected, h)
		}
	}
	slices.SortFunc(selected, func(a, b *v1alpha1.Hook) int {
		return cmp.Or(cmp.Compare(a.Spec.Order, b.Spec.Order), cmp.Compare(a.Name, b.Name))
	})
	names := make([]string, len(selected))
	for i, h := range selected {
		names[i] = h.Name
	}
	return names
}

// hookSelects reports whether sel selects inst: every field given must
// match. An invalid label selector selects nothing.
func hookSelects(sel v1alpha1.HookSelector, inst *v1alpha1.ExtensionInstallation) bool {
	if len(sel.Extensions) > 0 && !slices.Contains(sel.Extensions, inst.Spec.Extension) {
		return false
	}
	if len(sel.Clusters) > 0 && !slices.Contains(sel.Clusters, cmp.Or(inst.Spec.Cluster, hubClusterName)) {
		return false
	}
	if sel.Installations != nil {
		ls, err := metav1.LabelSelectorAsSelector(sel.Installations)
		if err != nil || !ls.Matches(labels.Set(inst.Labels)) {
			return false
		}
	}
	return true
}

// trimHookRequests deletes the installation's oldest HookRequests beyond
// hookRequestsKept, never current; their hook resources and objects
// Secret go with them (owner references). Failing to is harmless: the
// next new request tries again.
func (r *Reconciler) trimHookRequests(ctx context.Context, s *scope, current string) {
	var list v1alpha1.HookRequestList
	if err := r.Client.List(ctx, &list, client.InNamespace(s.inst.Namespace),
		client.MatchingLabels{v1alpha1.LabelInstallationName: names.LabelValue(s.inst.Name)}); err != nil {
		return
	}
	old := slices.DeleteFunc(list.Items, func(q v1alpha1.HookRequest) bool { return q.Name == current })
	slices.SortFunc(old, func(a, b v1alpha1.HookRequest) int {
		return cmp.Or(b.CreationTimestamp.Compare(a.CreationTimestamp.Time), cmp.Compare(b.Name, a.Name))
	})
	for i := hookRequestsKept - 1; i < len(old); i++ {
		_ = r.Client.Delete(ctx, &old[i], client.PropagationPolicy(metav1.DeletePropagationBackground))
	}
}

// hookAsking is one reconcile's asking of the hooks of a request.
type hookAsking struct {
	r   *Reconciler
	s   *scope
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
	waiter *hookWaiter
	// expected holds the hook resources registered with waiter.
	expected map[types.NamespacedName]bool
}

// answers asks the hooks and returns their results and verdict. When
// the verdict is pending on resources this reconcile created, it waits
// for the watch to see one of them change, up to HookAnswerWait or the
// first hook's deadline, and asks again (a hook of a higher spec.order
// is then asked in the same reconcile).
func (a *hookAsking) answers(ctx context.Context, hooks map[string]*v1alpha1.Hook) ([]v1alpha1.HookResult, v1alpha1.HookState, string, error) {
	wait := a.r.HookAnswerWait
	if wait == 0 {
		wait = DefaultHookAnswerWait
	}
	until := time.Now().Add(wait) // real time, whatever clock the reconciler is given
	for {
		results, err := a.askAll(ctx, hooks)
		if err != nil {
			a.stopWaiting()
			return nil, "", "", err
		}
		state, message := hookVerdict(results, hooks)
		if state == v1alpha1.HookPending && len(a.expected) > 0 {
			limit, atDeadline := until, false
			if !a.deadline.IsZero() {
				if d := time.Now().Add(a.deadline.Sub(a.r.now())); d.Before(limit) {
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
			state, message = hookVerdict(results, hooks)
		}
		return results, state, message, nil
	}
}

// expect registers, before the resource at key is created or read, that
// this reconcile waits for the watch to see it change.
func (a *hookAsking) expect(key types.NamespacedName) {
	if a.r.hookKinds == nil || a.r.HookAnswerWait < 0 {
		return
	}
	if a.waiter == nil {
		a.waiter = &hookWaiter{wake: make(chan struct{}, 1)}
	}
	if a.expected == nil { // first, or again after stopWaiting
		a.expected = map[types.NamespacedName]bool{}
	}
	a.r.hookKinds.expect(key, a.waiter)
	a.expected[key] = true
}

// awaitChange waits until the watch saw an expected resource change
// (true), or until passes or ctx ends (false).
func (a *hookAsking) awaitChange(ctx context.Context, until time.Time) bool {
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
func (a *hookAsking) stopWaiting() bool {
	signalled := false
	for key := range a.expected {
		if !a.r.hookKinds.withdraw(key, a.waiter) {
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
func (a *hookAsking) askAll(ctx context.Context, hooks map[string]*v1alpha1.Hook) ([]v1alpha1.HookResult, error) {
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
func (a *hookAsking) ask(ctx context.Context, hook *v1alpha1.Hook, res v1alpha1.HookResult) (v1alpha1.HookResult, error) {
	r, ns := a.r, a.req.Namespace
	gv, err := schema.ParseGroupVersion(hook.Spec.Resource.APIVersion)
	if err != nil {
		return notServed(hook, res, fmt.Sprintf("spec.resource.apiVersion %q: %v", hook.Spec.Resource.APIVersion, err)), nil
	}
	gvk := gv.WithKind(hook.Spec.Resource.Kind)
	kind := fmt.Sprintf("kind %s of %s", gvk.Kind, hook.Spec.Resource.APIVersion)
	mapping, err := r.Client.RESTMapper().RESTMapping(gvk.GroupKind(), gvk.Version)
	switch {
	case meta.IsNoMatchError(err):
		return notServed(hook, res, kind+" is not served by the API server: install the hook's CustomResourceDefinition"), nil
	case err != nil:
		return res, err
	case mapping.Scope.Name() != meta.RESTScopeNameNamespace:
		return notServed(hook, res, kind+" is cluster-scoped: a hook's resources live in the installation's namespace; the Hook's spec.resource must name a namespaced kind"), nil
	}
	// Watch the kind before reading or making the resource, so that no
	// answer after the read is missed.
	if err := r.hookKinds.watch(ctx, gvk); err != nil {
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
		err = r.Reader.Get(ctx, key, obj)
	}
	if errors.Is(err, notFoundYet) || apierrors.IsNotFound(err) && !kindGone(err) {
		a.expect(key)
		a.created[key] = true
		obj, err = a.create(ctx, hook, gvk, key)
		if apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) {
			return decide(hook, res, v1alpha1.HookFailed, fmt.Sprintf("Annex cannot create its %s: %v; its schema must accept spec.annex", kind, err)), nil
		}
	}
	switch {
	case kindGone(err):
		return notServed(hook, res, kind+" is not served by the API server: install the hook's CustomResourceDefinition"), nil
	case err != nil:
		return res, err
	}
	if !metav1.IsControlledBy(obj, a.req) {
		// Left by a deleted request for the same change, and not yet
		// collected: its answer was to that request. Delete it; its
		// deletion wakes the installation, which then makes a fresh one.
		uid := obj.GetUID()
		err := r.Client.Delete(ctx, obj, client.Preconditions{UID: &uid})
		if err != nil && !apierrors.IsNotFound(err) && !apierrors.IsConflict(err) {
			return res, err
		}
		res.State, res.Message, res.Resource, res.StartedAt = v1alpha1.HookPending, fmt.Sprintf("replacing the %s of an earlier request", gvk.Kind), nil, nil
		return res, nil
	}
	started := obj.GetCreationTimestamp()
	res.StartedAt = &started
	res.Resource = &v1alpha1.ObjectReference{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: ns, Name: obj.GetName()}
	if state, msg := hookAnswer(obj); state != v1alpha1.HookPending {
		return decide(hook, res, state, msg), nil
	}
	timeout := cmp.Or(hook.Spec.Timeout.Duration, defaultHookTimeout)
	deadline := started.Add(timeout)
	if !r.now().Before(deadline) {
		return decide(hook, res, v1alpha1.HookTimedOut, fmt.Sprintf("did not answer within spec.timeout (%s)", timeout)), nil
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

// notServed is the state of a hook whose resource cannot be made: under
// Fail the change waits (no timeout runs: the hook was never asked)
// until the Hook's kind is served; under Ignore it goes on.
func notServed(hook *v1alpha1.Hook, res v1alpha1.HookResult, msg string) v1alpha1.HookResult {
	if hook.Spec.FailurePolicy == v1alpha1.HookIgnore {
		res.State, res.Message = v1alpha1.HookIgnored, msg+" (ignored: failurePolicy Ignore)"
		return res
	}
	res.State, res.Message = v1alpha1.HookPending, msg
	return res
}

// decide records an answer (Succeeded, Failed or TimedOut) as the Hook's
// failurePolicy reads it.
func decide(hook *v1alpha1.Hook, res v1alpha1.HookResult, state v1alpha1.HookState, msg string) v1alpha1.HookResult {
	res.State, res.Message = state, msg
	if state != v1alpha1.HookSucceeded && hook.Spec.FailurePolicy == v1alpha1.HookIgnore {
		res.State, res.Message = v1alpha1.HookIgnored, fmt.Sprintf("%s: %s (ignored: failurePolicy Ignore)", state, msg)
	}
	return res
}

// create makes the hook's resource, with spec.annex, and the objects
// Secret it refers to. The kind is watched already (ask).
func (a *hookAsking) create(ctx context.Context, hook *v1alpha1.Hook, gvk schema.GroupVersionKind, key types.NamespacedName) (*unstructured.Unstructured, error) {
	r := a.r
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
		v1alpha1.LabelInstallationName:      names.LabelValue(a.s.inst.Name),
		v1alpha1.LabelInstallationNamespace: a.s.inst.Namespace,
	})
	if err := controllerutil.SetControllerReference(a.req, obj, r.Client.Scheme()); err != nil {
		return nil, err
	}
	err = r.Client.Create(ctx, obj)
	if apierrors.IsAlreadyExists(err) {
		err = r.Reader.Get(ctx, key, obj)
	}
	return obj, err
}

// hookInput returns spec.annex for the request's resources (the same for
// every hook), making the objects Secret it refers to.
func (a *hookAsking) hookInput(ctx context.Context) (map[string]any, error) {
	if a.input != nil {
		return a.input, nil
	}
	s, c, req := a.s, a.s.change, a.req
	ref, err := a.r.writeHookObjects(ctx, req, c.objects)
	if err != nil {
		return nil, err
	}
	ns := s.targetNamespace()
	in := v1alpha1.HookInput{
		Installation: v1alpha1.NamespacedName{Namespace: s.inst.Namespace, Name: s.inst.Name},
		Cluster:      s.inst.Spec.Cluster, Extension: s.inst.Spec.Extension,
		Event: v1alpha1.HookEvent(c.event), FromVersion: c.from, ToVersion: c.to,
		ArtifactDigest: c.artifactDigest, Digest: c.digest, Objects: ref,
		Images:      imagesOf(c.objects),
		Permissions: v1alpha1.HookPermissions{All: gate.Diff(gate.Permissions{}, gate.Derive(c.objects, ns)).Grows},
	}
	if pc := s.inst.Status.Change; pc != nil && pc.Digest == c.digest {
		in.Permissions.Grows, in.Permissions.Shrinks = pc.PermissionsGrow, pc.PermissionsShrink
	}
	data, err := json.Marshal(in)
	if err != nil {
		return nil, err
	}
	a.input = map[string]any{}
	return a.input, json.Unmarshal(data, &a.input)
}

// writeHookObjects stores the change's objects in a Secret owned by the
// request, named after it.
func (r *Reconciler) writeHookObjects(ctx context.Context, req *v1alpha1.HookRequest, objs []*unstructured.Unstructured) (v1alpha1.SecretKeyReference, error) {
	key, data, err := encodeObjects(objs)
	if err != nil {
		return v1alpha1.SecretKeyReference{}, fmt.Errorf("storing the objects for the hooks: %w", err)
	}
	ref := v1alpha1.SecretKeyReference{Namespace: req.Namespace, Name: req.Name, Key: key}
	sec := &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Namespace: req.Namespace, Name: req.Name, Labels: map[string]string{
			v1alpha1.LabelInstallationName: names.LabelValue(req.Spec.Installation), v1alpha1.LabelInstallationNamespace: req.Namespace,
		}},
		Type: v1alpha1.HookObjectsSecretType,
		Data: map[string][]byte{key: data},
	}
	if err := controllerutil.SetControllerReference(req, sec, r.Client.Scheme()); err != nil {
		return ref, err
	}
	err = r.Client.Create(ctx, sec)
	if !apierrors.IsAlreadyExists(err) {
		return ref, err
	}
	// Made for a deleted request of the same change (the same objects):
	// taken over, so that collecting that request does not take it.
	existing := &corev1.Secret{}
	if err := r.Reader.Get(ctx, client.ObjectKeyFromObject(sec), existing); err != nil {
		return ref, err
	}
	if metav1.IsControlledBy(existing, req) {
		return ref, nil
	}
	existing.OwnerReferences = sec.OwnerReferences
	existing.Data = sec.Data
	return ref, r.Client.Update(ctx, existing)
}

// hookAnswer reads a hook resource's answer from its status conditions:
// Failed=True or Succeeded=False refuse, Succeeded=True agrees; failing
// those, a kstatus Ready=True agrees and Ready=False refuses unless
// Reconciling=True. Anything else is no answer yet (Pending).
func hookAnswer(obj *unstructured.Unstructured) (v1alpha1.HookState, string) {
	conds, _, _ := unstructured.NestedSlice(obj.Object, "status", "conditions")
	find := func(t string) (status, msg string) {
		for _, c := range conds {
			m, ok := c.(map[string]any)
			if !ok || m["type"] != t {
				continue
			}
			status, _ = m["status"].(string)
			msg, _ = m["message"].(string)
			if msg == "" {
				msg, _ = m["reason"].(string)
			}
			return status, msg
		}
		return "", ""
	}
	if st, msg := find(v1alpha1.ConditionFailed); st == string(metav1.ConditionTrue) {
		return v1alpha1.HookFailed, msg
	}
	switch st, msg := find(v1alpha1.ConditionSucceeded); st {
	case string(metav1.ConditionTrue):
		return v1alpha1.HookSucceeded, msg
	case string(metav1.ConditionFalse):
		return v1alpha1.HookFailed, msg
	}
	switch st, msg := find(v1alpha1.ConditionReady); st {
	case string(metav1.ConditionTrue):
		return v1alpha1.HookSucceeded, msg
	case string(metav1.ConditionFalse):
		if rec, _ := find(v1alpha1.ConditionReconciling); rec != string(metav1.ConditionTrue) {
			return v1alpha1.HookFailed, msg
		}
	}
	return v1alpha1.HookPending, ""
}

// hookVerdict aggregates the hooks' states: Failed names the first hook
// that holds the change with its own message; Pending names the hooks
// waited for; Succeeded when every hook succeeded or was ignored. The
// failure of a Hook deleted since no longer holds the change.
func hookVerdict(results []v1alpha1.HookResult, hooks map[string]*v1alpha1.Hook) (v1alpha1.HookState, string) {
	var waiting, agreed, ignored []string
	for _, res := range results {
		_, exists := hooks[res.Name]
		switch res.State {
		case v1alpha1.HookFailed, v1alpha1.HookTimedOut:
			switch {
			case !exists:
				ignored = append(ignored, res.Name)
			case res.State == v1alpha1.HookFailed:
				return v1alpha1.HookFailed, fmt.Sprintf("hook %s refused the change: %s", res.Name, res.Message)
			default:
				return v1alpha1.HookFailed, fmt.Sprintf("hook %s %s (failurePolicy Fail)", res.Name, res.Message)
			}
		case v1alpha1.HookPending:
			waiting = append(waiting, fmt.Sprintf("hook %s: %s", res.Name, res.Message))
		case v1alpha1.HookWaiting:
			waiting = append(waiting, fmt.Sprintf("hook %s: %s", res.Name, res.Message))
		case v1alpha1.HookSucceeded:
			agreed = append(agreed, res.Name)
		default:
			ignored = append(ignored, res.Name)
		}
	}
	if len(waiting) > 0 {
		return v1alpha1.HookPending, "waiting for " + strings.Join(waiting, "; ")
	}
	var said []string
	if len(agreed) > 0 {
		said = append(said, "agreed: "+strings.Join(agreed, ", "))
	}
	if len(ignored) > 0 {
		said = append(said, "ignored: "+strings.Join(ignored, ", "))
	}
	return v1alpha1.HookSucceeded, "hooks " + strings.Join(said, "; ")
}

// writeHookRequestStatus records the hooks' states and the verdict in
// the request's status, when they changed.
func (r *Reconciler) writeHookRequestStatus(ctx context.Context, req *v1alpha1.HookRequest, results []v1alpha1.HookResult, state v1alpha1.HookState, message string) error {
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
	return client.IgnoreNotFound(r.Client.Status().Patch(ctx, req, client.MergeFrom(before)))
}

// hookRequestName is "<installation>-<event>-<first 10 hex digits of the
// change digest>", shortened with a hash when too long.
func hookRequestName(installation, event, digest string) string {
	sum := strings.TrimPrefix(digest, "sha256:")
	if len(sum) > 10 {
		sum = sum[:10]
	}
	return names.Bounded(installation+"-"+strings.ToLower(event)+"-"+sum, names.MaxSubdomain)
}

// gateUninstall runs the PreUninstall hooks before an uninstall deletes
// anything, over installed, the installed revision's objects. It returns
// done false while they hold the uninstall (s.block says why). A
// namespace being deleted cannot hold a HookRequest: its installations
// uninstall without asking.
func (r *Reconciler) gateUninstall(ctx context.Context, s *scope, installed Set) (ctrl.Result, bool, error) {
	objs := slices.Concat(installed.CRDs, installed.Objects)
	manifest, err := render.ManifestDigestOf(objs)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	c := &change{event: EventPreUninstall, from: s.inst.Status.InstalledVersion, objects: objs}
	if len(s.inst.Status.History) > 0 {
		c.artifactDigest, c.valuesDigest = s.inst.Status.History[0].ArtifactDigest, s.inst.Status.History[0].ValuesDigest
	}
	if c.digest, err = render.DigestOf(map[string]any{"event": c.event, "from": c.from, "manifest": manifest}); err != nil {
		return ctrl.Result{}, false, err
	}
	s.change = c
	if pc := s.inst.Status.Change; pc == nil || pc.Digest != c.digest {
		s.inst.Status.Change = &v1alpha1.PendingChange{Event: c.event, FromVersion: c.from, Digest: c.digest}
	}
	res, err := r.runHooks(ctx, s)
	if apierrors.HasStatusCause(err, corev1.NamespaceTerminatingCause) {
		r.event(s, corev1.EventTypeWarning, "HooksSkipped", fmt.Sprintf(
			"namespace %s is being deleted: the PreUninstall hooks cannot be asked (%v)", s.inst.Namespace, err))
		err = nil
	}
	if err != nil || s.block != nil || !res.IsZero() {
		return res, false, err
	}
	s.inst.Status.Change = nil
	return ctrl.Result{}, true, nil
}

// DefaultHookAnswerWait is how long, by default, the reconcile that asks
// the hooks waits for their answers.
const DefaultHookAnswerWait = 2 * time.Second

// hookWatches starts, once per kind, the watch of hook resources on the
// installation controller, and hands their changes to the reconciles
// waiting for them.
type hookWatches struct {
	mu         sync.Mutex
	controller controller.Controller
	cache      cache.Cache
	started    map[schema.GroupVersionKind]bool

	waitersMu sync.Mutex
	// waiters are the hook resources a running reconcile waits on: the
	// watch wakes it instead of enqueuing the installation.
	waiters map[types.NamespacedName]*hookWaiter
}

// hookWaiter is one reconcile waiting for hook resources to change.
type hookWaiter struct {
	wake chan struct{} // buffered 1: a wake-up is kept until taken
}

// expect registers wt to be woken by the next change of the hook
// resource at key.
func (w *hookWatches) expect(key types.NamespacedName, wt *hookWaiter) {
	w.waitersMu.Lock()
	defer w.waitersMu.Unlock()
	if w.waiters == nil {
		w.waiters = map[types.NamespacedName]*hookWaiter{}
	}
	w.waiters[key] = wt
}

// withdraw removes wt's wait for key; false when the watch had taken it
// (and woken wt) already.
func (w *hookWatches) withdraw(key types.NamespacedName, wt *hookWaiter) bool {
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
func (w *hookWatches) handler() handler.EventHandler {
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
func (w *hookWatches) route(ctx context.Context, o client.Object, q workqueue.TypedRateLimitingInterface[reconcile.Request]) {
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
	for _, req := range installationOfHookObject(ctx, w.cache, o) {
		q.Add(req)
	}
}

// watch starts watching the metadata of gvk's resources, if not yet, and
// returns once the watch has listed them and its handler has seen them. The kind must be served (a
// watch of an unknown kind retries forever).
//
// Only updates and deletions wake an installation: a resource's creation
// is Annex's own doing, and whatever the resources said before the watch
// listed them is read by the reconcile that starts it (every
// installation reconciles when the manager starts).
func (w *hookWatches) watch(ctx context.Context, gvk schema.GroupVersionKind) error {
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

// installationOfHookObject maps a hook resource to the installation its
// labels name. The label holds the installation's name shortened beyond
// 63 characters (names.LabelValue); the HookRequest that controls the
// resource, read from reader, names it in full.
func installationOfHookObject(ctx context.Context, reader client.Reader, o client.Object) []reconcile.Request {
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

// watchHooks adds the hooks' watches to the installation controller: a
// deleted HookRequest (asking the hooks again), and any change of a Hook
// (deleted, its kind now served) for the installations whose change
// waits on hooks.
func (r *Reconciler) watchHooks(b *builder.Builder) *builder.Builder {
	return b.
		Owns(&v1alpha1.HookRequest{}, builder.WithPredicates(predicate.Funcs{
			CreateFunc: func(event.CreateEvent) bool { return false },
			UpdateFunc: func(event.UpdateEvent) bool { return false },
		})).
		Watches(&v1alpha1.Hook{}, handler.EnqueueRequestsFromMapFunc(r.installationsWaitingOnHooks))
}

// startHookWatches keeps the built controller, to which hook kinds are
// added as they are first used.
func (r *Reconciler) startHookWatches(c controller.Controller, mgr ctrl.Manager) {
	r.hookKinds = &hookWatches{controller: c, cache: mgr.GetCache(), started: map[schema.GroupVersionKind]bool{}}
}

// installationsWaitingOnHooks lists the installations whose pending
// change waits for, or was refused by, hooks.
func (r *Reconciler) installationsWaitingOnHooks(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
		return nil
	}
	return requests(list.Items, func(i *v1alpha1.ExtensionInstallation) bool {
		c := i.Status.Change
		return c != nil && c.Hooks != nil && c.Hooks.State != v1alpha1.HookSucceeded
	})
}
