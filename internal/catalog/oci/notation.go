package oci

import (
	"bytes"
	"context"
	"crypto"
	"crypto/x509"
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

// Manifest is what a registry says of an artifact's manifest: what a
// Notation signature's payload names.
type Manifest struct {
	MediaType string
	Digest    string
	Size      int64
}

// ResolveManifest asks the registry for the manifest src.URL names
// (oci://<repository>@sha256:<hex> or oci://<repository>:<tag>) with the
// credentials of src.Catalog, and returns its media type, digest and
// size: for a tag, the digest the tag names now. A digest reference must
// match what the registry serves. Errors are *catalog.FetchError
// (retry), *catalog.DigestMismatchError, or a plain error for a URL that
// is not an OCI reference or a manifest that does not exist.
func ResolveManifest(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource) (Manifest, error) {
	raw, ok := strings.CutPrefix(src.URL, "oci://")
	ref, err := name.ParseReference(raw)
	if !ok || err != nil {
		return Manifest{}, fmt.Errorf("artifact URL %q: an OCI artifact URL is oci://<registry>/<repository>@sha256:<digest> or :<tag>", src.URL)
	}
	access, err := f.CatalogAccess(ctx, src.Catalog)
	if err != nil {
		return Manifest{}, err
	}
	opts, err := options(ctx, f, access)
	if err != nil {
		return Manifest{}, err
	}
	return headManifest(ref, src.URL, opts)
}

// headManifest asks the registry for the descriptor of ref (shown as
// url in errors), as ResolveManifest says.
func headManifest(ref name.Reference, url string, opts []remote.Option) (Manifest, error) {
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		if isNotFound(err) {
			return Manifest{}, fmt.Errorf("artifact %s: the registry has no such manifest", url)
		}
		return Manifest{}, &catalog.FetchError{URL: url, Err: err}
	}
	if d, isDigest := ref.(name.Digest); isDigest && d.DigestStr() != desc.Digest.String() {
		return Manifest{}, &catalog.DigestMismatchError{URL: url, Want: d.DigestStr(), Got: desc.Digest.String()}
	}
	return Manifest{MediaType: string(desc.MediaType), Digest: desc.Digest.String(), Size: desc.Size}, nil
}

// NotationSignatures reads the manifest src.URL names
// (oci://<repository>@sha256:<hex>, or :<tag> for the manifest the tag
// names now), as ResolveManifest does, and its Notation signatures, with
// the credentials of src.Catalog: the referrers of that manifest (the
// registry's referrers API, else the sha256-<hex> fallback tag) whose
// artifact type is verify.ArtifactTypeNotation, at most
// verify.MaxNotationSignatures, and each one's envelope, checked
// against its digest. A referrer whose subject is another manifest is
// skipped. No referrers: no signatures, no error. One connection setup
// serves every request. Errors are *catalog.FetchError (retry),
// *catalog.DigestMismatchError, *MalformedSignatureError, or a plain
// error for a URL that is not an OCI reference or a manifest that does
// not exist.
func NotationSignatures(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource) (Manifest, []verify.NotationSignature, error) {
	raw, ok := strings.CutPrefix(src.URL, "oci://")
	ref, err := name.ParseReference(raw)
	if !ok || err != nil {
		return Manifest{}, nil, fmt.Errorf("artifact URL %q: an OCI artifact URL is oci://<registry>/<repository>@sha256:<digest> or :<tag>", src.URL)
	}
	repo := ref.Context()
	access, err := f.CatalogAccess(ctx, src.Catalog)
	if err != nil {
		return Manifest{}, nil, err
	}
	opts, err := options(ctx, f, access)
	if err != nil {
		return Manifest{}, nil, err
	}
	puller, err := remote.NewPuller(opts...)
	if err != nil {
		return Manifest{}, nil, err
	}
	opts = append(opts, remote.Reuse(puller))
	m, err := headManifest(ref, src.URL, opts)
	if err != nil {
		return Manifest{}, nil, err
	}
	sigs, err := notationSignatures(repo, m.Digest, opts)
	return m, sigs, err
}

