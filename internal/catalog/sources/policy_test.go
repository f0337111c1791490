package sources_test

import (
	"context"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/verify"
)

func TestEffectivePolicy(t *testing.T) {
	const enforce, audit = v1alpha1.VerificationEnforce, v1alpha1.VerificationAudit
	keys := &v1alpha1.CosignVerification{Keys: []v1alpha1.CosignKey{{Name: "k"}}}
	pol := func(mode v1alpha1.VerificationMode) *v1alpha1.VerificationPolicy {
		return &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: mode, Cosign: keys}
	}
	cases := []struct {
		name             string
		catalog, def     *v1alpha1.VerificationPolicy
		install          v1alpha1.VerificationMode
		want             v1alpha1.VerificationMode // "" means no policy
		fromDefault      bool
		noProviderPolicy bool
	}{
		{name: "nothing"},
		{name: "catalog only, mode defaults to Enforce", catalog: pol(""), want: enforce},
		{name: "catalog audit", catalog: pol(audit), want: audit},
		{name: "default applies to a catalog without verify", def: pol(audit), want: audit, fromDefault: true},
		{name: "default Enforce: a catalog cannot loosen it to Audit", catalog: pol(audit), def: pol(enforce), want: enforce},
		{name: "default Enforce with its mode unset", catalog: pol(audit), def: pol(""), want: enforce},
		{name: "catalog tightens an Audit default", catalog: pol(enforce), def: pol(audit), want: enforce},
		{name: "installation tightens the catalog", catalog: pol(audit), install: enforce, want: enforce},
		{name: "installation tightens the default", def: pol(audit), install: enforce, want: enforce, fromDefault: true},
		{name: "installation Enforce without any policy trusts no one", install: enforce, want: enforce, noProviderPolicy: true},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, fromDefault := sources.EffectivePolicy(tc.catalog, tc.def, tc.install)
			if tc.want == "" {
				if got != nil {
					t.Fatalf("got %+v, want no policy", got)
				}
				return
			}
			if got == nil || got.Mode != tc.want || fromDefault != tc.fromDefault || (got.Provider == "") != tc.noProviderPolicy {
				t.Fatalf("got %+v (from default %v), want mode %s (from default %v)", got, fromDefault, tc.want, tc.fromDefault)
			}
		})
	}
	// The inputs are not changed.
	c := pol(audit)
	sources.EffectivePolicy(c, pol(enforce), enforce)
	if c.Mode != audit {
		t.Fatal("EffectivePolicy changed the catalog's policy")
	}
}

func TestParseDefaultPolicy(t *testing.T) {
	good := "provider: Cosign\nmode: Audit\ncosign:\n  keys:\n  - name: k\n    publicKey: x\n"
	if p, err := sources.ParseDefaultPolicy([]byte(good)); err != nil || p.Mode != v1alpha1.VerificationAudit || p.Cosign.Keys[0].Name != "k" {
		t.Fatalf("got %+v, %v", p, err)
	}
	for _, bad := range []struct{ yaml, want string }{
		{"provider: Cosign\n", "exactly one of cosign.keys and cosign.keyless"},
		{"provider: HelmProvenance\n", "helmProvenance.keyrings: required"},
		{"provider: Notary\n", `provider "Notary"`},
		{good + "mode: Sometimes\n", "mode"},
		{good + "surprise: 1\n", "not a verification policy"},
	} {
		if _, err := sources.ParseDefaultPolicy([]byte(bad.yaml)); err == nil || !strings.Contains(err.Error(), bad.want) {
			t.Errorf("%q: want an error with %q, got %v", bad.yaml, bad.want, err)
		}
	}
}

