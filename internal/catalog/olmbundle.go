package catalog

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"net/url"
	"path"
	"regexp"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// pullImage resolves an image reference (tag or digest) to an image, with
// its compressed layers bounded by limit before any is downloaded.
func (f *Fetcher) pullImage(ctx context.Context, ref string, access *Access, limit int64) (v1.Image, string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, "", fmt.Errorf("image %q: not an image reference: %v", ref, err)
	}
	opts, err := f.ociOptions(ctx, access)
	if err != nil {
		return nil, "", err
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		if isNotFound(err) {
			return nil, "", fmt.Errorf("image %q: not found", ref)
		}
		return nil, "", &FetchError{URL: "oci://" + r.Name(), Err: err}
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, "", &FetchError{URL: "oci://" + r.Name(), Err: err}
	}
	var total int64
	for _, l := range m.Layers {
		total += l.Size
	}
	if total > limit {
		return nil, "", &TooLargeError{URL: "oci://" + r.Name(), Limit: limit}
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, "", &FetchError{URL: "oci://" + r.Name(), Err: err}
	}
	if d, ok := r.(name.Digest); ok && d.DigestStr() != digest.String() {
		return nil, "", &DigestMismatchError{URL: "oci://" + r.Name(), Want: d.DigestStr(), Got: digest.String()}
	}
	return img, digest.String(), nil
}

// walkImage streams the flattened file system of img (later layers win,
// whiteouts applied) and calls visit for each regular file whose clean
// path is under one of dirs. Entries that could escape (absolute or ".."
// paths, control characters) are refused; links and special files under
// dirs are refused too; the whole stream is bounded by limit.
func walkImage(img v1.Image, where string, dirs []string, limit int64, visit func(name string, r io.Reader, size int64) error) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	cr := &cappedReader{r: rc, n: limit}
	tr := tar.NewReader(cr)
	for {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			return nil
		}
		if errors.Is(err, errExpandedTooLarge) {
			return &TooLargeError{URL: where, Limit: limit}
		}
		if err != nil {
			return &FetchError{URL: where, Err: err}
		}
		clean := strings.TrimPrefix(trimDotSlash(hdr.Name), "/")
		inside := false
		for _, d := range dirs {
			if clean == d || strings.HasPrefix(clean, d+"/") {
				inside = true
			}
		}
		if !inside {
			continue
		}
		if err := checkEntryName(clean); err != nil {
			return &UnsafeArchiveError{Entry: hdr.Name, Reason: err.Error()}
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			continue
		default:
			return &UnsafeArchiveError{Entry: hdr.Name, Reason: fmt.Sprintf("has tar type %q (a link or special file); catalog and bundle folders hold regular files only", string(hdr.Typeflag))}
		}
		if err := visit(clean, tr, hdr.Size); err != nil {
			if errors.Is(err, errExpandedTooLarge) {
				return &TooLargeError{URL: where, Limit: limit}
			}
			return err
		}
	}
}

// readOLMImage feeds the FBC files of a catalog image to p.
func (f *Fetcher) readOLMImage(ctx context.Context, ref string, access *Access, p *olmParser, limit int64) (string, error) {
	img, digest, err := f.pullImage(ctx, ref, access, limit)
	if err != nil {
		return "", fmt.Errorf("spec.source.olm.image: %w", err)
	}
	dir := "configs"
	if cfg, err := img.ConfigFile(); err == nil {
		if d := cfg.Config.Labels[olmConfigsLabel]; d != "" {
			dir = strings.Trim(path.Clean("/"+d), "/")
		}
	}
	where := "oci://" + ref
	err = walkImage(img, where, []string{dir}, limit, func(name string, r io.Reader, _ int64) error {
		if !isFBCFile(name) {
			return nil
		}
		p.parseStream(name, r)
		_, err := io.Copy(io.Discard, r)
		return err
	})
	if err != nil {
		return "", err
	}
	return digest, nil
}

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
//     source (src.Catalog must name an olm Catalog, found through Lookup),
//     as manifests/<NN>-<kind>-<name>.yaml (NN counts the bundle's objects from 00; the bytes are as in the catalog, usually JSON),
//     with a metadata/annotations.yaml naming the package and the
//     registry+v1 media type written by Annex.
//
// Errors are *FetchError (retry), *TooLargeError, *UnsafeArchiveError,
// *DigestMismatchError, or a plain error: the URL cannot be served, or the
// bundle is no longer in the catalog (resync the catalog).
func (f *Fetcher) FetchBundle(ctx context.Context, src v1alpha1.ArtifactSource) (map[string][]byte, error) {
	u, err := url.Parse(src.URL)
	if err != nil {
		return nil, fmt.Errorf("bundle URL %q: %w", src.URL, err)
	}
	switch u.Scheme {
	case "oci":
		return f.fetchBundleImage(ctx, src)
	case OLMBundleScheme:
		return f.fetchBundleInline(ctx, src, u)
	}
	return nil, fmt.Errorf("bundle URL %q: scheme %q is not supported; a bundle is oci://<image> or olm://<catalog>/<package>/<bundle>", src.URL, u.Scheme)
}

