package installation_test

import (
	"context"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

// TestKeylessEnforceShownAtTheApprovalGate: a package signed keyless (a
// certificate from a test root through an intermediate) under a catalog
// trusting the issuer and a subject expression waits at the approval
// gate, whose status.change names the artifact's digest and the signer;
// one whose certificate names another issuer is refused.
func TestKeylessEnforceShownAtTheApprovalGate(t *testing.T) {
	const issuer = "https://token.actions.githubusercontent.com"
	const subject = "https://github.com/example/pkgs/.github/workflows/release.yaml@refs/tags/v1"
	ctx := context.Background()
	ns := packageNamespace(t)
	host := catalogtest.NewRegistry(t)
	repository := "oci://" + host + "/" + ns
	root := verifytest.NewRoot(t, "test root")
	inter := root.Intermediate(t, "test intermediate")
	push := func(pkg, iss string) string {
		archive, err := catalog.PackageArchive(configPackage(pkg, "1.0.0", "a"))
		if err != nil {
			t.Fatal(err)
		}
		key, cert := inter.Leaf(t, iss, subject)
		ref, err := oci.PushPackage(ctx, archive, repository, oci.PushOptions{PlainHTTP: true, Sign: &oci.SignOptions{Key: key, Certificate: cert, Chain: inter.PEM}})
		if err != nil {
			t.Fatal(err)
		}
		return ref
	}
	ref := push("keyless-ok", issuer)
	push("keyless-evil", "https://evil.example.com")

	// The API server refuses keys and keyless together.
	both := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns + "-both"}, Spec: v1alpha1.CatalogSpec{
		Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: repository}},
		Verify: &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Cosign: &v1alpha1.CosignVerification{
			Keys:    []v1alpha1.CosignKey{{Name: "k", PublicKey: "-----BEGIN PUBLIC KEY-----"}},
			Keyless: &v1alpha1.KeylessVerification{TrustedRoots: string(root.PEM), Identities: []v1alpha1.KeylessIdentity{{Issuer: issuer, Subject: subject}}}}}}}
	if err := env.Client.Create(ctx, both); err == nil || !strings.Contains(err.Error(), "set exactly one of keys or keyless") {
		t.Fatalf("keys and keyless together: want refused, got %v", err)
	}

	signedCatalogPolicy(t, ns, repository, &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: v1alpha1.VerificationEnforce,
		Cosign: &v1alpha1.CosignVerification{Keyless: &v1alpha1.KeylessVerification{TrustedRoots: string(root.PEM),
			Identities: []v1alpha1.KeylessIdentity{{Issuer: issuer, SubjectRegExp: `https://github\.com/example/.+@refs/tags/v.*`}}}}})
	approvalPolicy(t, ns, v1alpha1.ApprovalPolicySpec{Require: []v1alpha1.ApprovalRequirement{v1alpha1.ApprovalFirstInstall}})

	inst := install(t, ns, "keyless-ok", "keyless-ok", "")
	got := waitPending(t, inst, v1alpha1.ReasonApprovalRequired)
	pc := got.Status.Change
	wantSigner := `issuer "` + issuer + `", subject "` + subject + `" (Cosign)`
	if pc == nil || pc.SignedBy != wantSigner || !strings.HasPrefix(pc.ArtifactDigest, "sha256:") {
		t.Fatalf("status.change %+v, want signed by %s with the artifact's digest", pc, wantSigner)
	}
	if a := got.Status.Artifact; a == nil || a.Digest != pc.ArtifactDigest || a.URL != ref {
		t.Fatalf("status.artifact %s, status.change artifact %s, pushed %s", describeArtifact(a), pc.ArtifactDigest, ref)
	}

	evil := install(t, ns, "keyless-evil", "keyless-evil", "")
	got = waitCondition(t, evil, v1alpha1.ConditionStalled, metav1.ConditionTrue, v1alpha1.ReasonIdentityMismatch)
	if msg := got.Status.Artifact.Verification.Message; !strings.Contains(msg, `found signature 1 by issuer "https://evil.example.com"`) || !strings.Contains(msg, `expected a signature by issuer "`+issuer+`"`) {
		t.Errorf("message %s", msg)
	}
}
