package cli_test

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cli"
)

// ProgressOf reads the stage and state from the status, counting only
// conditions of the current generation.
func TestProgressOf(t *testing.T) {
	ready := func(s metav1.ConditionStatus, reason string, gen int64) metav1.Condition {
		return metav1.Condition{Type: v1alpha1.ConditionReady, Status: s, Reason: reason, Message: reason + " message", ObservedGeneration: gen}
	}
	stalled := metav1.Condition{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonRenderFailed, ObservedGeneration: 2}
	now := metav1.Now()
	for _, c := range []struct {
		name     string
		conds    []metav1.Condition
		deleting bool
		suspend  bool
		stage    cli.Stage
		state    cli.ProgressState
		reason   string
	}{
		// nothing written yet
		{"new", nil, false, false, cli.StageResolve, cli.ProgressWorking, ""},
		// Ready of the previous generation: not counted
		{"stale", []metav1.Condition{ready(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 1)}, false, false, cli.StageResolve, cli.ProgressWorking, ""},
		// healthy now
		{"ready", []metav1.Condition{ready(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 2)}, false, false, cli.StageHealthy, cli.ProgressDone, v1alpha1.ReasonSucceeded},
		// each stage by the reason it sets
		{"dependency", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonDependencyNotReady, 2)}, false, false, cli.StageDependencies, cli.ProgressWorking, v1alpha1.ReasonDependencyNotReady},
		{"hook", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonHookPending, 2)}, false, false, cli.StageGates, cli.ProgressWorking, v1alpha1.ReasonHookPending},
		{"plan", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonPlanRunning, 2)}, false, false, cli.StageApply, cli.ProgressWorking, v1alpha1.ReasonPlanRunning},
		{"health", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonWaitingForHealth, 2)}, false, false, cli.StageHealthy, cli.ProgressWorking, v1alpha1.ReasonWaitingForHealth},
		// waits for a person
		{"approval", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonApprovalRequired, 2)}, false, false, cli.StageGates, cli.ProgressApprovalPending, v1alpha1.ReasonApprovalRequired},
		// stopped for good
		{"stalled", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonRenderFailed, 2), stalled}, false, false, cli.StageRender, cli.ProgressFailed, v1alpha1.ReasonRenderFailed},
		{"denied", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonApprovalDenied, 2), stalled}, false, false, cli.StageGates, cli.ProgressFailed, v1alpha1.ReasonApprovalDenied},
		// suspended wins over the conditions
		{"suspended", []metav1.Condition{ready(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 2)}, false, true, cli.StageResolve, cli.ProgressSuspended, v1alpha1.ReasonSuspended},
		// deleting: the Ready of before the deletion is not its progress
		{"deleting", []metav1.Condition{ready(metav1.ConditionTrue, v1alpha1.ReasonSucceeded, 2)}, true, false, cli.StageUninstall, cli.ProgressWorking, ""},
		{"deletion held", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonDeletionHeld, 2)}, true, false, cli.StageUninstall, cli.ProgressWorking, v1alpha1.ReasonDeletionHeld},
		// deleting after a refused upgrade: its Stalled is not the uninstall's
		{"deleting a refused upgrade", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonSignatureMissing, 2),
			{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonSignatureMissing, ObservedGeneration: 2}},
			true, false, cli.StageUninstall, cli.ProgressWorking, ""},
		// the uninstall itself stopped
		{"uninstall failed", []metav1.Condition{ready(metav1.ConditionFalse, v1alpha1.ReasonUninstallFailed, 2),
			{Type: v1alpha1.ConditionStalled, Status: metav1.ConditionTrue, Reason: v1alpha1.ReasonUninstallFailed, ObservedGeneration: 2}},
			true, false, cli.StageUninstall, cli.ProgressFailed, v1alpha1.ReasonUninstallFailed},
	} {
		inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: 2}, Spec: v1alpha1.ExtensionInstallationSpec{Suspend: c.suspend},
			Status: v1alpha1.ExtensionInstallationStatus{Conditions: c.conds}}
		if c.deleting {
			inst.DeletionTimestamp = &now
		}
		p := cli.ProgressOf(inst)
		if p.Stage != c.stage || p.State != c.state || p.Reason != c.reason {
			t.Errorf("%s: %s %s %q, want %s %s %q", c.name, p.Stage, p.State, p.Reason, c.stage, c.state, c.reason)
		}
	}
}
