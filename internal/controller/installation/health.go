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
// (readiness.Health). When this reconcile's apply or drift check has just
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
	switch verdict, stop := readiness.Health(s.inst, h, r.now(), s.artifact.release.RollsBack); verdict {
	case readiness.Healthy:
		s.outcome.healthy = true
		return ctrl.Result{}, nil
	case readiness.AttemptFailed:
		return r.attemptFailed(ctx, s, stop.Reason, stop.Message)
	default:
		s.block = stop
	}
	return ctrl.Result{RequeueAfter: r.pollInterval()}, nil
}
