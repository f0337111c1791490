package sources_test

import (
	"context"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/verify"
)

// signingKey is a key pair generated for a test.
type signingKey struct{ private, public []byte }

func newSigningKey(t testing.TB) signingKey {
	t.Helper()
	priv, pub, err := verify.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	return signingKey{priv, pub}
}

// pushDemo pushes DemoPackage(v), with extra data in its template to make
// another digest, signed with each of keys, and returns its reference.
func pushDemo(t testing.TB, destination, v, extra string, keys ...signingKey) string {
	t.Helper()
	files := catalogtest.DemoPackage(v)
	files["templates/cm.yaml"] = append(files["templates/cm.yaml"], []byte("  extra: "+extra+"\n")...)
	archive, err := catalog.PackageArchive(files)
	if err != nil {
		t.Fatal(err)
	}
	var ref string
	for i := 0; i == 0 || i < len(keys); i++ {
		o := oci.PushOptions{PlainHTTP: true}
		if len(keys) > 0 {
			o.Sign = &oci.SignOptions{Key: keys[i].private}
		}
		if ref, err = oci.PushPackage(context.Background(), archive, destination, o); err != nil {
			t.Fatal(err)
		}
	}
	return ref
}

func cosignPolicy(mode v1alpha1.VerificationMode, keys ...v1alpha1.CosignKey) *v1alpha1.VerificationPolicy {
	return &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: mode, Cosign: &v1alpha1.CosignVerification{Keys: keys}}
}

// TestVerifier pushes signed, unsigned and tampered packages to an
// in-process registry and verifies them under catalogs' policies.
func TestVerifier(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	destination := "oci://" + host + "/packages"
	alice, bob := newSigningKey(t), newSigningKey(t)
	signedByAlice := pushDemo(t, destination, "1.0.0", "a", alice)
	signedByBoth := pushDemo(t, destination, "1.1.0", "b", alice, bob)
	signedByBob := pushDemo(t, destination, "1.2.0", "c", bob)
	unsigned := pushDemo(t, destination, "2.0.0", "d")

	// Tampered: another archive pushed under 1.0.0's tag, next to a copy
	// of 1.0.0's signature manifest (a registry account taken over).
	tampered := pushDemo(t, destination, "1.0.0", "evil")
	copySignature(t, signedByAlice, tampered)

	aliceKey := v1alpha1.CosignKey{Name: "alice", PublicKey: string(alice.public)}
	bobFromSecret := v1alpha1.CosignKey{Name: "bob", SecretRef: &v1alpha1.PublicKeySecretReference{Name: "keys", Namespace: "annex-system", Key: "bob.pub"}}
	lookup := catalogtest.Lookup{
		Catalogs: map[string]*v1alpha1.Catalog{
			"alice":    {Spec: v1alpha1.CatalogSpec{Verify: cosignPolicy("", aliceKey)}},
			"rotation": {Spec: v1alpha1.CatalogSpec{Verify: cosignPolicy(v1alpha1.VerificationEnforce, aliceKey, bobFromSecret)}},
			"audit":    {Spec: v1alpha1.CatalogSpec{Verify: cosignPolicy(v1alpha1.VerificationAudit, aliceKey)}},
			"lost-key": {Spec: v1alpha1.CatalogSpec{Verify: cosignPolicy("", v1alpha1.CosignKey{Name: "gone", SecretRef: &v1alpha1.PublicKeySecretReference{Name: "nope", Namespace: "x"}})}},
			"open":     {},
		},
		Secrets: map[string]map[string][]byte{"annex-system/keys": {"bob.pub": bob.public}},
	}
	for name, c := range lookup.Catalogs {
		c.Name = name
	}
	cache := &verify.Cache{}
	v := &sources.Verifier{Fetcher: &catalog.Fetcher{Lookup: lookup}, Lookup: lookup, Cache: cache}

	cases := []struct {
		name, catalog, url string
		// verified: the identity holds signer; otherwise reason and texts.
		verified bool
		signer   string
		reason   string
		mode     v1alpha1.VerificationMode
		want     []string
	}{
		// Signed by the trusted key; the mode defaults to Enforce.
		{name: "signed", catalog: "alice", url: signedByAlice, verified: true, signer: `key "alice"`, mode: v1alpha1.VerificationEnforce},
		// Two keys trusted at once (one of them from a Secret): each passes.
		{name: "rotation old key", catalog: "rotation", url: signedByAlice, verified: true, signer: `key "alice"`},
		{name: "rotation new key", catalog: "rotation", url: signedByBob, verified: true, signer: `key "bob"`},
		{name: "two signatures", catalog: "alice", url: signedByBoth, verified: true, signer: `key "alice"`},
		// Unsigned: refused under Enforce, the outcome carries Audit's mode.
		{name: "unsigned", catalog: "alice", url: unsigned, reason: v1alpha1.ReasonSignatureMissing, mode: v1alpha1.VerificationEnforce,
			want: []string{"demo-pkg 2.0.0", `catalog "alice"`, unsigned, "has no cosign signature"}},
		{name: "unsigned audit", catalog: "audit", url: unsigned, reason: v1alpha1.ReasonSignatureMissing, mode: v1alpha1.VerificationAudit},
		// Signed by another key: the trusted key and the one found are named.
		{name: "other key", catalog: "alice", url: signedByBob, reason: v1alpha1.ReasonIdentityMismatch,
			want: []string{`key "alice"`, "names itself " + fingerprint(t, bob)}},
		// Same tag, other content, the old signature copied: refused.
		{name: "tampered", catalog: "alice", url: tampered, reason: v1alpha1.ReasonSignatureInvalid,
			want: []string{"covers digest " + signedByAlice[strings.LastIndex(signedByAlice, "@")+1:]}},
		// A chart over HTTP cannot carry a cosign signature: never a pass.
		{name: "http artifact", catalog: "alice", url: "http://charts.example.com/demo-1.0.0.tgz", reason: v1alpha1.ReasonSignatureMissing,
			want: []string{"served over http://"}},
		// A key Secret that does not exist: the policy is invalid.
		{name: "missing key secret", catalog: "lost-key", url: signedByAlice, reason: v1alpha1.ReasonVerificationPolicyInvalid,
			want: []string{"spec.verify.cosign.keys[0] (gone).secretRef", "x/nope"}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			got, err := v.Verify(context.Background(), "demo-pkg "+tc.name, v1alpha1.ArtifactSource{Catalog: tc.catalog, URL: tc.url}, "")
			if err != nil {
				t.Fatal(err)
			}
			if got == nil || got.Provider != v1alpha1.VerificationCosign || got.Verified != tc.verified || (tc.mode != "" && got.Mode != tc.mode) {
				t.Fatalf("got %+v", got)
			}
			if tc.verified {
				if !strings.Contains(got.Identity, tc.signer) {
					t.Fatalf("identity %q, want %s", got.Identity, tc.signer)
				}
				return
			}
			if got.Reason != tc.reason {
				t.Fatalf("reason %s, want %s: %s", got.Reason, tc.reason, got.Message)
			}
			for _, w := range tc.want {
				if !strings.Contains(got.Message, strings.ReplaceAll(w, "demo-pkg 2.0.0", "demo-pkg "+tc.name)) {
					t.Errorf("message lacks %q:\n%s", w, got.Message)
				}
			}
		})
	}

	// A catalog without a policy, and a built-in artifact under any.
	if got, err := v.Verify(context.Background(), "x", v1alpha1.ArtifactSource{Catalog: "open", URL: unsigned}, ""); got != nil || err != nil {
		t.Errorf("no policy: got %+v, %v", got, err)
	}
	got, err := v.Verify(context.Background(), "x", v1alpha1.ArtifactSource{Catalog: "alice", URL: "builtin://cert-manager/1.0.0"}, "")
	if err != nil || got == nil || got.Provider != v1alpha1.VerificationBuiltin || !got.Verified {
		t.Errorf("built-in: got %+v, %v", got, err)
	}
	// What verified is cached by digest and key set.
	digest, _ := oci.ManifestDigest(signedByAlice)
	keys := []verify.Key{mustKey(t, "alice", alice.public)}
	if _, ok := cache.Get(digest, verify.KeySetID(keys)); !ok {
		t.Error("the verified digest is not cached")
	}
}

