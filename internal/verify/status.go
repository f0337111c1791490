package verify

import (
	"fmt"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
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

// Verdict is what the verification of an installation's artifact means
// for it.
type Verdict struct {
	// Stop stops the installation before the artifact is fetched, and
	// the Installed condition says why: retried when the verification
	// could not run, terminal when an Enforce policy finds the artifact
	// not verified (nothing is applied, and what is installed stays).
	Stop *news.Stop
	// Warning, of reason Reason, is told in a Warning Event: under Audit
	// an artifact that is not verified is installed anyway, and the
	// failure is told once (when the outcome differs from before's).
	Warning, Reason string
}

// Judge records outcome, the verification of the artifact of version v of
// inst, in its status (SetArtifact), or, when the verification could not
// run (err), says so; before is status.artifact as last written.
func Judge(inst *v1alpha1.ExtensionInstallation, v v1alpha1.ExtensionVersion, outcome *v1alpha1.ArtifactVerification, err error, before *v1alpha1.ArtifactStatus) Verdict {
	if err != nil {
		return Verdict{Stop: &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonArtifactFailed, Message: fmt.Sprintf(
			"verifying the signature of %s %s from %s: %v; Annex tries again: check that the registry and the catalog's spec.verify keys can be read by the manager",
			inst.Spec.Extension, v.Version, v.Source.URL, err)}}
	}
	SetArtifact(inst, v, outcome)
	switch {
	case outcome == nil || outcome.Verified:
		return Verdict{}
	case outcome.Mode == v1alpha1.VerificationAudit:
		if before == nil || !equality.Semantic.DeepEqual(before.Verification, outcome) {
			return Verdict{Reason: outcome.Reason, Warning: "spec.verify is Audit, so Annex installs it anyway: " + outcome.Message}
		}
		return Verdict{}
	}
	return Verdict{Stop: &news.Stop{Kind: news.Terminal, Reason: outcome.Reason, Message: outcome.Message}}
}
