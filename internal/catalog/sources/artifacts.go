package sources

import (
	"context"
	"fmt"
	"net/url"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/directory"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/olm"
)

// Artifacts serves the artifact and bundle URLs every source kind writes
// into an Extension's versions, through Fetcher. It is safe for concurrent
// use.
type Artifacts struct {
	Fetcher *catalog.Fetcher
}

// FetchArtifact downloads the archive src points at: http(s):// through
// Fetcher's client (with the credentials of src.Catalog for its host),
// oci:// from a registry by digest, file:// from a directory catalog's
// folder, and builtin://<name>/<version> through Fetcher.Builtin, each
// within Fetcher's Limits. When src.Digest is set the content must have
// that digest; every archive passes catalog.CheckArchive.
// Errors are *catalog.FetchError (retry), *catalog.TooLargeError (above
// MaxArchiveBytes), *catalog.DigestMismatchError,
// *catalog.UnsafeArchiveError, or a plain error for a URL this Fetcher
// cannot serve.
func (a Artifacts) FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, fmt.Errorf("artifact URL %q: %w", src.URL, err)
	}
	f := a.Fetcher
	lim := f.EffectiveLimits()
	var data []byte
	switch u.Scheme {
	case "http", "https":
		var access *catalog.Access
		if access, err = f.CatalogAccess(ctx, src.Catalog); err == nil {
			data, _, err = f.Get(ctx, u, access, nil, lim.MaxArchiveBytes)
		}
	case "oci":
		data, err = oci.FetchArtifact(ctx, f, src, lim)
	case "file":
		data, err = directory.FetchArtifact(ctx, f.Lookup, src, lim)
	case "builtin":
		data, err = f.FetchBuiltin(u)
	default:
		return nil, fmt.Errorf("artifact URL %q: scheme %q is not supported; use http://, https://, oci://, file:// or builtin://", src.URL, u.Scheme)
	}
	if err != nil {
		return nil, err
	}
	if src.Digest != "" {
		if err := catalog.VerifyDigest(u.Redacted(), src.Digest, data); err != nil {
			return nil, err
		}
	}
	if err := catalog.CheckArchive(data, lim); err != nil {
		return nil, fmt.Errorf("artifact %s: %w", u.Redacted(), err)
	}
	return data, nil
}

// FetchBundle returns the registry+v1 tree of an operator bundle by path;
// see olm.FetchBundle for the URLs it serves and its errors.
func (a Artifacts) FetchBundle(ctx context.Context, src v1alpha1.ArtifactSource) (map[string][]byte, error) {
	return olm.FetchBundle(ctx, a.Fetcher, src)
}