// TestSigningAgainReplacesTheKeysSignature: one signature per key, so
// that publishing again adds nothing and a second key adds one.
func TestSigningAgainReplacesTheKeysSignature(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	alice, bob := newSigningKey(t), newSigningKey(t)
	ref := pushDemo(t, "oci://"+host+"/packages", "1.0.0", "a", alice, alice)
	count := func() int {
		sigs, err := oci.CosignSignatures(context.Background(), &catalog.Fetcher{}, v1alpha1.ArtifactSource{URL: ref})
		if err != nil {
			t.Fatal(err)
		}
		return len(sigs)
	}
	if n := count(); n != 1 {
		t.Fatalf("%d signatures after signing twice with one key, want 1", n)
	}
	pushDemo(t, "oci://"+host+"/packages", "1.0.0", "a", bob)
	if n := count(); n != 2 {
		t.Fatalf("%d signatures after signing with a second key, want 2", n)
	}
}

// copySignature puts the signature manifest of from's digest at the
// signature tag of to's digest.
func copySignature(t *testing.T, from, to string) {
	t.Helper()
	src, err := name.NewDigest(strings.TrimPrefix(from, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	dst, err := name.NewDigest(strings.TrimPrefix(to, "oci://"))
	if err != nil {
		t.Fatal(err)
	}
	desc, err := remote.Get(src.Context().Tag(verify.SignatureTag(src.DigestStr())))
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(dst.Context().Tag(verify.SignatureTag(dst.DigestStr())), desc); err != nil {
		t.Fatal(err)
	}
}

func fingerprint(t *testing.T, k signingKey) string {
	t.Helper()
	fp, err := verify.SigningKeyFingerprint(k.private, nil)
	if err != nil {
		t.Fatal(err)
	}
	return fp[:len("sha256:")+12]
}

func mustKey(t *testing.T, name string, pub []byte) verify.Key {
	t.Helper()
	k, err := verify.ParseKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	return k
}
