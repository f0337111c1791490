package bundle

import (
	"bytes"
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"slices"
	"time"
)

// Lifetimes of the certificates Annex issues for webhooks. A certificate
// is renewed when less than its renew-before is left: well before it
// expires, so that a manager that was down for weeks still renews in time.
const (
	CAValidity              = 10 * 365 * 24 * time.Hour
	CARenewBefore           = 2 * 365 * 24 * time.Hour
	ServingValidity         = 365 * 24 * time.Hour
	ServingRenewBefore      = 120 * 24 * time.Hour
	certificateClockSkew    = time.Hour
	certificateExpiryRounds = 24 * time.Hour
)

// KeyPair is a certificate and its private key, PEM encoded.
type KeyPair struct {
	Cert, Key []byte
}

// CertificateRequest is what IssueCertificates needs: the time, the
// names, and what exists already (nil when nothing does).
type CertificateRequest struct {
	Now time.Time
	// CAName is the CA's common name.
	CAName string
	// DNSNames are the serving certificate's names (<service>.<ns>.svc).
	DNSNames []string
	// CA and Serving are the key pairs found in the cluster.
	CA, Serving *KeyPair
	// PreviousCA is the certificate of the CA that CA replaced, found
	// beside it; nil when none.
	PreviousCA []byte
}

// Certificates are the CA and the serving certificate to use, and
// whether each was issued now.
type Certificates struct {
	CA, Serving KeyPair
	// PreviousCA is the certificate of the CA this one replaced, while it
	// has not expired: clients keep trusting it (Bundle) until every
	// server has its new certificate.
	PreviousCA          []byte
	NewCA, NewServing   bool
	CANotAfter          time.Time
	ServingNotAfter     time.Time
	ServingRenewalStart time.Time
}

// IssueCertificates returns the CA and the serving certificate for req:
// the existing CA while it is a valid CA with its key and more than
// CARenewBefore is left, else a new one; the existing serving certificate
// while it is signed by that CA, names exactly req.DNSNames, has its key,
// and more than ServingRenewBefore is left, else a new one (a new CA
// always brings a new serving certificate). Expiry times are rounded
// down to the day, so that what is issued on one day expires alike.
// Keys are ECDSA P-256. A CA replaced while it is still valid stays in
// PreviousCA until it expires: the servers that still present a
// certificate it signed (a Secret volume is refreshed within a minute or
// so) keep being trusted. Errors are those of crypto/x509 and mean
// nothing was issued.
func IssueCertificates(req CertificateRequest) (Certificates, error) {
	var out Certificates
	names := slices.Sorted(slices.Values(req.DNSNames))
	ca, caKey, ok := parsePair(req.CA)
	if ok && (!ca.IsCA || req.Now.Add(CARenewBefore).After(ca.NotAfter) || req.Now.Before(ca.NotBefore)) {
		ok = false
	}
	if ok {
		out.CA = *req.CA
		if prev, err := parseCert(req.PreviousCA); err == nil && req.Now.Before(prev.NotAfter) {
			out.PreviousCA = req.PreviousCA
		}
	} else {
		if old, err := parseCert(caCert(req.CA)); err == nil && old.IsCA && req.Now.Before(old.NotAfter) {
			out.PreviousCA = req.CA.Cert
		}
		pair, cert, key, err := issue(req.Now, CAValidity, &x509.Certificate{
			Subject:               pkix.Name{CommonName: req.CAName},
			IsCA:                  true,
			BasicConstraintsValid: true,
			KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature,
		}, nil, nil)
		if err != nil {
			return Certificates{}, fmt.Errorf("issue the webhook CA %s: %w", req.CAName, err)
		}
		out.CA, ca, caKey, out.NewCA = pair, cert, key, true
	}
	out.CANotAfter = ca.NotAfter

	serving, _, ok := parsePair(req.Serving)
	if ok && (out.NewCA || serving.CheckSignatureFrom(ca) != nil ||
		!slices.Equal(slices.Sorted(slices.Values(serving.DNSNames)), names) ||
		req.Now.Add(ServingRenewBefore).After(serving.NotAfter) || req.Now.Before(serving.NotBefore)) {
		ok = false
	}
	if ok {
		out.Serving = *req.Serving
	} else {
		pair, cert, _, err := issue(req.Now, ServingValidity, &x509.Certificate{
			Subject:     pkix.Name{CommonName: names[0]},
			DNSNames:    names,
			KeyUsage:    x509.KeyUsageDigitalSignature,
			ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		}, ca, caKey)
		if err != nil {
			return Certificates{}, fmt.Errorf("issue the serving certificate for %s: %w", names[0], err)
		}
		out.Serving, serving, out.NewServing = pair, cert, true
	}
	out.ServingNotAfter = serving.NotAfter
	out.ServingRenewalStart = serving.NotAfter.Add(-ServingRenewBefore)
	return out, nil
}

// Bundle is the PEM of the CA, and of the previous CA while it is valid:
// what clients (a webhook configuration's caBundle) trust.
func (c Certificates) Bundle() []byte {
	return append(append([]byte(nil), c.CA.Cert...), c.PreviousCA...)
}

func caCert(p *KeyPair) []byte {
	if p == nil {
		return nil
	}
	return p.Cert
}

// issue makes a key and a certificate of template valid from now
// (less the clock skew) for validity, signed by parent (self-signed when
// nil).
func issue(now time.Time, validity time.Duration, template, parent *x509.Certificate, parentKey crypto.Signer) (KeyPair, *x509.Certificate, crypto.Signer, error) {
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return KeyPair{}, nil, nil, err
	}
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return KeyPair{}, nil, nil, err
	}
	template.SerialNumber = serial
	template.NotBefore = now.Add(-certificateClockSkew).UTC()
	template.NotAfter = now.Add(validity).UTC().Truncate(certificateExpiryRounds)
	if parent == nil {
		parent, parentKey = template, key
	}
	der, err := x509.CreateCertificate(rand.Reader, template, parent, key.Public(), parentKey)
	if err != nil {
		return KeyPair{}, nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return KeyPair{}, nil, nil, err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return KeyPair{}, nil, nil, err
	}
	return KeyPair{
		Cert: pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}),
		Key:  pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}),
	}, cert, key, nil
}

// parsePair parses p; ok is false when p is nil, does not parse, or its
// key is not the certificate's.
func parsePair(p *KeyPair) (*x509.Certificate, crypto.Signer, bool) {
	if p == nil {
		return nil, nil, false
	}
	cert, err := parseCert(p.Cert)
	if err != nil {
		return nil, nil, false
	}
	block, _ := pem.Decode(p.Key)
	if block == nil {
		return nil, nil, false
	}
	parsed, err := x509.ParsePKCS8PrivateKey(block.Bytes)
	if err != nil {
		return nil, nil, false
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, nil, false
	}
	pub, err := x509.MarshalPKIXPublicKey(key.Public())
	if err != nil || !bytes.Equal(pub, cert.RawSubjectPublicKeyInfo) {
		return nil, nil, false
	}
	return cert, key, true
}

func parseCert(data []byte) (*x509.Certificate, error) {
	block, _ := pem.Decode(data)
	if block == nil || block.Type != "CERTIFICATE" {
		return nil, errors.New("no PEM certificate")
	}
	return x509.ParseCertificate(block.Bytes)
}
