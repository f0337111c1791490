package installation_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

// notationSignRef attaches a Notation signature by s to the artifact at
// ref (oci://…@sha256:…), as `notation sign` does.
func notationSignRef(t *testing.T, ref string, s verifytest.NotationSigner) {
	t.Helper()
	src := v1alpha1.ArtifactSource{URL: ref}
	m, err := oci.ResolveManifest(context.Background(), &catalog.Fetcher{}, src)
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(strings.TrimPrefix(ref, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	if err := oci.PushNotationSignature(context.Background(), r.Context(), m, s.Key, s.Chain); err != nil {
		t.Fatal(err)
	}
}

// copyNotationSignatureTo attaches the Notation signature of from to to.
func copyNotationSignatureTo(t *testing.T, from, to string) {
	t.Helper()
	ctx, f := context.Background(), &catalog.Fetcher{}
	_, sigs, err := oci.NotationSignatures(ctx, f, v1alpha1.ArtifactSource{URL: from})
	if err != nil || len(sigs) != 1 {
		t.Fatalf("the signatures of %s: %d, %v", from, len(sigs), err)
	}
	toM, err := oci.ResolveManifest(ctx, f, v1alpha1.ArtifactSource{URL: to})
	if err != nil {
		t.Fatal(err)
	}
	r, err := name.ParseReference(strings.TrimPrefix(to, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	if err := oci.PushNotationEnvelope(r.Context(), toM, sigs[0].Envelope); err != nil {
		t.Fatal(err)
	}
}

func notationPolicy(mode v1alpha1.VerificationMode, roots []byte, identities ...string) *v1alpha1.VerificationPolicy {
	return &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationNotation, Mode: mode, Notation: &v1alpha1.NotationVerification{
		TrustStores:       []v1alpha1.NotationTrustStore{{Name: "example", Certificates: string(roots)}},
		TrustedIdentities: identities,
	}}
}

// TestNotationEnforce: under an Enforce Notation policy (a test root, one
// trusted subject), a package and a Helm chart in the registry signed by
// that subject install and show it; an unsigned package, one signed under
// another root and one replaced after signing are refused with a
// terminal condition naming why, and nothing of them is applied. The API
// server refuses a malformed trusted identity.
func TestNotationEnforce(t *testing.T) {
	ctx := context.Background()
	ns := packageNamespace(t)
	host := catalogtest.NewRegistry(t)
	repository := "oci://" + host + "/" + ns
	root, otherRoot := verifytest.NewRoot(t, "Example Root"), verifytest.NewRoot(t, "Other Root")
	release := root.NotationLeaf(t, "Example", "release")
	stranger := otherRoot.NotationLeaf(t, "Other", "release")

	notationSignRef(t, pushPackage(t, repository, configPackage("nv-pkg", "1.0.0", "a")), release)
	notationSignRef(t, pushChart(t, repository, helmrepo.Chart{Name: "nv-chart", Version: "1.0.0",
		Files: map[string]string{"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Release.Name }}-nv-chart\ndata: {a: b}\n"}}), release)
	pushPackage(t, repository, configPackage("nv-none", "1.0.0", "a"))
	notationSignRef(t, pushPackage(t, repository, configPackage("nv-stranger", "1.0.0", "a")), stranger)
	signed := pushPackage(t, repository, configPackage("nv-tampered", "1.0.0", "a"))
	notationSignRef(t, signed, release)
	tampered := pushPackage(t, repository, configPackage("nv-tampered", "1.0.0", "evil"))
	copyNotationSignatureTo(t, signed, tampered)

	bad := &v1alpha1.Catalog{ObjectMeta: metav1.ObjectMeta{Name: ns + "-bad"}, Spec: v1alpha1.CatalogSpec{
		Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: repository}},
		Verify: notationPolicy("", root.PEM, "CN=release")}}
	if err := env.Client.Create(ctx, bad); err == nil || !strings.Contains(err.Error(), "x509.subject: <distinguished name>") {
		t.Fatalf("a trusted identity without x509.subject: want refused, got %v", err)
	}

	const identity = "x509.subject: C=US, ST=WA, O=Example, CN=release"
	signedCatalogPolicy(t, ns, repository, notationPolicy(v1alpha1.VerificationEnforce, root.PEM, identity))

	const signer = `x509.subject "CN=release,O=Example,ST=WA,C=US"`
	for _, ext := range []string{"nv-pkg", "nv-chart"} {
		inst := install(t, ns, ext, ext, "")
		got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
		a := got.Status.Artifact
		if a == nil || a.Verification == nil || !a.Verification.Verified || a.Verification.Provider != v1alpha1.VerificationNotation ||
			a.Verification.Identity != signer || !strings.HasPrefix(a.Digest, "sha256:") {
			t.Fatalf("%s: status.artifact %s, want verified by %s (Notation)", ext, describeArtifact(a), signer)
		}
		if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionVerified); c == nil || c.Status != metav1.ConditionTrue || !strings.Contains(c.Message, signer+" (Notation)") {
			t.Fatalf("%s: Verified condition %+v", ext, c)
		}
		if _, err := get(t, configMapGVK, ns, ext+"-"+ext); err != nil {
			t.Fatalf("%s: its ConfigMap: %v", ext, err)
		}
	}

	for _, tc := range []struct {
		extension, reason string
		want              []string
	}{
		{"nv-none", v1alpha1.ReasonSignatureMissing, []string{"nv-none 1.0.0", "has no Notation signature", `x509.subject "C=US, ST=WA, O=Example, CN=release"`, "notation sign"}},
		{"nv-stranger", v1alpha1.ReasonIdentityMismatch, []string{"no certificate the policy trusts", `expected a signature by x509.subject "C=US, ST=WA, O=Example, CN=release" of trust store ca:example`,
			`found signature 1 by x509.subject "CN=release,O=Other,ST=WA,C=US" (issued under root "CN=Other Root")`}},
		{"nv-tampered", v1alpha1.ReasonSignatureInvalid, []string{"covers another artifact", tampered[strings.LastIndex(tampered, "@")+1:]}},
	} {
		inst := install(t, ns, tc.extension, tc.extension, "")
		got := waitCondition(t, inst, v1alpha1.ConditionStalled, metav1.ConditionTrue, tc.reason)
		msg := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionInstalled).Message
		t.Logf("%s: %s", tc.reason, msg)
		for _, w := range tc.want {
			if !strings.Contains(msg, w) {
				t.Errorf("%s: the message lacks %q:\n%s", tc.extension, w, msg)
			}
		}
		if a := got.Status.Artifact; a == nil || a.Verification == nil || a.Verification.Verified || a.Verification.Provider != v1alpha1.VerificationNotation {
			t.Errorf("%s: status.artifact %s", tc.extension, describeArtifact(a))
		}
		if _, err := get(t, configMapGVK, ns, tc.extension+"-"+tc.extension); !apierrors.IsNotFound(err) {
			t.Errorf("%s: refused, yet its ConfigMap exists (%v)", tc.extension, err)
		}
		if got.Status.InventoryCount != 0 || len(got.Status.History) != 0 {
			t.Errorf("%s: refused, yet something was applied: %d objects, %d revisions", tc.extension, got.Status.InventoryCount, len(got.Status.History))
		}
	}
}

