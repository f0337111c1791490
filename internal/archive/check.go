package archive

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"fmt"
	"io"
	"strings"
)

// Defaults of Limits for CheckArchive and CheckBundleArchive.
const (
	DefaultMaxArchiveBytes  int64 = 10 << 20
	DefaultMaxExpandedBytes int64 = 100 << 20
	DefaultMaxFileBytes     int64 = 5 << 20
	DefaultMaxFiles               = 10_000
)

// WithDefaults returns l with its zero fields set to their defaults.
func (l Limits) WithDefaults() Limits {
	if l.MaxArchiveBytes <= 0 {
		l.MaxArchiveBytes = DefaultMaxArchiveBytes
	}
	if l.MaxExpandedBytes <= 0 {
		l.MaxExpandedBytes = DefaultMaxExpandedBytes
	}
	if l.MaxFileBytes <= 0 {
		l.MaxFileBytes = DefaultMaxFileBytes
	}
	if l.MaxFiles <= 0 {
		l.MaxFiles = DefaultMaxFiles
	}
	return l
}

// packageOperatorFile at the root of an archive makes it a package as
// KUDO packs it (catalog.PackageOperatorFile).
const packageOperatorFile = "operator.yaml"

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

// CheckArchive walks a chart or package archive (.tgz) with limits and
// refuses anything Helm's loader or the package reader should never see: a
// download larger than MaxArchiveBytes, more than MaxExpandedBytes once
// decompressed (a decompression bomb), a file larger than MaxFileBytes,
// more than MaxFiles entries, absolute or parent-relative paths,
// backslashes, control characters in names, symbolic and hard links,
// devices and FIFOs, and duplicate paths. Zero limits are their defaults.
// Two layouts are accepted: a chart (every entry inside one top-level
// folder, as `helm package` writes it, which is also how a package may be
// packed) and a package with operator.yaml at the root (as KUDO packs it;
// names may start with "./", as `tar -C dir .` writes them); anything else
// is refused as a chart with entries outside its folder.
// Errors are *UnsafeArchiveError, or a plain error for bytes that are not
// a gzipped tar at all. It reads the archive once and allocates little.
func CheckArchive(data []byte, lim Limits) error {
	return checkArchive(data, lim, func(files, _ map[string]bool) bool { return files[packageOperatorFile] })
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
	// The cap is ours, not Walk's: what follows the tar counts too.
	capped := &CappedReader{R: zr, N: lim.MaxExpandedBytes}
	seen := map[string]bool{}
	tops := map[string]bool{}
	top := ""
	// layout is the first entry that does not fit a chart's single folder;
	// it is an error unless rootLayout accepts what is at the root (for
	// CheckArchive: operator.yaml, which makes this a package).
	var layout *UnsafeArchiveError
	err = Walk(capped, Limits{MaxFileBytes: lim.MaxFileBytes, MaxFiles: lim.MaxFiles}, func(e *Entry) error {
		hdr := e.Header
		name := hdr.Name
		// tar -C dir . writes "./x"; the package reader reads such names,
		// Helm's loader does not.
		rel := TrimDotSlash(name)
		if rel != name && layout == nil {
			layout = &UnsafeArchiveError{Entry: name, Reason: "is not a clean path"}
		}
		if rel == "" && hdr.Typeflag == tar.TypeDir {
			return nil
		}
		if err := CheckEntryName(rel); err != nil {
			return &UnsafeArchiveError{Entry: name, Reason: err.Error()}
		}
		switch CheckType(hdr) {
		case SymbolicLink:
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is a symbolic link (to %q); charts may hold regular files only", hdr.Linkname)}
		case HardLink:
			return &UnsafeArchiveError{Entry: name, Reason: fmt.Sprintf("is a hard link (to %q); charts may hold regular files only", hdr.Linkname)}
		case SpecialFile:
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
			return nil
		}
		if clean == top && layout == nil {
			layout = &UnsafeArchiveError{Entry: name, Reason: "is a file at the top of the archive; chart files belong in the chart folder"}
		}
		if seen[clean] {
			return &UnsafeArchiveError{Entry: name, Reason: "appears twice; which copy counts would be ambiguous"}
		}
		seen[clean] = true
		return e.Discard()
	})
	if err != nil {
		return chartWalkError(err, lim)
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

// chartWalkError words an *Error of Walk as the catalog does; other
// errors (the visitor's *UnsafeArchiveError) pass as they are.
func chartWalkError(err error, lim Limits) error {
	var e *Error
	if !errors.As(err, &e) {
		return err
	}
	switch e.Problem {
	case TooExpanded:
		return tooExpanded(lim)
	case TooManyEntries:
		return &UnsafeArchiveError{Reason: fmt.Sprintf("more than %d entries; a chart has far fewer files", lim.MaxFiles)}
	case FileTooLarge:
		if e.Size > 0 {
			return &UnsafeArchiveError{Entry: e.Entry, Reason: fmt.Sprintf("is %d bytes, more than the limit of %d bytes per file", e.Size, lim.MaxFileBytes)}
		}
		return &UnsafeArchiveError{Entry: e.Entry, Reason: fmt.Sprintf("is more than the limit of %d bytes per file", lim.MaxFileBytes)}
	}
	return NotValidTar("chart archive", err)
}

func tooExpanded(lim Limits) error {
	return &UnsafeArchiveError{Reason: fmt.Sprintf("expands to more than %d bytes (a decompression bomb?); a chart is far smaller", lim.MaxExpandedBytes)}
}
