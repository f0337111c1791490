package installation

import (
	"context"
	"fmt"
	"strings"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/crdcheck"
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
// CRDs in place of the change's (keepCRDs). The judgement is crdcheck.Judge's
// (pure); this step only reads the installed CRDs.
func (r *Reconciler) checkCRDs(ctx context.Context, s *scope) (ctrl.Result, error) {
	proposed := crdcheck.In(s.change.Objects)
	prev := s.inst.Status.CRDChanges
	s.inst.Status.CRDChanges = nil
	if len(proposed) == 0 {
		setCRDWarnings(s, "")
		return ctrl.Result{}, nil
	}
	installed, err := s.target.CRDs(ctx, crdcheck.Names(proposed))
	if err != nil {
		s.block = retry(v1alpha1.ReasonClusterUnavailable, fmt.Sprintf("reading the CustomResourceDefinitions installed on %s: %v", clusterName(s.inst.Spec.Cluster), err))
		return ctrl.Result{}, s.block
	}
	ref := s.inst.Spec.Extension + " " + s.choice.Version.Version
	j, err := crdcheck.Judge(crdcheck.Policy(crdcheck.PolicyOf(s.inst)), proposed, installed)
	if err != nil {
		s.block = terminal(v1alpha1.ReasonUnsafeCRDChange, fmt.Sprintf("%s: %v; nothing of it was applied; choose another version with spec.version", ref, err))
		return ctrl.Result{}, nil
	}
	if len(j.Refused) == 0 && len(j.Report) == 0 && judgedBefore(s.inst, prev, s.choice.Version.Version) {
		// An earlier pass of this same change judged it and applied its
		// CRDs: judged again against them it finds nothing, and what it
		// let through stays shown (the Warnings condition too).
		s.inst.Status.CRDChanges = prev
		return ctrl.Result{}, nil
	}
	s.inst.Status.CRDChanges = crdcheck.Status(s.choice.Version.Version, j)
	if len(j.Refused) > 0 {
		s.block = terminal(v1alpha1.ReasonUnsafeCRDChange, crdcheck.RefusalMessage(ref, j))
		return ctrl.Result{}, nil
	}
	s.keepCRDs(j.Keep)
	msg := crdcheck.ReportMessage(ref, j)
	setCRDWarnings(s, msg)
	if msg != "" {
		reason := "CRDChangesApplied"
		if j.Policy == crdcheck.Skip {
			reason = "CRDChangesSkipped"
		}
		r.event(s, corev1.EventTypeWarning, reason, msg)
	}
	return ctrl.Result{}, nil
}

// judgedBefore reports whether prev, the status.crdChanges inst had when
// this pass began, is the report of the change to version at inst's
// generation, which let CRD changes through (Warnings set at this
// generation): a change that takes more than one pass resumes after its
// CRDs were applied.
func judgedBefore(inst *v1alpha1.ExtensionInstallation, prev *v1alpha1.CRDChangeReport, version string) bool {
	warnings := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings)
	return prev != nil && prev.Version == version && prev.Outcome == v1alpha1.CRDChangeApplied &&
		warnings != nil && warnings.Reason == v1alpha1.ReasonCRDChangeWarnings && warnings.ObservedGeneration == inst.Generation
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

// setCRDWarnings shows msg, what the last change did with CRD changes a
// lenient policy let through, in the Warnings condition, beside the
// engine's warnings (render sets those first); "" clears it. It stays
// until the next change is judged.
func setCRDWarnings(s *scope, msg string) {
	inst := s.inst
	var engine []string
	if s.artifact.release != nil {
		engine = s.artifact.release.Warnings
	}
	switch {
	case msg != "":
		setCondition(inst, v1alpha1.ConditionWarnings, metav1.ConditionTrue, v1alpha1.ReasonCRDChangeWarnings,
			strings.Join(append([]string{msg}, engine...), "; "))
	case len(engine) == 0:
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionWarnings)
	}
}