// TestVerifierDefaultPolicy: the cluster default covers catalogs without
// spec.verify, cannot be loosened, never refuses the built-in catalog,
// and an unreadable default refuses instead of passing.
func TestVerifierDefaultPolicy(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	destination := "oci://" + host + "/packages"
	alice := newSigningKey(t)
	signed := pushDemo(t, destination, "1.0.0", "a", alice)
	unsigned := pushDemo(t, destination, "2.0.0", "b")
	aliceKey := v1alpha1.CosignKey{Name: "alice", PublicKey: string(alice.public)}
	lookup := catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{
		"open":  {},
		"loose": {Spec: v1alpha1.CatalogSpec{Verify: cosignPolicy(v1alpha1.VerificationAudit, aliceKey)}},
	}}
	for name, c := range lookup.Catalogs {
		c.Name = name
	}
	def := cosignPolicy(v1alpha1.VerificationEnforce, aliceKey)
	var defErr error
	v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup, Cache: &verify.Cache{}, DefaultName: "ConfigMap annex-system/verify",
		Default: func(context.Context) (*v1alpha1.VerificationPolicy, error) { return def, defErr }}
	check := func(name, catalogName, url string, install v1alpha1.VerificationMode, verified bool, mode v1alpha1.VerificationMode, want ...string) {
		t.Helper()
		got, err := v.Verify(context.Background(), "demo", v1alpha1.ArtifactSource{Catalog: catalogName, URL: url}, install)
		if err != nil {
			t.Fatalf("%s: %v", name, err)
		}
		if got == nil || got.Verified != verified || got.Mode != mode {
			t.Fatalf("%s: got %+v, want verified %v, mode %s", name, got, verified, mode)
		}
		for _, w := range want {
			if !strings.Contains(got.Message+got.Identity, w) {
				t.Errorf("%s: %q lacks %q", name, got.Message+got.Identity, w)
			}
		}
	}
	check("default verifies a catalog without verify", "open", signed, "", true, v1alpha1.VerificationEnforce, `key "alice"`)
	check("default refuses unsigned, naming itself", "open", unsigned, "", false, v1alpha1.VerificationEnforce, "cluster default policy", "ConfigMap annex-system/verify")
	check("a catalog's Audit does not loosen an Enforce default", "loose", unsigned, "", false, v1alpha1.VerificationEnforce, `catalog "loose"`,
		"Audit cannot apply: the cluster default policy (ConfigMap annex-system/verify) is Enforce")
	if got, _ := v.Verify(context.Background(), "demo", v1alpha1.ArtifactSource{Catalog: "loose", URL: unsigned}, ""); strings.Contains(got.Message, "spec.verify.mode to Audit") {
		t.Errorf("under an Enforce default, the message suggests Audit: %s", got.Message)
	}
	check("the built-in catalog is never refused", "open", "builtin://cert-manager/1.0.0", v1alpha1.VerificationEnforce, true, "")

	def = cosignPolicy(v1alpha1.VerificationAudit, aliceKey)
	check("an Audit default reports", "open", unsigned, "", false, v1alpha1.VerificationAudit)
	check("the installation tightens it", "open", unsigned, v1alpha1.VerificationEnforce, false, v1alpha1.VerificationEnforce, "Audit cannot apply: the installation's spec.verifyMode is Enforce")

	def, defErr = nil, &sources.InvalidDefaultPolicyError{Problem: "ConfigMap annex-system/verify does not exist"}
	check("an unreadable default refuses", "open", signed, "", false, v1alpha1.VerificationEnforce, "does not exist", "cluster administrator")
	// A catalog with its own policy verifies with its keys, under Enforce.
	check("a catalog with its own policy", "loose", signed, "", true, v1alpha1.VerificationEnforce)

	def, defErr = nil, nil
	check("no policy, installation Enforce: trusts no one", "open", signed, v1alpha1.VerificationEnforce, false, v1alpha1.VerificationEnforce, "spec.verifyMode is Enforce", `catalog "open" has no spec.verify`)
	if got, err := v.Verify(context.Background(), "demo", v1alpha1.ArtifactSource{Catalog: "open", URL: unsigned}, ""); got != nil || err != nil {
		t.Fatalf("no policy at all: got %+v, %v", got, err)
	}
}
