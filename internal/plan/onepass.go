package plan

import (
	"fmt"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// OnePass runs p, a release's one-pass plan (a chart's phases and hook
// weights), with the executor (Drive) in one call and without
// checkpoints: nothing of it is saved until it ends, and the first pass
// with an error stops it. step runs one step; its error fails the step.
// OnePass returns the state p ended in and the error of the last step that
// failed (nil when none did).
func OnePass(p Plan, step func(StepRef) error, now func() metav1.Time) (v1alpha1.PlanStatus, error) {
	var stepErr error
	run := func(ref StepRef, s Step) StepResult {
		if err := step(ref); err != nil {
			stepErr = err
			return Failed(s.Name, err)
		}
		return StepResult{Done: true}
	}
	st, _, _ := Drive(p, Start(p, "", 0, now()), run, now, nil)
	return st, stepErr
}

// OnePassStatus is how an installation shows st, the state of a chart's
// one-pass plan for revision rev, down to its steps: named install, or
// upgrade from installed (the version installed before) when there was
// one.
func OnePassStatus(st v1alpha1.PlanStatus, installed string, rev v1alpha1.Revision) v1alpha1.PlanStatus {
	out := *st.DeepCopy()
	out.Name, out.Trigger, out.Revision = "install", "install", rev.Number
	if installed != "" {
		out.Name, out.Trigger = "upgrade", fmt.Sprintf("upgrade %s → %s", installed, rev.Version)
		if installed == rev.Version {
			out.Trigger = "new values or chart content"
		}
	}
	return out
}