// TestNotationAudit: under an Audit Notation policy an unsigned package
// installs, and its installation reports it: Verified False, a Warning
// Event.
func TestNotationAudit(t *testing.T) {
	ns := packageNamespace(t)
	host := catalogtest.NewRegistry(t)
	repository := "oci://" + host + "/" + ns
	root := verifytest.NewRoot(t, "Example Root")
	pushPackage(t, repository, configPackage("nv-audit", "1.0.0", "a"))
	signedCatalogPolicy(t, ns, repository, notationPolicy(v1alpha1.VerificationAudit, root.PEM, "*"))

	inst := install(t, ns, "nv-audit", "nv-audit", "")
	got := waitCondition(t, inst, v1alpha1.ConditionReady, metav1.ConditionTrue, v1alpha1.ReasonSucceeded)
	c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionVerified)
	if c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonSignatureMissing || !strings.Contains(c.Message, "has no Notation signature") {
		t.Fatalf("Verified condition %+v", c)
	}
	if a := got.Status.Artifact; a == nil || a.Verification == nil || a.Verification.Mode != v1alpha1.VerificationAudit || a.Verification.Verified {
		t.Fatalf("status.artifact %s", describeArtifact(a))
	}
	if _, err := get(t, configMapGVK, ns, "nv-audit-nv-audit"); err != nil {
		t.Fatalf("the audited package is not installed: %v", err)
	}
	assertEvent(t, ns, "nv-audit", v1alpha1.ReasonSignatureMissing, "spec.verify is Audit")
}
