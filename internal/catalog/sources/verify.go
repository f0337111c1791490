package sources

import (
	"cmp"
	"context"
	"errors"
	"fmt"
	"net/url"
	"strings"

	"golang.org/x/sync/singleflight"
	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/olm"
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
	// Default returns the cluster-wide default policy, for catalogs
	// without spec.verify: nil when there is none; an
	// *InvalidDefaultPolicyError when the administrator's policy cannot be
	// read, which refuses every artifact it would cover. Nil means no
	// default.
	Default func(ctx context.Context) (*v1alpha1.VerificationPolicy, error)
	// DefaultName names where the default is, for messages, e.g.
	// "ConfigMap annex-system/annex-verify-policy".
	DefaultName string
	// parsedKeyrings remembers the OpenPGP keyrings already parsed, and
	// parsedNotation the Notation policies.
	parsedKeyrings keyringMemo
	parsedNotation notationMemo
	// inflight joins the installations that verify the same digest under
	// the same policy at once (a profile rolling one version out to many
	// clusters) to one check: the first's answer is every waiter's.
	inflight singleflight.Group
	// Archives fetches a chart's archive for its Helm provenance check
	// (the manager's artifact cache, so the fetch that follows finds it);
	// nil means Artifacts{Fetcher}.
	Archives catalog.ArtifactFetcher
}

