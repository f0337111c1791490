package verify

import (
	"bytes"
	"crypto"
	"encoding/base64"
	"fmt"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
	"github.com/sigstore/sigstore/pkg/signature/payload"
)

// Reasons of an *Error, the same words as the installation's condition
// reasons (api/v1alpha1).
const (
	// ProviderKeyless is the Provider of an *Error about a keyless cosign
	// signature (a certificate chaining to a trusted root).
	ProviderKeyless = "Keyless"

	ReasonSignatureMissing = "SignatureMissing"
	ReasonSignatureInvalid = "SignatureInvalid"
	ReasonIdentityMismatch = "IdentityMismatch"
	ReasonPolicyInvalid    = "VerificationPolicyInvalid"
)

// Artifact is what a signature must cover.
type Artifact struct {
	// Ref names the artifact for people, e.g. `demo 1.0.0
	// (oci://registry/packages/demo@sha256:…)`.
	Ref string
	// Digest is the OCI manifest digest the signature covers,
	// "sha256:<hex>".
	Digest string
}

// Signature is one cosign signature as fetched: the payload blob and the
// base64 signature of its layer (Layer.Signature).
type Signature struct {
	Payload   []byte
	Signature string
	// Certificate and Chain are a keyless signature's PEM certificate
	// and chain (AnnotationCertificate, AnnotationChain); "" for a keyed
	// one.
	Certificate, Chain string
}

// Identity is who signed an artifact: the trusted cosign key whose
// signature verified, or Name for the other providers (an OpenPGP key, a
// certificate's issuer and subject).
type Identity struct {
	Key  Key
	Name string
}

// String is how status shows the signer: Name when set, else `key
// "<name>" (sha256:…)`.
func (i Identity) String() string {
	if i.Name != "" {
		return i.Name
	}
	return i.Key.String()
}

// Error is a verification that failed: Reason is ReasonSignatureMissing,
// ReasonSignatureInvalid or ReasonIdentityMismatch (or ReasonPolicyInvalid
// for a policy without keys). Its message names the artifact, its digest,
// the identities expected and found, and what to do.
type Error struct {
	// Provider is the scheme whose words the message uses: "" for cosign
	// keys, ProviderHelmProvenance, or ProviderKeyless.
	Provider string
	Reason   string
	Artifact Artifact
	// Expected are the trusted keys; Found what the signatures showed.
	Expected []string
	Found    []string
	// AuditRefused, when set, says why switching the catalog to Audit
	// would not help (a stricter cluster default or installation): the
	// message then says so instead of suggesting it.
	AuditRefused string
}

// auditClause is the suggestion of Audit in a SignatureMissing message.
var auditClause = regexp.MustCompile(`, or set the catalog's spec\.verify\.mode to Audit to install unsigned \w+`)

func (e *Error) Error() string {
	what, todo := e.words()
	msg := fmt.Sprintf("%s (digest %s) %s: expected a signature by %s", e.Artifact.Ref, e.Artifact.Digest, what, orList(e.Expected))
	if len(e.Found) > 0 {
		msg += "; found " + strings.Join(e.Found, "; ")
	}
	if e.AuditRefused != "" {
		return msg + "; " + auditClause.ReplaceAllString(todo, "") + " (Audit cannot apply: " + e.AuditRefused + ")"
	}
	return msg + "; " + todo
}

