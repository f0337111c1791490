package oci

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"io"
	"net/http"
	"regexp"
	"sort"
	"strings"
	"sync"

	"github.com/google/go-containerregistry/pkg/authn"
	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/remote/transport"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/helm"
)

// Media types of a Helm chart stored as an OCI artifact.
const (
	MediaTypeHelmConfig = "application/vnd.cncf.helm.config.v1+json"
	MediaTypeHelmChart  = "application/vnd.cncf.helm.chart.content.v1.tar+gzip"
)

// Media types of an Annex package stored as an OCI artifact (PushPackage
// writes it, Index and FetchArtifact read it): an OCI image manifest whose
// config blob is the package's PackageMetadata as JSON and whose one layer
// is the package archive (PackageArchive), tagged with its operatorVersion.
const (
	MediaTypePackageConfig  = "application/vnd.annex.package.config.v1+json"
	MediaTypePackageContent = "application/vnd.annex.package.content.v1.tar+gzip"
)

// contentMediaTypes maps each config media type Annex reads to the media
// type of its content layer.
var contentMediaTypes = map[string]string{
	MediaTypeHelmConfig:    MediaTypeHelmChart,
	MediaTypePackageConfig: MediaTypePackageContent,
}

// maxManifestBytes bounds an OCI manifest or a chart's config blob.
const maxManifestBytes = 1 << 20

// ociManifest is the part of an OCI image manifest Annex reads.
type ociManifest struct {
	Config ociDescriptor   `json:"config"`
	Layers []ociDescriptor `json:"layers"`
}

type ociDescriptor struct {
	MediaType string `json:"mediaType"`
	Digest    string `json:"digest"`
	Size      int64  `json:"size"`
}

// ociChart is what one manifest says about a chart or package version: its
// index entry fields (from the config blob) and the content layer.
type ociChart struct {
	metadata map[string]any
	layer    ociDescriptor
	manifest string // digest
}

// Cache remembers the charts and packages of a repository by manifest
// digest: a manifest never changes, so a re-sync only asks each tag for its
// digest. The zero value is ready to use; it is safe for concurrent use.
type Cache struct {
	mu     sync.Mutex
	charts map[string]*ociChart
}

// options are the go-containerregistry options for access, over f's
// transport.
func options(ctx context.Context, f *catalog.Fetcher, access *catalog.Access) ([]remote.Option, error) {
	opts := []remote.Option{remote.WithContext(ctx)}
	base := f.Client
	var rt http.RoundTripper = http.DefaultTransport
	if base != nil && base.Transport != nil {
		rt = base.Transport
	}
	if access != nil {
		cfg, err := access.TLSConfig()
		if err != nil {
			return nil, fmt.Errorf("credentials for %s: %w", access.Host, err)
		}
		if cfg != nil {
			t, ok := rt.(*http.Transport)
			if !ok {
				return nil, errors.New("the fetcher's HTTP client has a custom transport; TLS settings from a Secret need an *http.Transport")
			}
			t = t.Clone()
			t.TLSClientConfig = cfg
			rt = t
		}
		// go-containerregistry sends these to the registry's host only,
		// and a bearer token only within the registry's token realm.
		switch {
		case access.Token != "":
			opts = append(opts, remote.WithAuth(authn.FromConfig(authn.AuthConfig{RegistryToken: access.Token})))
		case access.Username != "" || access.Password != "":
			opts = append(opts, remote.WithAuth(&authn.Basic{Username: access.Username, Password: access.Password}))
		}
	}
	return append(opts, remote.WithTransport(rt)), nil
}

// ociRepository turns oci://host/path into a repository name.
func ociRepository(ref string) (name.Repository, error) {
	rest, ok := strings.CutPrefix(ref, "oci://")
	if !ok {
		return name.Repository{}, fmt.Errorf("%q: must start with oci://", ref)
	}
	return name.NewRepository(strings.TrimSuffix(rest, "/"))
}

