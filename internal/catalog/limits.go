package catalog

import "github.com/annex-platform/annex/internal/archive"

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

// Defaults of Limits; those of archives are package archive's.
const (
	DefaultMaxIndexBytes    int64 = 50 << 20
	DefaultMaxArchiveBytes        = archive.DefaultMaxArchiveBytes
	DefaultMaxExpandedBytes       = archive.DefaultMaxExpandedBytes
	DefaultMaxFileBytes           = archive.DefaultMaxFileBytes
	DefaultMaxFiles               = archive.DefaultMaxFiles
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

// Archive returns the limits of l that bound one archive.
func (l Limits) Archive() archive.Limits {
	return archive.Limits{MaxArchiveBytes: l.MaxArchiveBytes, MaxExpandedBytes: l.MaxExpandedBytes, MaxFileBytes: l.MaxFileBytes, MaxFiles: l.MaxFiles}
}

// UnsafeArchiveError means a chart archive was refused before Helm read
// it (archive.UnsafeArchiveError).
type UnsafeArchiveError = archive.UnsafeArchiveError

// CheckArchive is archive.CheckArchive with the archive limits of lim: it
// refuses a chart or package archive (.tgz) that is too large, a
// decompression bomb, or holds entries that could escape its folder
// (links, devices, absolute or parent paths, duplicates), and accepts a
// chart's layout or a package's. Errors are *UnsafeArchiveError, or a
// plain error for bytes that are not a gzipped tar at all.
func CheckArchive(data []byte, lim Limits) error {
	return archive.CheckArchive(data, lim.Archive())
}

// CheckBundleArchive is archive.CheckBundleArchive with the archive
// limits of lim: the checks of CheckArchive, with an operator bundle's
// manifests/ and metadata/ folders accepted at the root.
func CheckBundleArchive(data []byte, lim Limits) error {
	return archive.CheckBundleArchive(data, lim.Archive())
}
