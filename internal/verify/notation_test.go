package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/verify"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

const manifestType = "application/vnd.oci.image.manifest.v1+json"

func notationSign(t testing.TB, s verifytest.NotationSigner, digest string) verify.NotationSignature {
	t.Helper()
	env, err := verify.SignNotation(context.Background(), s.Key, s.Chain, manifestType, digest, 512)
	if err != nil {
		t.Fatal(err)
	}
	return verify.NotationSignature{MediaType: verify.MediaTypeJWS, Envelope: env}
}

func TestVerifyNotation(t *testing.T) {
	root, otherRoot := verifytest.NewRoot(t, "Example Root"), verifytest.NewRoot(t, "Other Root")
	release := root.NotationLeaf(t, "Example", "release")
	intern := root.NotationLeaf(t, "Example", "intern")
	stranger := otherRoot.NotationLeaf(t, "Other", "release")
	policy := func(t *testing.T, ids ...string) verify.NotationPolicy {
		p, err := verify.ParseNotationPolicy([]verify.NotationStore{{Name: "example", PEM: root.PEM}}, ids, "Strict")
		if err != nil {
			t.Fatal(err)
		}
		return p
	}
	art := verify.Artifact{Ref: "demo 1.0.0", Digest: digestA}
	corrupt := notationSign(t, release, digestA)
	corrupt.Envelope = append([]byte(nil), corrupt.Envelope...)
	corrupt.Envelope[len(corrupt.Envelope)/2] ^= 0x01

	cases := []struct {
		name   string
		ids    []string
		sigs   []verify.NotationSignature
		signer string
		reason string
		want   []string
	}{
		// A signature by a trusted subject under the trusted root verifies.
		{name: "trusted", ids: []string{"x509.subject: C=US, ST=WA, O=Example, CN=release"}, sigs: []verify.NotationSignature{notationSign(t, release, digestA)}, signer: `x509.subject "CN=release,O=Example,ST=WA,C=US"`},
		// "*" trusts any certificate of the trust store.
		{name: "any identity", ids: []string{"*"}, sigs: []verify.NotationSignature{notationSign(t, intern, digestA)}, signer: `x509.subject "CN=intern,O=Example,ST=WA,C=US"`},
		// No signature: missing.
		{name: "unsigned", ids: []string{"*"}, reason: verify.ReasonSignatureMissing, want: []string{"has no Notation signature", "notation sign"}},
		// A certificate of the trusted root whose subject is not trusted.
		{name: "other subject", ids: []string{"x509.subject: C=US, ST=WA, O=Example, CN=release"}, sigs: []verify.NotationSignature{notationSign(t, intern, digestA)},
			reason: verify.ReasonIdentityMismatch, want: []string{`x509.subject "C=US, ST=WA, O=Example, CN=release"`, `found signature 1 by x509.subject "CN=intern,O=Example,ST=WA,C=US"`}},
		// A certificate of another root: both are named.
		{name: "other root", ids: []string{"x509.subject: C=US, ST=WA, O=Example, CN=release"}, sigs: []verify.NotationSignature{notationSign(t, stranger, digestA)},
			reason: verify.ReasonIdentityMismatch, want: []string{`x509.subject "CN=release,O=Other,ST=WA,C=US" (issued under root "CN=Other Root")`, "ca:example"}},
		// A trusted signature of another digest (a replaced artifact).
		{name: "other digest", ids: []string{"*"}, sigs: []verify.NotationSignature{notationSign(t, release, digestB)},
			reason: verify.ReasonSignatureInvalid, want: []string{"covers another artifact"}},
		// A corrupt envelope.
		{name: "corrupt", ids: []string{"*"}, sigs: []verify.NotationSignature{corrupt}, reason: verify.ReasonSignatureInvalid},
		// Not an envelope at all.
		{name: "garbage", ids: []string{"*"}, sigs: []verify.NotationSignature{{MediaType: verify.MediaTypeCOSE, Envelope: []byte("garbage")}}, reason: verify.ReasonSignatureInvalid},
		// Rotation: an untrusted signature does not hide a trusted one.
		{name: "rotation", ids: []string{"x509.subject: C=US, ST=WA, O=Example, CN=release"}, sigs: []verify.NotationSignature{notationSign(t, stranger, digestA), notationSign(t, release, digestA)}, signer: `x509.subject "CN=release,O=Example,ST=WA,C=US"`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := verify.VerifyNotation(context.Background(), art, manifestType, 512, policy(t, tc.ids...), tc.sigs)
			if tc.signer != "" {
				if err != nil || id.String() != tc.signer {
					t.Fatalf("got %q, %v; want %s", id, err, tc.signer)
				}
				return
			}
			var verr *verify.Error
			if !errors.As(err, &verr) || verr.Reason != tc.reason {
				t.Fatalf("got %v; want reason %s", err, tc.reason)
			}
			for _, w := range append(tc.want, "demo 1.0.0", digestA) {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message %q lacks %q", err, w)
				}
			}
		})
	}
}

func TestParseNotationPolicy(t *testing.T) {
	root := verifytest.NewRoot(t, "Example Root")
	for _, tc := range []struct {
		name   string
		stores []verify.NotationStore
		ids    []string
		want   string
	}{
		{"no certificate", []verify.NotationStore{{Name: "x", PEM: []byte("nope")}}, []string{"*"}, "trustStores[0] (x): no PEM certificate"},
		{"bad identity", []verify.NotationStore{{Name: "x", PEM: root.PEM}}, []string{"x509.subject: nonsense"}, "trustedIdentities"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			_, err := verify.ParseNotationPolicy(tc.stores, tc.ids, "Strict")
			if err == nil || !strings.Contains(err.Error(), tc.want) {
				t.Fatalf("got %v; want %q", err, tc.want)
			}
		})
	}
}

func TestParseNotationManifest(t *testing.T) {
	env := `"layers":[{"mediaType":"application/jose+json","digest":"` + digestB + `","size":900}],"subject":{"digest":"` + digestA + `"}`
	l, ok, err := verify.ParseNotationManifest([]byte(`{"artifactType":"application/vnd.cncf.notary.signature",` + env + `}`))
	if err != nil || !ok || l.Digest != digestB || l.Subject != digestA || l.MediaType != verify.MediaTypeJWS {
		t.Fatalf("got %+v %v %v", l, ok, err)
	}
	if _, ok, err := verify.ParseNotationManifest([]byte(`{"artifactType":"application/spdx+json",` + env + `}`)); ok || err != nil {
		t.Fatalf("another referrer: got %v %v; want skipped", ok, err)
	}
	if _, _, err := verify.ParseNotationManifest([]byte(`{"artifactType":"application/vnd.cncf.notary.signature","layers":[]}`)); err == nil {
		t.Fatal("a signature manifest without an envelope was accepted")
	}
}
