package sources_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/verify"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

// notationSign attaches a Notation signature of the artifact at ref
// (oci://…@sha256:… or :tag) by s, as `notation sign` does.
func notationSign(t testing.TB, ref string, s verifytest.NotationSigner) {
	t.Helper()
	m, err := oci.ResolveManifest(context.Background(), &catalog.Fetcher{}, v1alpha1.ArtifactSource{URL: ref})
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

// copyNotationSignature attaches the Notation signature of from to to,
// as an attacker who replaced to's content under from's tag would.
func copyNotationSignature(t testing.TB, from, to string) {
	t.Helper()
	ctx, f := context.Background(), &catalog.Fetcher{}
	_, sigs, err := oci.NotationSignatures(ctx, f, v1alpha1.ArtifactSource{URL: from})
	if err != nil || len(sigs) != 1 {
		t.Fatalf("signatures of %s: %d, %v", from, len(sigs), err)
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

const releaseIdentity = "x509.subject: C=US, ST=WA, O=Example, CN=release"

func notationPolicy(mode v1alpha1.VerificationMode, store v1alpha1.NotationTrustStore, ids ...string) *v1alpha1.VerificationPolicy {
	return &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationNotation, Mode: mode,
		Notation: &v1alpha1.NotationVerification{TrustStores: []v1alpha1.NotationTrustStore{store}, TrustedIdentities: ids}}
}

// TestVerifierNotation pushes packages signed with Notation (certificates
// of a test root), unsigned, signed by another root and tampered, and
// verifies them under catalogs' Notation policies, with the trust store
// inline, in a Secret and in a ConfigMap.
func TestVerifierNotation(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	destination := "oci://" + host + "/packages"
	root, otherRoot := verifytest.NewRoot(t, "Example Root"), verifytest.NewRoot(t, "Other Root")
	release := root.NotationLeaf(t, "Example", "release")
	stranger := otherRoot.NotationLeaf(t, "Other", "release")

	signed := pushDemo(t, destination, "1.0.0", "a")
	notationSign(t, signed, release)
	byStranger := pushDemo(t, destination, "1.2.0", "c")
	notationSign(t, byStranger, stranger)
	unsigned := pushDemo(t, destination, "2.0.0", "d")
	// Tampered: another archive under 1.0.0's tag, with a copy of 1.0.0's
	// signature attached to it.
	tampered := pushDemo(t, destination, "1.0.0", "evil")
	copyNotationSignature(t, signed, tampered)
	// Signed, and named by tag below.
	pushDemo(t, destination, "3.0.0", "e")
	notationSign(t, destination+"/demo-pkg:3.0.0", release)

	inline := v1alpha1.NotationTrustStore{Name: "example", Certificates: string(root.PEM)}
	lookup := catalogtest.Lookup{
		Catalogs: map[string]*v1alpha1.Catalog{
			"release":    {Spec: v1alpha1.CatalogSpec{Verify: notationPolicy("", inline, releaseIdentity)}},
			"audit":      {Spec: v1alpha1.CatalogSpec{Verify: notationPolicy(v1alpha1.VerificationAudit, inline, releaseIdentity)}},
			"secret":     {Spec: v1alpha1.CatalogSpec{Verify: notationPolicy("", v1alpha1.NotationTrustStore{Name: "example", SecretRef: &v1alpha1.CertificatesReference{Name: "roots", Namespace: "annex-system", Key: "ca.crt"}}, "*")}},
			"configmap":  {Spec: v1alpha1.CatalogSpec{Verify: notationPolicy("", v1alpha1.NotationTrustStore{Name: "example", ConfigMapRef: &v1alpha1.CertificatesReference{Name: "roots", Namespace: "annex-system", Key: "ca.crt"}}, "*")}},
			"lost-store": {Spec: v1alpha1.CatalogSpec{Verify: notationPolicy("", v1alpha1.NotationTrustStore{Name: "gone", ConfigMapRef: &v1alpha1.CertificatesReference{Name: "nope", Namespace: "x", Key: "ca.crt"}}, "*")}},
		},
		Secrets:    map[string]map[string][]byte{"annex-system/roots": {"ca.crt": root.PEM}},
		ConfigMaps: map[string]map[string]string{"annex-system/roots": {"ca.crt": string(root.PEM)}},
	}
	for n, c := range lookup.Catalogs {
		c.Name = n
	}
	cache := &verify.Cache{}
	v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup, Cache: cache}
	const releaseSubject = `x509.subject "CN=release,O=Example,ST=WA,C=US"`

	cases := []struct {
		name, catalog, url string
		verified           bool
		reason             string
		mode               v1alpha1.VerificationMode
		want               []string
	}{
		// Signed by the trusted subject under the trusted root.
		{name: "signed", catalog: "release", url: signed, verified: true, mode: v1alpha1.VerificationEnforce},
		// The trust store from a Secret and from a ConfigMap.
		{name: "store in a secret", catalog: "secret", url: signed, verified: true},
		{name: "store in a configmap", catalog: "configmap", url: signed, verified: true},
		// A tag reference (an OLM bundle image by tag) verifies the digest
		// the tag names.
		{name: "by tag", catalog: "release", url: destination + "/demo-pkg:3.0.0", verified: true},
		// Unsigned: refused under Enforce, reported under Audit.
		{name: "unsigned", catalog: "release", url: unsigned, reason: v1alpha1.ReasonSignatureMissing, mode: v1alpha1.VerificationEnforce,
			want: []string{`catalog "release"`, unsigned, "has no Notation signature", "notation sign"}},
		{name: "unsigned audit", catalog: "audit", url: unsigned, reason: v1alpha1.ReasonSignatureMissing, mode: v1alpha1.VerificationAudit},
		// Signed under another root: the trusted identity and the one found.
		{name: "other root", catalog: "release", url: byStranger, reason: v1alpha1.ReasonIdentityMismatch,
			want: []string{`x509.subject "C=US, ST=WA, O=Example, CN=release" of trust store ca:example`, `x509.subject "CN=release,O=Other,ST=WA,C=US" (issued under root "CN=Other Root")`}},
		// Same tag, other content, the old signature attached: refused.
		{name: "tampered", catalog: "release", url: tampered, reason: v1alpha1.ReasonSignatureInvalid,
			want: []string{"covers another artifact", tampered[strings.LastIndex(tampered, "@")+1:]}},
		// An HTTP chart cannot carry a Notation signature.
		{name: "http artifact", catalog: "release", url: "http://charts.example.com/demo-1.0.0.tgz", reason: v1alpha1.ReasonSignatureMissing,
			want: []string{"served over http://"}},
		// A ConfigMap that does not exist: the policy is invalid.
		{name: "missing configmap", catalog: "lost-store", url: signed, reason: v1alpha1.ReasonVerificationPolicyInvalid,
			want: []string{"spec.verify.notation.trustStores[0] (gone).configMapRef", "x/nope"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), "demo-pkg "+tc.name, v1alpha1.ArtifactSource{Catalog: tc.catalog, URL: tc.url}, "")
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Provider != v1alpha1.VerificationNotation || got.Verified != tc.verified || (tc.mode != "" && got.Mode != tc.mode) {
				t.Fatalf("got %+v", got)
			}
			if tc.verified {
				if got.Identity != releaseSubject {
					t.Fatalf("identity %q, want %s", got.Identity, releaseSubject)
				}
				return
			}
			if got.Reason != tc.reason {
				t.Fatalf("reason %s, want %s: %s", got.Reason, tc.reason, got.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Message, w) {
					t.Errorf("message lacks %q:\n%s", w, got.Message)
				}
			}
		})
	}
}
