package installation

// The hooks gate: the installation controller asks the registered Hooks
// about a change within its reconcile (Hooks, wired to internal/hookrequest,
// whose package doc tells how the answers come back).

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/wake"
)

// +kubebuilder:rbac:groups=annex.dev,resources=hooks,verbs=get;list;watch
// +kubebuilder:rbac:groups=annex.dev,resources=hookrequests,verbs=get;list;watch;create;delete
// +kubebuilder:rbac:groups=annex.dev,resources=hookrequests/status,verbs=get;update;patch
// Hooks' resources are of any kind: on the hub the manager holds the
// extension applier's cluster-admin binding (config/rbac/extension_applier.yaml),
// which covers creating, reading and watching them; a narrowed
// deployment must grant create, get, list and watch on every Hook kind.

// runHooks is the gate step for hooks: it asks the Hooks about s.change
// (Hooks.Ask), shows their verdict in status.change.hooks, and blocks
// while one has not answered (wait, until the first hook's deadline at
// the latest) or when one refused under failurePolicy Fail (terminal:
// the change waits until the hook answers otherwise, or the spec changes
// and with it the change's digest).
func (r *Reconciler) runHooks(ctx context.Context, s *scope) (ctrl.Result, error) {
	c := s.change
	out, err := r.Hooks.Ask(ctx, gate.HookChange{
		Installation: s.inst, Event: c.Event, From: c.From, To: c.To,
		ArtifactDigest: c.ArtifactDigest, Digest: c.Digest, Objects: c.Objects, TargetNamespace: s.targetNamespace(),
	})
	if err != nil || out.Request == "" {
		return ctrl.Result{}, err
	}
	if s.inst.Status.Change != nil {
		s.inst.Status.Change.Hooks = out.Summary()
	}
	switch out.State {
	case v1alpha1.HookFailed:
		s.block = terminal(v1alpha1.ReasonHookRefused, out.Refusal(c.Event))
	case v1alpha1.HookPending:
		s.block = wait(v1alpha1.ReasonHookPending, out.Message)
		return ctrl.Result{RequeueAfter: out.RecheckAfter(r.now())}, nil
	}
	return ctrl.Result{}, nil
}

// gateUninstall runs the PreUninstall hooks before an uninstall deletes
// anything, over installed, the installed revision's objects. It returns
// done false while they hold the uninstall (s.block says why). A
// namespace being deleted cannot hold a HookRequest: its installations
// uninstall without asking.
func (r *Reconciler) gateUninstall(ctx context.Context, s *scope, installed target.Set) (ctrl.Result, bool, error) {
	objs := slices.Concat(installed.CRDs, installed.Objects)
	var artifactDigest, valuesDigest string
	if len(s.inst.Status.History) > 0 {
		artifactDigest, valuesDigest = s.inst.Status.History[0].ArtifactDigest, s.inst.Status.History[0].ValuesDigest
	}
	c, err := gate.UninstallPending(s.inst.Status.InstalledVersion, artifactDigest, valuesDigest, objs)
	if err != nil {
		return ctrl.Result{}, false, err
	}
	s.change = c
	if pc := s.inst.Status.Change; pc == nil || pc.Digest != c.Digest {
		s.inst.Status.Change = &v1alpha1.PendingChange{Event: c.Event, FromVersion: c.From, Digest: c.Digest}
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
		Watches(&v1alpha1.Hook{}, handler.EnqueueRequestsFromMapFunc(wake.WaitingOnHooks(r.Client)))
}