// Verify returns the verification of src's artifact, ref naming it in
// messages (e.g. "demo 1.0.0"), under the policy EffectivePolicy makes of
// its catalog's spec.verify, the cluster default (Default) and the
// installation's installMode:
//   - a built-in artifact (builtin://) is part of the Annex binary:
//     verified, provider Builtin, whatever the policy;
//   - no policy: nil;
//   - otherwise the outcome under the policy, Verified or not, with the
//     policy's mode: a missing, invalid or untrusted signature, an
//     artifact the provider cannot verify (not in an OCI registry) and a
//     policy whose keys cannot be read are outcomes with a Reason and a
//     message, not errors. The caller decides by the mode.
//
// Errors (a registry or API server that does not answer) are retried.
func (v *Verifier) Verify(ctx context.Context, ref string, src v1alpha1.ArtifactSource, installMode v1alpha1.VerificationMode) (*v1alpha1.ArtifactVerification, error) {
	u, err := url.Parse(src.URL)
	if err == nil && u.Scheme == "builtin" {
		return &v1alpha1.ArtifactVerification{Provider: v1alpha1.VerificationBuiltin, Verified: true,
			Identity: "the Annex binary (built-in catalog)"}, nil
	}
	var cat *v1alpha1.Catalog
	if src.Catalog != "" && v.Lookup != nil {
		if cat, err = v.Lookup.Catalog(ctx, src.Catalog); err != nil {
			return nil, fmt.Errorf("catalog %q: %w", src.Catalog, err)
		}
	}
	if cat == nil {
		cat = &v1alpha1.Catalog{}
		cat.Name = cmp.Or(src.Catalog, "(none)")
	}
	var def *v1alpha1.VerificationPolicy
	var defProblem string
	if v.Default != nil {
		if def, err = v.Default(ctx); err != nil {
			var invalid *InvalidDefaultPolicyError
			if !errors.As(err, &invalid) {
				return nil, err
			}
			// Fail closed: the floor of every catalog's mode is Enforce.
			defProblem, def = invalid.Error(), &v1alpha1.VerificationPolicy{Mode: v1alpha1.VerificationEnforce}
		}
	}
	if defProblem != "" && cat.Spec.Verify == nil {
		return &v1alpha1.ArtifactVerification{Mode: v1alpha1.VerificationEnforce, Reason: v1alpha1.ReasonVerificationPolicyInvalid,
			Message: fmt.Sprintf("%s cannot be verified: %s; the cluster administrator must fix it (every catalog without its own spec.verify waits until then)", ref, defProblem)}, nil
	}
	policy, fromDefault := EffectivePolicy(cat.Spec.Verify, def, installMode)
	if policy == nil {
		return nil, nil
	}
	from := fmt.Sprintf("catalog %q", cat.Name)
	if fromDefault {
		from = fmt.Sprintf("the cluster default policy for catalog %q (%s)", cat.Name, v.DefaultName)
	}
	auditRefused := ""
	switch {
	case installMode == v1alpha1.VerificationEnforce:
		auditRefused = "the installation's spec.verifyMode is Enforce"
	case def != nil && def.Mode != v1alpha1.VerificationAudit && v.DefaultName != "":
		auditRefused = fmt.Sprintf("the cluster default policy (%s) is Enforce, which a catalog cannot loosen", v.DefaultName)
	case def != nil && def.Mode != v1alpha1.VerificationAudit:
		auditRefused = "the cluster default policy is Enforce, which a catalog cannot loosen"
	}
	out := &v1alpha1.ArtifactVerification{Provider: policy.Provider, Mode: policy.Mode}
	refuse := func(reason, message string) (*v1alpha1.ArtifactVerification, error) {
		out.Reason, out.Message = reason, message
		return out, nil
	}
	switch policy.Provider {
	case v1alpha1.VerificationHelmProvenance:
		return v.verifyProvenance(ctx, ref, src, policy, from, auditRefused, out)
	case v1alpha1.VerificationCosign, v1alpha1.VerificationNotation:
	default:
		return refuse(v1alpha1.ReasonVerificationPolicyInvalid, fmt.Sprintf("%s is refused: the installation's spec.verifyMode is Enforce, but %s has no spec.verify and there is no cluster default policy, so no one is trusted to sign it; give the catalog a spec.verify, or remove spec.verifyMode", ref, from))
	}
	var check ociCheck
	var problem string
	if policy.Provider == v1alpha1.VerificationNotation {
		check, problem, err = v.notationCheck(ctx, policy)
	} else {
		check, problem, err = v.cosignCheck(ctx, policy)
	}
	if err != nil {
		return nil, err
	}
	if problem != "" {
		return refuse(v1alpha1.ReasonVerificationPolicyInvalid, fmt.Sprintf("%s: %s; %s cannot be verified until it is fixed", from, problem, ref))
	}
	src, shown, notOCI := inlineBundleSource(cat, src)
	art := verify.Artifact{Ref: fmt.Sprintf("%s from %s (%s)", ref, from, shown), Digest: cmp.Or(src.Digest, "unknown")}
	if notOCI != "" {
		// Cosign and Notation sign OCI manifests; another artifact has no
		// signature they can read, which is never taken as a pass.
		e := &verify.Error{Provider: check.provider, Reason: verify.ReasonSignatureMissing, Artifact: art, Expected: check.expected, Found: []string{notOCI}}
		e.AuditRefused = auditRefused
		return refuse(e.Reason, e.Error())
	}
	digest, err := oci.ManifestDigest(src.URL)
	if err != nil {
		// A reference by tag (an OLM bundle or catalog image): verify the
		// manifest the tag names now.
		m, err := oci.ResolveManifest(ctx, v.Fetcher, src)
		if err != nil {
			return nil, err
		}
		digest = m.Digest
		src.URL = pinned(src.URL, digest)
	}
	art.Digest = digest
	if v.Cache != nil {
		if id, ok := v.Cache.Get(digest, check.setID); ok {
			out.Verified, out.Identity = true, id.String()
			return out, nil
		}
	}
	// Keyed by what the answer's words name too (the artifact as art.Ref
	// shows it), so that a waiter's message is its own.
	shared, err, _ := v.inflight.Do(digest+"\x00"+check.setID+"\x00"+art.Ref, func() (any, error) { return check.verify(ctx, art, src) })
	id, _ := shared.(verify.Identity)
	return v.conclude(out, check.provider, art, check.expected, auditRefused, check.setID, id, err)
}