// words are what is wrong and what to do, in the words of e.Provider.
func (e *Error) words() (what, todo string) {
	switch e.Provider {
	case ProviderHelmProvenance:
		switch e.Reason {
		case ReasonSignatureMissing:
			return "has no Helm provenance file (<chart URL>.prov)", "sign the chart with a trusted key (helm package --sign --key <user ID> --keyring <secret keyring>) and publish the .prov file next to the .tgz, or set the catalog's spec.verify.mode to Audit to install unsigned charts"
		case ReasonSignatureInvalid:
			return "has no valid provenance for this archive", "the chart or its .prov file changed after it was signed: do not install it; package and sign it again"
		case ReasonIdentityMismatch:
			return "is signed, but by none of the trusted OpenPGP keys", "if the signer is trusted, add its public key to the catalog's spec.verify.helmProvenance.keyrings; otherwise do not install this version"
		}
		return "cannot be verified: the policy trusts no keyring", "list a keyring in the catalog's spec.verify.helmProvenance.keyrings"
	case ProviderNotation:
		switch e.Reason {
		case ReasonSignatureMissing:
			return "has no Notation signature", "sign it with a certificate the policy trusts (notation sign --key <key> <registry>/<repository>@<digest>), or set the catalog's spec.verify.mode to Audit to install unsigned artifacts"
		case ReasonSignatureInvalid:
			return "has no valid Notation signature for this digest", "the artifact changed after it was signed, or its signature is corrupt or its certificate expired: do not install it; publish it again and sign the new digest"
		case ReasonIdentityMismatch:
			return "is signed, but by no certificate the policy trusts", "if the signer is trusted, add its root certificate to the catalog's spec.verify.notation.trustStores and its subject to spec.verify.notation.trustedIdentities; otherwise do not install this version"
		}
		return "cannot be verified: the policy trusts no certificate", "list PEM certificates in spec.verify.notation.trustStores and at least one identity"
	case ProviderKeyless:
		switch e.Reason {
		case ReasonSignatureMissing:
			return "has no keyless cosign signature (a signature with a certificate)", "sign it with cosign sign (keyless, with a certificate from a CA the policy trusts), or set the catalog's spec.verify.mode to Audit to install unsigned artifacts"
		case ReasonSignatureInvalid:
			return "has no valid keyless signature for this digest", "the artifact changed after it was signed, or its signature or certificate is corrupt or not issued by a trusted root: do not install it; publish it again and sign the new digest"
		case ReasonIdentityMismatch:
			return "is signed, but by no identity the policy trusts", "if the signer is trusted, add its issuer and subject to the catalog's spec.verify.cosign.keyless.identities; otherwise do not install this version"
		}
		return "cannot be verified: the policy trusts no root or identity", "list PEM roots in spec.verify.cosign.keyless.trustedRoots and at least one identity"
	}
	switch e.Reason {
	case ReasonSignatureMissing:
		what = "has no cosign signature"
		todo = "sign it with a trusted key (annexctl package push --sign-key, or cosign sign --key), or set the catalog's spec.verify.mode to Audit to install unsigned artifacts"
	case ReasonSignatureInvalid:
		what = "has no valid signature for this digest"
		todo = "the artifact changed after it was signed, or its signature is corrupt: do not install it; publish it again and sign the new digest"
	case ReasonIdentityMismatch:
		what = "is signed, but by none of the trusted keys"
		todo = "if the signer is trusted, add its public key to the catalog's spec.verify.cosign.keys; otherwise do not install this version"
	default:
		what = "cannot be verified: the policy trusts no key"
		todo = "list a public key in the catalog's spec.verify.cosign.keys"
	}
	return what, todo
}

// Verify checks the cosign signatures of art against the trusted keys
// and returns the identity of the first key whose signature covers
// art.Digest. A signature verifies when a key verifies it over its
// payload and the payload names art.Digest as its
// docker-manifest-digest; its docker-reference is not compared (an
// artifact copied to another registry keeps its signatures, as cosign
// verify accepts). Errors are *Error:
//   - SignatureMissing: sigs is empty;
//   - SignatureInvalid: a trusted key signed another digest (the artifact
//     was replaced and an old signature copied next to it), a signature
//     names a trusted key that does not verify it, or a signature is
//     malformed;
//   - IdentityMismatch: well-formed signatures, none by a trusted key;
//     Found names the key a signature claims (annexctl writes it into the
//     payload's optional part) or "an unknown key".
func Verify(art Artifact, keys []Key, sigs []Signature) (Identity, error) {
	expected := make([]string, 0, len(keys))
	for _, k := range keys {
		expected = append(expected, k.String())
	}
	fail := func(reason string, found []string) (Identity, error) {
		return Identity{}, &Error{Reason: reason, Artifact: art, Expected: expected, Found: found}
	}
	if len(keys) == 0 {
		return fail(ReasonPolicyInvalid, nil)
	}
	if len(sigs) == 0 {
		return fail(ReasonSignatureMissing, nil)
	}
	var invalid, others []string
	for i, sig := range sigs {
		raw, err := decodeSignature(sig.Signature)
		if err != nil {
			invalid = append(invalid, fmt.Sprintf("signature %d: %v", i+1, err))
			continue
		}
		p, perr := ParsePayload(sig.Payload)
		signer := -1
		for j, k := range keys {
			if k.verifier.VerifySignature(bytes.NewReader(raw), bytes.NewReader(sig.Payload)) == nil {
				signer = j
				break
			}
		}
		switch {
		case signer >= 0 && perr != nil:
			invalid = append(invalid, fmt.Sprintf("signature %d by %s: %v", i+1, keys[signer], perr))
		case signer >= 0 && p.Digest != art.Digest:
			invalid = append(invalid, fmt.Sprintf("signature %d by %s covers digest %s, not this one", i+1, keys[signer], p.Digest))
		case signer >= 0:
			return Identity{Key: keys[signer]}, nil
		case perr != nil:
			invalid = append(invalid, fmt.Sprintf("signature %d: %v", i+1, perr))
		case trusted(keys, p.ClaimedKey) != nil:
			// It names a trusted key, which does not verify it.
			invalid = append(invalid, fmt.Sprintf("signature %d names %s, which does not verify it (corrupt or forged)", i+1, trusted(keys, p.ClaimedKey)))
		case p.ClaimedKey != "":
			others = append(others, fmt.Sprintf("signature %d by a key that names itself %s", i+1, short(p.ClaimedKey)))
		default:
			others = append(others, fmt.Sprintf("signature %d by an unknown key", i+1))
		}
	}
	if len(invalid) > 0 {
		return fail(ReasonSignatureInvalid, append(invalid, others...))
	}
	return fail(ReasonIdentityMismatch, others)
}