func notationSignatures(repo name.Repository, digest string, opts []remote.Option) ([]verify.NotationSignature, error) {
	subject := repo.Digest(digest)
	index, err := remote.Referrers(subject, append(opts, remote.WithFilter("artifactType", verify.ArtifactTypeNotation))...)
	if err != nil {
		if isNotFound(err) {
			return nil, nil
		}
		return nil, &catalog.FetchError{URL: "oci://" + subject.Name() + " (referrers)", Err: err}
	}
	im, err := index.IndexManifest()
	if err != nil {
		return nil, &MalformedSignatureError{fmt.Errorf("the referrers of oci://%s: %w", subject.Name(), err)}
	}
	var sigs []verify.NotationSignature
	for _, d := range im.Manifests {
		if d.ArtifactType != verify.ArtifactTypeNotation {
			continue
		}
		if len(sigs) == verify.MaxNotationSignatures {
			break
		}
		where := "oci://" + repo.Digest(d.Digest.String()).Name()
		if d.Size > maxManifestBytes {
			return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: %d bytes, more than %d", where, d.Size, maxManifestBytes)}
		}
		got, err := remote.Get(repo.Digest(d.Digest.String()), opts...)
		if err != nil {
			return nil, &catalog.FetchError{URL: where, Err: err}
		}
		if len(got.Manifest) > maxManifestBytes {
			return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: %d bytes, more than %d", where, len(got.Manifest), maxManifestBytes)}
		}
		layer, ok, err := verify.ParseNotationManifest(got.Manifest)
		if err != nil {
			return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: %w", where, err)}
		}
		if !ok || layer.Subject != digest {
			continue
		}
		env, err := readBlob(repo.Digest(layer.Digest), opts, verify.MaxEnvelopeBytes)
		if err != nil {
			var tooLarge *catalog.TooLargeError
			if errors.As(err, &tooLarge) {
				return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: envelope %s: %w", where, layer.Digest, err)}
			}
			return nil, err
		}
		if sum := catalog.Digest(env); sum != layer.Digest {
			return nil, &MalformedSignatureError{fmt.Errorf("signature manifest %s: envelope %s has digest %s", where, layer.Digest, sum)}
		}
		sigs = append(sigs, verify.NotationSignature{MediaType: layer.MediaType, Envelope: env})
	}
	return sigs, nil
}

// PushNotationSignature signs the manifest m of repo with key and its
// certificate chain (signing certificate first, root last) and stores
// the signature as `notation sign` does: a manifest whose subject is m,
// whose artifactType is verify.ArtifactTypeNotation and whose one layer
// is the JWS envelope, listed by the registry's referrers API or, where
// it has none, in the sha256-<hex> fallback tag. opts carry credentials
// and the context.
func PushNotationSignature(ctx context.Context, repo name.Repository, m Manifest, key crypto.PrivateKey, chain []*x509.Certificate, opts ...remote.Option) error {
	env, err := verify.SignNotation(ctx, key, chain, m.MediaType, m.Digest, m.Size)
	if err != nil {
		return err
	}
	return PushNotationEnvelope(repo, m, env, opts...)
}

// PushNotationEnvelope attaches the JWS envelope env to the manifest m
// of repo as a Notation signature, as PushNotationSignature does.
func PushNotationEnvelope(repo name.Repository, m Manifest, env []byte, opts ...remote.Option) error {
	layer := static.NewLayer(env, verify.MediaTypeJWS)
	if err := remote.WriteLayer(repo, layer, opts...); err != nil {
		return fmt.Errorf("pushing the signature to oci://%s: %w", repo.Name(), err)
	}
	empty := static.NewLayer([]byte("{}"), types.MediaType(ocispecEmpty))
	if err := remote.WriteLayer(repo, empty, opts...); err != nil {
		return fmt.Errorf("pushing the signature to oci://%s: %w", repo.Name(), err)
	}
	layerDigest, err := layer.Digest()
	if err != nil {
		return err
	}
	emptyDigest, err := empty.Digest()
	if err != nil {
		return err
	}
	subject, err := v1.NewHash(m.Digest)
	if err != nil {
		return err
	}
	manifest, err := json.Marshal(v1.Manifest{
		SchemaVersion: 2,
		MediaType:     types.OCIManifestSchema1,
		ArtifactType:  verify.ArtifactTypeNotation,
		Config:        v1.Descriptor{MediaType: types.MediaType(ocispecEmpty), Digest: emptyDigest, Size: 2},
		Layers:        []v1.Descriptor{{MediaType: verify.MediaTypeJWS, Digest: layerDigest, Size: int64(len(env))}},
		Subject:       &v1.Descriptor{MediaType: types.MediaType(m.MediaType), Digest: subject, Size: m.Size},
	})
	if err != nil {
		return err
	}
	h, _, err := v1.SHA256(bytes.NewReader(manifest))
	if err != nil {
		return err
	}
	if err := remote.Put(repo.Digest(h.String()), rawManifest(manifest), opts...); err != nil {
		return fmt.Errorf("pushing the signature to oci://%s: %w", repo.Name(), err)
	}
	return nil
}

// ocispecEmpty is the OCI empty descriptor's media type, the config of a
// signature manifest.
const ocispecEmpty = "application/vnd.oci.empty.v1+json"
