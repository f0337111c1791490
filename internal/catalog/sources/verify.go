package sources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/verify"
)

// Verifier verifies artifacts as the policy of the catalog that supplied
// them asks (a Catalog's spec.verify): it reads the policy and its keys,
// fetches the cosign signatures next to an OCI artifact, and hands them to
// internal/verify. A verified digest is remembered (Cache), so that an
// artifact is verified once per key set. It is safe for concurrent use.
type Verifier struct {
	// Fetcher reads the registry with the catalog's credentials.
	Fetcher *catalog.Fetcher
	// Lookup reads the Catalog (a cached reader is best: every fetch asks)
	// and the Secrets holding keys.
	Lookup catalog.CatalogLookup
	// Cache holds verified digests; nil verifies every time.
	Cache *verify.Cache
	// Archives fetches a chart's archive for its Helm provenance check
	// (the manager's artifact cache, so the fetch that follows finds it);
	// nil means Artifacts{Fetcher}.
	Archives catalog.ArtifactFetcher
}

// Verify returns the verification of src's artifact, ref naming it in
// messages (e.g. "demo 1.0.0"):
//   - a built-in artifact (builtin://) is part of the Annex binary:
//     verified, provider Builtin, whatever the policy;
//   - a catalog without spec.verify: nil;
//   - otherwise the outcome under the policy, Verified or not, with the
//     policy's mode: a missing, invalid or untrusted signature, an
//     artifact the provider cannot verify (not in an OCI registry) and a
//     policy whose keys cannot be read are outcomes with a Reason and a
//     message, not errors. The caller decides by the mode.
//
// Errors (a registry or API server that does not answer) are retried.
func (v *Verifier) Verify(ctx context.Context, ref string, src v1alpha1.ArtifactSource) (*v1alpha1.ArtifactVerification, error) {
	u, err := url.Parse(src.URL)
	if err == nil && u.Scheme == "builtin" {
		return &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationBuiltin, Verified: true,
			Identity: "the Annex binary (built-in catalog)"}, nil
	}
	if src.Catalog == "" || v.Lookup == nil {
		return nil, nil
	}
	cat, err := v.Lookup.Catalog(ctx, src.Catalog)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w", src.Catalog, err)
	}
	if cat == nil || cat.Spec.Verify == nil {
		return nil, nil
	}
	policy := cat.Spec.Verify
	out := &v1alpha1.ArtifactVerification{Provider: policy.Provider, Mode: cmp.Or(policy.Mode, v1alpha1.VerificationEnforce)}
	refuse := func(reason, message string) (*v1alpha1.ArtifactVerification, error) {
		out.Reason, out.Message = reason, message
		return out, nil
	}
	if policy.Provider == v1alpha1.VerificationHelmProvenance {
		return v.verifyProvenance(ctx, ref, src, cat, out)
	}
	keys, problem, err := v.keys(ctx, cat)
	if err != nil {
		return nil, err
	}
	if problem != "" {
		return refuse(v1alpha1.ReasonVerificationPolicyInvalid, fmt.Sprintf("catalog %q: %s; %s cannot be verified until it is fixed", cat.Name, problem, ref))
	}
	digest, err := oci.ManifestDigest(src.URL)
	art := verify.Artifact{Ref: fmt.Sprintf("%s from catalog %q (%s)", ref, cat.Name, src.URL), Digest: digest}
	if err != nil {
		// Cosign signs OCI manifests; another artifact has no signature it
		// can read, which is never taken as a pass.
		art.Digest = cmp.Or(src.Digest, "unknown")
		scheme := "an unknown scheme"
		if u != nil {
			scheme = u.Scheme + "://"
		}
		e := &verify.Error{Reason: verify.ReasonSignatureMissing, Artifact: art, Expected: keyNames(keys),
			Found: []string{fmt.Sprintf("an artifact served over %s, which cosign cannot sign (it signs OCI artifacts; a catalog of an HTTP Helm repository verifies with provider HelmProvenance)", scheme)}}
		return refuse(e.Reason, e.Error())
	}
	keySet := verify.KeySetID(keys)
	if v.Cache != nil {
		if id, ok := v.Cache.Get(digest, keySet); ok {
			out.Verified, out.Identity = true, id.String()
			return out, nil
		}
	}
	sigs, err := oci.CosignSignatures(ctx, v.Fetcher, src)
	var malformed *oci.MalformedSignatureError
	if errors.As(err, &malformed) {
		e := &verify.Error{Reason: verify.ReasonSignatureInvalid, Artifact: art, Expected: keyNames(keys), Found: []string{malformed.Error()}}
		return refuse(e.Reason, e.Error())
	}
	if err != nil {
		return nil, err
	}
	id, err := verify.Verify(art, keys, sigs)
	var verr *verify.Error
	if errors.As(err, &verr) {
		return refuse(verr.Reason, verr.Error())
	}
	if err != nil {
		return nil, err
	}
	if v.Cache != nil {
		v.Cache.Put(digest, keySet, id)
	}
	out.Verified, out.Identity = true, id.String()
	return out, nil
}

// keys reads the policy's trusted keys. problem says what is wrong with
// the policy in the user's words (a key that does not parse, a missing
// Secret or data key); err is an API server's error, retried.
func (v *Verifier) keys(ctx context.Context, cat *v1alpha1.Catalog) (keys []verify.Key, problem string, err error) {
	policy := cat.Spec.Verify
	if policy.Cosign == nil {
		return nil, "spec.verify.cosign: required when spec.verify.provider is Cosign", nil
	}
	for i, k := range policy.Cosign.Keys {
		field := fmt.Sprintf("spec.verify.cosign.keys[%d] (%s)", i, k.Name)
		pem := []byte(k.PublicKey)
		if r := k.SecretRef; r != nil {
			data, err := v.Lookup.Secret(ctx, v1alpha1.SecretReference{Name: r.Name, Namespace: r.Namespace})
			if apierrors.IsNotFound(err) {
				return nil, fmt.Sprintf("%s.secretRef: Secret %s/%s does not exist; create it with the PEM public key under %q", field, r.Namespace, r.Name, cmp.Or(r.Key, "cosign.pub")), nil
			}
			if err != nil {
				return nil, "", fmt.Errorf("%s.secretRef: %w", field, err)
			}
			if pem = data[cmp.Or(r.Key, "cosign.pub")]; len(pem) == 0 {
				return nil, fmt.Sprintf("%s.secretRef: Secret %s/%s has no key %q; put the PEM public key there", field, r.Namespace, r.Name, cmp.Or(r.Key, "cosign.pub")), nil
			}
		}
		key, err := verify.ParseKey(k.Name, pem)
		if err != nil {
			return nil, fmt.Sprintf("%s: %v", field, err), nil
		}
		keys = append(keys, key)
	}
	return keys, "", nil
}

func keyNames(keys []verify.Key) []string {
	out := make([]string, 0, len(keys))
	for _, k := range keys {
		out = append(out, k.String())
	}
	return out
}
