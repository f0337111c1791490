package installation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller/controllerutil"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/depend"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/uninstall"
)

// uninstall removes exactly the inventory from the target cluster, waits
// until it is gone, then releases the finalizer. CRDs stay unless
// spec.uninstall.deleteCRDs is true. The inventory includes what a
// revision that never reached the status may have applied (its record
// says).
func (r *Reconciler) uninstall(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	if !controllerutil.ContainsFinalizer(inst, v1alpha1.FinalizerUninstall) {
		s.outcome.gone = true
		return ctrl.Result{}, nil
	}
	if err := r.loadCluster(ctx, s); err != nil {
		return ctrl.Result{}, err
	}
	// An operator that requires an API this installation's CRD serves
	// holds it too. A cluster that cannot be reached is reported below.
	if target, err := r.Clusters.Target(ctx, inst.Spec.Cluster); err == nil {
		if s.cluster.Provided, err = depend.ProvidedAPIs(ctx, target, s.cluster); err != nil {
			return ctrl.Result{}, err
		}
	}
	if held := depend.HeldBy(s.cluster, inst); len(held) > 0 {
		s.block = wait(v1alpha1.ReasonDeletionHeld, uninstall.HeldMessage(inst, held))
		return ctrl.Result{RequeueAfter: 30 * r.pollInterval()}, nil
	}
	if gone, err := r.releaseIfNeverApplied(ctx, s); gone || err != nil {
		return ctrl.Result{}, err
	}
	target, err := r.Clusters.Target(ctx, inst.Spec.Cluster)
	if err == nil {
		var b *block
		if target, b, err = r.actAs(ctx, inst, target); b != nil {
			// The ServiceAccount is gone: the objects stay until it is back,
			// or spec.serviceAccountName names another that may delete them.
			return r.stopAt(s, b, nil)
		}
	}
	if err != nil {
		s.block = retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf(
			"spec.cluster: cannot reach %s to remove %d objects: %v; the installation is kept until they are removed: check the ManagedCluster and its kubeconfig Secret",
			clusterName(inst.Spec.Cluster), len(inst.Status.Inventory), err))
		return ctrl.Result{}, s.block
	}
	applier := target.Applier()
	installed, haveRecord, err := r.records(s).Uninstalling(ctx)
	if err != nil {
		return ctrl.Result{}, err
	}
	hooks := setOf(installed)
	if haveRecord && !uninstall.Started(inst) {
		if res, done, err := r.gateUninstall(ctx, s, hooks); !done || err != nil {
			return res, err
		}
	}
	if haveRecord && !uninstall.Started(inst) {
		s.target = target
		if res, done, err := r.runCleanup(ctx, s, hooks); !done || err != nil {
			return res, err
		}
	}
	if haveRecord && !uninstall.Started(inst) {
		if err := applier.RunDeleteHooks(ctx, s.owner(), s.targetNamespace(), hooks, false, timeoutOf(inst)); err != nil {
			s.block = retry(v1alpha1.ReasonHookFailed, fmt.Sprintf("pre-delete hook of %s: %v", inst.Spec.Extension, err))
			return ctrl.Result{}, s.block
		}
	}
	removing := fmt.Sprintf("removing the %d objects of %s %s", len(inst.Status.Inventory), inst.Spec.Extension, inst.Status.InstalledVersion)
	removed := false
	if !uninstall.Started(inst) {
		// Told only when the uninstall goes on after this reconcile: one
		// that ends in it is told once, by Uninstalled.
		defer func() {
			if !removed {
				r.event(s, corev1.EventTypeNormal, v1alpha1.ReasonUninstalling, removing)
			}
		}()
	}
	setCondition(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, v1alpha1.ReasonUninstalling, removing)
	// The target namespace Annex created goes after everything else; with
	// post-delete hooks, which run in it, after them too.
	remove, held := inst.Status.Inventory, []v1alpha1.ObjectReference(nil)
	if haveRecord && uninstall.HasPostDeleteHooks(hooks) {
		remove, held = uninstall.HoldNamespace(remove, s.targetNamespace())
	}
	if res, done, err := r.deleteAll(ctx, s, applier, remove); !done || err != nil {
		return res, err
	}
	if haveRecord {
		hooksRan, err := r.postDeleteHooksRan(ctx, s, applier, held)
		if err != nil {
			return ctrl.Result{}, err
		}
		if !hooksRan {
			if err := applier.RunDeleteHooks(ctx, s.owner(), s.targetNamespace(), hooks, true, timeoutOf(inst)); err != nil {
				s.block = retry(v1alpha1.ReasonHookFailed, fmt.Sprintf("post-delete hook of %s: %v", inst.Spec.Extension, err))
				return ctrl.Result{}, s.block
			}
		}
	}
	if res, done, err := r.deleteAll(ctx, s, applier, held); !done || err != nil {
		return res, err
	}
	if err := r.records(s).DeleteAll(ctx); err != nil {
		return ctrl.Result{}, err
	}
	removed = true
	r.event(s, corev1.EventTypeNormal, "Uninstalled", fmt.Sprintf("removed %d objects of %s %s",
		len(inst.Status.Inventory), inst.Spec.Extension, inst.Status.InstalledVersion))
	if err := r.patchMeta(ctx, s, func() { controllerutil.RemoveFinalizer(inst, v1alpha1.FinalizerUninstall) }); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	s.outcome.gone = true
	return ctrl.Result{}, nil
}