func (f *Fetcher) fetchBundleImage(ctx context.Context, src v1alpha1.ArtifactSource) (map[string][]byte, error) {
	access, err := f.catalogAccess(ctx, src.Catalog)
	if err != nil {
		return nil, err
	}
	lim := f.limits()
	ref := strings.TrimPrefix(src.URL, "oci://")
	img, _, err := f.pullImage(ctx, ref, access, lim.MaxArchiveBytes)
	if err != nil {
		return nil, fmt.Errorf("bundle %s: %w", src.URL, err)
	}
	files := map[string][]byte{}
	err = walkImage(img, src.URL, []string{"manifests", "metadata"}, lim.MaxExpandedBytes, func(name string, r io.Reader, size int64) error {
		if len(files) >= lim.MaxFiles {
			return &UnsafeArchiveError{Reason: fmt.Sprintf("more than %d files in manifests/ and metadata/", lim.MaxFiles)}
		}
		if size > lim.MaxFileBytes {
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is %d bytes, more than the limit of %d bytes per file", size, lim.MaxFileBytes)}
		}
		data, err := io.ReadAll(io.LimitReader(r, lim.MaxFileBytes+1))
		if err != nil {
			return err
		}
		if int64(len(data)) > lim.MaxFileBytes {
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is more than the limit of %d bytes per file", lim.MaxFileBytes)}
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

func (f *Fetcher) fetchBundleInline(ctx context.Context, src v1alpha1.ArtifactSource, u *url.URL) (map[string][]byte, error) {
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
	access, err := AccessFor(ctx, f.Lookup, cat)
	if err != nil {
		return nil, err
	}
	p := newOLMParser()
	p.want = &olmBundleRef{pkg: pkg, name: bundle}
	if _, err := f.readOLM(ctx, cat.Spec.Source.OLM, access, p); err != nil {
		return nil, err
	}
	if !p.found || len(p.objects) == 0 {
		return nil, fmt.Errorf("bundle %q of package %q is no longer in catalog %q with inline objects; resync the catalog", bundle, pkg, catalogName)
	}
	return inlineBundleFiles(pkg, p.objects, f.limits())
}

// inlineBundleFiles lays out inline manifests as a registry+v1 bundle.
func inlineBundleFiles(pkg string, objects [][]byte, lim Limits) (map[string][]byte, error) {
	files := map[string][]byte{
		"metadata/annotations.yaml": fmt.Appendf(nil, "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n  operators.operatorframework.io.bundle.manifests.v1: manifests/\n  operators.operatorframework.io.bundle.metadata.v1: metadata/\n  operators.operatorframework.io.bundle.package.v1: %q\n", pkg),
	}
	for i, data := range objects {
		if int64(len(data)) > lim.MaxFileBytes {
			return nil, &UnsafeArchiveError{Entry: fmt.Sprintf("olm.bundle.object %d", i), Reason: fmt.Sprintf("is %d bytes, more than the limit of %d bytes per file", len(data), lim.MaxFileBytes)}
		}
		var obj csvObject
		_ = unmarshalManifest(data, &obj)
		base := unsafeFileChars.ReplaceAllString(strings.ToLower(obj.Kind+"-"+obj.Metadata.Name), "_")
		files[fmt.Sprintf("manifests/%02d-%s.yaml", i, base)] = data
	}
	return files, nil
}
