package verify

import (
	"bytes"
	"encoding/hex"
	"errors"
	"fmt"
	"slices"
	"strings"

	"github.com/ProtonMail/go-crypto/openpgp"
	"github.com/ProtonMail/go-crypto/openpgp/armor"
	"github.com/ProtonMail/go-crypto/openpgp/clearsign"
	pgperrors "github.com/ProtonMail/go-crypto/openpgp/errors"
	"github.com/ProtonMail/go-crypto/openpgp/packet"
	"helm.sh/helm/v4/pkg/provenance"
)

// ProviderHelmProvenance is the Provider of an *Error about a Helm
// provenance file.
const ProviderHelmProvenance = "HelmProvenance"

// Keyring is one trusted OpenPGP keyring: the public keys a Helm
// provenance file may be signed with.
type Keyring struct {
	// Name is how status and messages name the keyring (spec.verify's
	// name).
	Name string
	// Fingerprints are the upper-case hex fingerprints of its primary
	// keys, in the keyring's order.
	Fingerprints []string
	entities     openpgp.EntityList
}

// ParseKeyring reads an OpenPGP keyring, ASCII-armored or binary (`gpg
// --export [--armor]`), trusted under name. An error says what the data
// is not.
func ParseKeyring(name string, data []byte) (Keyring, error) {
	var list openpgp.EntityList
	var err error
	if bytes.Contains(data, []byte("-----BEGIN PGP")) {
		list, err = openpgp.ReadArmoredKeyRing(bytes.NewReader(data))
	} else {
		list, err = openpgp.ReadKeyRing(bytes.NewReader(data))
	}
	if err != nil {
		return Keyring{}, fmt.Errorf("keyring %q: not an OpenPGP keyring: %v", name, err)
	}
	if len(list) == 0 {
		return Keyring{}, fmt.Errorf("keyring %q: holds no key", name)
	}
	ring := Keyring{Name: name, entities: list}
	for _, e := range list {
		ring.Fingerprints = append(ring.Fingerprints, strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)))
	}
	return ring, nil
}

// String is `keyring "<name>" (<fingerprint>, …)`.
func (k Keyring) String() string {
	return fmt.Sprintf("keyring %q (%s)", k.Name, strings.Join(k.Fingerprints, ", "))
}

// KeyringSetID identifies a set of keyrings by their names and
// fingerprints, in any order: the Cache's key with an artifact digest.
func KeyringSetID(rings []Keyring) string {
	parts := make([]string, 0, len(rings))
	for _, r := range rings {
		parts = append(parts, "pgp:"+r.Name+"="+strings.Join(r.Fingerprints, "+"))
	}
	slices.Sort(parts)
	return strings.Join(parts, ",")
}

// VerifyProvenance checks the Helm provenance file prov of the chart
// archive named filename (the base name of its URL, which the provenance
// file's checksums are keyed by) against the trusted keyrings, with
// Helm's own provenance package, and returns the identity of the key that
// signed it: `keyring "<name>", OpenPGP key <fingerprint> (<user ID>)`.
// prov nil means the repository serves none. Errors are *Error (Provider
// ProviderHelmProvenance):
//   - SignatureMissing: prov is nil;
//   - SignatureInvalid: prov is not a clear-signed provenance file, its
//     signature does not verify (altered after signing), or a trusted key
//     signed a checksum other than the archive's (the archive was
//     replaced);
//   - IdentityMismatch: a well-formed signature by none of the keys; Found
//     names the signing key's ID.
func VerifyProvenance(art Artifact, rings []Keyring, archive, prov []byte, filename string) (Identity, error) {
	expected := make([]string, 0, len(rings))
	for _, r := range rings {
		expected = append(expected, r.String())
	}
	fail := func(reason string, found ...string) (Identity, error) {
		return Identity{}, &Error{Provider: ProviderHelmProvenance, Reason: reason, Artifact: art, Expected: expected, Found: found}
	}
	if len(rings) == 0 {
		return fail(ReasonPolicyInvalid)
	}
	if prov == nil {
		return fail(ReasonSignatureMissing)
	}
	var block *clearsign.Block
	if err := guard(func() error { block, _ = clearsign.Decode(prov); return nil }); err != nil || block == nil {
		return fail(ReasonSignatureInvalid, "a provenance file that is not a clear-signed OpenPGP message")
	}
	for _, ring := range rings {
		sig := provenance.Signatory{KeyRing: ring.entities}
		var v *provenance.Verification
		err := guard(func() (err error) { v, err = sig.Verify(archive, prov, filename); return err })
		switch {
		case err == nil:
			return Identity{Name: pgpIdentity(ring, v.SignedBy)}, nil
		case errors.Is(err, pgperrors.ErrUnknownIssuer):
			continue
		case v != nil && v.SignedBy != nil:
			// A trusted key signed it, but not this archive.
			return fail(ReasonSignatureInvalid, fmt.Sprintf("a provenance file signed by %s that does not cover this archive: %v", pgpIdentity(ring, v.SignedBy), err))
		default:
			return fail(ReasonSignatureInvalid, fmt.Sprintf("a provenance file whose signature does not verify with %s (altered after signing, or corrupt): %v", ring, err))
		}
	}
	return fail(ReasonIdentityMismatch, "a provenance file signed by OpenPGP key "+signingKeyID(block))
}

