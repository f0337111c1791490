package installation

import (
	"context"
	"fmt"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/target"
)

// waitHealthy reads the health of the applied objects; it waits, polling,
// until they are healthy, and reports Stalled after spec.timeout
// (readiness.Judge). When this reconcile's apply or drift check has just
// seen every object, it takes the health from what they saw instead of
// reading everything again.
func (r *Reconciler) waitHealthy(ctx context.Context, s *scope) (ctrl.Result, error) {
	var h target.Health
	if s.applied.health != nil {
		h = *s.applied.health
	} else {
		var err error
		if h, err = s.target.Applier().Health(ctx, s.applied.inventory); err != nil {
			s.block = retry(v1alpha1.ReasonWaitingForHealth, fmt.Sprintf("reading the health of the applied objects: %v", err))
			return ctrl.Result{}, s.block
		}
	}
	if s.artifact.release.ResourcesTask != "" {
		s.observeResources(h, s.applied.inventory)
	}
	// A release of plans waited for health step by step: what is not
	// healthy now broke afterwards, and rolling back plans is not Annex's
	// to decide.
	timeout := readiness.TimeoutOf(s.inst)
	switch readiness.Judge(h.Ready, h.Failed, s.inst.Status.History[0].AppliedAt.Time, r.now(), timeout, s.artifact.release.RollsBack) {
	case readiness.Healthy:
		s.outcome.healthy = true
		s.inst.Status.Failures, s.inst.Status.FailedTarget = 0, nil
		s.inst.Status.LastHealthyRevision = s.inst.Status.History[0].Number
		return ctrl.Result{}, nil
	case readiness.AttemptFailed:
		return r.attemptFailed(ctx, s, v1alpha1.ReasonHealthTimeout, fmt.Sprintf(
			"not healthy within spec.timeout (%s): %s", timeout, h.Summary))
	case readiness.Stalled:
		s.block = &block{Kind: blockStalled, Reason: v1alpha1.ReasonHealthTimeout, Message: h.Summary}
	default:
		s.block = wait(v1alpha1.ReasonWaitingForHealth, h.Summary)
	}
	return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
}
