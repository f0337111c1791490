package localcluster

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/rsa"
	"crypto/x509"
	"crypto/x509/pkix"
	"encoding/hex"
	"encoding/pem"
	"errors"
	"fmt"
	"math/big"
	"net"
	"os"
	"path/filepath"
	"strings"
	"time"
)

// Files of the cluster's credentials, relative to Options.Dir.
const (
	caCertFile      = "pki/ca.crt"
	caKeyFile       = "pki/ca.key"
	servingCertFile = "pki/apiserver.crt"
	servingKeyFile  = "pki/apiserver.key"
	saKeyFile       = "pki/sa.key"
	saPubFile       = "pki/sa.pub"
	tokenFile       = "pki/tokens.csv"
)

const (
	caValidity      = 10 * 365 * 24 * time.Hour
	servingValidity = 365 * 24 * time.Hour
	// servingRenewBefore renews the serving certificate a month before it
	// expires, so a dev cluster used for years keeps working; the CA (and with
	// it every kubeconfig written earlier) stays.
	servingRenewBefore = 30 * 24 * time.Hour
)

// credentials is what clients need to reach the API server as admin.
type credentials struct {
	caPEM []byte
	token string
}

// ensurePKI loads the CA, serving certificate, service-account key and admin
// token from dir, creating whichever is missing. A serving certificate close
// to expiry is replaced; everything else is reused as found so restarts keep
// earlier kubeconfigs valid.
func ensurePKI(dir string, now time.Time) (credentials, error) {
	if err := os.MkdirAll(filepath.Join(dir, "pki"), 0o700); err != nil {
		return credentials{}, err
	}
	caCert, caKey, caPEM, err := ensureCA(dir, now)
	if err != nil {
		return credentials{}, err
	}
	if err := ensureServingCert(dir, caCert, caKey, now); err != nil {
		return credentials{}, err
	}
	if err := ensureServiceAccountKey(dir); err != nil {
		return credentials{}, err
	}
	token, err := ensureAdminToken(dir)
	if err != nil {
		return credentials{}, err
	}
	return credentials{caPEM: caPEM, token: token}, nil
}

func ensureCA(dir string, now time.Time) (*x509.Certificate, crypto.Signer, []byte, error) {
	certPath, keyPath := filepath.Join(dir, caCertFile), filepath.Join(dir, caKeyFile)
	if cert, key, certPEM, err := loadPair(certPath, keyPath); err == nil {
		return cert, key, certPEM, nil
	} else if !errors.Is(err, os.ErrNotExist) {
		return nil, nil, nil, fmt.Errorf("local cluster CA in %s: %w (delete the pki folder to start over)", dir, err)
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, nil, err
	}
	tmpl := &x509.Certificate{
		Subject:               pkix.Name{CommonName: "annex-local-ca"},
		NotBefore:             now.Add(-time.Hour),
		NotAfter:              now.Add(caValidity),
		KeyUsage:              x509.KeyUsageCertSign | x509.KeyUsageDigitalSignature | x509.KeyUsageCRLSign,
		BasicConstraintsValid: true,
		IsCA:                  true,
	}
	cert, certPEM, err := sign(tmpl, tmpl, key.Public(), key)
	if err != nil {
		return nil, nil, nil, err
	}
	if err := writePair(certPath, keyPath, certPEM, key); err != nil {
		return nil, nil, nil, err
	}
	return cert, key, certPEM, nil
}

func ensureServingCert(dir string, ca *x509.Certificate, caKey crypto.Signer, now time.Time) error {
	certPath, keyPath := filepath.Join(dir, servingCertFile), filepath.Join(dir, servingKeyFile)
	cert, _, _, err := loadPair(certPath, keyPath)
	if err == nil && cert.CheckSignatureFrom(ca) == nil && now.Add(servingRenewBefore).Before(cert.NotAfter) {
		return nil
	}
	key, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return err
	}
	tmpl := &x509.Certificate{
		Subject:     pkix.Name{CommonName: "kube-apiserver"},
		NotBefore:   now.Add(-time.Hour),
		NotAfter:    now.Add(servingValidity),
		KeyUsage:    x509.KeyUsageDigitalSignature,
		ExtKeyUsage: []x509.ExtKeyUsage{x509.ExtKeyUsageServerAuth},
		DNSNames:    []string{"localhost", "kubernetes", "kubernetes.default", "kubernetes.default.svc"},
		IPAddresses: []net.IP{net.IPv4(127, 0, 0, 1)},
	}
	_, certPEM, err := sign(tmpl, ca, key.Public(), caKey)
	if err != nil {
		return err
	}
	return writePair(certPath, keyPath, certPEM, key)
}

