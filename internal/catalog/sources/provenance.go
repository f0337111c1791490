package sources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"path"
	"sync"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/verify"
)

// maxProvenanceBytes bounds a provenance file: a few kilobytes of YAML
// and a signature.
const maxProvenanceBytes = 256 << 10

// verifyProvenance verifies the chart at src (an http(s):// archive URL)
// with the Helm provenance file next to it, <URL>.prov, against the
// keyrings of policy.helmProvenance (from names the policy's owner;
// auditRefused, why Audit cannot apply, if it cannot), and fills out. The
// archive is fetched through Archives (it must have src.Digest); a
// verified digest is cached as for cosign. A repository that answers 404
// for the .prov has no signature; another artifact URL (oci://, file://)
// has none this provider reads. Both are outcomes, never a pass.
func (v *Verifier) verifyProvenance(ctx context.Context, ref string, src v1alpha1.ArtifactSource, policy *v1alpha1.VerificationPolicy, from, auditRefused string, out *v1alpha1.ArtifactVerification) (*v1alpha1.ArtifactVerification, error) {
	refuse := func(reason, message string) (*v1alpha1.ArtifactVerification, error) {
		out.Reason, out.Message = reason, message
		return out, nil
	}
	rings, problem, err := v.keyrings(ctx, policy)
	if err != nil {
		return nil, err
	}
	if problem != "" {
		return refuse(v1alpha1.ReasonVerificationPolicyInvalid, fmt.Sprintf("%s: %s; %s cannot be verified until it is fixed", from, problem, ref))
	}
	art := verify.Artifact{Ref: fmt.Sprintf("%s from %s (%s)", ref, from, src.URL), Digest: cmp.Or(src.Digest, "unknown")}
	u, err := url.Parse(src.URL)
	if err != nil || (u.Scheme != "http" && u.Scheme != "https") {
		e := &verify.Error{Provider: verify.ProviderHelmProvenance, Reason: verify.ReasonSignatureMissing, Artifact: art, Expected: ringNames(rings),
			Found: []string{"an artifact that is not a chart in an HTTP Helm repository, which has no provenance file (for OCI artifacts, use provider Cosign)"}}
		e.AuditRefused = auditRefused
		return refuse(e.Reason, e.Error())
	}
	ringSet := verify.KeyringSetID(rings)
	if v.Cache != nil && src.Digest != "" {
		if id, ok := v.Cache.Get(src.Digest, ringSet); ok {
			out.Verified, out.Identity = true, id.String()
			return out, nil
		}
	}
	access, err := v.Fetcher.CatalogAccess(ctx, src.Catalog)
	if err != nil {
		return nil, err
	}
	provURL := *u
	provURL.Path += ".prov"
	prov, _, err := v.Fetcher.Get(ctx, &provURL, access, nil, maxProvenanceBytes)
	var fetchErr *catalog.FetchError
	var tooLarge *catalog.TooLargeError
	switch {
	case errors.As(err, &fetchErr) && fetchErr.StatusCode == 404:
		prov = nil
	case errors.As(err, &tooLarge):
		e := &verify.Error{Provider: verify.ProviderHelmProvenance, Reason: verify.ReasonSignatureInvalid, Artifact: art, Expected: ringNames(rings), Found: []string{err.Error()}}
		e.AuditRefused = auditRefused
		return refuse(e.Reason, e.Error())
	case err != nil:
		return nil, err
	}
	archives := v.Archives
	if archives == nil {
		archives = Artifacts{Fetcher: v.Fetcher}
	}
	archive, err := archives.FetchArtifact(ctx, src)
	if err != nil {
		return nil, err
	}
	art.Digest = catalog.Digest(archive)
	id, err := verify.VerifyProvenance(art, rings, archive, prov, path.Base(u.Path))
	return v.conclude(out, verify.ProviderHelmProvenance, art, ringNames(rings), auditRefused, ringSet, id, err)
}

// keyrings reads the policy's trusted keyrings, as keys does the cosign
// keys: problem is what is wrong with the policy in the user's words, err
// an API server's error.
func (v *Verifier) keyrings(ctx context.Context, policy *v1alpha1.VerificationPolicy) (rings []verify.Keyring, problem string, err error) {
	if policy.HelmProvenance == nil {
		return nil, "spec.verify.helmProvenance: required when spec.verify.provider is HelmProvenance", nil
	}
	for i, k := range policy.HelmProvenance.Keyrings {
		field := fmt.Sprintf("spec.verify.helmProvenance.keyrings[%d] (%s)", i, k.Name)
		data := []byte(k.Keyring)
		if r := k.SecretRef; r != nil {
			key := cmp.Or(r.Key, "pubring.gpg")
			secret, err := v.Lookup.Secret(ctx, v1alpha1.SecretReference{Name: r.Name, Namespace: r.Namespace})
			if apierrors.IsNotFound(err) {
				return nil, fmt.Sprintf("%s.secretRef: Secret %s/%s does not exist; create it with the OpenPGP public keyring under %q", field, r.Namespace, r.Name, key), nil
			}
			if err != nil {
				return nil, "", fmt.Errorf("%s.secretRef: %w", field, err)
			}
			if data = secret[key]; len(data) == 0 {
				return nil, fmt.Sprintf("%s.secretRef: Secret %s/%s has no key %q; put the OpenPGP public keyring there (gpg --export)", field, r.Namespace, r.Name, key), nil
			}
		}
		ring, err := v.parsedKeyrings.parse(k.Name, data)
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", field, err), nil
		}
		rings = append(rings, ring)
	}
	return rings, "", nil
}

// keyringMemo remembers parsed keyrings by name and content, so that a
// verification whose digest is cached does not parse the armored
// keyring again (parsing costs more than the rest of a cache hit). At
// most maxParsedKeyrings are kept; past it the memo starts again empty.
// The zero value is ready; it is safe for concurrent use.
type keyringMemo struct {
	mu    sync.Mutex
	rings map[string]verify.Keyring
}

const maxParsedKeyrings = 256

func (m *keyringMemo) parse(name string, data []byte) (verify.Keyring, error) {
	key := name + "\x00" + string(data)
	m.mu.Lock()
	ring, ok := m.rings[key]
	m.mu.Unlock()
	if ok {
		return ring, nil
	}
	ring, err := verify.ParseKeyring(name, data)
	if err != nil {
		return ring, err
	}
	m.mu.Lock()
	if m.rings == nil || len(m.rings) >= maxParsedKeyrings {
		m.rings = map[string]verify.Keyring{}
	}
	m.rings[key] = ring
	m.mu.Unlock()
	return ring, nil
}

func ringNames(rings []verify.Keyring) []string {
	out := make([]string, 0, len(rings))
	for _, r := range rings {
		out = append(out, r.String())
	}
	return out
}