// conclude records the outcome of one provider's check of art in out:
// verified (and cached under setID), refused with the *verify.Error's
// reason and message (a signature that cannot be read is SignatureInvalid;
// auditRefused says why Audit cannot apply, if it cannot), or an error to
// retry (a registry or server that does not answer).
func (v *Verifier) conclude(out *v1alpha1.ArtifactVerification, provider string, art verify.Artifact, expected []string, auditRefused, setID string, id verify.Identity, err error) (*v1alpha1.ArtifactVerification, error) {
	var malformed *oci.MalformedSignatureError
	if errors.As(err, &malformed) {
		err = &verify.Error{Provider: provider, Reason: verify.ReasonSignatureInvalid, Artifact: art, Expected: expected, Found: []string{malformed.Error()}}
	}
	var verr *verify.Error
	if errors.As(err, &verr) {
		// A copy: the error may be shared by the checks inflight joined.
		own := *verr
		own.AuditRefused = auditRefused
		out.Reason, out.Message = own.Reason, own.Error()
		return out, nil
	}
	if err != nil {
		return nil, err
	}
	if v.Cache != nil {
		v.Cache.Put(art.Digest, setID, id)
	}
	out.Verified, out.Identity = true, id.String()
	return out, nil
}

// inlineBundleSource is the artifact that vouches for src: src itself,
// or for a bundle inline in an OLM catalog (olm://) the catalog's image,
// whose signature covers every bundle in it. shown names it in messages;
// notOCI, when not empty, says why no OCI signature can cover it.
func inlineBundleSource(cat *v1alpha1.Catalog, src v1alpha1.ArtifactSource) (out v1alpha1.ArtifactSource, shown, notOCI string) {
	u, err := url.Parse(src.URL)
	switch {
	case err != nil:
		return src, src.URL, "an artifact URL that does not parse"
	case u.Scheme == "oci":
		return src, src.URL, ""
	case u.Scheme == olm.BundleScheme && cat.Spec.Source.OLM != nil && cat.Spec.Source.OLM.Image != "":
		img := cat.Spec.Source.OLM.Image
		return v1alpha1.ArtifactSource{URL: "oci://" + img, Catalog: src.Catalog},
			fmt.Sprintf("%s, inline in the catalog image oci://%s", src.URL, img), ""
	case u.Scheme == olm.BundleScheme:
		return src, src.URL, fmt.Sprintf("a bundle inline in catalog %q, which is read from a URL or a folder, not an image, and so carries no signature (publish the catalog as an image and sign it, or pin the bundle's image by digest in the catalog)", cat.Name)
	}
	return src, src.URL, fmt.Sprintf("an artifact served over %s://, which cannot carry an OCI signature (Cosign and Notation sign OCI artifacts; a catalog of an HTTP Helm repository verifies with provider HelmProvenance)", u.Scheme)
}

// pinned is the oci:// URL of raw (a tag or digest reference) pinned to
// digest.
func pinned(raw, digest string) string {
	rest, _, _ := strings.Cut(strings.TrimPrefix(raw, "oci://"), "@")
	if i := strings.LastIndex(rest, ":"); i > strings.LastIndex(rest, "/") {
		rest = rest[:i]
	}
	return "oci://" + rest + "@" + digest
}

// VerifyCatalogImage verifies the image of an olm catalog
// (spec.source.olm.image, by tag or digest) under the catalog's policy
// (or the cluster default), as Verify does an installation's artifact,
// and returns the image pinned to the digest verified: the catalog is
// read from exactly what was verified. With neither a catalog policy nor
// a cluster default, the image is returned as it is, with no request.
// Under Audit an image that is not verified is read too (pinned): the
// installations of its inline bundles verify the same image and report
// it. A refusal under Enforce is a *CatalogImageRefusedError; other
// errors (a registry that does not answer) are retried.
func (v *Verifier) VerifyCatalogImage(ctx context.Context, cat *v1alpha1.Catalog, image string) (string, error) {
	if cat.Spec.Verify == nil && v.Default == nil {
		// No policy can apply: read the image as it is, with no extra
		// request.
		return image, nil
	}
	src := v1alpha1.ArtifactSource{URL: "oci://" + image, Catalog: cat.Name}
	m, err := oci.ResolveManifest(ctx, v.Fetcher, src)
	if err != nil {
		return "", fmt.Errorf("spec.source.olm.image: %w", err)
	}
	src.URL = pinned(src.URL, m.Digest)
	out, err := v.Verify(ctx, fmt.Sprintf("the catalog image of catalog %q", cat.Name), src, "")
	if err != nil {
		return "", err
	}
	if out != nil && !out.Verified && out.Mode != v1alpha1.VerificationAudit {
		return "", &CatalogImageRefusedError{Reason: out.Reason, Message: out.Message}
	}
	return strings.TrimPrefix(src.URL, "oci://"), nil
}

