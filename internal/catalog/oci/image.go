package oci

import (
	"archive/tar"
	"context"
	"errors"
	"fmt"
	"io"
	"strings"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"

	"github.com/annex-platform/annex/internal/archive"
	"github.com/annex-platform/annex/internal/catalog"
)

// PullImage resolves an image reference (tag or digest) to an image and its
// manifest digest, with the credentials of access and its compressed
// layers bounded by limit before any is downloaded; a digest reference
// must match. Errors are *catalog.FetchError (retry),
// *catalog.TooLargeError, *catalog.DigestMismatchError, or a plain error
// for a reference that is malformed or not found.
func PullImage(ctx context.Context, f *catalog.Fetcher, ref string, access *catalog.Access, limit int64) (v1.Image, string, error) {
	r, err := name.ParseReference(ref)
	if err != nil {
		return nil, "", fmt.Errorf("image %q: not an image reference: %v", ref, err)
	}
	opts, err := options(ctx, f, access)
	if err != nil {
		return nil, "", err
	}
	img, err := remote.Image(r, opts...)
	if err != nil {
		if isNotFound(err) {
			return nil, "", fmt.Errorf("image %q: not found", ref)
		}
		return nil, "", &catalog.FetchError{URL: "oci://" + r.Name(), Err: err}
	}
	m, err := img.Manifest()
	if err != nil {
		return nil, "", &catalog.FetchError{URL: "oci://" + r.Name(), Err: err}
	}
	var total int64
	for _, l := range m.Layers {
		total += l.Size
	}
	if total > limit {
		return nil, "", &catalog.TooLargeError{URL: "oci://" + r.Name(), Limit: limit}
	}
	digest, err := img.Digest()
	if err != nil {
		return nil, "", &catalog.FetchError{URL: "oci://" + r.Name(), Err: err}
	}
	if d, ok := r.(name.Digest); ok && d.DigestStr() != digest.String() {
		return nil, "", &catalog.DigestMismatchError{URL: "oci://" + r.Name(), Want: d.DigestStr(), Got: digest.String()}
	}
	return img, digest.String(), nil
}

// WalkImage streams the flattened file system of img (later layers win,
// whiteouts applied) and calls visit for each regular file whose clean
// path is under one of dirs. Entries that could escape (absolute or ".."
// paths, control characters) are refused; links and special files under
// dirs are refused too (*catalog.UnsafeArchiveError); the whole stream is
// bounded by limit (*catalog.TooLargeError naming where).
func WalkImage(img v1.Image, where string, dirs []string, limit int64, visit func(name string, r io.Reader, size int64) error) error {
	rc := mutate.Extract(img)
	defer rc.Close()
	err := archive.Walk(rc, archive.Limits{MaxExpandedBytes: limit}, func(e *archive.Entry) error {
		hdr := e.Header
		clean := strings.TrimPrefix(archive.TrimDotSlash(hdr.Name), "/")
		inside := false
		for _, d := range dirs {
			if clean == d || strings.HasPrefix(clean, d+"/") {
				inside = true
			}
		}
		if !inside {
			return nil
		}
		if err := archive.CheckEntryName(clean); err != nil {
			return &catalog.UnsafeArchiveError{Entry: hdr.Name, Reason: err.Error()}
		}
		switch hdr.Typeflag {
		case tar.TypeReg:
		case tar.TypeDir:
			return nil
		default:
			return &catalog.UnsafeArchiveError{Entry: hdr.Name, Reason: fmt.Sprintf("has tar type %q (a link or special file); catalog and bundle folders hold regular files only", string(hdr.Typeflag))}
		}
		if err := visit(clean, e, hdr.Size); err != nil {
			if errors.Is(err, archive.ErrLimitReached) {
				return &catalog.TooLargeError{URL: where, Limit: limit}
			}
			return err
		}
		return nil
	})
	var walkErr *archive.Error
	switch {
	case !errors.As(err, &walkErr):
		return err
	case walkErr.Problem == archive.TooExpanded:
		return &catalog.TooLargeError{URL: where, Limit: limit}
	}
	return &catalog.FetchError{URL: where, Err: walkErr.Err}
}
