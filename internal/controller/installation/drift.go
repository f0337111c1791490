package installation

import (
	"cmp"
	"context"
	"time"

	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/remediate"
	"github.com/annex-platform/annex/internal/target"
)

// checkDrift compares the cluster with the installed revision and
// corrects or lists what drifted, as spec.driftDetection says
// (target.CheckDrift); driftPort reads and applies.
func (r *Reconciler) checkDrift(ctx context.Context, s *scope, set target.Set) (ctrl.Result, error) {
	out := target.CheckDrift(s.inst, s.report.wasReady, set, driftPort{ctx: ctx, r: r, s: s})
	if out.Corrected {
		metrics.DriftCorrected(s.inst.Spec.Cluster)
	}
	if out.Stop != nil {
		s.block = out.Stop
		if s.block.Kind == blockRetry {
			return ctrl.Result{}, s.block
		}
	}
	return ctrl.Result{}, nil
}

// driftPort is the installation's side of a drift check: its target
// cluster's applier, the health it saw, and its Events.
type driftPort struct {
	ctx context.Context
	r   *Reconciler
	s   *scope
}

func (p driftPort) Diff(set target.Set) ([]target.Drift, target.Health, error) {
	return p.s.target.Applier().Diff(p.ctx, p.s.owner(), p.s.targetNamespace(), set)
}

func (p driftPort) Correct(set target.Set) (target.Applied, error) {
	start := time.Now()
	corrected, err := p.s.target.Applier().Apply(p.ctx, p.s.owner(), p.s.targetNamespace(), set, target.ApplyOptions{TakeOwnership: true})
	metrics.ObserveApply(metrics.OpDriftCorrection, time.Since(start))
	return corrected, err
}

func (p driftPort) Seen(h *target.Health) {
	if h == nil {
		p.s.applied.health = nil
		return
	}
	p.s.observe(*h)
}

func (p driftPort) Refused(err error) *news.Stop {
	return cmp.Or(p.r.permissionBlock(p.s.inst, err), remediate.ApplyStop(err))
}
func (p driftPort) Event(eventType, reason, message string) {
	p.r.event(p.s, eventType, reason, message)
}
