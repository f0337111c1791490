package cli

import (
	"errors"
	"fmt"
	"io"
	"os"

	"github.com/annex-platform/annex/internal/verify"
)

// KeygenOptions configure Keygen.
type KeygenOptions struct {
	// Prefix is the path of the files without extension: <Prefix>.key
	// and <Prefix>.pub ("" is cosign).
	Prefix string
	// Force overwrites existing files.
	Force bool
	Out   io.Writer
}

// Keygen writes a new ECDSA P-256 key pair for signing packages:
// <Prefix>.key, the PEM private key (PKCS#8, unencrypted, mode 0600:
// keep it secret, give it to push --sign-key), and <Prefix>.pub, the PEM
// public key a Catalog's spec.verify.cosign.keys trusts (cosign verify
// --key reads it too). It refuses to overwrite a file unless Force, and
// prints both paths and the key's fingerprint.
func Keygen(o KeygenOptions) error {
	prefix := o.Prefix
	if prefix == "" {
		prefix = "cosign"
	}
	priv, pub, err := verify.GenerateKeyPair()
	if err != nil {
		return err
	}
	fingerprint, err := verify.SigningKeyFingerprint(priv, nil)
	if err != nil {
		return err
	}
	for _, f := range []struct {
		path string
		data []byte
		mode os.FileMode
	}{{prefix + ".key", priv, 0o600}, {prefix + ".pub", pub, 0o644}} {
		flags := os.O_WRONLY | os.O_CREATE | os.O_TRUNC
		if !o.Force {
			flags |= os.O_EXCL
		}
		file, err := os.OpenFile(f.path, flags, f.mode)
		if errors.Is(err, os.ErrExist) {
			return fmt.Errorf("%s exists; choose another name or pass --force to overwrite it", f.path)
		}
		if err != nil {
			return err
		}
		if _, err := file.Write(f.data); err != nil {
			file.Close()
			return err
		}
		if err := file.Close(); err != nil {
			return err
		}
	}
	fmt.Fprintf(o.Out, "wrote %s.key (private: keep it secret) and %s.pub (public: trust it in a Catalog's spec.verify.cosign.keys)\nkey fingerprint %s\n", prefix, prefix, fingerprint)
	return nil
}
