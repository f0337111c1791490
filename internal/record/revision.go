package record

import (
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The decisions over an installation's recorded revisions (pure): how
// the next one is numbered, and whether the installed one is what this
// reconcile would apply again.

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
