package catalog

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"path"
	"strings"
)

// Limits bound what Annex reads from a catalog. A zero field means its
// default; every limit applies before the bytes reach Helm.
type Limits struct {
	// MaxIndexBytes bounds an index.yaml (default 50 MiB).
	MaxIndexBytes int64
	// MaxArchiveBytes bounds a chart archive as downloaded (default 10 MiB).
	MaxArchiveBytes int64
	// MaxExpandedBytes bounds a chart archive once decompressed, tar headers
	// included (default 100 MiB).
	MaxExpandedBytes int64
	// MaxFileBytes bounds one file in a chart archive (default 5 MiB).
	MaxFileBytes int64
	// MaxFiles bounds the entries of a chart archive (default 10,000).
	MaxFiles int
	// MaxCatalogBytes bounds everything read from one OLM catalog source:
	// the stream, the folder's files, or the catalog image's extracted
	// file system (default DefaultMaxCatalogBytes, 1 GiB).
	MaxCatalogBytes int64
}

// Defaults of Limits.
const (
	DefaultMaxIndexBytes    int64 = 50 << 20
	DefaultMaxArchiveBytes  int64 = 10 << 20
	DefaultMaxExpandedBytes int64 = 100 << 20
	DefaultMaxFileBytes     int64 = 5 << 20
	DefaultMaxFiles               = 10_000
	DefaultMaxCatalogBytes  int64 = 1 << 30
)

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	l.MaxIndexBytes = limitOr(l.MaxIndexBytes, DefaultMaxIndexBytes)
	l.MaxArchiveBytes = limitOr(l.MaxArchiveBytes, DefaultMaxArchiveBytes)
	l.MaxExpandedBytes = limitOr(l.MaxExpandedBytes, DefaultMaxExpandedBytes)
	l.MaxFileBytes = limitOr(l.MaxFileBytes, DefaultMaxFileBytes)
	l.MaxCatalogBytes = limitOr(l.MaxCatalogBytes, DefaultMaxCatalogBytes)
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// UnsafeArchiveError means a chart archive was refused before Helm read it:
// it breaks a size limit or holds an entry that could escape the chart
// (absolute or parent paths, links, devices). The artifact must change;
// retrying fails again.
type UnsafeArchiveError struct {
	// Entry is the archive entry at fault; empty when the whole archive is.
	Entry string
	// Reason says what is wrong and what to do.
	Reason string
}

// Permanent marks the refusal as final: the same bytes are refused every
// time, so callers stop retrying (they classify errors without importing
// this package).
func (e *UnsafeArchiveError) Permanent() bool { return true }

func (e *UnsafeArchiveError) Error() string {
	if e.Entry == "" {
		return "chart archive refused: " + e.Reason
	}
	return fmt.Sprintf("chart archive refused: entry %q: %s", e.Entry, e.Reason)
}

// ErrLimitReached is what a CappedReader returns once more than its limit
// was read: decompression or a stream stops at the size limit.
var ErrLimitReached = errors.New("expanded size limit reached")

// CappedReader reads R and fails with ErrLimitReached once more than N
// bytes were read. N counts down as bytes are read: what is left of the
// limit, below zero once it was passed.
type CappedReader struct {
	R io.Reader
	N int64
}

func (c *CappedReader) Read(p []byte) (int, error) {
	if c.N < 0 {
		return 0, ErrLimitReached
	}
	if int64(len(p)) > c.N+1 {
		p = p[:c.N+1]
	}
	n, err := c.R.Read(p)
	c.N -= int64(n)
	if c.N < 0 {
		return n, ErrLimitReached
	}
	return n, err
}

// CheckArchive walks a chart or package archive (.tgz) with limits and
// refuses anything Helm's loader or the package reader should never see: a
// download larger than MaxArchiveBytes, more than MaxExpandedBytes once
// decompressed (a decompression bomb), a file larger than MaxFileBytes,
// more than MaxFiles entries, absolute or parent-relative paths,
// backslashes, control characters in names, symbolic and hard links,
// devices and FIFOs, and duplicate paths. Two layouts are accepted: a chart
// (every entry inside one top-level folder, as `helm package` writes it,
// which is also how a package may be packed) and a package with
// operator.yaml at the root (as KUDO packs it; names may start with "./",
// as `tar -C dir .` writes them); anything else is refused as a chart with
// entries outside its folder.
// Errors are *UnsafeArchiveError, or a plain error for bytes that are not
// a gzipped tar at all. It reads the archive once and allocates little.
func CheckArchive(data []byte, lim Limits) error {
	return checkArchive(data, lim, func(files, _ map[string]bool) bool { return files[PackageOperatorFile] })
}

// CheckBundleArchive walks an operator bundle archive (.tgz) with the
// checks and Limits of CheckArchive. Besides one top-level folder holding
// the bundle, it accepts the bundle's manifests/ and metadata/ folders at
// the root of the archive (names may start with "./"); anything else
// beside them is refused. Errors are as CheckArchive's.
func CheckBundleArchive(data []byte, lim Limits) error {
	return checkArchive(data, lim, func(_, tops map[string]bool) bool {
		for top := range tops {
			if top != "manifests" && top != "metadata" {
				return false
			}
		}
		return true
	})
}

