package installation

import (
	"cmp"
	"context"
	"fmt"
	"time"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/target"
)

// checkDrift compares the cluster with the installed revision, once the
// installation is Ready. Nothing drifted costs reads only. Enabled corrects
// drift (and recreates deleted objects); Warn lists it.
func (r *Reconciler) checkDrift(ctx context.Context, s *scope, set target.Set) (ctrl.Result, error) {
	inst := s.inst
	mode := inst.Spec.DriftDetection
	if mode == v1alpha1.DriftDetectionDisabled || !s.report.wasReady {
		if mode == v1alpha1.DriftDetectionDisabled {
			inst.Status.Drifted = nil
		}
		return ctrl.Result{}, nil
	}
	applier := s.target.Applier()
	drifts, health, err := applier.Diff(ctx, s.owner(), s.targetNamespace(), set)
	if err != nil {
		s.block = retry(v1alpha1.ReasonApplyFailed, fmt.Sprintf("comparing the cluster with revision %d: %v", inst.Status.History[0].Number, err))
		return ctrl.Result{}, s.block
	}
	s.observe(health)
	found := target.Drifted(drifts)
	if len(found) == 0 {
		inst.Status.Drifted = nil
		return ctrl.Result{}, nil
	}
	if mode == v1alpha1.DriftDetectionWarn {
		if !equality.Semantic.DeepEqual(found, inst.Status.Drifted) {
			r.event(s, corev1.EventTypeWarning, "Drifted", "objects differ from the installed revision (driftDetection: Warn): "+target.DescribeDrift(found))
		}
		inst.Status.Drifted = found
		return ctrl.Result{}, nil
	}
	// The drifted objects are in the inventory, so Annex owns them: fields
	// another manager took over since are taken back (objects of another
	// installation are still refused).
	start := time.Now()
	corrected, err := applier.Apply(ctx, s.owner(), s.targetNamespace(), set, target.ApplyOptions{TakeOwnership: true})
	metrics.ObserveApply(metrics.OpDriftCorrection, time.Since(start))
	if err != nil {
		s.applied.health = nil
		s.block = cmp.Or(r.permissionBlock(inst, err), applyBlock(err))
		s.block.Message = "correcting drift: " + s.block.Message
		inst.Status.Drifted = found
		if s.block.Kind == blockRetry {
			return ctrl.Result{}, s.block
		}
		return ctrl.Result{}, nil
	}
	inst.Status.Drifted = nil
	inst.Status.AdoptedObjects = corrected.Adopted // those corrected are claimed now
	s.observe(corrected.Health)
	metrics.DriftCorrected(inst.Spec.Cluster)
	r.event(s, corev1.EventTypeNormal, "DriftCorrected", "restored objects that differed from the installed revision: "+target.DescribeDrift(found))
	return ctrl.Result{}, nil
}
