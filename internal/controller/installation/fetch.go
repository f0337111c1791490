package installation

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/values"
)

// fetch downloads the chosen version's artifact with its engine: a
// chart's or a package's archive, or an operator bundle's registry+v1
// tree as its canonical JSON, which the revision's digest covers.
func (r *Reconciler) fetch(ctx context.Context, s *scope) (ctrl.Result, error) {
	data, err := r.engine(s.choice.Version.Engine).Fetch(ctx, s.choice.Version.Source)
	if err != nil {
		// A refusal that comes again stops: a resync that records a new
		// digest changes the Extension, and a change of the Extension
		// wakes this installation (SetupWithManager).
		v := s.choice.Version
		s.block = engine.Refusal(engine.FetchRefusal(err, s.inst.Spec.Extension+" "+v.Version, v.Source), "")
		readiness.Set(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, s.block.Reason, s.block.Message)
		if s.block.Kind == blockRetry {
			return ctrl.Result{}, s.block
		}
		return ctrl.Result{}, nil
	}
	s.artifact.data, s.artifact.digest = data, values.DigestBytes(data)
	if a := s.inst.Status.Artifact; a != nil && a.Version == s.choice.Version.Version && a.URL == s.choice.Version.Source.URL {
		a.Digest = s.artifact.digest
	}
	return ctrl.Result{}, nil
}