// CatalogImageRefusedError is an olm catalog image its policy refuses:
// Reason is SignatureMissing, SignatureInvalid, IdentityMismatch or
// VerificationPolicyInvalid, Message says what was found and what to do.
type CatalogImageRefusedError struct{ Reason, Message string }

func (e *CatalogImageRefusedError) Error() string {
	return fmt.Sprintf("spec.source.olm.image is refused (%s): %s", e.Reason, e.Message)
}

// ociCheck is a policy for OCI signatures made ready: the *verify.Error
// provider word, the identities it expects (for messages), its Cache key
// set, and the check, which fetches the signatures of art (at src, an
// oci:// URL pinned to art.Digest) and verifies them.
type ociCheck struct {
	provider string
	expected []string
	setID    string
	verify   func(ctx context.Context, art verify.Artifact, src v1alpha1.ArtifactSource) (verify.Identity, error)
}

// cosignSigned is a check of cosign signatures by check.
func (v *Verifier) cosignSigned(check func(verify.Artifact, []verify.Signature) (verify.Identity, error)) func(context.Context, verify.Artifact, v1alpha1.ArtifactSource) (verify.Identity, error) {
	return func(ctx context.Context, art verify.Artifact, src v1alpha1.ArtifactSource) (verify.Identity, error) {
		sigs, err := oci.CosignSignatures(ctx, v.Fetcher, src)
		if err != nil {
			return verify.Identity{}, err
		}
		return check(art, sigs)
	}
}

// cosignCheck reads policy.cosign: its keys, or its keyless roots and
// identities. problem and err are as for keys.
func (v *Verifier) cosignCheck(ctx context.Context, policy *v1alpha1.VerificationPolicy) (ociCheck, string, error) {
	if policy.Cosign != nil && policy.Cosign.Keyless != nil {
		kl := policy.Cosign.Keyless
		rules := make([]verify.IdentityRule, 0, len(kl.Identities))
		for _, id := range kl.Identities {
			rules = append(rules, verify.IdentityRule{Issuer: id.Issuer, IssuerRegExp: id.IssuerRegExp, Subject: id.Subject, SubjectRegExp: id.SubjectRegExp})
		}
		p, err := verify.ParseKeylessPolicy([]byte(kl.TrustedRoots), rules)
		if err != nil {
			return ociCheck{}, "spec.verify.cosign.keyless." + err.Error(), nil
		}
		expected := make([]string, 0, len(rules))
		for _, r := range rules {
			expected = append(expected, r.String())
		}
		return ociCheck{provider: verify.ProviderKeyless, expected: expected, setID: p.ID,
			verify: v.cosignSigned(func(a verify.Artifact, s []verify.Signature) (verify.Identity, error) {
				return verify.VerifyKeyless(a, p, s)
			})}, "", nil
	}
	keys, problem, err := v.keys(ctx, policy)
	if problem != "" || err != nil {
		return ociCheck{}, problem, err
	}
	return ociCheck{expected: keyNames(keys), setID: verify.KeySetID(keys),
		verify: v.cosignSigned(func(a verify.Artifact, s []verify.Signature) (verify.Identity, error) {
			return verify.Verify(a, keys, s)
		})}, "", nil
}

// InvalidDefaultPolicyError is a cluster default policy that cannot be
// used: its ConfigMap is missing, or its YAML is not a policy.
type InvalidDefaultPolicyError struct{ Problem string }

func (e *InvalidDefaultPolicyError) Error() string { return e.Problem }

// keys reads the policy's trusted keys. problem says what is wrong with
// the policy in the user's words (a key that does not parse, a missing
// Secret or data key); err is an API server's error, retried.
func (v *Verifier) keys(ctx context.Context, policy *v1alpha1.VerificationPolicy) (keys []verify.Key, problem string, err error) {
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
