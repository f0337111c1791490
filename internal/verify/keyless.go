package verify

import (
	"bytes"
	"crypto"
	"crypto/sha256"
	"crypto/x509"
	"encoding/asn1"
	"encoding/base64"
	"encoding/hex"
	"fmt"
	"regexp"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// The annotations of a keyless cosign signature layer: the signing
// certificate (leaf, PEM) and the chain up to, not always including, the
// root (PEM, leaf's issuer first).
const (
	AnnotationCertificate = "dev.sigstore.cosign/certificate"
	AnnotationChain       = "dev.sigstore.cosign/chain"
)

// Fulcio's certificate extensions naming the OIDC issuer that vouched
// for the subject: OIDIssuerV2 (a DER UTF8String) and, from older
// certificates, OIDIssuerV1 (the raw string).
var (
	OIDIssuerV1 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 1}
	OIDIssuerV2 = asn1.ObjectIdentifier{1, 3, 6, 1, 4, 1, 57264, 1, 8}
)

// IdentityRule is one identity a keyless policy trusts: an issuer and a
// subject, each exact or a regular expression (matched whole).
type IdentityRule struct {
	Issuer, IssuerRegExp, Subject, SubjectRegExp string
}

// String is how messages show the rule: `issuer "…" subject ~"…"`.
func (r IdentityRule) String() string {
	part := func(what, exact, re string) string {
		if re != "" {
			return fmt.Sprintf("%s matching %q", what, re)
		}
		return fmt.Sprintf("%s %q", what, exact)
	}
	return part("issuer", r.Issuer, r.IssuerRegExp) + ", " + part("subject", r.Subject, r.SubjectRegExp)
}

// KeylessPolicy is a parsed keyless policy: the trusted roots and the
// identities, with their expressions compiled.
type KeylessPolicy struct {
	roots *x509.CertPool
	rules []compiledRule
	// ID identifies the roots and rules: the Cache's key with a digest.
	ID string
}

type compiledRule struct {
	IdentityRule
	issuer, subject *regexp.Regexp
}

// ParseKeylessPolicy reads the PEM roots and the identity rules. An
// error names what does not parse: no certificate in rootsPEM, a rule
// without an issuer or a subject, an expression that does not compile.
func ParseKeylessPolicy(rootsPEM []byte, rules []IdentityRule) (KeylessPolicy, error) {
	certs, err := cryptoutils.UnmarshalCertificatesFromPEM(rootsPEM)
	if err != nil || len(certs) == 0 {
		return KeylessPolicy{}, fmt.Errorf("trustedRoots: no PEM certificate (-----BEGIN CERTIFICATE-----): %v", err)
	}
	p := KeylessPolicy{roots: x509.NewCertPool()}
	for _, c := range certs {
		p.roots.AddCert(c)
	}
	if len(rules) == 0 {
		return KeylessPolicy{}, fmt.Errorf("identities: at least one issuer and subject is required")
	}
	h := sha256.New()
	h.Write(rootsPEM)
	for i, r := range rules {
		c := compiledRule{IdentityRule: r}
		for _, f := range []struct {
			name, exact, re string
			out             **regexp.Regexp
		}{{"issuer", r.Issuer, r.IssuerRegExp, &c.issuer}, {"subject", r.Subject, r.SubjectRegExp, &c.subject}} {
			switch {
			case (f.exact == "") == (f.re == ""):
				return KeylessPolicy{}, fmt.Errorf("identities[%d]: set exactly one of %s and %sRegExp", i, f.name, f.name)
			case f.re != "":
				if *f.out, err = regexp.Compile("^(?:" + f.re + ")$"); err != nil {
					return KeylessPolicy{}, fmt.Errorf("identities[%d].%sRegExp: %v", i, f.name, err)
				}
			}
		}
		p.rules = append(p.rules, c)
		fmt.Fprintf(h, "\x00%s\x00%s\x00%s\x00%s", r.Issuer, r.IssuerRegExp, r.Subject, r.SubjectRegExp)
	}
	p.ID = "keyless:" + hex.EncodeToString(h.Sum(nil))
	return p, nil
}

func (r compiledRule) matches(issuer, subject string) bool {
	ok := func(exact string, re *regexp.Regexp, got string) bool {
		if re != nil {
			return re.MatchString(got)
		}
		return exact == got
	}
	return ok(r.Issuer, r.issuer, issuer) && ok(r.Subject, r.subject, subject)
}