// ensureServiceAccountKey writes the RSA key kube-apiserver signs
// service-account tokens with, and its public half that verifies them.
func ensureServiceAccountKey(dir string) error {
	keyPath, pubPath := filepath.Join(dir, saKeyFile), filepath.Join(dir, saPubFile)
	if _, err := os.Stat(keyPath); err == nil {
		if _, err := os.Stat(pubPath); err == nil {
			return nil
		}
	}
	key, err := rsa.GenerateKey(rand.Reader, 2048)
	if err != nil {
		return err
	}
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	pubDER, err := x509.MarshalPKIXPublicKey(&key.PublicKey)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(pubPath, pem.EncodeToMemory(&pem.Block{Type: "PUBLIC KEY", Bytes: pubDER}), 0o600)
}

// ensureAdminToken returns the admin bearer token from the static token file,
// writing a random one the first time. The file's format is kube-apiserver's
// --token-auth-file: token,user,uid,"group,...".
func ensureAdminToken(dir string) (string, error) {
	path := filepath.Join(dir, tokenFile)
	data, err := os.ReadFile(path)
	if err == nil {
		token, _, ok := strings.Cut(strings.TrimSpace(string(data)), ",")
		if !ok || token == "" {
			return "", fmt.Errorf("token file %s is malformed (delete it to get a new admin token)", path)
		}
		return token, nil
	}
	if !errors.Is(err, os.ErrNotExist) {
		return "", err
	}
	raw := make([]byte, 32)
	if _, err := rand.Read(raw); err != nil {
		return "", err
	}
	token := hex.EncodeToString(raw)
	line := token + `,admin,admin,"system:masters"` + "\n"
	return token, os.WriteFile(path, []byte(line), 0o600)
}

func sign(tmpl, parent *x509.Certificate, pub crypto.PublicKey, parentKey crypto.Signer) (*x509.Certificate, []byte, error) {
	serial, err := rand.Int(rand.Reader, new(big.Int).Lsh(big.NewInt(1), 127))
	if err != nil {
		return nil, nil, err
	}
	tmpl.SerialNumber = serial
	der, err := x509.CreateCertificate(rand.Reader, tmpl, parent, pub, parentKey)
	if err != nil {
		return nil, nil, err
	}
	cert, err := x509.ParseCertificate(der)
	if err != nil {
		return nil, nil, err
	}
	return cert, pem.EncodeToMemory(&pem.Block{Type: "CERTIFICATE", Bytes: der}), nil
}

func writePair(certPath, keyPath string, certPEM []byte, key crypto.Signer) error {
	keyDER, err := x509.MarshalPKCS8PrivateKey(key)
	if err != nil {
		return err
	}
	if err := os.WriteFile(keyPath, pem.EncodeToMemory(&pem.Block{Type: "PRIVATE KEY", Bytes: keyDER}), 0o600); err != nil {
		return err
	}
	return os.WriteFile(certPath, certPEM, 0o600)
}

// loadPair reads a PEM certificate and its PKCS#8 key. A missing file is
// reported as os.ErrNotExist.
func loadPair(certPath, keyPath string) (*x509.Certificate, crypto.Signer, []byte, error) {
	certPEM, err := os.ReadFile(certPath)
	if err != nil {
		return nil, nil, nil, err
	}
	keyPEM, err := os.ReadFile(keyPath)
	if err != nil {
		return nil, nil, nil, err
	}
	certBlock, _ := pem.Decode(certPEM)
	keyBlock, _ := pem.Decode(keyPEM)
	if certBlock == nil || keyBlock == nil {
		return nil, nil, nil, fmt.Errorf("%s or %s is not PEM", certPath, keyPath)
	}
	cert, err := x509.ParseCertificate(certBlock.Bytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", certPath, err)
	}
	parsed, err := x509.ParsePKCS8PrivateKey(keyBlock.Bytes)
	if err != nil {
		return nil, nil, nil, fmt.Errorf("%s: %w", keyPath, err)
	}
	key, ok := parsed.(crypto.Signer)
	if !ok {
		return nil, nil, nil, fmt.Errorf("%s: key of type %T cannot sign", keyPath, parsed)
	}
	return cert, key, certPEM, nil
}
