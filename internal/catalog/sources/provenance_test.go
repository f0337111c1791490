package sources_test

import (
	"context"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
	"github.com/annex-platform/annex/internal/verify"
)

// pgpSigner is an OpenPGP key pair generated for a test.
type pgpSigner struct{ private, public []byte }

func newPGPSigner(t testing.TB, name string) pgpSigner {
	t.Helper()
	priv, pub, err := verify.GenerateOpenPGPKey(name, name+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	return pgpSigner{priv, pub}
}

// signChart makes the provenance file of c's archive with k.
func signChart(t testing.TB, k pgpSigner, c helmrepo.Chart) []byte {
	t.Helper()
	archive, err := helmrepo.Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	prov, err := verify.SignProvenance(k.private, archive, c.Name+"-"+c.Version+".tgz", []byte("apiVersion: v2\nname: "+c.Name+"\nversion: "+c.Version+"\n"))
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

func provChart(version, message string) helmrepo.Chart {
	return helmrepo.Chart{Name: "demo", Version: version, Files: map[string]string{
		"templates/cm.yaml": "apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: demo\ndata:\n  message: " + message + "\n",
	}}
}

// TestVerifierHelmProvenance serves signed, unsigned, foreign-signed and
// tampered charts from an HTTP Helm repository and verifies them under
// HelmProvenance policies.
func TestVerifierHelmProvenance(t *testing.T) {
	alice, mallory := newPGPSigner(t, "alice"), newPGPSigner(t, "mallory")
	signed, unsigned, foreign, tampered := provChart("1.0.0", "a"), provChart("2.0.0", "b"), provChart("3.0.0", "c"), provChart("4.0.0", "d")
	repo := helmrepo.NewServer(t, signed, unsigned, foreign, tampered)
	repo.SetProvenance(signed, signChart(t, alice, signed))
	repo.SetProvenance(foreign, signChart(t, mallory, foreign))
	// Tampered: the repository re-published 4.0.0 with other content and
	// reindexed it, next to the provenance of the original.
	repo.SetProvenance(tampered, signChart(t, alice, tampered))
	evil := provChart("4.0.0", "evil")
	repo.Add(t, evil)

	policy := func(mode v1alpha1.VerificationMode, rings ...v1alpha1.OpenPGPKeyring) *v1alpha1.VerificationPolicy {
		return &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationHelmProvenance, Mode: mode, HelmProvenance: &v1alpha1.HelmProvenanceVerification{Keyrings: rings}}
	}
	aliceRing := v1alpha1.OpenPGPKeyring{Name: "alice", Keyring: string(alice.public)}
	fromSecret := v1alpha1.OpenPGPKeyring{Name: "alice-secret", SecretRef: &v1alpha1.KeyringSecretReference{Name: "rings", Namespace: "annex-system"}}
	lookup := catalogtest.Lookup{
		Catalogs: map[string]*v1alpha1.Catalog{
			"alice":  {Spec: v1alpha1.CatalogSpec{Verify: policy("", aliceRing)}},
			"secret": {Spec: v1alpha1.CatalogSpec{Verify: policy(v1alpha1.VerificationEnforce, fromSecret)}},
			"audit":  {Spec: v1alpha1.CatalogSpec{Verify: policy(v1alpha1.VerificationAudit, aliceRing)}},
			"broken": {Spec: v1alpha1.CatalogSpec{Verify: policy("", v1alpha1.OpenPGPKeyring{Name: "junk", Keyring: "-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n"})}},
		},
		Secrets: map[string]map[string][]byte{"annex-system/rings": {"pubring.gpg": alice.public}},
	}
	for name, c := range lookup.Catalogs {
		c.Name = name
	}
	cache := &verify.Cache{}
	v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup, Cache: cache}
	source := func(catalogName string, c helmrepo.Chart) v1alpha1.ArtifactSource {
		archive, err := helmrepo.Archive(c)
		if err != nil {
			t.Fatal(err)
		}
		return v1alpha1.ArtifactSource{Catalog: catalogName, URL: repo.URL() + "/" + c.Name + "-" + c.Version + ".tgz", Digest: catalog.Digest(archive)}
	}

	cases := []struct {
		name, catalog string
		chart         helmrepo.Chart
		signer        string
		reason        string
		mode          v1alpha1.VerificationMode
		want          []string
	}{
		{name: "signed", catalog: "alice", chart: signed, signer: `keyring "alice", OpenPGP key`, mode: v1alpha1.VerificationEnforce},
		{name: "signed, keyring from a Secret", catalog: "secret", chart: signed, signer: `keyring "alice-secret"`},
		{name: "unsigned", catalog: "alice", chart: unsigned, reason: v1alpha1.ReasonSignatureMissing,
			want: []string{"demo 2.0.0", `catalog "alice"`, "no Helm provenance file", source("", unsigned).Digest}},
		{name: "unsigned audit", catalog: "audit", chart: unsigned, reason: v1alpha1.ReasonSignatureMissing, mode: v1alpha1.VerificationAudit},
		{name: "other key", catalog: "alice", chart: foreign, reason: v1alpha1.ReasonIdentityMismatch,
			want: []string{`keyring "alice" (`, "signed by OpenPGP key"}},
		{name: "tampered", catalog: "alice", chart: evil, reason: v1alpha1.ReasonSignatureInvalid,
			want: []string{"does not cover this archive", source("", evil).Digest}},
		{name: "keyring that does not parse", catalog: "broken", chart: signed, reason: v1alpha1.ReasonVerificationPolicyInvalid,
			want: []string{"spec.verify.helmProvenance.keyrings[0] (junk)"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), "demo "+tc.chart.Version, source(tc.catalog, tc.chart), "")
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Provider != v1alpha1.VerificationHelmProvenance || got.Verified != (tc.signer != "") || (tc.mode != "" && got.Mode != tc.mode) {
				t.Fatalf("got %+v", got)
			}
			if tc.signer != "" {
				if !strings.Contains(got.Identity, tc.signer) || !strings.Contains(got.Identity, "alice <alice@example.com>") {
					t.Fatalf("identity %q, want %s", got.Identity, tc.signer)
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

	// A chart from an OCI registry has no provenance file: never a pass.
	oci := v1alpha1.ArtifactSource{Catalog: "alice", URL: "oci://registry.example.com/charts/demo@sha256:" + strings.Repeat("a", 64)}
	if got, err := v.Verify(context.Background(), "demo 1.0.0", oci, ""); err != nil || got.Verified || got.Reason != v1alpha1.ReasonSignatureMissing ||
		!strings.Contains(got.Message, "not a chart in an HTTP Helm repository") {
		t.Errorf("an OCI chart under HelmProvenance: %+v, %v", got, err)
	}

	// Verified once per digest: a second verification reads neither the
	// provenance file nor the archive again.
	provPath, tgzPath := "/demo-1.0.0.tgz.prov", "/demo-1.0.0.tgz"
	before := repo.Requests(provPath) + repo.Requests(tgzPath)
	if got, err := v.Verify(context.Background(), "demo 1.0.0", source("alice", signed), ""); err != nil || !got.Verified {
		t.Fatalf("again: %+v, %v", got, err)
	}
	if after := repo.Requests(provPath) + repo.Requests(tgzPath); after != before {
		t.Errorf("a cached digest was fetched again (%d requests, then %d)", before, after)
	}
}
