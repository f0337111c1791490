package verify_test

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
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

func TestJudge(t *testing.T) {
	v := v1alpha1.ExtensionVersion{Version: "6.5.0", Source: v1alpha1.ArtifactSource{URL: "oci://registry.example.com/charts/podinfo:6.5.0"}}
	signed := &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce, Verified: true, Identity: "key"}
	audit := &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationAudit, Reason: "SignatureMissing", Message: "no cosign signature"}
	enforce := &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce, Reason: "SignatureMissing", Message: "no cosign signature"}
	for _, tc := range []struct {
		name    string
		outcome *v1alpha1.ArtifactVerification
		err     error
		before  *v1alpha1.ArtifactStatus
		want    verify.Verdict
		stop    string // the stop's reason and message ("" none)
		kind    news.Kind
	}{
		{name: "no policy"},
		{name: "signed", outcome: signed},
		{name: "audit tells", outcome: audit, want: verify.Verdict{Reason: "SignatureMissing", Warning: "spec.verify is Audit, so Annex installs it anyway: no cosign signature"}},
		{name: "audit told before", outcome: audit, before: &v1alpha1.ArtifactStatus{Verification: audit.DeepCopy()}},
		{name: "enforce stops", outcome: enforce, stop: "SignatureMissing: no cosign signature", kind: news.Terminal},
		{name: "the verification cannot run", err: errors.New("registry down"), kind: news.Retry,
			stop: "ArtifactFailed: verifying the signature of podinfo 6.5.0 from oci://registry.example.com/charts/podinfo:6.5.0: registry down; Annex tries again: check that the registry and the catalog's spec.verify keys can be read by the manager"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			inst.Spec.Extension = "podinfo"
			got := verify.Judge(inst, v, tc.outcome, tc.err, tc.before)
			if got.Warning != tc.want.Warning || got.Reason != tc.want.Reason {
				t.Errorf("warning %q (%s), want %q (%s)", got.Warning, got.Reason, tc.want.Warning, tc.want.Reason)
			}
			stop := ""
			if got.Stop != nil {
				stop = got.Stop.Reason + ": " + got.Stop.Message
				if got.Stop.Kind != tc.kind {
					t.Errorf("stop kind %v, want %v", got.Stop.Kind, tc.kind)
				}
			}
			if stop != tc.stop {
				t.Errorf("stop %q, want %q", stop, tc.stop)
			}
			if recorded := inst.Status.Artifact != nil; recorded != (tc.err == nil) {
				t.Errorf("status.artifact %+v, want recorded %v", inst.Status.Artifact, tc.err == nil)
			}
		})
	}
}
