package installation

import (
	"context"
	"fmt"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/crdcheck"
	"github.com/annex-platform/annex/internal/fleet"
	"github.com/annex-platform/annex/internal/plan"
)

// checkCRDs is the gate of spec.upgrade.crdPolicy: every CRD the change
// may apply, whatever engine brought it (a chart's crds/ or templates, a
// package's plans, a bundle's), is compared with the CRD of that name on
// the target cluster, status.storedVersions included, before anything is
// applied and before any approval or hook is asked. Strict refuses a
// breaking change (terminal, reason UnsafeCRDChange, naming each CRD,
// version and field); Warn and Force let it through and the Warnings
// condition and an Event list what changed; Skip applies the installed
// CRDs in place of the change's (keepCRDs). The verdict is crdcheck.Gate's
// (pure); this step only reads the installed CRDs.
func (r *Reconciler) checkCRDs(ctx context.Context, s *scope) (ctrl.Result, error) {
	proposed := crdcheck.In(s.change.Objects)
	prev := s.inst.Status.CRDChanges
	s.inst.Status.CRDChanges = nil
	if len(proposed) == 0 {
		crdcheck.ShowWarnings(s.inst, "", s.artifact.release.Warnings)
		return ctrl.Result{}, nil
	}
	installed, err := s.target.CRDs(ctx, crdcheck.Names(proposed))
	if err != nil {
		s.block = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the CustomResourceDefinitions installed on %s: %v", fleet.ClusterName(s.inst.Spec.Cluster), err))
		return ctrl.Result{}, s.block
	}
	v := crdcheck.Gate(s.inst, s.choice.Version.Version, prev, proposed, installed)
	s.inst.Status.CRDChanges = v.Report
	switch {
	case v.Refusal != "":
		s.block = terminal(v1alpha1.ReasonUnsafeCRDChange, v.Refusal)
	case !v.Resumed:
		s.keepCRDs(v.Keep)
		crdcheck.ShowWarnings(s.inst, v.Warning, s.artifact.release.Warnings)
		if v.Warning != "" {
			r.event(s, corev1.EventTypeWarning, v.EventReason, v.Warning)
		}
	}
	return ctrl.Result{}, nil
}

// keepInstalledCRDs, under spec.upgrade.crdPolicy Skip, applies the
// installed CRDs in place of the release's also when no change is
// judged: a resumed plan and the correction of drift would otherwise
// apply the release's CRDs that the change kept out.
func (r *Reconciler) keepInstalledCRDs(ctx context.Context, s *scope) error {
	if crdcheck.PolicyOf(s.inst) != v1alpha1.CRDPolicySkip {
		return nil
	}
	proposed := crdcheck.In(s.artifact.toApply())
	if len(proposed) == 0 {
		return nil
	}
	installed, err := s.target.CRDs(ctx, crdcheck.Names(proposed))
	if err != nil {
		return err
	}
	j, err := crdcheck.Judge(crdcheck.Skip, proposed, installed)
	if err != nil {
		return nil // the apply reports a CRD the API server refuses
	}
	s.keepCRDs(j.Keep)
	return nil
}

// keepCRDs has this reconcile apply the kept CRDs in place of the
// release's: in a chart's CRDs and objects, and in the Apply tasks of the
// plans this reconcile runs.
func (s *scope) keepCRDs(keep map[string]*unstructured.Unstructured) {
	if len(keep) == 0 {
		return
	}
	if s.artifact.run != nil {
		s.artifact.run.plans = plan.RewriteApplies(s.artifact.run.plans, func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
			return crdcheck.WithKept(objs, keep)
		})
	}
	if s.artifact.release != nil {
		kept := *s.artifact.release
		kept.CRDs, kept.Objects = crdcheck.WithKept(kept.CRDs, keep), crdcheck.WithKept(kept.Objects, keep)
		s.artifact.release = &kept
	}
}