// Index lists the Helm charts and Annex packages under an OCI repository
// as an index: every repository directly below it (from the registry's
// catalog listing), or the repository itself, is a chart or package; every
// tag is a version ("_" in a tag stands for "+", as Helm writes it) but
// cosign's signature, attestation and SBOM tags (sha256-<hex>.sig). Each
// version's metadata comes from the manifest's config blob (Chart.yaml, or
// a package's helm.PackageMetadata); its URL is
// oci://<repository>/<name>@<manifest digest> and its digest that of the
// content layer. A manifest that is neither is skipped and counted.
// cache keeps what was read for the next call. Errors are
// *catalog.FetchError (retry) or a plain error naming the field to fix.
func Index(ctx context.Context, f *catalog.Fetcher, repository, catalogName string, access *catalog.Access, cache *Cache) (*catalog.Index, error) {
	repo, err := ociRepository(repository)
	if err != nil {
		return nil, fmt.Errorf("spec.source.oci.repository %w", err)
	}
	opts, err := options(ctx, f, access)
	if err != nil {
		return nil, err
	}
	candidates := []name.Repository{repo}
	if all, err := remote.Catalog(ctx, repo.Registry, opts...); err == nil {
		prefix := repo.RepositoryStr() + "/"
		for _, r := range all {
			if rest, ok := strings.CutPrefix(r, prefix); ok && rest != "" && !strings.Contains(rest, "/") {
				sub, err := name.NewRepository(repo.RegistryStr() + "/" + r)
				if err == nil {
					candidates = append(candidates, sub)
				}
			}
		}
	}
	entries := map[string][]map[string]any{}
	var skipped []string
	for _, c := range candidates {
		tags, err := remote.List(c, opts...)
		if err != nil {
			if isNotFound(err) && c == repo && len(candidates) > 1 {
				continue // a namespace of charts, not a chart itself
			}
			return nil, &catalog.FetchError{URL: "oci://" + c.Name(), Err: err}
		}
		sort.Strings(tags)
		chartName := c.RepositoryStr()[strings.LastIndex(c.RepositoryStr(), "/")+1:]
		for _, tag := range tags {
			if isCosignTag(tag) {
				continue // a signature, not a version
			}
			ch, err := chartOf(c.Tag(tag), opts, cache)
			if err != nil {
				var fe *catalog.FetchError
				if errors.As(err, &fe) {
					return nil, err
				}
				skipped = append(skipped, fmt.Sprintf("entry %q tag %q: %v", chartName, tag, err))
				continue
			}
			entry := make(map[string]any, len(ch.metadata)+2)
			for k, v := range ch.metadata {
				entry[k] = v
			}
			entry["urls"] = []string{"oci://" + c.Name() + "@" + ch.manifest}
			entry["digest"] = strings.TrimPrefix(ch.layer.Digest, "sha256:")
			entries[chartName] = append(entries[chartName], entry)
		}
	}
	index, err := helm.IndexFromEntries(entries, "oci://"+repo.Name(), catalogName)
	if err != nil {
		return nil, err
	}
	index.Skipped = append(skipped, index.Skipped...)
	return index, nil
}

// chartOf reads the manifest a tag points at and, once per manifest
// digest, its config blob.
func chartOf(ref name.Tag, opts []remote.Option, cache *Cache) (*ociChart, error) {
	desc, err := remote.Head(ref, opts...)
	if err != nil {
		return nil, &catalog.FetchError{URL: "oci://" + ref.Name(), Err: err}
	}
	digest := desc.Digest.String()
	cache.mu.Lock()
	ch, ok := cache.charts[digest]
	cache.mu.Unlock()
	if ok {
		return ch, nil
	}
	m, err := manifestAt(ref.Context().Digest(digest), opts)
	if err != nil {
		return nil, err
	}
	layer, err := contentLayer(m)
	if err != nil {
		return nil, err
	}
	if m.Config.Size > maxManifestBytes {
		return nil, fmt.Errorf("config blob of %d bytes is larger than %d", m.Config.Size, maxManifestBytes)
	}
	raw, err := readBlob(ref.Context().Digest(m.Config.Digest), opts, maxManifestBytes)
	if err != nil {
		return nil, err
	}
	var md map[string]any
	if m.Config.MediaType == MediaTypePackageConfig {
		var pm helm.PackageMetadata
		if err := json.Unmarshal(raw, &pm); err != nil {
			return nil, fmt.Errorf("config blob is not package metadata as JSON: %v", err)
		}
		md = pm.IndexEntry()
	} else if err := json.Unmarshal(raw, &md); err != nil {
		// Helm's config blob holds Chart.yaml; its chart dependencies are
		// not Annex dependencies, and its maintainers do not matter here.
		return nil, fmt.Errorf("config blob is not Chart.yaml as JSON: %v", err)
	}
	ch = &ociChart{metadata: md, layer: layer, manifest: digest}
	cache.mu.Lock()
	if cache.charts == nil {
		cache.charts = map[string]*ociChart{}
	}
	cache.charts[digest] = ch
	cache.mu.Unlock()
	return ch, nil
}

