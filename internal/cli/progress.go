package cli

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Stage is where an installation is on its way to healthy.
type Stage string

const (
	StageResolve      Stage = "resolve"
	StageDependencies Stage = "dependencies"
	StageRender       Stage = "render"
	StageGates        Stage = "gates"
	StageApply        Stage = "apply"
	StageHealthy      Stage = "healthy"
	// StageUninstall: the installation is being deleted.
	StageUninstall Stage = "uninstall"
)

// Stages are the stages of an install or upgrade, in order.
var Stages = []Stage{StageResolve, StageDependencies, StageRender, StageGates, StageApply, StageHealthy}

// ProgressState says whether an installation moves on its own.
type ProgressState string

const (
	// ProgressWorking: Annex is working on it (or waits for something
	// that happens on its own: health, a dependency, a hook).
	ProgressWorking ProgressState = "Working"
	// ProgressApprovalPending: the change waits for an Approval.
	ProgressApprovalPending ProgressState = "ApprovalPending"
	// ProgressFailed: Annex stopped (Stalled); a person must change
	// something, which Message names.
	ProgressFailed ProgressState = "Failed"
	// ProgressDone: Ready for the current generation.
	ProgressDone ProgressState = "Done"
	// ProgressSuspended: spec.suspend is true.
	ProgressSuspended ProgressState = "Suspended"
)

// Progress is an installation's stage and state, as --wait prints it
// and as status shows it.
type Progress struct {
	Stage Stage         `json:"stage"`
	State ProgressState `json:"state"`
	// Reason and Message are those of the Ready condition when it
	// describes the current generation.
	Reason  string `json:"reason,omitempty"`
	Message string `json:"message,omitempty"`
	// Plan is the progress of the plan being applied (or last applied),
	// when the installation has one.
	Plan *PlanProgress `json:"plan,omitempty"`
}

// PlanProgress is how far a plan (a chart's install or upgrade, a
// package's plan) got.
type PlanProgress struct {
	Name  string             `json:"name"`
	State v1alpha1.PlanState `json:"state"`
	// Phase and Step are the first that is not complete ("" when every
	// step is).
	Phase string `json:"phase,omitempty"`
	Step  string `json:"step,omitempty"`
	// Done and Total count steps.
	Done  int `json:"done"`
	Total int `json:"total"`
	// Message is the plan's, else the current step's or phase's.
	Message string `json:"message,omitempty"`
}

// String is "deploy 3/7 (main/app)".
func (p PlanProgress) String() string {
	s := fmt.Sprintf("%s %d/%d", p.Name, p.Done, p.Total)
	if p.Phase != "" {
		s += " (" + p.Phase
		if p.Step != "" {
			s += "/" + p.Step
		}
		s += ")"
	}
	return s
}

// stageOfReason maps the reasons of the Ready condition to the stage
// that sets them. Reasons not listed keep the stage status suggests.
var stageOfReason = map[string]Stage{
	v1alpha1.ReasonClusterUnavailable:  StageResolve,
	v1alpha1.ReasonTargetNotAllowed:    StageResolve,
	v1alpha1.ReasonPermissionDenied:    StageResolve,
	v1alpha1.ReasonExtensionNotFound:   StageResolve,
	v1alpha1.ReasonNoMatchingVersion:   StageResolve,
	v1alpha1.ReasonDependencyCycle:     StageResolve,
	v1alpha1.ReasonConflict:            StageResolve,
	v1alpha1.ReasonUpgradeBlocked:      StageResolve,
	v1alpha1.ReasonDependencyNotReady:  StageDependencies,
	v1alpha1.ReasonArtifactFailed:      StageRender,
	v1alpha1.ReasonDigestMismatch:      StageRender,
	v1alpha1.ReasonValuesInvalid:       StageRender,
	v1alpha1.ReasonValuesSourceMissing: StageRender,
	v1alpha1.ReasonValuesNotShared:     StageRender,
	v1alpha1.ReasonRenderFailed:        StageRender,
	v1alpha1.ReasonBaseNotFound:        StageRender,
	v1alpha1.ReasonScopedGrantsRefused: StageRender,
	v1alpha1.ReasonApprovalRequired:    StageGates,
	v1alpha1.ReasonApprovalRefused:     StageGates,
	v1alpha1.ReasonApprovalDenied:      StageGates,
	v1alpha1.ReasonHookPending:         StageGates,
	v1alpha1.ReasonHookRefused:         StageGates,
	v1alpha1.ReasonHookFailed:          StageGates,
	v1alpha1.ReasonKindNotServed:       StageGates,
	v1alpha1.ReasonApplyFailed:         StageApply,
	v1alpha1.ReasonOwnershipConflict:   StageApply,
	v1alpha1.ReasonRecordTooLarge:      StageApply,
	v1alpha1.ReasonPlanRunning:         StageApply,
	v1alpha1.ReasonPlanFailed:          StageApply,
	v1alpha1.ReasonPlanAbandoned:       StageApply,
	v1alpha1.ReasonWaitingForHealth:    StageHealthy,
	v1alpha1.ReasonHealthTimeout:       StageHealthy,
	v1alpha1.ReasonInstallFailed:       StageHealthy,
	v1alpha1.ReasonRolledBack:          StageHealthy,
	v1alpha1.ReasonRetrying:            StageHealthy,
}

