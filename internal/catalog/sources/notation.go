package sources

import (
	"cmp"
	"context"
	"fmt"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/verify"
)

// ConfigMapLookup reads the ConfigMaps a Notation trust store names
// (spec.verify.notation.trustStores[].configMapRef). A Verifier's Lookup
// that does not implement it refuses such a trust store.
type ConfigMapLookup interface {
	// ConfigMap returns the data of the ConfigMap ns/name; a NotFound
	// error when it does not exist.
	ConfigMap(ctx context.Context, ns, name string) (map[string]string, error)
}

// notationCheck reads policy.notation: its trust stores (inline, from a
// Secret or a ConfigMap), its trusted identities and its level. problem
// says what is wrong with the policy in the user's words; err is an API
// server's error, retried.
func (v *Verifier) notationCheck(ctx context.Context, policy *v1alpha1.VerificationPolicy) (ociCheck, string, error) {
	n := policy.Notation
	if n == nil {
		return ociCheck{}, "spec.verify.notation: required when spec.verify.provider is Notation", nil
	}
	stores := make([]verify.NotationStore, 0, len(n.TrustStores))
	for i, ts := range n.TrustStores {
		field := fmt.Sprintf("spec.verify.notation.trustStores[%d] (%s)", i, ts.Name)
		pem, problem, err := v.trustStoreCertificates(ctx, field, ts)
		if problem != "" || err != nil {
			return ociCheck{}, problem, err
		}
		stores = append(stores, verify.NotationStore{Name: ts.Name, SigningAuthority: ts.Type == v1alpha1.NotationSigningAuthority, PEM: pem})
	}
	level := string(cmp.Or(n.Level, v1alpha1.NotationStrict))
	p, err := v.parsedNotation.parse(stores, n.TrustedIdentities, level)
	if err != nil {
		return ociCheck{}, "spec.verify.notation." + err.Error(), nil
	}
	return ociCheck{provider: verify.ProviderNotation, expected: p.Expected, setID: p.ID,
		verify: func(ctx context.Context, art verify.Artifact, src v1alpha1.ArtifactSource) (verify.Identity, error) {
			m, sigs, err := oci.NotationSignatures(ctx, v.Fetcher, src)
			if err != nil {
				return verify.Identity{}, err
			}
			return verify.VerifyNotation(ctx, art, m.MediaType, m.Size, p, sigs)
		}}, "", nil
}

// trustStoreCertificates reads the PEM certificates of one trust store.
func (v *Verifier) trustStoreCertificates(ctx context.Context, field string, ts v1alpha1.NotationTrustStore) ([]byte, string, error) {
	switch {
	case ts.SecretRef != nil:
		r := ts.SecretRef
		key := cmp.Or(r.Key, "ca.crt")
		data, err := v.Lookup.Secret(ctx, v1alpha1.SecretReference{Name: r.Name, Namespace: r.Namespace})
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("%s.secretRef: Secret %s/%s does not exist; create it with the PEM certificates under %q", field, r.Namespace, r.Name, key), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s.secretRef: %w", field, err)
		}
		if len(data[key]) == 0 {
			return nil, fmt.Sprintf("%s.secretRef: Secret %s/%s has no key %q; put the PEM certificates there", field, r.Namespace, r.Name, key), nil
		}
		return data[key], "", nil
	case ts.ConfigMapRef != nil:
		r := ts.ConfigMapRef
		key := cmp.Or(r.Key, "ca.crt")
		cms, ok := v.Lookup.(ConfigMapLookup)
		if !ok {
			return nil, fmt.Sprintf("%s.configMapRef: this manager cannot read ConfigMaps; give the certificates inline or in a Secret", field), nil
		}
		data, err := cms.ConfigMap(ctx, r.Namespace, r.Name)
		if apierrors.IsNotFound(err) {
			return nil, fmt.Sprintf("%s.configMapRef: ConfigMap %s/%s does not exist; create it with the PEM certificates under %q", field, r.Namespace, r.Name, key), nil
		}
		if err != nil {
			return nil, "", fmt.Errorf("%s.configMapRef: %w", field, err)
		}
		if data[key] == "" {
			return nil, fmt.Sprintf("%s.configMapRef: ConfigMap %s/%s has no key %q; put the PEM certificates there", field, r.Namespace, r.Name, key), nil
		}
		return []byte(data[key]), "", nil
	}
	return []byte(ts.Certificates), "", nil
}

// notationMemo remembers parsed Notation policies by their ID (stores,
// identities, level), so that a verification whose digest is cached
// builds no verifier. At most maxParsedNotation are kept; past it the
// memo starts again empty. The zero value is ready; it is safe for
// concurrent use.
type notationMemo struct {
	mu       sync.Mutex
	policies map[string]verify.NotationPolicy
}

const maxParsedNotation = 256

func (m *notationMemo) parse(stores []verify.NotationStore, identities []string, level string) (verify.NotationPolicy, error) {
	id := verify.NotationPolicyID(stores, identities, level)
	m.mu.Lock()
	p, ok := m.policies[id]
	m.mu.Unlock()
	if ok {
		return p, nil
	}
	p, err := verify.ParseNotationPolicy(stores, identities, level)
	if err != nil {
		return p, err
	}
	m.mu.Lock()
	if m.policies == nil || len(m.policies) >= maxParsedNotation {
		m.policies = map[string]verify.NotationPolicy{}
	}
	m.policies[id] = p
	m.mu.Unlock()
	return p, nil
}