func manifestAt(ref name.Digest, opts []remote.Option) (*ociManifest, error) {
	desc, err := remote.Get(ref, opts...)
	if err != nil {
		if isNotFound(err) {
			return nil, fmt.Errorf("manifest %s not found", ref.DigestStr())
		}
		return nil, &catalog.FetchError{URL: "oci://" + ref.Name(), Err: err}
	}
	if len(desc.Manifest) > maxManifestBytes {
		return nil, fmt.Errorf("manifest of %d bytes is larger than %d", len(desc.Manifest), maxManifestBytes)
	}
	var m ociManifest
	if err := json.Unmarshal(desc.Manifest, &m); err != nil {
		return nil, fmt.Errorf("manifest is not an OCI image manifest: %v", err)
	}
	return &m, nil
}

// contentLayer is the one layer holding the chart or package archive, by
// the media type that goes with the manifest's config.
func contentLayer(m *ociManifest) (ociDescriptor, error) {
	want, ok := contentMediaTypes[m.Config.MediaType]
	if !ok {
		return ociDescriptor{}, fmt.Errorf("config media type %q is neither a Helm chart's (%s) nor an Annex package's (%s)", m.Config.MediaType, MediaTypeHelmConfig, MediaTypePackageConfig)
	}
	var found []ociDescriptor
	for _, l := range m.Layers {
		if l.MediaType == want {
			found = append(found, l)
		}
	}
	if len(found) != 1 {
		return ociDescriptor{}, fmt.Errorf("manifest has %d layers of media type %s; a manifest of config %s has exactly one", len(found), want, m.Config.MediaType)
	}
	return found[0], nil
}

// readBlob reads a blob, at most limit bytes.
func readBlob(ref name.Digest, opts []remote.Option, limit int64) ([]byte, error) {
	layer, err := remote.Layer(ref, opts...)
	if err != nil {
		return nil, &catalog.FetchError{URL: "oci://" + ref.Name(), Err: err}
	}
	rc, err := layer.Compressed()
	if err != nil {
		return nil, &catalog.FetchError{URL: "oci://" + ref.Name(), Err: err}
	}
	defer rc.Close()
	data, err := io.ReadAll(io.LimitReader(rc, limit+1))
	if err != nil {
		return nil, &catalog.FetchError{URL: "oci://" + ref.Name(), Err: err}
	}
	if int64(len(data)) > limit {
		return nil, &catalog.TooLargeError{URL: "oci://" + ref.Name(), Limit: limit}
	}
	return data, nil
}

// FetchArtifact serves oci://<repository>@sha256:<manifest digest>: the
// chart or package layer of that manifest, with the credentials of
// src.Catalog, refused before download when its declared size is above
// lim.MaxArchiveBytes, and checked against the layer digest the manifest
// names. The caller verifies src.Digest and walks the archive with
// catalog.CheckArchive. Errors are *catalog.FetchError (retry),
// *catalog.TooLargeError, *catalog.DigestMismatchError, or a plain error
// naming what is wrong with the URL or the manifest.
func FetchArtifact(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource, lim catalog.Limits) ([]byte, error) {
	rest := strings.TrimPrefix(src.URL, "oci://")
	ref, err := name.NewDigest(rest)
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
	m, err := manifestAt(ref, opts)
	if err != nil {
		return nil, err
	}
	layer, err := contentLayer(m)
	if err != nil {
		return nil, fmt.Errorf("artifact %s: %w", src.URL, err)
	}
	if layer.Size > lim.MaxArchiveBytes {
		return nil, &catalog.TooLargeError{URL: src.URL, Limit: lim.MaxArchiveBytes}
	}
	data, err := readBlob(ref.Context().Digest(layer.Digest), opts, lim.MaxArchiveBytes)
	if err != nil {
		return nil, err
	}
	if got := catalog.Digest(data); got != layer.Digest {
		return nil, &catalog.DigestMismatchError{URL: src.URL, Want: layer.Digest, Got: got}
	}
	return data, nil
}

// cosignTag matches the tags cosign writes next to an artifact: its
// signatures (.sig), attestations (.att) and SBOMs (.sbom); and the
// referrers fallback tag (sha256-<hex>, no suffix) where registries
// without the referrers API keep an artifact's Notation signatures.
var cosignTag = regexp.MustCompile(`^sha256-[a-f0-9]{64}(\.(sig|att|sbom))?$`)

// isCosignTag reports whether tag is one of cosign's or the referrers
// fallback tag, which a catalog does not list as a version.
func isCosignTag(tag string) bool { return cosignTag.MatchString(tag) }

func isNotFound(err error) bool {
	var te *transport.Error
	return errors.As(err, &te) && te.StatusCode == http.StatusNotFound
}