// guard runs f and turns a panic into an error: the OpenPGP parsers
// panic on some malformed input (clearsign.Decode of
// "-----BEGIN PGP SIGNED MESSAGE-----\n\n-----BEGIN PGP SIGNATURE-----",
// found by FuzzVerifyProvenance), which a hostile repository must not be
// able to turn into a crash of the manager.
func guard(f func() error) (err error) {
	defer func() {
		if r := recover(); r != nil {
			err = fmt.Errorf("the OpenPGP parser failed on this input: %v", r)
		}
	}()
	return f()
}

// pgpIdentity names the entity of ring that signed: its keyring, its
// fingerprint and its primary user ID.
func pgpIdentity(ring Keyring, e *openpgp.Entity) string {
	s := fmt.Sprintf("keyring %q, OpenPGP key %s", ring.Name, strings.ToUpper(hex.EncodeToString(e.PrimaryKey.Fingerprint)))
	if id := e.PrimaryIdentity(); id != nil && id.Name != "" {
		s += fmt.Sprintf(" (%s)", id.Name)
	}
	return s
}

// signingKeyID is the issuer a clear-signed block's signature names: its
// fingerprint, else its 64-bit key ID, else "with no issuer".
func signingKeyID(block *clearsign.Block) string {
	var p packet.Packet
	err := guard(func() (err error) { p, err = packet.Read(block.ArmoredSignature.Body); return err })
	if err != nil {
		return "(unreadable signature packet)"
	}
	sig, ok := p.(*packet.Signature)
	switch {
	case !ok:
		return "(no signature packet)"
	case len(sig.IssuerFingerprint) > 0:
		return strings.ToUpper(hex.EncodeToString(sig.IssuerFingerprint))
	case sig.IssuerKeyId != nil:
		return fmt.Sprintf("ID %016X", *sig.IssuerKeyId)
	}
	return "with no issuer"
}

// SignProvenance makes the Helm provenance file of the chart archive
// named filename whose Chart.yaml is chartYAML, signed with the
// ASCII-armored OpenPGP private key privateArmored (unencrypted), as
// `helm package --sign` writes it.
func SignProvenance(privateArmored, archive []byte, filename string, chartYAML []byte) ([]byte, error) {
	list, err := openpgp.ReadArmoredKeyRing(bytes.NewReader(privateArmored))
	if err != nil || len(list) == 0 || list[0].PrivateKey == nil {
		return nil, fmt.Errorf("the signing key is not an armored OpenPGP private key: %v", err)
	}
	s := provenance.Signatory{Entity: list[0], KeyRing: list}
	out, err := s.ClearSign(archive, filename, chartYAML)
	if err != nil {
		return nil, err
	}
	return []byte(out), nil
}

// GenerateOpenPGPKey makes an Ed25519 OpenPGP key for the user ID
// `name <email>`, ASCII-armored: the private key unencrypted (keep it
// secret) and the public key (what spec.verify.helmProvenance trusts).
func GenerateOpenPGPKey(name, email string) (privateArmored, publicArmored []byte, err error) {
	e, err := openpgp.NewEntity(name, "", email, &packet.Config{Algorithm: packet.PubKeyAlgoEdDSA})
	if err != nil {
		return nil, nil, err
	}
	var priv, pub bytes.Buffer
	w, err := armor.Encode(&priv, openpgp.PrivateKeyType, nil)
	if err != nil {
		return nil, nil, err
	}
	if err := e.SerializePrivate(w, nil); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	if w, err = armor.Encode(&pub, openpgp.PublicKeyType, nil); err != nil {
		return nil, nil, err
	}
	if err := e.Serialize(w); err != nil {
		return nil, nil, err
	}
	if err := w.Close(); err != nil {
		return nil, nil, err
	}
	return priv.Bytes(), pub.Bytes(), nil
}
