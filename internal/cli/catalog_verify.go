package cli

import (
	"bytes"
	"fmt"
	"os"
	"path/filepath"
	"regexp"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/verify"
)

// keyName is what the API accepts as a key's name (CosignKey.Name).
var keyName = regexp.MustCompile(`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`)

// VerifyModes are the values --verify-mode takes.
var VerifyModes = []string{string(v1alpha1.VerificationEnforce), string(v1alpha1.VerificationAudit)}

// verifyPolicyFor is the Cosign policy o.VerifyKeys and o.VerifyMode
// describe, nil without keys. It reads and checks each key file, so that
// a private key, a file that is no PEM public key or a name the API
// refuses is reported with the file's path before anything is written.
func verifyPolicyFor(o CatalogOptions) (*v1alpha1.VerificationPolicy, error) {
	if len(o.VerifyKeys) == 0 {
		if o.VerifyMode != "" {
			return nil, Usagef("--verify-mode %s needs --verify-key FILE: the public keys catalog %q's artifacts must be signed with", o.VerifyMode, o.Name)
		}
		return nil, nil
	}
	if !strings.HasPrefix(o.Source, "oci://") || o.OLM {
		return nil, Usagef("--verify-key: catalog %q reads %s, and cosign signatures are verified on artifacts in OCI registries (oci://registry/repository) only; "+
			"for charts in an HTTP Helm repository set spec.verify.helmProvenance with OpenPGP keys instead (docs/guides/signing.md)", o.Name, o.Source)
	}
	mode := v1alpha1.VerificationEnforce
	switch {
	case o.VerifyMode == "" || strings.EqualFold(o.VerifyMode, string(v1alpha1.VerificationEnforce)):
	case strings.EqualFold(o.VerifyMode, string(v1alpha1.VerificationAudit)):
		mode = v1alpha1.VerificationAudit
	default:
		return nil, Usagef("--verify-mode %q: use Enforce (refuse what the keys did not sign) or Audit (install it and report)", o.VerifyMode)
	}
	policy := &v1alpha1.VerificationPolicy{Provider: v1alpha1.VerificationCosign, Mode: mode, Cosign: &v1alpha1.CosignVerification{}}
	seen := map[string]string{}
	for _, file := range o.VerifyKeys {
		name := strings.TrimSuffix(filepath.Base(file), filepath.Ext(file))
		if len(name) > 63 || !keyName.MatchString(name) {
			return nil, Usagef("--verify-key %s: a key is named after its file, and %q is not a key name (lower-case letters, digits, '-' and '.', at most 63 characters); "+
				"copy it to a file so named, e.g. release-2026.pub", file, name)
		}
		if other, ok := seen[name]; ok {
			return nil, Usagef("--verify-key %s: %s gives the same key name %q; copy one of them to a file of another name", file, other, name)
		}
		seen[name] = file
		data, err := os.ReadFile(file)
		if err != nil {
			return nil, Usagef("--verify-key %s: %v", file, err)
		}
		if bytes.Contains(data, []byte("PRIVATE KEY-----")) {
			return nil, Usagef("--verify-key %s is a private key: pass the public key (annexctl package keygen writes it next to the private one, as %s.pub); "+
				"the private key stays with whoever signs", file, strings.TrimSuffix(file, filepath.Ext(file)))
		}
		if _, err := verify.ParseKey(name, data); err != nil {
			return nil, Usagef("--verify-key %s: %v; pass a PEM public key (-----BEGIN PUBLIC KEY-----), such as annexctl package keygen's .pub file or cosign.pub", file, err)
		}
		policy.Cosign.Keys = append(policy.Cosign.Keys, v1alpha1.CosignKey{Name: name, PublicKey: string(data)})
	}
	return policy, nil
}

// DescribeVerify says in one sentence what a Catalog's spec.verify
// trusts and does, for annexctl catalog add to confirm; "" without a
// policy. Inline cosign keys are named with their fingerprints.
func DescribeVerify(p *v1alpha1.VerificationPolicy) string {
	if p == nil {
		return ""
	}
	var trusted []string
	switch {
	case p.Cosign != nil && len(p.Cosign.Keys) > 0:
		for _, k := range p.Cosign.Keys {
			if parsed, err := verify.ParseKey(k.Name, []byte(k.PublicKey)); err == nil && k.PublicKey != "" {
				trusted = append(trusted, parsed.String())
			} else {
				trusted = append(trusted, fmt.Sprintf("key %q", k.Name))
			}
		}
	case p.Cosign != nil && p.Cosign.Keyless != nil:
		trusted = append(trusted, "keyless certificates")
	case p.HelmProvenance != nil:
		for _, k := range p.HelmProvenance.Keyrings {
			trusted = append(trusted, fmt.Sprintf("keyring %q", k.Name))
		}
	}
	what := "refuses"
	if p.Mode == v1alpha1.VerificationAudit {
		what = "installs and reports"
	}
	return fmt.Sprintf("its artifacts must carry a %s signature by %s; it %s what does not (%s)", p.Provider, strings.Join(trusted, " or "), what, orEnforce(p.Mode))
}

func orEnforce(m v1alpha1.VerificationMode) v1alpha1.VerificationMode {
	if m == "" {
		return v1alpha1.VerificationEnforce
	}
	return m
}
