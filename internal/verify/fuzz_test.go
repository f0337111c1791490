package verify_test

import (
	"context"
	"errors"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/verify"
	"github.com/annex-platform/annex/internal/verify/verifytest"
)

// FuzzParseSignatureManifest feeds arbitrary bytes to the signature
// manifest parser: it must not panic, and what it accepts is within its
// bounds.
func FuzzParseSignatureManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"layers":[{"mediaType":"` + verify.MediaTypeSimpleSigning + `","digest":"sha256:` + strings.Repeat("a", 64) + `","size":200,"annotations":{"` + verify.AnnotationSignature + `":"MEUCIQ=="}}]}`))
	f.Add([]byte(`{"layers":null}`))
	f.Add([]byte(`[]`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		layers, err := verify.ParseSignatureManifest(raw)
		if err != nil {
			return
		}
		for _, l := range layers {
			if l.Size <= 0 || l.Size > verify.MaxPayloadBytes || l.Signature == "" || !strings.HasPrefix(l.Digest, "sha256:") {
				t.Fatalf("accepted a layer out of bounds: %+v", l)
			}
		}
	})
}

// FuzzVerify feeds arbitrary payloads and signature annotations to
// Verify with a trusted key: nothing verifies (the fuzzer cannot forge
// an ECDSA signature), and every failure is an *Error with a reason.
func FuzzVerify(f *testing.F) {
	priv, pub, err := verify.GenerateKeyPair()
	if err != nil {
		f.Fatal(err)
	}
	key, err := verify.ParseKey("k", pub)
	if err != nil {
		f.Fatal(err)
	}
	digest := "sha256:" + strings.Repeat("c", 64)
	payload, sig, err := verify.Sign(priv, nil, "registry.example.com/x", "sha256:"+strings.Repeat("d", 64))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload, sig)
	f.Add([]byte(`{"critical":{"type":"cosign container image signature","image":{"docker-manifest-digest":"`+digest+`"}}}`), "MEUCIQ==")
	f.Add([]byte(`null`), "")
	f.Fuzz(func(t *testing.T, payload []byte, sig string) {
		_, err := verify.Verify(verify.Artifact{Ref: "x", Digest: digest}, []verify.Key{key}, []verify.Signature{{Payload: payload, Signature: sig}})
		vErr, ok := err.(*verify.Error)
		if !ok || vErr.Reason == "" || vErr.Error() == "" {
			t.Fatalf("want a *verify.Error, got %v", err)
		}
		// A payload that parses has a well-formed digest.
		if p, err := verify.ParsePayload(payload); err == nil && !strings.HasPrefix(p.Digest, "sha256:") {
			t.Fatalf("digest %q", p.Digest)
		}
	})
}

// FuzzVerifyKeyless feeds arbitrary certificates, chains, payloads and
// signatures to VerifyKeyless: nothing verifies (the fuzzer cannot make
// a certificate chaining to the test root), and every failure is an
// *Error with a reason.
func FuzzVerifyKeyless(f *testing.F) {
	root := verifytest.NewRoot(f, "fuzz root")
	p, err := verify.ParseKeylessPolicy(root.PEM, []verify.IdentityRule{{IssuerRegExp: ".*", SubjectRegExp: ".*"}})
	if err != nil {
		f.Fatal(err)
	}
	other := verifytest.NewRoot(f, "other root")
	key, cert := other.Leaf(f, "https://issuer.example.com", "https://example.com/x")
	digest := "sha256:" + strings.Repeat("c", 64)
	payload, sig, err := verify.Sign(key, nil, "registry.example.com/x", digest)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(payload, sig, string(cert), string(other.PEM))
	f.Add([]byte(`{}`), "", "-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n", "")
	f.Fuzz(func(t *testing.T, payload []byte, sig, cert, chain string) {
		_, err := verify.VerifyKeyless(verify.Artifact{Ref: "x", Digest: digest}, p, []verify.Signature{{Payload: payload, Signature: sig, Certificate: cert, Chain: chain}})
		vErr, ok := err.(*verify.Error)
		if !ok || vErr.Reason == "" || vErr.Error() == "" {
			t.Fatalf("want a *verify.Error, got %v", err)
		}
	})
}

// FuzzVerifyProvenance feeds arbitrary provenance files to
// VerifyProvenance (Helm's parser, then the issuer read for messages):
// nothing verifies, nothing panics, every failure is an *Error.
func FuzzVerifyProvenance(f *testing.F) {
	_, pub, err := verify.GenerateOpenPGPKey("fuzz", "fuzz@example.com")
	if err != nil {
		f.Fatal(err)
	}
	ring, err := verify.ParseKeyring("fuzz", pub)
	if err != nil {
		f.Fatal(err)
	}
	other, _, err := verify.GenerateOpenPGPKey("other", "other@example.com")
	if err != nil {
		f.Fatal(err)
	}
	archive := []byte("archive")
	prov, err := verify.SignProvenance(other, archive, "x-1.0.0.tgz", []byte("name: x\n"))
	if err != nil {
		f.Fatal(err)
	}
	f.Add(prov)
	f.Add([]byte("-----BEGIN PGP SIGNED MESSAGE-----\nHash: SHA512\n\nx\n-----BEGIN PGP SIGNATURE-----\n\nAAAA\n-----END PGP SIGNATURE-----\n"))
	f.Fuzz(func(t *testing.T, prov []byte) {
		_, err := verify.VerifyProvenance(verify.Artifact{Ref: "x", Digest: "sha256:" + strings.Repeat("c", 64)}, []verify.Keyring{ring}, archive, prov, "x-1.0.0.tgz")
		vErr, ok := err.(*verify.Error)
		if !ok || vErr.Reason == "" || vErr.Error() == "" {
			t.Fatalf("want a *verify.Error, got %v", err)
		}
	})
}

// FuzzParseNotationManifest feeds arbitrary bytes to the Notation
// signature manifest parser (the part of the Notation layout Annex reads
// itself): it must not panic, and what it accepts is within its bounds.
func FuzzParseNotationManifest(f *testing.F) {
	f.Add([]byte(`{"schemaVersion":2,"artifactType":"` + verify.ArtifactTypeNotation + `","config":{"mediaType":"application/vnd.oci.empty.v1+json"},"layers":[{"mediaType":"` + verify.MediaTypeJWS + `","digest":"sha256:` + strings.Repeat("a", 64) + `","size":2000}],"subject":{"digest":"sha256:` + strings.Repeat("b", 64) + `"}}`))
	f.Add([]byte(`{"config":{"mediaType":"` + verify.ArtifactTypeNotation + `"},"layers":[{"mediaType":"` + verify.MediaTypeCOSE + `"}]}`))
	f.Add([]byte(`{"artifactType":"application/spdx+json"}`))
	f.Add([]byte(`null`))
	f.Fuzz(func(t *testing.T, raw []byte) {
		l, ok, err := verify.ParseNotationManifest(raw)
		if err != nil || !ok {
			return
		}
		if l.Size <= 0 || l.Size > verify.MaxEnvelopeBytes || (l.MediaType != verify.MediaTypeJWS && l.MediaType != verify.MediaTypeCOSE) ||
			!strings.HasPrefix(l.Digest, "sha256:") || !strings.HasPrefix(l.Subject, "sha256:") {
			t.Fatalf("accepted a signature out of bounds: %+v", l)
		}
	})
}

// FuzzVerifyNotation feeds arbitrary envelopes, of either media type, to
// VerifyNotation with a trusted root: notation-go parses them; nothing
// verifies (the fuzzer cannot forge a signature), nothing panics, and
// every failure is an *Error with a reason.
func FuzzVerifyNotation(f *testing.F) {
	root := verifytest.NewRoot(f, "root")
	signer := root.NotationLeaf(f, "Example", "release")
	p, err := verify.ParseNotationPolicy([]verify.NotationStore{{Name: "root", PEM: root.PEM}}, []string{"*"}, "Strict")
	if err != nil {
		f.Fatal(err)
	}
	other := "sha256:" + strings.Repeat("d", 64)
	env, err := verify.SignNotation(context.Background(), signer.Key, signer.Chain, "application/vnd.oci.image.manifest.v1+json", other, 512)
	if err != nil {
		f.Fatal(err)
	}
	f.Add(env, false)
	f.Add([]byte(`{"payload":"","protected":"","header":{},"signature":""}`), false)
	f.Add([]byte{0xd2, 0x84, 0x40, 0xa0, 0x40, 0x40}, true)
	art := verify.Artifact{Ref: "x", Digest: "sha256:" + strings.Repeat("c", 64)}
	f.Fuzz(func(t *testing.T, envelope []byte, cose bool) {
		mt := verify.MediaTypeJWS
		if cose {
			mt = verify.MediaTypeCOSE
		}
		_, err := verify.VerifyNotation(context.Background(), art, "application/vnd.oci.image.manifest.v1+json", 512, p, []verify.NotationSignature{{MediaType: mt, Envelope: envelope}})
		var verr *verify.Error
		if !errors.As(err, &verr) || verr.Reason == "" {
			t.Fatalf("got %v, want an *Error", err)
		}
	})
}
