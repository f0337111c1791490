package sources_test

import (
	"context"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/verify"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

// pushKeyless pushes DemoPackage(v) with extra data, signed keyless with
// a fresh leaf of ca for issuer and subject (nil ca: unsigned).
func pushKeyless(t testing.TB, destination, v, extra string, ca *verifytest.CA, issuer, subject string) string {
	t.Helper()
	files := catalogtest.DemoPackage(v)
	files["templates/cm.yaml"] = append(files["templates/cm.yaml"], []byte("  extra: "+extra+"\n")...)
	archive, err := catalog.PackageArchive(files)
	if err != nil {
		t.Fatal(err)
	}
	o := oci.PushOptions{PlainHTTP: true}
	if ca != nil {
		key, cert := ca.Leaf(t, issuer, subject)
		o.Sign = &oci.SignOptions{Key: key, Certificate: cert, Chain: ca.PEM}
	}
	ref, err := oci.PushPackage(context.Background(), archive, destination, o)
	if err != nil {
		t.Fatal(err)
	}
	return ref
}

// TestVerifierKeyless pushes keyless-signed packages (certificates from a
// test root through an intermediate) and verifies them offline.
func TestVerifierKeyless(t *testing.T) {
	const issuer = "https://token.actions.githubusercontent.com"
	const subject = "https://github.com/example/pkgs/.github/workflows/release.yaml@refs/heads/main"
	host := catalogtest.NewRegistry(t)
	destination := "oci://" + host + "/packages"
	root := verifytest.NewRoot(t, "test root")
	inter := root.Intermediate(t, "test intermediate")
	signed := pushKeyless(t, destination, "1.0.0", "a", inter, issuer, subject)
	wrongIssuer := pushKeyless(t, destination, "1.1.0", "b", inter, "https://evil.example.com", subject)
	untrusted := pushKeyless(t, destination, "1.2.0", "c", verifytest.NewRoot(t, "other"), issuer, subject)
	unsigned := pushKeyless(t, destination, "2.0.0", "d", nil, "", "")

	policy := func(ids ...v1alpha1.KeylessIdentity) *v1alpha1.VerificationPolicy {
		return &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Cosign: &v1alpha1.CosignVerification{
			Keyless: &v1alpha1.KeylessVerification{TrustedRoots: string(root.PEM), Identities: ids}}}
	}
	lookup := catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{
		"exact":  {Spec: v1alpha1.CatalogSpec{Verify: policy(v1alpha1.KeylessIdentity{Issuer: issuer, Subject: subject})}},
		"regexp": {Spec: v1alpha1.CatalogSpec{Verify: policy(v1alpha1.KeylessIdentity{Issuer: issuer, SubjectRegExp: `https://github\.com/example/.*`})}},
	}}
	for name, c := range lookup.Catalogs {
		c.Name = name
	}
	v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup, Cache: &verify.Cache{}}
	for _, tc := range []struct {
		name, catalog, url string
		verified           bool
		reason             string
		want               []string
	}{
		{name: "exact identity", catalog: "exact", url: signed, verified: true, want: []string{`issuer "` + issuer + `", subject "` + subject + `"`}},
		{name: "subject by regular expression", catalog: "regexp", url: signed, verified: true, want: []string{subject}},
		{name: "wrong issuer", catalog: "regexp", url: wrongIssuer, reason: v1alpha1.ReasonIdentityMismatch,
			want: []string{`expected a signature by issuer "` + issuer + `"`, `found signature 1 by issuer "https://evil.example.com"`}},
		{name: "certificate from another root", catalog: "exact", url: untrusted, reason: v1alpha1.ReasonSignatureInvalid, want: []string{"does not chain to a trusted root"}},
		{name: "unsigned", catalog: "exact", url: unsigned, reason: v1alpha1.ReasonSignatureMissing, want: []string{"no keyless cosign signature"}},
	} {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), "demo-pkg", v1alpha1.ArtifactSource{Catalog: tc.catalog, URL: tc.url}, "")
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Provider != v1alpha1.VerificationCosign || got.Verified != tc.verified || got.Reason != tc.reason {
				t.Fatalf("got %+v", got)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Identity+got.Message, w) {
					t.Errorf("%q lacks %q", got.Identity+got.Message, w)
				}
			}
		})
	}
}
