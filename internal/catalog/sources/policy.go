package sources

import (
	"fmt"

	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// DefaultPolicyKey is the data key of the ConfigMap that holds the
// cluster-wide default signature policy (manager flag
// --default-verify-policy): a VerificationPolicy as YAML, the same
// fields as a Catalog's spec.verify.
const DefaultPolicyKey = "verify.yaml"

// ParseDefaultPolicy reads the cluster-wide default policy from the
// YAML of a ConfigMap's DefaultPolicyKey, checking what the CRD schema
// checks for a Catalog's spec.verify (the API server does not check a
// ConfigMap). An error names the field and what to write.
func ParseDefaultPolicy(data []byte) (*v1alpha1.VerificationPolicy, error) {
	var p v1alpha1.VerificationPolicy
	if err := yaml.UnmarshalStrict(data, &p); err != nil {
		return nil, fmt.Errorf("%s: not a verification policy (the fields of a Catalog's spec.verify): %v", DefaultPolicyKey, err)
	}
	switch p.Mode {
	case "", v1alpha1.VerificationEnforce, v1alpha1.VerificationAudit:
	default:
		return nil, fmt.Errorf("%s: mode %q: use Enforce or Audit", DefaultPolicyKey, p.Mode)
	}
	switch {
	case p.Provider == v1alpha1.VerificationCosign && (p.Cosign == nil || (len(p.Cosign.Keys) == 0) == (p.Cosign.Keyless == nil)):
		return nil, fmt.Errorf("%s: cosign: set exactly one of cosign.keys and cosign.keyless when provider is Cosign", DefaultPolicyKey)
	case p.Provider == v1alpha1.VerificationHelmProvenance && (p.HelmProvenance == nil || len(p.HelmProvenance.Keyrings) == 0):
		return nil, fmt.Errorf("%s: helmProvenance.keyrings: required when provider is HelmProvenance", DefaultPolicyKey)
	case p.Provider == v1alpha1.VerificationNotation && (p.Notation == nil || len(p.Notation.TrustStores) == 0 || len(p.Notation.TrustedIdentities) == 0):
		return nil, fmt.Errorf("%s: notation.trustStores and notation.trustedIdentities: required when provider is Notation", DefaultPolicyKey)
	case p.Provider != v1alpha1.VerificationCosign && p.Provider != v1alpha1.VerificationHelmProvenance && p.Provider != v1alpha1.VerificationNotation:
		return nil, fmt.Errorf("%s: provider %q: use Cosign, Notation or HelmProvenance", DefaultPolicyKey, p.Provider)
	}
	return &p, nil
}

// EffectivePolicy is the policy an artifact is verified under: the
// catalog's own spec.verify when it has one, else the cluster default
// def; its mode the strictest of the catalog's, the default's and the
// installation's (installMode, "" or Enforce). A catalog or an
// installation can tighten Audit to Enforce, never loosen Enforce to
// Audit. fromDefault says the keys are the default's. With neither
// policy, the result is nil unless the installation asks for Enforce:
// then it is a policy with no provider, which trusts no one.
func EffectivePolicy(catalog, def *v1alpha1.VerificationPolicy, installMode v1alpha1.VerificationMode) (policy *v1alpha1.VerificationPolicy, fromDefault bool) {
	switch {
	case catalog != nil:
		policy = catalog.DeepCopy()
	case def != nil:
		policy, fromDefault = def.DeepCopy(), true
	case installMode == v1alpha1.VerificationEnforce:
		return &v1alpha1.VerificationPolicy{Mode: v1alpha1.VerificationEnforce}, false
	default:
		return nil, false
	}
	if policy.Mode == "" || installMode == v1alpha1.VerificationEnforce || (def != nil && def.Mode != v1alpha1.VerificationAudit) {
		policy.Mode = v1alpha1.VerificationEnforce
	}
	return policy, fromDefault
}
