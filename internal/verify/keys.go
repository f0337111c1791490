package verify

import (
	"crypto"
	"crypto/ecdsa"
	"crypto/elliptic"
	"crypto/rand"
	"crypto/sha256"
	"encoding/hex"
	"fmt"
	"slices"
	"strings"

	"github.com/sigstore/sigstore/pkg/cryptoutils"
	"github.com/sigstore/sigstore/pkg/signature"
)

// Key is one trusted public key.
type Key struct {
	// Name is how status and messages name the key (spec.verify's name).
	Name string
	// Fingerprint is "sha256:<hex>" of the key's PKIX DER encoding, the
	// same for the same key wherever it is written.
	Fingerprint string

	verifier signature.Verifier
}

// String is `key "<name>" (sha256:<first 12 hex>…)`.
func (k Key) String() string {
	return fmt.Sprintf("key %q (%s)", k.Name, short(k.Fingerprint))
}

// ParseKey reads a PEM public key (ECDSA, RSA or Ed25519) trusted under
// name. An error says what the PEM is not.
func ParseKey(name string, pemBytes []byte) (Key, error) {
	pub, err := cryptoutils.UnmarshalPEMToPublicKey(pemBytes)
	if err != nil {
		return Key{}, fmt.Errorf("key %q: not a PEM public key: %v", name, err)
	}
	fp, err := Fingerprint(pub)
	if err != nil {
		return Key{}, fmt.Errorf("key %q: %v", name, err)
	}
	v, err := signature.LoadVerifier(pub, crypto.SHA256)
	if err != nil {
		return Key{}, fmt.Errorf("key %q: %v", name, err)
	}
	return Key{Name: name, Fingerprint: fp, verifier: v}, nil
}

// Fingerprint is "sha256:<hex>" of pub's PKIX DER encoding.
func Fingerprint(pub crypto.PublicKey) (string, error) {
	der, err := cryptoutils.MarshalPublicKeyToDER(pub)
	if err != nil {
		return "", err
	}
	sum := sha256.Sum256(der)
	return "sha256:" + hex.EncodeToString(sum[:]), nil
}

// KeySetID identifies a set of keys by their names and fingerprints, in
// any order: the Cache's key with an artifact digest.
func KeySetID(keys []Key) string {
	parts := make([]string, 0, len(keys))
	for _, k := range keys {
		parts = append(parts, k.Name+"="+k.Fingerprint)
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// GenerateKeyPair makes an ECDSA P-256 key pair, cosign's default, as
// PEM: the private key unencrypted as PKCS#8 ("PRIVATE KEY", keep it
// secret) and the public key as PKIX ("PUBLIC KEY", what spec.verify
// trusts and `cosign verify --key` reads).
func GenerateKeyPair() (privatePEM, publicPEM []byte, err error) {
	priv, err := ecdsa.GenerateKey(elliptic.P256(), rand.Reader)
	if err != nil {
		return nil, nil, err
	}
	if privatePEM, err = cryptoutils.MarshalPrivateKeyToPEM(priv); err != nil {
		return nil, nil, err
	}
	if publicPEM, err = cryptoutils.MarshalPublicKeyToPEM(priv.Public()); err != nil {
		return nil, nil, err
	}
	return privatePEM, publicPEM, nil
}

// short is a fingerprint cut to 12 hex digits for messages.
func short(fp string) string {
	if len(fp) > len("sha256:")+12 {
		return fp[:len("sha256:")+12] + "…"
	}
	return fp
}