// checkArchive is CheckArchive with the rule for archives that are not one
// folder: rootLayout is given the paths of the files and the names at the
// top of the archive, and reports whether they make a layout the reader of
// the archive accepts.
func checkArchive(data []byte, lim Limits, rootLayout func(files, tops map[string]bool) bool) error {
	lim = lim.WithDefaults()
	if int64(len(data)) > lim.MaxArchiveBytes {
		return &UnsafeArchiveError{Reason: fmt.Sprintf("%d bytes is more than the limit of %d bytes; shrink the chart or raise the limit", len(data), lim.MaxArchiveBytes)}
	}
	zr, err := gzip.NewReader(bytes.NewReader(data))
	if err != nil {
		return fmt.Errorf("chart archive is not gzip-compressed: %w", err)
	}
	capped := &CappedReader{R: zr, N: lim.MaxExpandedBytes}
	tr := tar.NewReader(capped)
	seen := map[string]bool{}
	tops := map[string]bool{}
	top := ""
	// layout is the first entry that does not fit a chart's single folder;
	// it is an error unless rootLayout accepts what is at the root (for
	// CheckArchive: operator.yaml, which makes this a package).
	var layout *UnsafeArchiveError
	for files := 0; ; files++ {
		hdr, err := tr.Next()
		if errors.Is(err, io.EOF) {
			break
		}
		if errors.Is(err, ErrLimitReached) {
			return tooExpanded(lim)
		}
		if err != nil {
			return fmt.Errorf("chart archive is not a valid tar: %w", err)
		}
		if files >= lim.MaxFiles {
			return &UnsafeArchiveError{Reason: fmt.Sprintf("more than %d entries; a chart has far fewer files", lim.MaxFiles)}
		}
		name := hdr.Name
		// tar -C dir . writes "./x"; the package reader reads such names,
		// Helm's loader does not.
		rel := TrimDotSlash(name)
		if rel != name && layout == nil {
			layout = &UnsafeArchiveError{Entry: name, Reason: "is not a clean path"}
		}
		if rel == "" && hdr.Typeflag == tar.TypeDir {
			continue
		}
		if err := CheckEntryName(rel); err != nil {
			return &UnsafeArchiveError{Entry: name, Reason: err.Error()}
		}
		switch hdr.Typeflag {
		case tar.TypeReg, tar.TypeDir:
		case tar.TypeSymlink:
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is a symbolic link (to %q); charts may hold regular files only", hdr.Linkname)}
		case tar.TypeLink:
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is a hard link (to %q); charts may hold regular files only", hdr.Linkname)}
		default:
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("has tar type %q (a device, FIFO or other special file); charts may hold regular files only", string(hdr.Typeflag))}
		}
		clean := strings.TrimSuffix(rel, "/")
		first, _, _ := strings.Cut(clean, "/")
		tops[first] = true
		switch {
		case top == "":
			top = first
		case first != top && layout == nil:
			layout = &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is outside the chart folder %q; an archive holds one chart folder", top)}
		}
		if hdr.Typeflag == tar.TypeDir {
			continue
		}
		if clean == top && layout == nil {
			layout = &UnsafeArchiveError{Entry: name, Reason: "is a file at the top of the archive; chart files belong in the chart folder"}
		}
		if seen[clean] {
			return &UnsafeArchiveError{Entry: name, Reason: "appears twice; which copy counts would be ambiguous"}
		}
		seen[clean] = true
		if hdr.Size > lim.MaxFileBytes {
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is %d bytes, more than the limit of %d bytes per file", hdr.Size, lim.MaxFileBytes)}
		}
		n, err := io.Copy(io.Discard, io.LimitReader(tr, lim.MaxFileBytes+1))
		if errors.Is(err, ErrLimitReached) {
			return tooExpanded(lim)
		}
		if err != nil {
			return fmt.Errorf("chart archive is not a valid tar: %s: %w", name, err)
		}
		if n > lim.MaxFileBytes {
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is more than the limit of %d bytes per file", lim.MaxFileBytes)}
		}
	}
	if top == "" {
		return &UnsafeArchiveError{Reason: "holds no files; a chart archive holds a folder with Chart.yaml"}
	}
	if layout != nil && !rootLayout(seen, tops) {
		return layout
	}
	// Whatever follows the tar (padding, more gzip members) counts too.
	if _, err := io.Copy(io.Discard, capped); errors.Is(err, ErrLimitReached) {
		return tooExpanded(lim)
	}
	return nil
}

// TrimDotSlash strips leading "./" from an archive entry name, as
// `tar -C dir .` writes them.
func TrimDotSlash(name string) string {
	for strings.HasPrefix(name, "./") {
		name = name[2:]
	}
	return name
}

func tooExpanded(lim Limits) error {
	return &UnsafeArchiveError{Reason: fmt.Sprintf("expands to more than %d bytes (a decompression bomb?); a chart is far smaller", lim.MaxExpandedBytes)}
}

// CheckEntryName refuses archive entry names that could land outside the
// chart folder when extracted, or confuse a terminal when shown: empty,
// absolute, with a backslash, a drive letter, control characters, ".."
// or other segments that are not clean. The error says which.
func CheckEntryName(name string) error {
	switch {
	case name == "":
		return errors.New("has an empty name")
	case strings.HasPrefix(name, "/"):
		return errors.New("is an absolute path; chart entries are relative")
	case strings.Contains(name, `\`):
		return errors.New(`contains a backslash; chart entries use "/"`)
	case len(name) >= 2 && name[1] == ':':
		return errors.New("starts with a drive letter; chart entries are relative")
	case HasControl(name):
		return errors.New("contains control characters")
	}
	for _, seg := range strings.Split(strings.TrimSuffix(name, "/"), "/") {
		if seg == ".." {
			return errors.New(`contains ".."; chart entries stay inside the chart folder`)
		}
		if seg == "" || seg == "." {
			return errors.New("is not a clean path")
		}
	}
	if path.Clean(name) != strings.TrimSuffix(name, "/") {
		return errors.New("is not a clean path")
	}
	return nil
}
