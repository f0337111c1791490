package installation

import (
	"context"
	"time"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/remediate"
	"github.com/annex-platform/annex/internal/target"
)

// attemptFailed counts a failed attempt at the current target and carries
// out what follows (remediate.Failed): apply again while retries last,
// then roll an upgrade back to the last healthy revision, or uninstall or
// keep a failed first install as spec.install.remediation says.
func (r *Reconciler) attemptFailed(ctx context.Context, s *scope, reason, message string) (ctrl.Result, error) {
	out, err := remediate.Failed(s.inst, remediate.Attempt{
		Version: s.choice.Version.Version, ArtifactDigest: s.artifact.digest, ValuesDigest: s.artifact.release.ValuesDigest,
		Reason: reason, Message: message,
	}, metav1.NewTime(r.now()), remediatePort{ctx: ctx, r: r, s: s})
	return r.remediated(s, out, err)
}

// holdFailed keeps a remediated failure as it is until the spec changes
// (remediate.HoldFailed); a failed first install with remediation
// Uninstall is removed first.
func (r *Reconciler) holdFailed(ctx context.Context, s *scope) (ctrl.Result, error) {
	out, err := remediate.HoldFailed(s.inst, remediatePort{ctx: ctx, r: r, s: s})
	return r.remediated(s, out, err)
}

// remediated is the reconcile's outcome of a remediation: its stop, if
// any, becomes the block (a refused record set its own).
func (r *Reconciler) remediated(s *scope, out remediate.Outcome, err error) (ctrl.Result, error) {
	switch {
	case err != nil:
		return ctrl.Result{}, ignoreRefused(err)
	case out.Stop != nil:
		s.block = out.Stop
	}
	switch {
	case s.block != nil && s.block.Kind == blockRetry:
		return ctrl.Result{}, s.block
	case out.Poll:
		return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
	}
	return ctrl.Result{}, nil
}

// isFailedTarget reports whether this reconcile would try again exactly
// what failed and was remediated, for the same spec.
func isFailedTarget(s *scope) bool {
	return remediate.IsFailedTarget(s.inst, v1alpha1.FailedTarget{
		Version: s.choice.Version.Version, ArtifactDigest: s.artifact.digest, ValuesDigest: s.artifact.release.ValuesDigest,
	})
}

// remediatePort is the installation's side of a remediation: its records
// and its target cluster's applier.
type remediatePort struct {
	ctx context.Context
	r   *Reconciler
	s   *scope
}

func (p remediatePort) Recorded(n int64) (target.Set, bool, error) {
	return p.r.recordOf(p.ctx, p.s.inst, n)
}

func (p remediatePort) Delete(refs []v1alpha1.ObjectReference) (int, error) {
	return p.s.target.Applier().Delete(p.ctx, p.s.owner(), refs, false)
}

func (p remediatePort) Event(eventType, reason, message string) {
	p.r.event(p.s, eventType, reason, message)
}

// Restore applies the record of the revision rolled back to as rev, with
// the target namespace created again first if it was deleted by hand.
func (p remediatePort) Restore(rev v1alpha1.Revision, set target.Set) (applyErr, err error) {
	ctx, r, s := p.ctx, p.r, p.s
	set.Objects = r.withTargetNamespace(ctx, s, set.Objects, true)
	if err := r.writeIntent(ctx, s, &rev, set); err != nil {
		return nil, err
	}
	failpoint.Hit(failpoint.RollbackAfterIntent, s.owner().String())
	applier, start := s.target.Applier(), time.Now()
	applied, err := applier.Apply(ctx, s.owner(), s.targetNamespace(), set, target.ApplyOptions{TakeOwnership: true})
	metrics.ObserveApply(metrics.OpRollback, time.Since(start))
	if err != nil {
		return err, nil
	}
	if _, err := applier.Prune(ctx, s.owner(), s.inst.Status.Inventory, applied.Inventory); err != nil {
		return nil, err
	}
	if err := r.trimRecords(ctx, s, rev.Number); err != nil {
		return nil, err
	}
	s.showPermissions(set)
	r.record(s, applied.Inventory, rev, v1alpha1.ReasonRolledBack)
	s.inst.Status.AdoptedObjects = applied.Adopted
	return nil, nil
}