// deleteAll deletes refs (objects of the inventory) and reports done when
// none of them is left; until then the installation waits (see
// waitForDeletion).
func (r *Reconciler) deleteAll(ctx context.Context, s *scope, applier target.Applier, refs []v1alpha1.ObjectReference) (ctrl.Result, bool, error) {
	inst := s.inst
	if len(refs) == 0 {
		return ctrl.Result{}, true, nil
	}
	remaining, err := applier.Delete(ctx, s.owner(), refs, inst.Spec.Uninstall.DeleteCRDs)
	if b := r.permissionBlock(inst, err); b != nil {
		res, err := r.stopAt(s, b, nil)
		return res, false, err
	}
	if err != nil {
		s.block = retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("removing the objects of %s: %v", inst.Spec.Extension, err))
		return ctrl.Result{}, false, s.block
	}
	if remaining > 0 {
		res, err := r.waitForDeletion(ctx, s, applier, remaining)
		return res, false, err
	}
	return ctrl.Result{}, true, nil
}

// postDeleteHooksRan reports whether the post-delete hooks of an
// uninstall that holds back the target namespace (held) already ran: the
// namespace is deleted right after them, so a namespace being deleted, or
// gone, says they did (or that it went by hand, and its hooks with it).
func (r *Reconciler) postDeleteHooksRan(ctx context.Context, s *scope, applier target.Applier, held []v1alpha1.ObjectReference) (bool, error) {
	if len(held) == 0 {
		return false, nil
	}
	h, err := applier.Health(ctx, held)
	if err != nil {
		s.block = retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("reading namespace %s: %v", s.targetNamespace(), err))
		return false, s.block
	}
	return uninstall.HooksRan(h), nil
}

// waitForDeletion waits for the inventory's objects to go. Custom
// resources go first and their operator stays until they are gone, so
// finalizers run. Past spec.uninstall.timeout (counted from the deletion
// request) uninstall.AfterTimeout decides what to do.
func (r *Reconciler) waitForDeletion(ctx context.Context, s *scope, applier target.Applier, remaining int) (ctrl.Result, error) {
	inst := s.inst
	msg := fmt.Sprintf("waiting for %d of %d objects to be deleted", remaining, len(inst.Status.Inventory))
	timeout := uninstall.Timeout(inst, defaultTimeout)
	if r.now().Sub(inst.DeletionTimestamp.Time) <= timeout {
		s.block = wait(v1alpha1.ReasonUninstalling, msg)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	h, err := applier.Health(ctx, inst.Status.Inventory)
	if err != nil {
		s.block = retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("%s; reading them: %v", msg, err))
		return ctrl.Result{}, s.block
	}
	past := uninstall.AfterTimeout(inst, h, timeout)
	switch {
	case len(past.Lingering) == 0:
		s.block = wait(v1alpha1.ReasonUninstalling, msg)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	case past.RemoveFinalizers:
		if err := applier.RemoveFinalizers(ctx, s.owner(), past.Lingering); err != nil {
			s.block = retry(v1alpha1.ReasonUninstallFailed, fmt.Sprintf("removing the finalizers of %d objects after spec.uninstall.timeout (%s): %v", len(past.Lingering), timeout, err))
			return ctrl.Result{}, s.block
		}
		r.event(s, corev1.EventTypeWarning, "FinalizersRemoved", past.Message)
		s.block = wait(v1alpha1.ReasonUninstalling, msg)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	s.block = &block{kind: blockStalled, reason: v1alpha1.ReasonFinalizersPending, message: past.Message}
	return ctrl.Result{RequeueAfter: 5 * r.pollInterval()}, nil
}

// releaseIfNeverApplied removes the finalizer of an installation that
// never applied anything: nothing installed (resolve.HasInstalled) and no
// revision record. Its deletion needs nothing from its
// cluster, which may be unreachable or gone. (The API server puts the
// finalizer on every installation it creates, before Annex sees it.)
func (r *Reconciler) releaseIfNeverApplied(ctx context.Context, s *scope) (gone bool, err error) {
	inst := s.inst
	if resolve.HasInstalled(inst) {
		return false, nil
	}
	if any, err := r.records(s).Any(ctx); err != nil || any {
		return false, err
	}
	if err := r.patchMeta(ctx, s, func() { controllerutil.RemoveFinalizer(inst, v1alpha1.FinalizerUninstall) }); err != nil {
		return false, client.IgnoreNotFound(err)
	}
	s.outcome.gone = true
	return true, nil
}
