package verify_test

import (
	"context"
	"testing"

	"github.com/annex-platform/annex/internal/verify"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

// BenchmarkVerify is the cost of verifying one artifact's signature
// (a cache miss, without the registry or HTTP reads) per provider, and
// of a cache hit, which is what every later fetch of the same digest
// pays.
func BenchmarkVerify(b *testing.B) {
	art := verify.Artifact{Ref: "demo 1.0.0", Digest: digestA}
	b.Run("provider=cosign-keyed", func(b *testing.B) {
		kp := newKeyPair(b, "release")
		sigs := []verify.Signature{sign(b, kp, digestA)}
		b.ResetTimer()
		for b.Loop() {
			if _, err := verify.Verify(art, []verify.Key{kp.key}, sigs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("provider=cosign-keyless", func(b *testing.B) {
		root := verifytest.NewRoot(b, "root")
		inter := root.Intermediate(b, "intermediate")
		p, err := verify.ParseKeylessPolicy(root.PEM, []verify.IdentityRule{{Issuer: githubIssuer, SubjectRegExp: `https://github\.com/example/.*`}})
		if err != nil {
			b.Fatal(err)
		}
		sigs := []verify.Signature{keylessSign(b, inter, inter.PEM, githubIssuer, workflow, digestA)}
		b.ResetTimer()
		for b.Loop() {
			if _, err := verify.VerifyKeyless(art, p, sigs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("provider=notation", func(b *testing.B) {
		root := verifytest.NewRoot(b, "root")
		signer := root.NotationLeaf(b, "Example", "release")
		p, err := verify.ParseNotationPolicy([]verify.NotationStore{{Name: "root", PEM: root.PEM}}, []string{"x509.subject: C=US, ST=WA, O=Example, CN=release"}, "Strict")
		if err != nil {
			b.Fatal(err)
		}
		sigs := []verify.NotationSignature{notationSign(b, signer, digestA)}
		ctx := context.Background()
		b.ResetTimer()
		for b.Loop() {
			if _, err := verify.VerifyNotation(ctx, art, manifestType, 512, p, sigs); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("provider=helm-provenance", func(b *testing.B) {
		k := newPGPKey(b, "release")
		archive := make([]byte, 64<<10) // a typical chart archive
		prov := signChart(b, k, archive)
		rings := []verify.Keyring{k.ring}
		b.ResetTimer()
		for b.Loop() {
			if _, err := verify.VerifyProvenance(art, rings, archive, prov, "demo-1.0.0.tgz"); err != nil {
				b.Fatal(err)
			}
		}
	})
	b.Run("cache=hit", func(b *testing.B) {
		kp := newKeyPair(b, "release")
		var c verify.Cache
		set := verify.KeySetID([]verify.Key{kp.key})
		c.Put(digestA, set, verify.Identity{Key: kp.key})
		b.ResetTimer()
		for b.Loop() {
			if _, ok := c.Get(digestA, set); !ok {
				b.Fatal("miss")
			}
		}
	})
}
