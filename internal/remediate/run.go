package remediate

import (
	"fmt"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/target"
)

// Port is what carrying out a remediation asks of the world; the
// installation controller implements it with the revision records and
// the target cluster's applier.
type Port interface {
	// Recorded returns the rendered set of revision n; false when its
	// record is gone.
	Recorded(n int64) (target.Set, bool, error)
	// Restore makes rev, holding set, the installed revision again: its
	// intent recorded first, set applied taking ownership of what it
	// holds, what of the inventory it does not hold pruned, rev recorded
	// with reason RolledBack. applyErr is the apply's failure; err any
	// other (the record, the prune), returned as it is.
	Restore(rev v1alpha1.Revision, set target.Set) (applyErr, err error)
	// Delete deletes refs and returns how many of them are still there.
	Delete(refs []v1alpha1.ObjectReference) (remaining int, err error)
	// Event tells what the remediation did.
	Event(eventType, reason, message string)
}

// Attempt is the failed attempt: the target it tried (version and
// digests) and why it failed.
type Attempt struct {
	Version, ArtifactDigest, ValuesDigest string
	Reason, Message                       string
}

// Outcome is how the remediation left the installation: Stop says why
// it does not go on, and Poll whether it is looked at again after the
// poll interval (a retry, or an uninstall of the failed install under
// way).
type Outcome struct {
	Stop *news.Stop
	Poll bool
}

// Failed counts the failed attempt a in inst's status and carries out
// what follows it (After): apply again while retries last (the Installed
// condition False makes the next reconcile apply), roll an upgrade back
// to the last healthy revision, or hold a failed first install (HoldFailed).
func Failed(inst *v1alpha1.ExtensionInstallation, a Attempt, now metav1.Time, port Port) (Outcome, error) {
	inst.Status.Failures++
	next := After(inst)
	if next == Again {
		msg := fmt.Sprintf("attempt %d of %d at %s %s failed: %s; trying again", inst.Status.Failures, Retries(inst)+1,
			inst.Spec.Extension, a.Version, a.Message)
		readiness.Set(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, v1alpha1.ReasonRetrying, msg)
		port.Event(corev1.EventTypeWarning, a.Reason, msg)
		return Outcome{Stop: &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonRetrying, Message: msg}, Poll: true}, nil
	}
	failed := &v1alpha1.FailedTarget{Generation: inst.Generation, Version: a.Version, ArtifactDigest: a.ArtifactDigest, ValuesDigest: a.ValuesDigest}
	if next == RollBack {
		return rollBack(inst, failed, fmt.Sprintf("upgrade to %s %s failed after %s (%s)", inst.Spec.Extension, a.Version, Attempts(inst.Status.Failures), a.Message), now, port)
	}
	failed.Message = fmt.Sprintf("install of %s %s failed (%s)", inst.Spec.Extension, a.Version, a.Message)
	inst.Status.FailedTarget, inst.Status.Failures = failed, 0
	port.Event(corev1.EventTypeWarning, v1alpha1.ReasonInstallFailed, failed.Message)
	return HoldFailed(inst, port)
}

// rollBack restores the last healthy revision's record as a new revision
// — objects the failed upgrade pruned come back, objects it added are
// pruned — and holds the failed target, why saying what failed.
func rollBack(inst *v1alpha1.ExtensionInstallation, failed *v1alpha1.FailedTarget, why string, now metav1.Time, port Port) (Outcome, error) {
	good := FindRevision(inst.Status.History, inst.Status.LastHealthyRevision)
	set, ok, err := port.Recorded(inst.Status.LastHealthyRevision)
	if err != nil {
		return Outcome{}, err
	}
	if !ok || good == nil {
		failed.Message = fmt.Sprintf("%s; the record of revision %d is gone, so Annex cannot roll back. Fix the cause, then change the spec to try again",
			why, inst.Status.LastHealthyRevision)
		inst.Status.FailedTarget, inst.Status.Failures = failed, 0
		return Outcome{Stop: &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonRetrying, Message: failed.Message}}, nil
	}
	rev := *good
	rev.Number, rev.AppliedAt = inst.Status.History[0].Number+1, now
	switch applyErr, err := port.Restore(rev, set); {
	case applyErr != nil:
		return Outcome{Stop: &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonApplyFailed,
			Message: fmt.Sprintf("%s; rolling back to revision %d: %v", why, good.Number, applyErr)}}, nil
	case err != nil:
		return Outcome{}, err
	}
	failed.Message = fmt.Sprintf("%s; rolled back to %s %s (revision %d, now revision %d). Fix the cause, then change the spec to try again",
		why, inst.Spec.Extension, good.Version, good.Number, rev.Number)
	inst.Status.FailedTarget, inst.Status.Failures = failed, 0
	port.Event(corev1.EventTypeWarning, v1alpha1.ReasonRolledBack, failed.Message)
	return Outcome{Stop: &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonRolledBack, Message: failed.Message}}, nil
}

// HoldFailed keeps a remediated failure as it is until the spec changes
// (HoldOf); a failed first install with remediation Uninstall is removed
// first, over as many passes as its deletion takes.
func HoldFailed(inst *v1alpha1.ExtensionInstallation, port Port) (Outcome, error) {
	ft, held := inst.Status.FailedTarget, HoldOf(inst)
	if held.Uninstall && len(inst.Status.Inventory) > 0 {
		remaining, err := port.Delete(inst.Status.Inventory)
		if err != nil {
			return Outcome{}, err
		}
		if remaining > 0 {
			return Outcome{Poll: true, Stop: &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonUninstalling,
				Message: fmt.Sprintf("%s; removing what was applied (%d objects left)", ft.Message, remaining)}}, nil
		}
		inst.Status.Inventory, inst.Status.InventoryCount, inst.Status.InstalledVersion = nil, 0, ""
		readiness.Set(inst, v1alpha1.ConditionInstalled, metav1.ConditionFalse, v1alpha1.ReasonInstallFailed, ft.Message)
	}
	return Outcome{Stop: &news.Stop{Kind: news.Terminal, Reason: held.Reason, Message: held.Message}}, nil
}
