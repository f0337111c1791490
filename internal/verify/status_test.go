package verify_test

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/verify"
)

func TestSetArtifact(t *testing.T) {
	v := v1alpha1.ExtensionVersion{Version: "6.5.0", Source: v1alpha1.ArtifactSource{URL: "oci://registry.example.com/charts/podinfo:6.5.0"}}
	signed := &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce, Verified: true, Identity: `key "release-2026"`}
	unsigned := &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationAudit, Reason: "SignatureMissing", Message: "no cosign signature"}
	builtin := &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationBuiltin, Verified: true}
	for _, tc := range []struct {
		name       string
		old        *v1alpha1.ArtifactStatus
		outcome    *v1alpha1.ArtifactVerification
		wantDigest string
		// The Verified condition: "" when absent.
		status          metav1.ConditionStatus
		reason, message string
	}{
		// Nothing asked (no policy): no Verified condition.
		{name: "no policy", old: &v1alpha1.ArtifactStatus{Version: "6.5.0", URL: v.Source.URL, Digest: "sha256:aaa"}, wantDigest: "sha256:aaa"},
		// Signed by a trusted key: the signer and the provider.
		{name: "signed", outcome: signed, status: metav1.ConditionTrue, reason: v1alpha1.ReasonVerified,
			message: `podinfo 6.5.0 is signed by key "release-2026" (Cosign)`},
		// The built-in catalog is part of the binary.
		{name: "builtin", outcome: builtin, status: metav1.ConditionTrue, reason: v1alpha1.ReasonVerified,
			message: "podinfo 6.5.0 comes from the built-in catalog, part of the Annex binary, and is trusted as such"},
		// Not verified: the outcome's reason and message; another
		// version's digest is not kept.
		{name: "unsigned", old: &v1alpha1.ArtifactStatus{Version: "6.4.0", URL: v.Source.URL, Digest: "sha256:aaa"}, outcome: unsigned,
			status: metav1.ConditionFalse, reason: "SignatureMissing", message: "no cosign signature"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "podinfo", Generation: 3}}
			inst.Spec.Extension = "podinfo"
			inst.Status.Artifact = tc.old
			// A condition from before goes when nothing is asked.
			meta.SetStatusCondition(&inst.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionVerified, Status: metav1.ConditionTrue, Reason: "Old"})
			verify.SetArtifact(inst, v, tc.outcome)
			if a := inst.Status.Artifact; a.Version != "6.5.0" || a.URL != v.Source.URL || a.Digest != tc.wantDigest || a.Verification != tc.outcome {
				t.Errorf("status.artifact = %+v, want version 6.5.0, digest %q, the outcome", a, tc.wantDigest)
			}
			c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionVerified)
			switch {
			case tc.status == "" && c != nil:
				t.Errorf("Verified = %+v, want none", c)
			case tc.status != "" && (c == nil || c.Status != tc.status || c.Reason != tc.reason || c.Message != tc.message || c.ObservedGeneration != 3):
				t.Errorf("Verified = %+v, want %s %s %q at generation 3", c, tc.status, tc.reason, tc.message)
			}
		})
	}
}
