package verify_test

import (
	"encoding/base64"
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/verify"
)

const repository = "registry.example.com/packages/demo"

var (
	digestA = "sha256:" + strings.Repeat("a", 64)
	digestB = "sha256:" + strings.Repeat("b", 64)
)

// keyPair is a private key and the trusted Key of its public half.
type keyPair struct {
	private []byte
	key     verify.Key
}

func newKeyPair(t testing.TB, name string) keyPair {
	t.Helper()
	priv, pub, err := verify.GenerateKeyPair()
	if err != nil {
		t.Fatal(err)
	}
	key, err := verify.ParseKey(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	return keyPair{private: priv, key: key}
}

func sign(t testing.TB, kp keyPair, digest string) verify.Signature {
	t.Helper()
	payload, sig, err := verify.Sign(kp.private, nil, repository, digest)
	if err != nil {
		t.Fatal(err)
	}
	return verify.Signature{Payload: payload, Signature: sig}
}

func TestVerify(t *testing.T) {
	current, next, other := newKeyPair(t, "release-2026"), newKeyPair(t, "release-2027"), newKeyPair(t, "someone-else")
	art := verify.Artifact{Ref: "demo 1.0.0", Digest: digestA}
	corrupt := sign(t, current, digestA)
	corrupt.Signature = base64.StdEncoding.EncodeToString([]byte("not a signature"))

	cases := []struct {
		name string
		keys []verify.Key
		sigs []verify.Signature
		// signer is the name of the key that verifies, or "".
		signer string
		// reason is the *Error's reason, and want texts its message holds.
		reason string
		want   []string
	}{{
		// The one trusted key signed this digest.
		name: "signed", keys: []verify.Key{current.key}, sigs: []verify.Signature{sign(t, current, digestA)}, signer: "release-2026",
	}, {
		// Rotation: both keys are trusted; an artifact signed by the new one only passes.
		name: "rotation, new key", keys: []verify.Key{current.key, next.key}, sigs: []verify.Signature{sign(t, next, digestA)}, signer: "release-2027",
	}, {
		// Rotation: the old key still passes while trusted.
		name: "rotation, old key", keys: []verify.Key{current.key, next.key}, sigs: []verify.Signature{sign(t, current, digestA)}, signer: "release-2026",
	}, {
		// An untrusted signature next to a trusted one does not matter.
		name: "one of two signatures trusted", keys: []verify.Key{next.key}, sigs: []verify.Signature{sign(t, other, digestA), sign(t, next, digestA)}, signer: "release-2027",
	}, {
		// No signature at all.
		name: "unsigned", keys: []verify.Key{current.key}, reason: verify.ReasonSignatureMissing,
		want: []string{"demo 1.0.0", digestA, "has no cosign signature", `key "release-2026"`, "--sign-key"},
	}, {
		// Signed by another key: both the trusted and the found key are named.
		name: "other key", keys: []verify.Key{current.key}, sigs: []verify.Signature{sign(t, other, digestA)}, reason: verify.ReasonIdentityMismatch,
		want: []string{`key "release-2026" (` + current.key.Fingerprint[:19], "names itself " + other.key.Fingerprint[:19], "spec.verify.cosign.keys"},
	}, {
		// A trusted signature of another digest copied next to this artifact: replaced after signing.
		name: "tampered", keys: []verify.Key{current.key}, sigs: []verify.Signature{sign(t, current, digestB)}, reason: verify.ReasonSignatureInvalid,
		want: []string{"covers digest " + digestB, "changed after it was signed"},
	}, {
		// A signature naming the trusted key that does not verify: corrupt or forged.
		name: "corrupt signature", keys: []verify.Key{current.key}, sigs: []verify.Signature{corrupt}, reason: verify.ReasonSignatureInvalid,
		want: []string{"corrupt or forged"},
	}, {
		// A signature annotation that is not base64.
		name: "not base64", keys: []verify.Key{current.key}, sigs: []verify.Signature{{Payload: []byte("{}"), Signature: "%%%"}}, reason: verify.ReasonSignatureInvalid,
		want: []string{"not base64"},
	}, {
		// No key: nothing can be verified.
		name: "no keys", sigs: []verify.Signature{sign(t, current, digestA)}, reason: verify.ReasonPolicyInvalid,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := verify.Verify(art, tc.keys, tc.sigs)
			if tc.signer != "" {
				if err != nil {
					t.Fatalf("want signed by %s, got %v", tc.signer, err)
				}
				if id.Key.Name != tc.signer || !strings.Contains(id.String(), tc.signer) {
					t.Fatalf("signer %q (%s), want %s", id.Key.Name, id, tc.signer)
				}
				return
			}
			var verr *verify.Error
			if !errors.As(err, &verr) || verr.Reason != tc.reason {
				t.Fatalf("want *verify.Error %s, got %v", tc.reason, err)
			}
			for _, w := range tc.want {
				if !strings.Contains(err.Error(), w) {
					t.Errorf("message lacks %q:\n%s", w, err)
				}
			}
		})
	}
}

