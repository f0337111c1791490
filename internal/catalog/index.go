package catalog

import (
	"errors"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Package is one extension as a catalog offers it: the Extension object's
// name and spec.
type Package struct {
	Name string
	Spec v1alpha1.ExtensionSpec
}

// Index is a catalog's content after parsing.
type Index struct {
	// Digest is "sha256:<hex>" of the raw index bytes (for the built-in
	// catalog: of its canonical content). It changes whenever the content does.
	Digest string
	// Packages are sorted by Name; each Spec.Versions is sorted highest
	// semantic version first.
	Packages []Package
	// Skipped holds one line per malformed entry that was left out, e.g.
	// `entry "foo" 1.x: version is not semver`.
	Skipped []string
	// OtherBlobs counts the blobs of an OLM catalog whose schema Annex
	// does not read (FBC allows any); they are not errors.
	OtherBlobs int `json:",omitempty"`
	// FetchedAt is when the source last confirmed this content; zero for
	// content that is not fetched (the built-in catalog) or just parsed.
	FetchedAt time.Time `json:"-"`
	// Stale is set when the source could not be read and this is the
	// content of the last good read (of FetchedAt); it says why.
	Stale error `json:"-"`
}

// ErrSourceNotSupported is returned for a Catalog whose spec names no source
// kind this build can read.
var ErrSourceNotSupported = errors.New("this source kind is not supported by this version of Annex")
