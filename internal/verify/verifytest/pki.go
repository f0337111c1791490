// Package verifytest makes the certificates keyless signatures need, for
// tests and benchmarks: a root CA, an intermediate, and leaves carrying
// Fulcio's identity extensions, all generated in the test.
package verifytest

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/asn1"
	"encoding/pem"
	"math/big"
	"net/url"
	"testing"
	"time"

	"github.com/sigstore/sigstore/pkg/cryptoutils"

	"github.com/annex-platform/annex/internal/verify"
)

// CA is a certificate authority: its certificate and key.
type CA struct {
	Cert *x509.Certificate
	PEM  []byte
	key  *ecdsa.PrivateKey
}

// Epoch is when the test certificates start being valid; leaves are
// valid ten minutes from it, as Fulcio's are.
var Epoch = time.Date(2026, 1, 1, 0, 0, 0, 0, time.UTC)

var serial int64

func newCert(t testing.TB, tmpl *x509.Certificate, parent *CA) (*x509.Certificate, *ecdsa.PrivateKey, []byte) {
	t.Helper()
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		t.Fatal(err)
	}
	serial++
	tmpl.SerialNumber = big.NewInt(serial)
	signer, parentCert := key, tmpl
	if parent != nil {
		signer, parentCert = parent.key, parent.Cert
	}
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parentCert, key.Public(), signer)
	if err != nil {
		t.Fatal(err)
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		t.Fatal(err)
	}
	return cert, key, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der})
}

// NewRoot makes a self-signed root CA named name.
func NewRoot(t testing.TB, name string) *CA {
	cert, key, p := newCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, NotBefore: Epoch.Add(-time.Hour), NotAfter: Epoch.AddDate(10, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
	}, nil)
	return &CA{Cert: cert, PEM: p, key: key}
}

// Intermediate makes an intermediate CA signed by ca.
func (ca *CA) Intermediate(t testing.TB, name string) *CA {
	cert, key, p := newCert(t, &x509.Certificate{
		Subject: pkix.Name{CommonName: name}, NotBefore: Epoch.Add(-time.Hour), NotAfter: Epoch.AddDate(5, 0, 0),
		IsCA: true, BasicConstraintsValid: true, KeyUsage: x509.KeyUsageCertSign,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}, ca)
	return &CA{Cert: cert, PEM: p, key: key}
}

// Leaf makes a code-signing certificate, valid ten minutes from Epoch,
// for subject (a URI, or an email address when it has no scheme) vouched
// for by the OIDC issuer (Fulcio's extension 1.3.6.1.4.1.57264.1.8), and
// returns its private key and certificate as PEM.
func (ca *CA) Leaf(t testing.TB, issuer, subject string) (keyPEM, certPEM []byte) {
	t.Helper()
	value, err := asn1.MarshalWithParams(issuer, "utf8")
	if err != nil {
		t.Fatal(err)
	}
	tmpl := &x509.Certificate{
		NotBefore: Epoch, NotAfter: Epoch.Add(10 * time.Minute),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
		ExtraExtensions: []pkix.Extension{{Id: verify.OIDIssuerV2, Value: value}},
	}
	if u, err := url.Parse(subject); err == nil && u.Scheme != "" {
		tmpl.URIs = []*url.URL{u}
	} else {
		tmpl.EmailAddresses = []string{subject}
	}
	_, key, certPEM := newCert(t, tmpl, ca)
	keyPEM, err = cryptoutils.MarshalPrivateKeyToPEM(key)
	if err != nil {
		t.Fatal(err)
	}
	return keyPEM, certPEM
}

// NotationSigner is a Notation signing key and its certificate chain,
// signing certificate first and ca's root last, as `notation sign` takes
// them.
type NotationSigner struct {
	Key   crypto.PrivateKey
	Chain []*x509.Certificate
}

// NotationLeaf makes a code-signing certificate for the subject
// C=US, ST=WA, O=<org>, CN=<cn> (Notation asks for C, ST and O) signed by ca (a root), valid from an hour ago for a
// day: Notation checks a certificate's validity at the time of
// verification, as it finds no timestamp.
func (ca *CA) NotationLeaf(t testing.TB, org, cn string) NotationSigner {
	t.Helper()
	now := time.Now()
	cert, key, _ := newCert(t, &x509.Certificate{
		Subject:   pkix.Name{Country: []string{"US"}, Province: []string{"WA"}, Organization: []string{org}, CommonName: cn},
		NotBefore: now.Add(-time.Hour), NotAfter: now.Add(24 * time.Hour),
		KeyUsage: x509.KeyUsageDigitalSignature, ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageCodeSigning},
	}, ca)
	return NotationSigner{Key: key, Chain: []*x509.Certificate{cert, ca.Cert}}
}
