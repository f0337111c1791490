package verify

import (
	"context"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/hex"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	_ "github.com/notaryproject/notation-core-go/signature/cose" // registers the COSE envelope
	_ "github.com/notaryproject/notation-core-go/signature/jws"  // registers the JWS envelope
	"github.com/notaryproject/notation-go"
	"github.com/notaryproject/notation-go/signer"
	"github.com/notaryproject/notation-go/verifier"
	"github.com/notaryproject/notation-go/verifier/trustpolicy"
	"github.com/notaryproject/notation-go/verifier/truststore"
	godigest "github.com/opencontainers/go-digest"
	ocispec "github.com/opencontainers/image-spec/specs-go/v1"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
)

// The Notation signature layout: a signature of the manifest
// sha256:<hex> is a manifest whose subject is that manifest, whose
// artifactType is ArtifactTypeNotation and whose one layer is the
// signature envelope (MediaTypeJWS or MediaTypeCOSE), found through the
// registry's referrers API or the sha256-<hex> fallback tag.
const (
	// ProviderNotation is the Provider of an *Error about a Notation
	// signature.
	ProviderNotation = "Notation"
	// ArtifactTypeNotation is the artifactType of a signature manifest.
	ArtifactTypeNotation = "application/vnd.cncf.notary.signature"
	// MediaTypeJWS and MediaTypeCOSE are the envelope media types.
	MediaTypeJWS  = "application/jose+json"
	MediaTypeCOSE = "application/cose"
	// MaxEnvelopeBytes bounds one signature envelope: a payload
	// descriptor and a certificate chain, a few kilobytes.
	MaxEnvelopeBytes = 256 << 10
	// MaxNotationSignatures bounds the signatures read for one artifact.
	MaxNotationSignatures = 32
)

// NotationLayer is the envelope a Notation signature manifest points at.
type NotationLayer struct {
	// MediaType is MediaTypeJWS or MediaTypeCOSE.
	MediaType string
	// Digest and Size are the envelope blob's.
	Digest string
	Size   int64
	// Subject is the digest of the manifest the signature is attached to.
	Subject string
}

// notationManifest is the part of a signature manifest read here.
type notationManifest struct {
	ArtifactType string `json:"artifactType"`
	Config       struct {
		MediaType string `json:"mediaType"`
	} `json:"config"`
	Layers []struct {
		MediaType string `json:"mediaType"`
		Digest    string `json:"digest"`
		Size      int64  `json:"size"`
	} `json:"layers"`
	Subject *struct {
		Digest string `json:"digest"`
	} `json:"subject"`
}

// ParseNotationManifest reads a Notation signature manifest (OCI image
// manifest with artifactType, or config media type for registries of the
// OCI 1.0 era, ArtifactTypeNotation): exactly one layer, an envelope of
// media type MediaTypeJWS or MediaTypeCOSE with a sha256 digest and a
// size within MaxEnvelopeBytes, and a subject. ok false, with no error,
// means the manifest is another kind of referrer (an SBOM, a cosign
// attachment), to be skipped. An error means a Notation signature
// manifest is malformed; it says how.
func ParseNotationManifest(raw []byte) (layer NotationLayer, ok bool, err error) {
	var m notationManifest
	if err := json.Unmarshal(raw, &m); err != nil {
		return NotationLayer{}, false, fmt.Errorf("the referrer manifest is not JSON: %v", err)
	}
	if m.ArtifactType != ArtifactTypeNotation && (m.ArtifactType != "" || m.Config.MediaType != ArtifactTypeNotation) {
		return NotationLayer{}, false, nil
	}
	if len(m.Layers) != 1 {
		return NotationLayer{}, false, fmt.Errorf("the Notation signature manifest has %d layers, not one envelope", len(m.Layers))
	}
	l := m.Layers[0]
	switch {
	case l.MediaType != MediaTypeJWS && l.MediaType != MediaTypeCOSE:
		return NotationLayer{}, false, fmt.Errorf("the Notation signature envelope has media type %q, not %s or %s", l.MediaType, MediaTypeJWS, MediaTypeCOSE)
	case !digestRE.MatchString(l.Digest):
		return NotationLayer{}, false, fmt.Errorf("the Notation signature envelope's digest %q is not sha256:<hex>", l.Digest)
	case l.Size <= 0 || l.Size > MaxEnvelopeBytes:
		return NotationLayer{}, false, fmt.Errorf("the Notation signature envelope's size %d is not between 1 and %d bytes", l.Size, MaxEnvelopeBytes)
	case m.Subject == nil || !digestRE.MatchString(m.Subject.Digest):
		return NotationLayer{}, false, fmt.Errorf("the Notation signature manifest has no sha256 subject")
	}
	return NotationLayer{MediaType: l.MediaType, Digest: l.Digest, Size: l.Size, Subject: m.Subject.Digest}, true, nil
}

