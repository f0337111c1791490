package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/verify"
)

// MalformedSignatureError means the signature manifest of an artifact, or
// one of its payload blobs, is not what cosign writes: the artifact has
// no signature that can be read, which a policy counts as an invalid one.
type MalformedSignatureError struct{ Err error }

func (e *MalformedSignatureError) Error() string { return e.Err.Error() }

// ManifestDigest returns the manifest digest an artifact URL
// oci://<repository>@sha256:<hex> names: the digest its cosign signatures
// cover.
func ManifestDigest(artifactURL string) (string, error) {
	ref, err := name.NewDigest(strings.TrimPrefix(artifactURL, "oci://"))
	if err != nil || !strings.HasPrefix(artifactURL, "oci://") {
		return "", fmt.Errorf("artifact URL %q: an OCI artifact URL is oci://<registry>/<repository>@sha256:<digest>", artifactURL)
	}
	return ref.DigestStr(), nil
}

// CosignSignatures reads the cosign signatures of the artifact at src.URL
// (oci://<repository>@sha256:<manifest digest>), with the credentials of
// src.Catalog: the manifest tagged sha256-<hex>.sig in the same
// repository (verify.SignatureTag) and each signature layer's payload,
// every blob checked against its digest. No tag: no signatures, no error.
// Errors are *catalog.FetchError (retry), *MalformedSignatureError, or a
// plain error for a URL that is not an OCI artifact URL.
func CosignSignatures(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource) ([]verify.Signature, error) {
	ref, err := name.NewDigest(strings.TrimPrefix(src.URL, "oci://"))
	if err != nil {
		return nil, fmt.Errorf("artifact URL %q: an OCI artifact URL is oci://<registry>/<repository>@sha256:<digest>: %v", src.URL, err)
	}
	access, err := f.CatalogAccess(ctx, src.Catalog)
	if err != nil {
		return nil, err
	}
	opts, err := options(ctx, f, access)
	if err != nil {
		return nil, err
	}
	tag := ref.Context().Tag(verify.SignatureTag(ref.DigestStr()))
	desc, err := remote.Get(tag, opts...)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, &catalog.FetchError{URL: "oci://" + tag.Name(), Err: err}
	}
	if len(desc.Manifest) > maxManifestBytes {
		return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: %d bytes, more than %d", tag.Name(), len(desc.Manifest), maxManifestBytes)}
	}
	layers, err := verify.ParseSignatureManifest(desc.Manifest)
	if err != nil {
		return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: %w", tag.Name(), err)}
	}
	sigs := make([]verify.Signature, 0, len(layers))
	for _, l := range layers {
		data, err := readBlob(ref.Context().Digest(l.Digest), opts, verify.MaxPayloadBytes)
		if err != nil {
			var tooLarge *catalog.TooLargeError
			if errors.As(err, &tooLarge) {
				return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: payload %s: %w", tag.Name(), l.Digest, err)}
			}
			return nil, err
		}
		if got := catalog.Digest(data); got != l.Digest {
			return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: payload %s has digest %s", tag.Name(), l.Digest, got)}
		}
		sigs = append(sigs, verify.Signature{Payload: data, Signature: l.Signature, Certificate: l.Certificate, Chain: l.Chain})
	}
	return sigs, nil
}

// SignOptions say how PushSignature signs.
type SignOptions struct {
	// Key is a PEM private key (verify.Sign reads it); Password decrypts
	// a cosign encrypted key, nil for none.
	Key, Password []byte
	// Certificate and Chain, when set, make a keyless-style signature:
	// the PEM certificate of Key's public half and its chain, stored in
	// the layer's annotations as cosign stores them.
	Certificate, Chain []byte
}

