package plan

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Requests a person makes of an installation's plans (spec.plans.run,
// spec.plans.abandon), carried out once each: status.planRequests records
// the last of each that was.

// RunRequest returns spec.plans.run of inst when it has not been carried out.
func RunRequest(inst *v1alpha1.ExtensionInstallation) *v1alpha1.PlanRequest {
	if inst.Spec.Plans == nil || inst.Spec.Plans.Run == nil {
		return nil
	}
	req := inst.Spec.Plans.Run
	if done := inst.Status.PlanRequests; done != nil && done.Run != nil && *done.Run == *req {
		return nil
	}
	return req
}

// AbandonRequest returns spec.plans.abandon of inst when it has not been
// carried out.
func AbandonRequest(inst *v1alpha1.ExtensionInstallation) *v1alpha1.PlanRequest {
	if inst.Spec.Plans == nil || inst.Spec.Plans.Abandon == nil {
		return nil
	}
	req := inst.Spec.Plans.Abandon
	if done := inst.Status.PlanRequests; done != nil && done.Abandon != nil && *done.Abandon == *req {
		return nil
	}
	return req
}

// MarkRequest records in inst's status that the requests run and
// abandon (either may be nil) were carried out.
func MarkRequest(inst *v1alpha1.ExtensionInstallation, run, abandon *v1alpha1.PlanRequest) {
	if inst.Status.PlanRequests == nil {
		inst.Status.PlanRequests = &v1alpha1.PlanRequests{}
	}
	if run != nil {
		inst.Status.PlanRequests.Run = run.DeepCopy()
	}
	if abandon != nil {
		inst.Status.PlanRequests.Abandon = abandon.DeepCopy()
	}
}

// AbandonByRequest carries out req, an abandon request, on inst: req is
// marked carried out, and the plan it names, when it runs in the pending
// revision, is ABANDONED where it is; its new status is returned. nil:
// the plan is not running, nothing to abandon.
func AbandonByRequest(inst *v1alpha1.ExtensionInstallation, req *v1alpha1.PlanRequest, now metav1.Time) *v1alpha1.PlanStatus {
	MarkRequest(inst, nil, req)
	st := StatusOf(inst.Status.Plans, req.Name)
	if st == nil || !Running(st.State) || inst.Status.Pending == nil {
		return nil
	}
	abandoned := Abandon(*st, "abandoned by request "+req.ID, now)
	SetStatus(&inst.Status.Plans, abandoned)
	return &abandoned
}

// ListNeverRun gives every plan of names without a status in inst one,
// NEVER_RUN until it runs, so that status shows what can run.
func ListNeverRun(inst *v1alpha1.ExtensionInstallation, names []string) {
	for _, name := range names {
		if StatusOf(inst.Status.Plans, name) == nil {
			inst.Status.Plans = append(inst.Status.Plans, NeverRun(name))
		}
	}
}
