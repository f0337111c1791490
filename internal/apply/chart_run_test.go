package apply

import (
	"context"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/plan"
)

// hookResult is what applyWithHooks did: the apply's Result and the state
// of the chart's plan.
type hookResult struct {
	Result
	Plan *v1alpha1.PlanStatus
}

// ApplyWithHooks applies set as the installation controller applies a
// chart: the steps of ChartSteps (hooks of an install or, with opts.IsUpgrade,
// an upgrade) as ChartPlan, started with Start and run with Step through
// the plan executor in one go, the first error stopping it.
func (a *Applier) ApplyWithHooks(ctx context.Context, owner Owner, defaultNamespace string, set Set, opts HookOptions) (hookResult, error) {
	p := ChartPlan(ChartSteps(set, defaultNamespace, opts.IsUpgrade))
	r, err := a.Start(owner, defaultNamespace, p, opts)
	if err != nil {
		return hookResult{}, err
	}
	var stepErr error
	run := func(ref plan.StepRef, st plan.Step) plan.StepResult {
		if err := r.Step(ctx, ref); err != nil {
			stepErr = err
			return plan.Failed(st.Name, err)
		}
		return plan.StepResult{Done: true}
	}
	now := func() metav1.Time { return metav1.Now() }
	status, _, _ := plan.Drive(p, plan.Start(p, "", 0, now()), run, now, nil)
	return hookResult{Result: r.Result(), Plan: &status}, stepErr
}