// uninstallReasons are the Ready reasons a deletion sets; others are
// left from before it.
var uninstallReasons = map[string]bool{
	v1alpha1.ReasonUninstalling: true, v1alpha1.ReasonUninstallFailed: true, v1alpha1.ReasonDeletionHeld: true,
	v1alpha1.ReasonHookFailed: true, v1alpha1.ReasonFinalizersPending: true, v1alpha1.ReasonCleanupFailed: true,
	v1alpha1.ReasonHookPending: true,
}

// ProgressOf reads an installation's progress from its status. Only
// conditions written for the current generation count: after a change
// of the spec, the installation is at resolve until Annex has looked.
func ProgressOf(inst *v1alpha1.ExtensionInstallation) Progress {
	p := Progress{Stage: StageResolve, State: ProgressWorking, Plan: planProgressOf(inst)}
	ready := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	fresh := ready != nil && ready.ObservedGeneration >= inst.Generation
	if fresh {
		p.Reason, p.Message = ready.Reason, ready.Message
	}
	switch {
	case !inst.DeletionTimestamp.IsZero():
		p.Stage = StageUninstall
		p.Reason, p.Message = "", "removing what it installed"
		if ready != nil && uninstallReasons[ready.Reason] {
			p.Reason, p.Message = ready.Reason, ready.Message
		}
		if p.Plan != nil && !running(p.Plan.State) {
			p.Plan = nil
		}
		// A Stalled of before the deletion (a refused upgrade) is not the
		// uninstall's: only one of its own reasons stops it.
		if stalled := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionStalled); stalled != nil &&
			stalled.Status == metav1.ConditionTrue && uninstallReasons[stalled.Reason] {
			p.State = ProgressFailed
		}
		return p
	case inst.Spec.Suspend:
		p.State, p.Reason = ProgressSuspended, v1alpha1.ReasonSuspended
		p.Message = "spec.suspend is true: Annex leaves the installation as it is"
		return p
	case !fresh:
		if ready == nil {
			p.Message = "waiting for Annex to look at the installation"
		} else {
			p.Message = fmt.Sprintf("waiting for Annex to look at generation %d", inst.Generation)
		}
		return p
	case ready.Status == metav1.ConditionTrue:
		p.Stage, p.State = StageHealthy, ProgressDone
		return p
	}
	if s, ok := stageOfReason[ready.Reason]; ok {
		p.Stage = s
	} else {
		p.Stage = stageFromStatus(inst)
	}
	stalled := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionStalled)
	switch {
	case ready.Reason == v1alpha1.ReasonApprovalRequired:
		p.State = ProgressApprovalPending
	case stalled != nil && stalled.Status == metav1.ConditionTrue && stalled.ObservedGeneration >= inst.Generation:
		p.State = ProgressFailed
	}
	return p
}

// stageFromStatus guesses the stage from the other conditions, for a
// Ready reason no stage claims (Progressing).
func stageFromStatus(inst *v1alpha1.ExtensionInstallation) Stage {
	switch {
	case !isTrue(inst.Status.Conditions, v1alpha1.ConditionResolved):
		return StageResolve
	case inst.Status.Pending != nil:
		return StageApply
	case !isTrue(inst.Status.Conditions, v1alpha1.ConditionInstalled):
		return StageRender
	}
	return StageHealthy
}

func isTrue(conds []metav1.Condition, t string) bool {
	c := meta.FindStatusCondition(conds, t)
	return c != nil && c.Status == metav1.ConditionTrue
}

// planProgressOf summarises the plan that runs, else the one that ran
// last (the highest revision), else nil.
func planProgressOf(inst *v1alpha1.ExtensionInstallation) *PlanProgress {
	var pick *v1alpha1.PlanStatus
	for i := range inst.Status.Plans {
		p := &inst.Status.Plans[i]
		if p.State == v1alpha1.PlanNeverRun {
			continue
		}
		if running(p.State) {
			pick = p
			break
		}
		if pick == nil || p.Revision > pick.Revision {
			pick = p
		}
	}
	if pick == nil {
		return nil
	}
	out := &PlanProgress{Name: pick.Name, State: pick.State, Message: pick.Message}
	for _, ph := range pick.Phases {
		for _, st := range ph.Steps {
			out.Total++
			if st.State == v1alpha1.PlanComplete {
				out.Done++
				continue
			}
			if out.Phase == "" {
				out.Phase, out.Step = ph.Name, st.Name
				if out.Message == "" {
					out.Message = st.Message
				}
			}
		}
		if len(ph.Steps) == 0 && ph.State != v1alpha1.PlanComplete && out.Phase == "" {
			out.Phase = ph.Name
			if out.Message == "" {
				out.Message = ph.Message
			}
		}
	}
	return out
}
