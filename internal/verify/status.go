package verify

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/readiness"
)

// SetArtifact records the artifact of version v and its verification
// outcome in inst's status.artifact (keeping the digest when the artifact
// is the same) and its Verified condition: True when a trusted identity
// signed it or it is built in, False with the outcome's reason when not,
// absent when nothing was asked (outcome nil).
func SetArtifact(inst *v1alpha1.ExtensionInstallation, v v1alpha1.ExtensionVersion, outcome *v1alpha1.ArtifactVerification) {
	a := &v1alpha1.ArtifactStatus{Version: v.Version, URL: v.Source.URL, Verification: outcome}
	if old := inst.Status.Artifact; old != nil && old.Version == a.Version && old.URL == a.URL {
		a.Digest = old.Digest
	}
	inst.Status.Artifact = a
	switch {
	case outcome == nil:
		meta.RemoveStatusCondition(&inst.Status.Conditions, v1alpha1.ConditionVerified)
	case outcome.Provider == v1alpha1.VerificationBuiltin:
		readiness.Set(inst, v1alpha1.ConditionVerified, metav1.ConditionTrue, v1alpha1.ReasonVerified,
			fmt.Sprintf("%s %s comes from the built-in catalog, part of the Annex binary, and is trusted as such", inst.Spec.Extension, v.Version))
	case outcome.Verified:
		readiness.Set(inst, v1alpha1.ConditionVerified, metav1.ConditionTrue, v1alpha1.ReasonVerified,
			fmt.Sprintf("%s %s is signed by %s (%s)", inst.Spec.Extension, v.Version, outcome.Identity, outcome.Provider))
	default:
		readiness.Set(inst, v1alpha1.ConditionVerified, metav1.ConditionFalse, outcome.Reason, outcome.Message)
	}
}
