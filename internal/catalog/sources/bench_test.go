package sources_test

import (
	"context"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/verify"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

// BenchmarkVerifier is what one fetch pays for verification, with the
// signature read from an in-process registry (cosign, Notation) or HTTP Helm
// repository (provenance, with the archive, whose read the fetch then
// saves through the artifact cache in the manager): cache=miss verifies (the
// first fetch of a digest, or with no cache), cache=hit finds the
// digest verified already (every later fetch).
func BenchmarkVerifier(b *testing.B) {
	host := catalogtest.NewRegistry(b)
	destination := "oci://" + host + "/packages"
	alice := newSigningKey(b)
	keyed := pushDemo(b, destination, "1.0.0", "a", alice)
	root := verifytest.NewRoot(b, "root")
	keyless := pushKeyless(b, destination, "2.0.0", "b", root, "https://issuer.example.com", "https://example.com/release")
	notationSigned := pushDemo(b, destination, "3.0.0", "c")
	notationSign(b, notationSigned, root.NotationLeaf(b, "Example", "release"))
	chart := provChart("1.0.0", "a")
	repo := helmrepo.NewServer(b, chart)
	pgp := newPGPSigner(b, "release")
	repo.SetProvenance(chart, signChart(b, pgp, chart))
	archive, err := helmrepo.Archive(chart)
	if err != nil {
		b.Fatal(err)
	}
	lookup := catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{
		"prov": {Spec: v1alpha1.CatalogSpec{Verify: &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationHelmProvenance, HelmProvenance: &v1alpha1.HelmProvenanceVerification{
			Keyrings: []v1alpha1.OpenPGPKeyring{{Name: "release", Keyring: string(pgp.public)}}}}}},
		"notation": {Spec: v1alpha1.CatalogSpec{Verify: notationPolicy(v1alpha1.VerificationEnforce,
			v1alpha1.NotationTrustStore{Name: "root", Certificates: string(root.PEM)}, releaseIdentity)}},
		"keyed": {Spec: v1alpha1.CatalogSpec{Verify: cosignPolicy(v1alpha1.VerificationEnforce, v1alpha1.CosignKey{Name: "alice", PublicKey: string(alice.public)})}},
		"keyless": {Spec: v1alpha1.CatalogSpec{Verify: &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Cosign: &v1alpha1.CosignVerification{
			Keyless: &v1alpha1.KeylessVerification{TrustedRoots: string(root.PEM), Identities: []v1alpha1.KeylessIdentity{{Issuer: "https://issuer.example.com", Subject: "https://example.com/release"}}}}}}},
	}}
	for _, bc := range []struct{ name, catalog, url, digest string }{{"cosign-keyed", "keyed", keyed, ""}, {"cosign-keyless", "keyless", keyless, ""},
		{"notation", "notation", notationSigned, ""},
		{"helm-provenance", "prov", repo.URL() + "/demo-1.0.0.tgz", catalog.Digest(archive)}} {
		for _, cached := range []bool{false, true} {
			name := "provider=" + bc.name + "/cache=miss"
			v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup}
			if cached {
				name = "provider=" + bc.name + "/cache=hit"
				v.Cache = &verify.Cache{}
			}
			src := v1alpha1.ArtifactSource{Catalog: bc.catalog, URL: bc.url, Digest: bc.digest}
			b.Run(name, func(b *testing.B) {
				for b.Loop() {
					if got, err := v.Verify(context.Background(), "demo", src, ""); err != nil || !got.Verified {
						b.Fatalf("%+v, %v", got, err)
					}
				}
			})
		}
	}
}
