package olm

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"regexp"
	"slices"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/archive"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/oci"
)

// FetchBundle returns the registry+v1 bundle an Extension version of
// engine Bundle points at, as files by slash-separated path:
// "metadata/annotations.yaml" and "manifests/<file>" (flat; each file one
// or more YAML or JSON documents), plus any other files of a bundle
// image's metadata/ folder.
//
//   - oci://<image> (a tag or a digest reference; a digest is verified):
//     the image's manifests/ and metadata/ folders, within Limits
//     (MaxArchiveBytes for the compressed layers, MaxExpandedBytes for the
//     extracted file system, MaxFileBytes and MaxFiles for the files) and
//     refusing links, special files and escaping paths.
//   - olm://<catalog>/<package>/<bundle name>: the bundle's
//     olm.bundle.object manifests, re-read from the catalog's current
//     source (src.Catalog must name an olm Catalog, found through
//     f.Lookup), as manifests/<NN>-<kind>-<name>.yaml (NN counts the
//     bundle's objects from 00; the bytes are as in the catalog, usually
//     JSON), with a metadata/annotations.yaml naming the package and the
//     registry+v1 media type written by Annex.
//   - builtin://<name>/<version>: the .tgz f.Builtin returns for a bundle
//     of the built-in catalog, holding the bundle's manifests/ and
//     metadata/ folders at its root or inside one top folder
//     ("<dir>/manifests/..."); src.Digest, when set, must be the
//     archive's digest. The archive passes catalog.CheckBundleArchive
//     with the Limits (the checks and limits of a chart archive) and its
//     files under manifests/ and metadata/ are returned by their path
//     from the bundle's root, as for an image.
//
// Errors are *catalog.FetchError (retry), *catalog.TooLargeError,
// *catalog.UnsafeArchiveError, *catalog.DigestMismatchError, or a plain
// error: the URL cannot be served, or the bundle is no longer in the
// catalog (resync the catalog).
func FetchBundle(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource) (map[string][]byte, error) {
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, fmt.Errorf("bundle URL %q: %w", src.URL, err)
	}
	switch u.Scheme {
	case "oci":
		return fetchBundleImage(ctx, f, src)
	case BundleScheme:
		return fetchBundleInline(ctx, f, src, u)
	case "builtin":
		return fetchBundleBuiltin(f, src, u)
	}
	return nil, fmt.Errorf("bundle URL %q: scheme %q is not supported; a bundle is oci://<image>, olm://<catalog>/<package>/<bundle> or builtin://<name>/<version>", src.URL, u.Scheme)
}