// Sign makes the cosign signature of the manifest digest in repository
// (registry/path, no scheme) with the PEM private key privatePEM
// (PKCS#8, SEC 1 or PKCS#1; cosign's encrypted keys with password): the
// simple-signing payload, whose optional part names the key's
// fingerprint (OptionalKey), and its base64 signature, for a layer of
// media type MediaTypeSimpleSigning under annotation AnnotationSignature.
func Sign(privatePEM, password []byte, repository, digest string) (payloadJSON []byte, sigBase64 string, err error) {
	signer, fp, err := loadSigner(privatePEM, password)
	if err != nil {
		return nil, "", err
	}
	ref, err := name.NewDigest(repository + "@" + digest)
	if err != nil {
		return nil, "", fmt.Errorf("%s@%s: %v", repository, digest, err)
	}
	payloadJSON, err = payload.Cosign{Image: ref, Annotations: map[string]any{OptionalKey: fp}}.MarshalJSON()
	if err != nil {
		return nil, "", err
	}
	sig, err := signer.SignMessage(bytes.NewReader(payloadJSON))
	if err != nil {
		return nil, "", err
	}
	return payloadJSON, base64.StdEncoding.EncodeToString(sig), nil
}

// trusted is the key of keys with the fingerprint fp, or nil.
func trusted(keys []Key, fp string) *Key {
	for i := range keys {
		if fp != "" && keys[i].Fingerprint == fp {
			return &keys[i]
		}
	}
	return nil
}

// SigningKeyFingerprint reads a PEM private key as Sign does and returns
// the fingerprint of its public half (what spec.verify shows), so that a
// publisher learns of a bad key before pushing anything.
func SigningKeyFingerprint(privatePEM, password []byte) (string, error) {
	_, fp, err := loadSigner(privatePEM, password)
	return fp, err
}

func loadSigner(privatePEM, password []byte) (signature.Signer, string, error) {
	pf := cryptoutils.PassFunc(func(bool) ([]byte, error) { return password, nil })
	priv, err := cryptoutils.UnmarshalPEMToPrivateKey(privatePEM, pf)
	if err != nil {
		return nil, "", fmt.Errorf("the signing key is not a PEM private key: %v", err)
	}
	signer, err := signature.LoadSigner(priv, crypto.SHA256)
	if err != nil {
		return nil, "", fmt.Errorf("the signing key: %v", err)
	}
	pub, err := signer.PublicKey()
	if err != nil {
		return nil, "", err
	}
	fp, err := Fingerprint(pub)
	if err != nil {
		return nil, "", err
	}
	return signer, fp, nil
}

// orList is "a", "a or b", "a, b or c".
func orList(items []string) string {
	switch len(items) {
	case 0:
		return "no key"
	case 1:
		return items[0]
	}
	return strings.Join(items[:len(items)-1], ", ") + " or " + items[len(items)-1]
}
