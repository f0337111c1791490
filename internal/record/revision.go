package record

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
)

// The decisions over an installation's recorded revisions (pure): how
// the next one is numbered, what recording one in the status changes,
// and whether the installed one is what this reconcile would apply again.

// Next is rev numbered one above history's newest revision (1 for the
// first). Keeper.WriteIntent may number it higher still, past the records
// of attempts that crashed before the status recorded them.
func Next(history []v1alpha1.Revision, rev v1alpha1.Revision) v1alpha1.Revision {
	rev.Number = 1
	if len(history) > 0 {
		rev.Number = history[0].Number + 1
	}
	return rev
}

// Install records rev, applied with the objects inventory, as inst's
// installed revision: it leads status.history (limit revisions kept), is
// no longer pending, and the Installed condition says what was applied.
// It returns the Event telling it: reason, unless "", or Upgraded when
// the installed version changed, or Installed; and its message.
func Install(inst *v1alpha1.ExtensionInstallation, rev v1alpha1.Revision, inventory []v1alpha1.ObjectReference, limit int, reason string) (eventReason, message string) {
	history := append([]v1alpha1.Revision{rev}, inst.Status.History...)
	if len(history) > limit {
		history = history[:limit]
	}
	upgraded := inst.Status.InstalledVersion != "" && inst.Status.InstalledVersion != rev.Version
	inst.Status.History, inst.Status.Pending, inst.Status.InstalledVersion = history, nil, rev.Version
	inst.Status.Inventory, inst.Status.InventoryCount = inventory, int32(len(inventory))
	message = fmt.Sprintf("applied %s %s (revision %d, %d objects)", inst.Spec.Extension, rev.Version, rev.Number, len(inventory))
	readiness.Set(inst, v1alpha1.ConditionInstalled, metav1.ConditionTrue, v1alpha1.ReasonSucceeded, message)
	switch {
	case reason != "":
	case upgraded:
		reason = "Upgraded"
	default:
		reason = "Installed"
	}
	return reason, message
}

// UpToDate reports whether inst's installed revision was made from this
// exact artifact (artifactDigest) of version and these effective values
// (valuesDigest), and was installed for inst's current generation.
// Inputs, not the rendered output, decide: a chart that generates a
// certificate or a random password renders differently every time and
// must not be applied again (and its secrets rotated) on every reconcile.
func UpToDate(inst *v1alpha1.ExtensionInstallation, version, artifactDigest, valuesDigest string) bool {
	if len(inst.Status.History) == 0 || inst.Status.InstalledVersion != version {
		return false
	}
	last := inst.Status.History[0]
	installed := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionInstalled)
	return last.ArtifactDigest == artifactDigest && last.ValuesDigest == valuesDigest &&
		installed != nil && installed.Status == metav1.ConditionTrue && installed.ObservedGeneration == inst.Generation
}