func fetchBundleImage(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource) (map[string][]byte, error) {
	access, err := f.CatalogAccess(ctx, src.Catalog)
	if err != nil {
		return nil, err
	}
	lim := f.EffectiveLimits()
	ref := strings.TrimPrefix(src.URL, "oci://")
	img, _, err := oci.PullImage(ctx, f, ref, access, lim.MaxArchiveBytes)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", src.URL, err)
	}
	files := map[string][]byte{}
	err = oci.WalkImage(img, src.URL, bundleFolders, lim.MaxExpandedBytes, func(name string, r io.Reader, size int64) error {
		if len(files) >= lim.MaxFiles {
			return &catalog.UnsafeArchiveError{Reason: fmt.Sprintf("more than %d files in manifests/ and metadata/", lim.MaxFiles)}
		}
		if size > lim.MaxFileBytes {
			return &catalog.UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is %d bytes, more than the limit of %d bytes per file", size, lim.MaxFileBytes)}
		}
		data, err := io.ReadAll(io.LimitReader(r, lim.MaxFileBytes+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > lim.MaxFileBytes {
			return &catalog.UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is more than the limit of %d bytes per file", lim.MaxFileBytes)}
		}
		files[name] = data
		return nil
	})
	if err != nil {
		return nil, err
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("bundle %s: the image has no manifests/ or metadata/ folder; it is not a registry+v1 bundle", src.URL)
	}
	return files, nil
}

// unsafeFileChars are replaced in generated manifest file names.
var unsafeFileChars = regexp.MustCompile(`[^a-z0-9.-]+`)

func fetchBundleInline(ctx context.Context, f *catalog.Fetcher, src v1alpha1.ArtifactSource, u *url.URL) (map[string][]byte, error) {
	segs := strings.Split(strings.TrimPrefix(u.EscapedPath(), "/"), "/")
	if u.Host == "" || len(segs) != 2 {
		return nil, fmt.Errorf("bundle URL %q: an inline bundle URL is olm://<catalog>/<package>/<bundle>", src.URL)
	}
	pkg, err1 := url.PathUnescape(segs[0])
	bundle, err2 := url.PathUnescape(segs[1])
	if err := errors.Join(err1, err2); err != nil {
		return nil, fmt.Errorf("bundle URL %q: %w", src.URL, err)
	}
	catalogName := u.Host
	if src.Catalog != "" && src.Catalog != catalogName {
		return nil, fmt.Errorf("bundle URL %q names catalog %q, but the version comes from catalog %q", src.URL, catalogName, src.Catalog)
	}
	if f.Lookup == nil {
		return nil, fmt.Errorf("bundle URL %q: this fetcher cannot look up catalog %q", src.URL, catalogName)
	}
	cat, err := f.Lookup.Catalog(ctx, catalogName)
	if err != nil {
		return nil, fmt.Errorf("catalog %q: %w", catalogName, err)
	}
	if cat == nil || cat.Spec.Source.OLM == nil {
		return nil, fmt.Errorf("bundle URL %q: catalog %q does not exist or is not an olm catalog", src.URL, catalogName)
	}
	access, err := catalog.AccessFor(ctx, f.Lookup, cat)
	if err != nil {
		return nil, err
	}
	p := newOLMParser()
	p.want = &olmBundleRef{pkg: pkg, name: bundle}
	if _, err := readCatalog(ctx, f, cat.Spec.Source.OLM, access, p); err != nil {
		return nil, err
	}
	if !p.found || len(p.objects) == 0 {
		return nil, fmt.Errorf("bundle %q of package %q is no longer in catalog %q with inline objects; resync the catalog", bundle, pkg, catalogName)
	}
	return inlineBundleFiles(pkg, p.objects, f.EffectiveLimits())
}

// inlineBundleFiles lays out inline manifests as a registry+v1 bundle.
func inlineBundleFiles(pkg string, objects [][]byte, lim catalog.Limits) (map[string][]byte, error) {
	files := map[string][]byte{
		"metadata/annotations.yaml": fmt.Appendf(nil, "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: %q\n", pkg),
	}
	for i, data := range objects {
		if int64(len(data)) > lim.MaxFileBytes {
			return nil, &catalog.UnsafeArchiveError{Entry: fmt.Sprintf("olm.bundle.object %d", i), Reason: fmt.Sprintf("is %d bytes, more than the limit of %d bytes per file", len(data), lim.MaxFileBytes)}
		}
		var obj csvObject
		_ = unmarshalManifest(data, &obj)
		base := unsafeFileChars.ReplaceAllString(strings.ToLower(obj.Kind+"-"+obj.Metadata.Name), "_")
		files[fmt.Sprintf("manifests/%02d-%s.yaml", i, base)] = data
	}
	return files, nil
}

// bundleFolders are the folders of a registry+v1 bundle.
var bundleFolders = []string{"manifests", "metadata"}

// fetchBundleBuiltin serves builtin://<name>/<version>: a bundle archive of
// the built-in catalog.
func fetchBundleBuiltin(f *catalog.Fetcher, src v1alpha1.ArtifactSource, u *url.URL) (map[string][]byte, error) {
	data, err := f.FetchBuiltin(u)
	if err != nil {
		return nil, err
	}
	if src.Digest != "" {
		if err := catalog.VerifyDigest(u.Redacted(), src.Digest, data); err != nil {
			return nil, err
		}
	}
	lim := f.EffectiveLimits()
	if err := catalog.CheckBundleArchive(data, lim); err != nil {
		return nil, fmt.Errorf("bundle %s: %w", src.URL, err)
	}
	files, err := bundleArchiveFiles(data, lim)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", src.URL, err)
	}
	if len(files) == 0 {
		return nil, fmt.Errorf("bundle %s: the archive has no manifests/ or metadata/ folder; it is not a registry+v1 bundle", src.URL)
	}
	return files, nil
}

// bundleArchiveFiles returns the files under manifests/ and metadata/ of
// a bundle archive that passed catalog.CheckBundleArchive, keyed by their
// path from the bundle's root: the archive's root when every file is in
// one of those folders there, else its one top folder.
func bundleArchiveFiles(data []byte, lim catalog.Limits) (map[string][]byte, error) {
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return nil, fmt.Errorf("archive is not gzip-compressed: %w", err)
	}
	type entry struct {
		name string
		data []byte
	}
	var all []entry
	atRoot := true
	// CheckBundleArchive bounded the archive: no limits here.
	err = archive.Walk(zr, archive.Limits{}, func(e *archive.Entry) error {
		if e.Header.Typeflag != tar.TypeReg {
			return nil
		}
		name := archive.TrimDotSlash(e.Header.Name)
		atRoot = atRoot && inBundleFolder(name)
		content, err := io.ReadAll(io.LimitReader(e, lim.MaxFileBytes))
		if err != nil {
			return &archive.Error{Problem: archive.NotTar, Entry: e.Header.Name, Err: err}
		}
		all = append(all, entry{name, content})
		return nil
	})
	if err != nil {
		return nil, archive.NotValidTar("archive", err)
	}
	files := map[string][]byte{}
	for _, e := range all {
		name := e.name
		if !atRoot {
			_, name, _ = strings.Cut(name, "/")
		}
		if inBundleFolder(name) {
			files[name] = e.data
		}
	}
	return files, nil
}

// inBundleFolder reports whether a slash-separated path is inside one of
// bundleFolders.
func inBundleFolder(name string) bool {
	first, _, nested := strings.Cut(name, "/")
	return nested && slices.Contains(bundleFolders, first)
}