func TestSigningKeyFingerprintMatchesPublicKey(t *testing.T) {
	kp := newKeyPair(t, "k")
	fp, err := verify.SigningKeyFingerprint(kp.private, nil)
	if err != nil {
		t.Fatal(err)
	}
	if fp != kp.key.Fingerprint {
		t.Fatalf("private key's fingerprint %s, public key's %s", fp, kp.key.Fingerprint)
	}
	if _, err := verify.SigningKeyFingerprint([]byte("-----BEGIN PUBLIC KEY-----\nAAAA\n-----END PUBLIC KEY-----\n"), nil); err == nil {
		t.Fatal("a public key was taken for a signing key")
	}
	if _, err := verify.ParseKey("bad", []byte("not pem")); err == nil || !strings.Contains(err.Error(), `key "bad"`) {
		t.Fatalf("want an error naming the key, got %v", err)
	}
}

func TestCacheIsPerKeySet(t *testing.T) {
	a, b := newKeyPair(t, "a"), newKeyPair(t, "b")
	var c verify.Cache
	one, both := verify.KeySetID([]verify.Key{a.key}), verify.KeySetID([]verify.Key{b.key, a.key})
	if both != verify.KeySetID([]verify.Key{a.key, b.key}) {
		t.Fatal("the key set's order changes its id")
	}
	c.Put(digestA, one, verify.Identity{Key: a.key})
	if id, ok := c.Get(digestA, one); !ok || id.Key.Name != "a" {
		t.Fatalf("cached identity %v %v", id, ok)
	}
	for _, miss := range []struct{ digest, keys string }{{digestB, one}, {digestA, both}} {
		if _, ok := c.Get(miss.digest, miss.keys); ok {
			t.Errorf("hit for %s under %s", miss.digest, miss.keys)
		}
	}
}

func TestParseSignatureManifest(t *testing.T) {
	layer := `{"mediaType":"` + verify.MediaTypeSimpleSigning + `","digest":"` + digestA + `","size":200,"annotations":{"` + verify.AnnotationSignature + `":"MEUCIQ=="}}`
	other := `{"mediaType":"application/vnd.dev.sigstore.bundle.v0.3+json","digest":"` + digestB + `","size":10}`
	cases := []struct {
		name, manifest string
		layers         int
		err            string
	}{
		// A cosign signature manifest with one signature and an attachment skipped.
		{name: "cosign", manifest: `{"schemaVersion":2,"layers":[` + layer + `,` + other + `]}`, layers: 1},
		// No layers at all: no signature.
		{name: "empty", manifest: `{"schemaVersion":2}`},
		{name: "not json", manifest: `{`, err: "not JSON"},
		{name: "no signature annotation", manifest: `{"layers":[{"mediaType":"` + verify.MediaTypeSimpleSigning + `","digest":"` + digestA + `","size":2}]}`, err: "no dev.cosignproject.cosign/signature"},
		{name: "bad digest", manifest: `{"layers":[{"mediaType":"` + verify.MediaTypeSimpleSigning + `","digest":"md5:x","size":2,"annotations":{"` + verify.AnnotationSignature + `":"x"}}]}`, err: "not sha256"},
		{name: "huge payload", manifest: `{"layers":[{"mediaType":"` + verify.MediaTypeSimpleSigning + `","digest":"` + digestA + `","size":99999999,"annotations":{"` + verify.AnnotationSignature + `":"x"}}]}`, err: "size"},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			layers, err := verify.ParseSignatureManifest([]byte(tc.manifest))
			if tc.err != "" {
				if err == nil || !strings.Contains(err.Error(), tc.err) {
					t.Fatalf("want an error with %q, got %v", tc.err, err)
				}
				return
			}
			if err != nil || len(layers) != tc.layers {
				t.Fatalf("got %d layers, %v; want %d", len(layers), err, tc.layers)
			}
		})
	}
	if got := verify.SignatureTag(digestA); got != "sha256-"+strings.Repeat("a", 64)+".sig" {
		t.Fatalf("signature tag %s", got)
	}
}