// NotationSignature is one Notation signature as fetched: its envelope
// and the envelope's media type.
type NotationSignature struct {
	MediaType string
	Envelope  []byte
}

// NotationStore is one named trust store of a policy: PEM certificates of
// type CA or SigningAuthority (truststore.TypeCA, TypeSigningAuthority).
type NotationStore struct {
	Name string
	// SigningAuthority is true for a signingAuthority store, else CA.
	SigningAuthority bool
	PEM              []byte
}

// NotationPolicy is a parsed Notation policy: its trust stores, trusted
// identities and level, made into notation-go's verifier.
type NotationPolicy struct {
	verifier notation.Verifier
	// Expected names the trusted identities and stores, for messages.
	Expected []string
	// ID identifies the stores' certificates, the identities and the
	// level: the Cache's key with a digest.
	ID string
}

// notationStores serves the policy's certificates to notation-go.
type notationStores map[truststore.Type]map[string][]*x509.Certificate

func (s notationStores) GetCertificates(_ context.Context, t truststore.Type, name string) ([]*x509.Certificate, error) {
	certs, ok := s[t][name]
	if !ok {
		return nil, truststore.TrustStoreError{Msg: fmt.Sprintf("trust store %s:%s is not in the policy", t, name)}
	}
	return certs, nil
}

// ParseNotationPolicy reads the trust stores (PEM), the trusted
// identities ("*" or "x509.subject: <DN>") and the level ("Strict" or
// "Permissive") into a policy whose scope is every artifact. Revocation
// is not checked (offline: the hub may not reach the CA's OCSP or CRL
// servers). An error names what does not parse: a store without a
// certificate, an identity notation-go refuses.
func ParseNotationPolicy(stores []NotationStore, identities []string, level string) (NotationPolicy, error) {
	certs := notationStores{truststore.TypeCA: {}, truststore.TypeSigningAuthority: {}}
	var names []string
	for i, s := range stores {
		parsed, err := cryptoutils.UnmarshalCertificatesFromPEM(s.PEM)
		if err != nil || len(parsed) == 0 {
			return NotationPolicy{}, fmt.Errorf("trustStores[%d] (%s): no PEM certificate (-----BEGIN CERTIFICATE-----): %v", i, s.Name, err)
		}
		t := truststore.TypeCA
		if s.SigningAuthority {
			t = truststore.TypeSigningAuthority
		}
		certs[t][s.Name] = parsed
		names = append(names, string(t)+":"+s.Name)
	}
	lv := trustpolicy.LevelStrict.Name
	if strings.EqualFold(level, "Permissive") {
		lv = trustpolicy.LevelPermissive.Name
	}
	doc := &trustpolicy.Document{Version: "1.0", TrustPolicies: []trustpolicy.TrustPolicy{{
		Name:           "annex",
		RegistryScopes: []string{"*"},
		SignatureVerification: trustpolicy.SignatureVerification{VerificationLevel: lv,
			Override: map[trustpolicy.ValidationType]trustpolicy.ValidationAction{trustpolicy.TypeRevocation: trustpolicy.ActionSkip}},
		TrustStores:       names,
		TrustedIdentities: identities,
	}}}
	if err := doc.Validate(); err != nil {
		return NotationPolicy{}, fmt.Errorf("trustedIdentities: %v", err)
	}
	v, err := verifier.New(doc, certs, nil)
	if err != nil {
		return NotationPolicy{}, err
	}
	var expected []string
	for _, id := range identities {
		if id == "*" {
			id = "any certificate"
		} else {
			id = fmt.Sprintf("x509.subject %q", strings.TrimSpace(strings.TrimPrefix(id, "x509.subject:")))
		}
		expected = append(expected, fmt.Sprintf("%s of trust store %s", id, strings.Join(names, " or ")))
	}
	return NotationPolicy{verifier: v, Expected: expected, ID: NotationPolicyID(stores, identities, level)}, nil
}

// NotationPolicyID identifies a Notation policy by its stores, identities
// and level, without parsing them: the Cache's key with a digest, and
// the key under which a caller may keep the parsed policy.
func NotationPolicyID(stores []NotationStore, identities []string, level string) string {
	h := sha256.New()
	for _, s := range stores {
		fmt.Fprintf(h, "%s:%t\x00%s\x00", s.Name, s.SigningAuthority, s.PEM)
	}
	fmt.Fprintf(h, "%s\x00%s", strings.ToLower(level), strings.Join(identities, "\x00"))
	return "notation:" + hex.EncodeToString(h.Sum(nil))
}