// CertificateIdentity is who a Fulcio-style certificate names: the OIDC
// issuer (extension OIDIssuerV2, else OIDIssuerV1) and the subject (the
// first URI SAN, else the first email SAN).
func CertificateIdentity(cert *x509.Certificate) (issuer, subject string) {
	for _, ext := range cert.Extensions {
		switch {
		case ext.Id.Equal(OIDIssuerV2):
			var s string
			if rest, err := asn1.UnmarshalWithParams(ext.Value, &s, "utf8"); err == nil && len(rest) == 0 {
				issuer = s
			}
		case ext.Id.Equal(OIDIssuerV1) && issuer == "":
			issuer = string(ext.Value)
		}
	}
	switch {
	case len(cert.URIs) > 0:
		subject = cert.URIs[0].String()
	case len(cert.EmailAddresses) > 0:
		subject = cert.EmailAddresses[0]
	}
	return issuer, subject
}

// VerifyKeyless checks the keyless cosign signatures of art offline: a
// signature counts when its certificate (sig.Certificate, with the
// intermediates of sig.Chain) chains to one of the policy's roots at the
// time the certificate was issued (its NotBefore: without a transparency
// log there is no other trusted signing time), for code signing; the
// certificate's public key verifies the signature over the payload; the
// payload names art.Digest; and the certificate's issuer and subject
// match a rule. Rekor inclusion is not checked. Errors are *Error
// (Provider ProviderKeyless):
//   - SignatureMissing: no signature carries a certificate;
//   - SignatureInvalid: a certificate does not parse or chain to a
//     trusted root, a signature does not verify with its certificate's
//     key, or it covers another digest;
//   - IdentityMismatch: valid signatures whose identities match no rule;
//     Found names each certificate's issuer and subject.
func VerifyKeyless(art Artifact, p KeylessPolicy, sigs []Signature) (Identity, error) {
	expected := make([]string, 0, len(p.rules))
	for _, r := range p.rules {
		expected = append(expected, r.String())
	}
	var invalid, others []string
	seen := false
	for i, sig := range sigs {
		if sig.Certificate == "" {
			continue
		}
		seen = true
		issuer, subject, err := verifyCertSignature(art, p, sig)
		if err != nil {
			invalid = append(invalid, fmt.Sprintf("signature %d: %v", i+1, err))
			continue
		}
		for _, r := range p.rules {
			if r.matches(issuer, subject) {
				return Identity{Name: fmt.Sprintf("issuer %q, subject %q", issuer, subject)}, nil
			}
		}
		others = append(others, fmt.Sprintf("signature %d by issuer %q, subject %q", i+1, issuer, subject))
	}
	fail := func(reason string, found []string) (Identity, error) {
		return Identity{}, &Error{Provider: ProviderKeyless, Reason: reason, Artifact: art, Expected: expected, Found: found}
	}
	switch {
	case !seen:
		return fail(ReasonSignatureMissing, nil)
	case len(others) == 0:
		return fail(ReasonSignatureInvalid, invalid)
	}
	return fail(ReasonIdentityMismatch, append(others, invalid...))
}

// verifyCertSignature checks one keyless signature's certificate chain,
// signature and digest, and returns the certificate's identity.
func verifyCertSignature(art Artifact, p KeylessPolicy, sig Signature) (issuer, subject string, err error) {
	leaves, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(sig.Certificate))
	if err != nil || len(leaves) != 1 {
		return "", "", fmt.Errorf("the certificate annotation is not one PEM certificate")
	}
	leaf := leaves[0]
	inter := x509.NewCertPool()
	if sig.Chain != "" {
		chain, err := cryptoutils.UnmarshalCertificatesFromPEM([]byte(sig.Chain))
		if err != nil {
			return "", "", fmt.Errorf("the chain annotation is not PEM certificates: %v", err)
		}
		for _, c := range chain {
			inter.AddCert(c)
		}
	}
	issuer, subject = CertificateIdentity(leaf)
	_, err = leaf.Verify(x509.VerifyOptions{Roots: p.roots, Intermediates: inter, CurrentTime: leaf.NotBefore,
		KeyUsages: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning}})
	if err != nil {
		return "", "", fmt.Errorf("the certificate of issuer %q, subject %q does not chain to a trusted root: %v", issuer, subject, err)
	}
	raw, err := base64.StdEncoding.DecodeString(strings.TrimSpace(sig.Signature))
	if err != nil || len(raw) == 0 {
		return "", "", fmt.Errorf("the signature annotation is not base64")
	}
	v, err := signature.LoadVerifier(leaf.PublicKey, crypto.SHA256)
	if err != nil {
		return "", "", fmt.Errorf("the certificate's key: %v", err)
	}
	if err := v.VerifySignature(bytes.NewReader(raw), bytes.NewReader(sig.Payload)); err != nil {
		return "", "", fmt.Errorf("the signature does not verify with the key of the certificate of issuer %q, subject %q (corrupt or forged)", issuer, subject)
	}
	pl, err := ParsePayload(sig.Payload)
	if err != nil {
		return "", "", err
	}
	if pl.Digest != art.Digest {
		return "", "", fmt.Errorf("signed by issuer %q, subject %q, covers digest %s, not this one", issuer, subject, pl.Digest)
	}
	return issuer, subject, nil
}
