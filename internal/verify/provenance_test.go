package verify_test

import (
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/verify"
)

// pgpKey is an OpenPGP key generated for a test and its trusted keyring.
type pgpKey struct {
	private []byte
	ring    verify.Keyring
}

func newPGPKey(t testing.TB, name string) pgpKey {
	t.Helper()
	priv, pub, err := verify.GenerateOpenPGPKey(name, name+"@example.com")
	if err != nil {
		t.Fatal(err)
	}
	ring, err := verify.ParseKeyring(name, pub)
	if err != nil {
		t.Fatal(err)
	}
	return pgpKey{private: priv, ring: ring}
}

func signChart(t testing.TB, k pgpKey, archive []byte) []byte {
	t.Helper()
	prov, err := verify.SignProvenance(k.private, archive, "demo-1.0.0.tgz", []byte("apiVersion: v2\nname: demo\nversion: 1.0.0\n"))
	if err != nil {
		t.Fatal(err)
	}
	return prov
}

func TestVerifyProvenance(t *testing.T) {
	alice, bob, mallory := newPGPKey(t, "alice"), newPGPKey(t, "bob"), newPGPKey(t, "mallory")
	archive, other := []byte("chart archive bytes"), []byte("another archive")
	art := verify.Artifact{Ref: "demo 1.0.0", Digest: digestA}
	byAlice := signChart(t, alice, archive)
	altered := []byte(strings.Replace(string(byAlice), "demo", "evil", 1))

	cases := []struct {
		name    string
		rings   []verify.Keyring
		archive []byte
		prov    []byte
		signer  string
		reason  string
		want    []string
	}{{
		name: "signed", rings: []verify.Keyring{alice.ring}, archive: archive, prov: byAlice,
		signer: `keyring "alice", OpenPGP key ` + alice.ring.Fingerprints[0] + " (alice <alice@example.com>)",
	}, {
		// Rotation: two keyrings trusted, the second one signed.
		name: "rotation", rings: []verify.Keyring{bob.ring, alice.ring}, archive: archive, prov: byAlice, signer: `keyring "alice"`,
	}, {
		name: "unsigned", rings: []verify.Keyring{alice.ring}, archive: archive, reason: verify.ReasonSignatureMissing,
		want: []string{"demo 1.0.0", digestA, "no Helm provenance file", alice.ring.Fingerprints[0], "helm package --sign"},
	}, {
		name: "another key", rings: []verify.Keyring{alice.ring}, archive: archive, prov: signChart(t, mallory, archive), reason: verify.ReasonIdentityMismatch,
		want: []string{`keyring "alice" (` + alice.ring.Fingerprints[0], "signed by OpenPGP key " + mallory.ring.Fingerprints[0], "spec.verify.helmProvenance.keyrings"},
	}, {
		// The archive was replaced after signing: the signature holds, the checksum does not.
		name: "tampered archive", rings: []verify.Keyring{alice.ring}, archive: other, prov: byAlice, reason: verify.ReasonSignatureInvalid,
		want: []string{"does not cover this archive", "sha256 sum does not match"},
	}, {
		// The signed text was changed: the signature does not verify.
		name: "altered provenance", rings: []verify.Keyring{alice.ring}, archive: archive, prov: altered, reason: verify.ReasonSignatureInvalid,
		want: []string{"does not verify"},
	}, {
		name: "not clear-signed", rings: []verify.Keyring{alice.ring}, archive: archive, prov: []byte("hello"), reason: verify.ReasonSignatureInvalid,
		want: []string{"not a clear-signed"},
	}, {
		name: "no keyring", archive: archive, prov: byAlice, reason: verify.ReasonPolicyInvalid,
	}}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			id, err := verify.VerifyProvenance(art, tc.rings, tc.archive, tc.prov, "demo-1.0.0.tgz")
			if tc.signer != "" {
				if err != nil {
					t.Fatalf("want signed by %s, got %v", tc.signer, err)
				}
				if !strings.HasPrefix(id.String(), tc.signer) {
					t.Fatalf("signer %q, want %q", id, tc.signer)
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

func TestParseKeyring(t *testing.T) {
	k := newPGPKey(t, "k")
	if _, err := verify.ParseKeyring("bad", []byte("-----BEGIN PGP PUBLIC KEY BLOCK-----\n\nAAAA\n-----END PGP PUBLIC KEY BLOCK-----\n")); err == nil || !strings.Contains(err.Error(), `keyring "bad"`) {
		t.Fatalf("want an error naming the keyring, got %v", err)
	}
	if a, b := verify.KeyringSetID([]verify.Keyring{k.ring, newPGPKey(t, "j").ring}), verify.KeyringSetID([]verify.Keyring{k.ring}); a == b {
		t.Fatal("two keyring sets share an id")
	}
}