// VerifyNotation checks the Notation signatures of the OCI manifest art
// (art.Digest, of media type mediaType and size bytes) with notation-go
// under p and returns the identity of the first that verifies:
// `x509.subject "<DN>"`. Errors are *Error (Provider ProviderNotation):
//   - SignatureMissing: sigs is empty;
//   - SignatureInvalid: an envelope does not parse or its signature does
//     not verify (integrity), it signs another artifact (the artifact was
//     replaced and an old signature attached to it), or its certificate
//     has expired (Strict);
//   - IdentityMismatch: well-formed signatures whose chain ends at no
//     trusted certificate or whose subject is not trusted; Found names
//     each signing certificate's subject and its root's.
func VerifyNotation(ctx context.Context, art Artifact, mediaType string, size int64, p NotationPolicy, sigs []NotationSignature) (Identity, error) {
	fail := func(reason string, found []string) (Identity, error) {
		return Identity{}, &Error{Provider: ProviderNotation, Reason: reason, Artifact: art, Expected: p.Expected, Found: found}
	}
	if p.verifier == nil {
		return fail(ReasonPolicyInvalid, nil)
	}
	if len(sigs) == 0 {
		return fail(ReasonSignatureMissing, nil)
	}
	desc := ocispec.Descriptor{MediaType: mediaType, Digest: godigest.Digest(art.Digest), Size: size}
	ref := "annex.invalid/artifact@" + art.Digest
	var invalid, others []string
	for i, sig := range sigs {
		var outcome *notation.VerificationOutcome
		err := recovered(func() (err error) {
			outcome, err = p.verifier.Verify(ctx, desc, sig.Envelope, notation.VerifierVerifyOptions{ArtifactReference: ref, SignatureMediaType: sig.MediaType})
			return err
		})
		if err == nil {
			return Identity{Name: "x509.subject " + signerSubject(outcome)}, nil
		}
		what, mismatch := notationFailure(outcome, err)
		if mismatch {
			others = append(others, fmt.Sprintf("signature %d %s", i+1, what))
		} else {
			invalid = append(invalid, fmt.Sprintf("signature %d %s", i+1, what))
		}
	}
	if len(invalid) > 0 && len(others) == 0 {
		return fail(ReasonSignatureInvalid, invalid)
	}
	return fail(ReasonIdentityMismatch, append(others, invalid...))
}

// notationFailure says what failed in a verification, and whether it is
// a signer the policy does not trust (else the signature is invalid).
func notationFailure(outcome *notation.VerificationOutcome, err error) (what string, mismatch bool) {
	if outcome == nil || outcome.EnvelopeContent == nil {
		return fmt.Sprintf("cannot be read: %v", err), false
	}
	by := "by " + signerChain(outcome)
	for _, r := range outcome.VerificationResults {
		if r == nil || r.Error == nil || r.Action != trustpolicy.ActionEnforce {
			continue
		}
		switch r.Type {
		case trustpolicy.TypeIntegrity:
			return fmt.Sprintf("does not verify (corrupt or forged): %v", r.Error), false
		case trustpolicy.TypeAuthenticity:
			return by, true
		case trustpolicy.TypeExpiry:
			return fmt.Sprintf("%s has expired: %v", by, r.Error), false
		}
	}
	if err.Error() == "content descriptor mismatch" {
		return by + " covers another artifact, not this digest", false
	}
	return fmt.Sprintf("%s does not verify: %v", by, err), false
}

// signerSubject is the signing certificate's subject, quoted.
func signerSubject(o *notation.VerificationOutcome) string {
	if o == nil || o.EnvelopeContent == nil || len(o.EnvelopeContent.SignerInfo.CertificateChain) == 0 {
		return `""`
	}
	return fmt.Sprintf("%q", o.EnvelopeContent.SignerInfo.CertificateChain[0].Subject.String())
}

// signerChain is `x509.subject "<leaf>" (issued under root "<root>")`.
func signerChain(o *notation.VerificationOutcome) string {
	chain := o.EnvelopeContent.SignerInfo.CertificateChain
	s := "x509.subject " + signerSubject(o)
	if len(chain) > 1 {
		s += fmt.Sprintf(" (issued under root %q)", chain[len(chain)-1].Subject.String())
	}
	return s
}

// recovered runs f and turns a panic into an error: envelope parsers must
// not let a hostile registry crash the manager.
func recovered(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the envelope parser failed on this input: %v", r)
		}
	}()
	return f()
}

// SignNotation makes a Notation signature envelope (JWS) of the OCI
// manifest digest (of media type mediaType and size bytes) with key and
// its certificate chain (signing certificate first, root last), as
// `notation sign` does: for publishers and tests.
func SignNotation(ctx context.Context, key crypto.PrivateKey, chain []*x509.Certificate, mediaType, digest string, size int64) ([]byte, error) {
	if len(chain) == 0 {
		return nil, errors.New("the certificate chain is empty")
	}
	s, err := signer.NewGenericSigner(key, chain)
	if err != nil {
		return nil, err
	}
	env, _, err := s.Sign(ctx, ocispec.Descriptor{MediaType: mediaType, Digest: godigest.Digest(digest), Size: size},
		notation.SignerSignOptions{SignatureMediaType: MediaTypeJWS})
	return env, err
}
