package installation

import (
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/remediate"
	"github.com/annex-platform/annex/internal/target"
)

// attemptFailed counts a failed attempt at the current target and decides:
// apply again while retries last, then remediate — roll an upgrade back to
// the last healthy revision, or uninstall or keep a failed first install as
// spec.install.remediation says.
func (r *Reconciler) attemptFailed(ctx context.Context, s *scope, reason, message string) (ctrl.Result, error) {
	inst := s.inst
	inst.Status.Failures++
	next := remediate.After(inst)
	if next == remediate.Again {
		msg := fmt.Sprintf("attempt %d of %d at %s %s failed: %s; trying again", inst.Status.Failures, remediate.Retries(inst)+1,
			inst.Spec.Extension, s.choice.Version.Version, message)
		// Installed=False makes the next reconcile apply again.
		setCondition(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, v1alpha1.ReasonRetrying, msg)
		r.event(s, corev1.EventTypeWarning, reason, msg)
		s.block = wait(v1alpha1.ReasonRetrying, msg)
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	failed := &v1alpha1.FailedTarget{
		Generation: inst.Generation, Version: s.choice.Version.Version,
		ArtifactDigest: s.artifact.digest, ValuesDigest: s.artifact.release.ValuesDigest,
	}
	if next == remediate.RollBack {
		return r.rollback(ctx, s, failed, fmt.Sprintf("upgrade to %s %s failed after %s (%s)", inst.Spec.Extension, failed.Version, remediate.Attempts(inst.Status.Failures), message))
	}
	failed.Message = fmt.Sprintf("install of %s %s failed (%s)", inst.Spec.Extension, failed.Version, message)
	inst.Status.FailedTarget, inst.Status.Failures = failed, 0
	r.event(s, corev1.EventTypeWarning, v1alpha1.ReasonInstallFailed, failed.Message)
	return r.holdFailed(ctx, s)
}

// rollback applies the record of the last healthy revision again — objects
// the failed upgrade pruned come back, objects it added are pruned — and
// records it as a new revision.
func (r *Reconciler) rollback(ctx context.Context, s *scope, failed *v1alpha1.FailedTarget, why string) (ctrl.Result, error) {
	inst := s.inst
	good := remediate.FindRevision(inst.Status.History, inst.Status.LastHealthyRevision)
	set, ok, err := r.recordOf(ctx, inst, inst.Status.LastHealthyRevision)
	if err != nil {
		return ctrl.Result{}, err
	}
	if !ok || good == nil {
		failed.Message = fmt.Sprintf("%s; the record of revision %d is gone, so Annex cannot roll back. Fix the cause, then change the spec to try again",
			why, inst.Status.LastHealthyRevision)
		inst.Status.FailedTarget, inst.Status.Failures = failed, 0
		s.block = terminal(v1alpha1.ReasonRetrying, failed.Message)
		return ctrl.Result{}, nil
	}
	// A namespace deleted by hand since is created again, first.
	set.Objects = r.withTargetNamespace(ctx, s, set.Objects, true)
	applier := s.target.Applier()
	rev := *good
	rev.Number = inst.Status.History[0].Number + 1
	rev.AppliedAt = metav1.NewTime(r.now())
	if err := r.writeIntent(ctx, s, &rev, set); err != nil {
		return ctrl.Result{}, ignoreRefused(err)
	}
	failpoint.Hit(failpoint.RollbackAfterIntent, s.owner().String())
	start := time.Now()
	applied, err := applier.Apply(ctx, s.owner(), s.targetNamespace(), set, target.ApplyOptions{TakeOwnership: true})
	metrics.ObserveApply(metrics.OpRollback, time.Since(start))
	if err != nil {
		s.block = retry(v1alpha1.ReasonApplyFailed, fmt.Sprintf("%s; rolling back to revision %d: %v", why, good.Number, err))
		return ctrl.Result{}, s.block
	}
	if _, err := applier.Prune(ctx, s.owner(), inst.Status.Inventory, applied.Inventory); err != nil {
		return ctrl.Result{}, err
	}
	if err := r.trimRecords(ctx, s, rev.Number); err != nil {
		return ctrl.Result{}, err
	}
	s.showPermissions(set)
	r.record(s, applied.Inventory, rev, v1alpha1.ReasonRolledBack)
	inst.Status.AdoptedObjects = applied.Adopted
	failed.Message = fmt.Sprintf("%s; rolled back to %s %s (revision %d, now revision %d). Fix the cause, then change the spec to try again",
		why, inst.Spec.Extension, good.Version, good.Number, rev.Number)
	inst.Status.FailedTarget, inst.Status.Failures = failed, 0
	r.event(s, corev1.EventTypeWarning, v1alpha1.ReasonRolledBack, failed.Message)
	s.block = terminal(v1alpha1.ReasonRolledBack, failed.Message)
	return ctrl.Result{}, nil
}

// isFailedTarget reports whether this reconcile would try again exactly
// what failed and was remediated, for the same spec.
func isFailedTarget(s *scope) bool {
	return remediate.IsFailedTarget(s.inst, v1alpha1.FailedTarget{
		Version: s.choice.Version.Version, ArtifactDigest: s.artifact.digest, ValuesDigest: s.artifact.release.ValuesDigest,
	})
}

// holdFailed keeps a remediated failure as it is until the spec changes
// (remediate.HoldOf); a failed first install with remediation Uninstall is
// removed first.
func (r *Reconciler) holdFailed(ctx context.Context, s *scope) (ctrl.Result, error) {
	inst := s.inst
	ft, held := inst.Status.FailedTarget, remediate.HoldOf(inst)
	if !held.Uninstall {
		s.block = terminal(held.Reason, held.Message)
		return ctrl.Result{}, nil
	}
	if len(inst.Status.Inventory) > 0 {
		remaining, err := s.target.Applier().Delete(ctx, s.owner(), inst.Status.Inventory, false)
		if err != nil {
			return ctrl.Result{}, err
		}
		if remaining > 0 {
			s.block = wait(v1alpha1.ReasonUninstalling, fmt.Sprintf("%s; removing what was applied (%d objects left)", ft.Message, remaining))
			return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
		}
		inst.Status.Inventory, inst.Status.InventoryCount, inst.Status.InstalledVersion = nil, 0, ""
		setCondition(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, v1alpha1.ReasonInstallFailed, ft.Message)
	}
	s.block = terminal(held.Reason, held.Message)
	return ctrl.Result{}, nil
}