// PushSignature signs the manifest digest of repo with o.Key and stores
// the signature as cosign does: a layer of media type
// verify.MediaTypeSimpleSigning (the payload, annotated with the base64
// signature) in the manifest tagged sha256-<hex>.sig, added to the
// signatures already there (so that two keys may sign one artifact
// during a key rotation); signing again with the same key changes
// nothing. opts carry credentials and the context.
func PushSignature(repo name.Repository, digest string, o SignOptions, opts ...remote.Option) error {
	payload, sig, err := verify.Sign(o.Key, o.Password, repo.Name(), digest)
	if err != nil {
		return err
	}
	tag := repo.Tag(verify.SignatureTag(digest))
	var layers []v1.Descriptor
	if desc, err := remote.Get(tag, opts...); err == nil {
		var m v1.Manifest
		if err := json.Unmarshal(desc.Manifest, &m); err != nil {
			return fmt.Errorf("the signature manifest oci://%s is not an OCI manifest: %v; delete that tag and sign again", tag.Name(), err)
		}
		layers = m.Layers
	} else if !isNotFound(err) {
		return fmt.Errorf("reading oci://%s: %w", tag.Name(), err)
	}
	layer := static.NewLayer(payload, verify.MediaTypeSimpleSigning)
	layerDigest, err := layer.Digest()
	if err != nil {
		return err
	}
	signerKey := claimedKey(payload)
	kept := layers[:0]
	for _, l := range layers {
		// A signature by the same key replaces the earlier one.
		if l.MediaType == verify.MediaTypeSimpleSigning && l.Digest == layerDigest {
			continue
		}
		if signerKey != "" && l.Annotations[annotationKey] == signerKey {
			continue
		}
		kept = append(kept, l)
	}
	if err := remote.WriteLayer(repo, layer, opts...); err != nil {
		return fmt.Errorf("pushing the signature to oci://%s: %w", repo.Name(), err)
	}
	kept = append(kept, v1.Descriptor{
		MediaType: verify.MediaTypeSimpleSigning, Digest: layerDigest, Size: int64(len(payload)),
		Annotations: signatureAnnotations(sig, signerKey, o),
	})
	var diffIDs []string
	for _, l := range kept {
		diffIDs = append(diffIDs, l.Digest.String())
	}
	config, err := json.Marshal(map[string]any{
		"architecture": "", "os": "", "config": map[string]any{},
		"rootfs": map[string]any{"type": "layers", "diff_ids": diffIDs},
	})
	if err != nil {
		return err
	}
	configLayer := static.NewLayer(config, types.OCIConfigJSON)
	if err := remote.WriteLayer(repo, configLayer, opts...); err != nil {
		return fmt.Errorf("pushing the signature to oci://%s: %w", repo.Name(), err)
	}
	configDigest, err := configLayer.Digest()
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		Config:        v1.Descriptor{MediaType: types.OCIConfigJSON, Digest: configDigest, Size: int64(len(config))},
		Layers:        kept,
	})
	if err != nil {
		return err
	}
	if err := remote.Put(tag, rawManifest(manifest), opts...); err != nil {
		return fmt.Errorf("pushing the signature oci://%s: %w", tag.Name(), err)
	}
	return nil
}

// signatureAnnotations are a signature layer's annotations: the
// signature, the signing key's fingerprint, and for a certificate its
// PEM and chain.
func signatureAnnotations(sig, signerKey string, o SignOptions) map[string]string {
	a := map[string]string{verify.AnnotationSignature: sig, annotationKey: signerKey}
	if len(o.Certificate) > 0 {
		a[verify.AnnotationCertificate] = string(o.Certificate)
	}
	if len(o.Chain) > 0 {
		a[verify.AnnotationChain] = string(o.Chain)
	}
	return a
}

// annotationKey on a signature layer annexctl writes repeats the signing
// key's fingerprint (the payload's verify.OptionalKey), so that signing
// again with one key replaces its signature instead of adding one.
const annotationKey = verify.OptionalKey

// claimedKey is the key fingerprint a payload annexctl made names.
func claimedKey(payload []byte) string {
	p, err := verify.ParsePayload(payload)
	if err != nil {
		return ""
	}
	return p.ClaimedKey
}
