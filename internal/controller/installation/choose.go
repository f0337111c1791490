package installation

import (
	"context"
	"errors"
	"slices"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/readiness"
)

// planRun is what this reconcile's change runs of a release with plans:
// the plans, rendered, and why they run.
type planRun struct {
	params map[string]any
	// plans run in this order; empty when nothing changed.
	plans   []plan.Plan
	trigger string
	// request is the spec.plans.run request these plans carry out, if any.
	request *v1alpha1.PlanRequest
	// cleanup is the rendered cleanup plan, kept in the record for the
	// uninstall; nil when the release has none.
	cleanup *plan.Plan
	// namespace holds the target namespace when Annex creates it (it does
	// not exist on the target cluster, or an earlier revision created it):
	// applied before the plans' first step on every pass, recorded, removed
	// on uninstall.
	namespace []*unstructured.Unstructured
}

// toApply returns what this reconcile's release may apply: every object
// of the Apply tasks of the plans it runs (plan.AllApplied), or a chart's
// CRDs and objects, hooks included; nothing before render. The gates,
// spec.scopedGrants and the CRD policy judge it.
func (a *artifact) toApply() []*unstructured.Unstructured {
	switch {
	case a.release.Resumable():
		return plan.AllApplied(a.run.plans)
	case a.release != nil:
		return slices.Concat(a.release.CRDs, a.release.Objects)
	}
	return nil
}

// renderPlans chooses the plans this change runs (engine.Release.Choose) and
// renders them, with the cleanup plan the revision keeps for the
// uninstall. A plan that does not render stops here, before anything is
// applied.
func (r *Reconciler) renderPlans(ctx context.Context, s *scope) (ctrl.Result, error) {
	rel := s.artifact.release
	names, trigger, request := rel.Choose(s.inst, s.choice.Version.Version, s.artifact.digest, s.choice.Version.Extends != nil)
	plans, warnings, err := rel.Plans.Render(names)
	if err != nil {
		var refused *engine.Error
		if errors.As(err, &refused) {
			return r.stop(s, terminal(refused.Reason, refused.Message), ctrl.Result{})
		}
		return ctrl.Result{}, err
	}
	cleanup, cleanupWarnings := rel.Plans.Cleanup()
	rel.Warnings = slices.Concat(rel.Warnings, warnings, cleanupWarnings)
	s.artifact.run = &planRun{params: rel.Params, plans: plans, trigger: trigger, request: request, cleanup: cleanup}
	// A plan that resumes creates only the namespace its revision
	// recorded: what Annex applies is recorded first.
	s.artifact.run.namespace = r.createdNamespace(ctx, s, len(names) > 0 && !resuming(s))
	return ctrl.Result{}, nil
}

// stop sets a block that keeps the installation from being applied, with
// the Installed condition saying why.
func (r *Reconciler) stop(s *scope, b *block, res ctrl.Result) (ctrl.Result, error) {
	s.block = b
	readiness.Set(s.inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, b.Reason, b.Message)
	if b.Kind == blockRetry {
		return ctrl.Result{}, b
	}
	return res, nil
}
