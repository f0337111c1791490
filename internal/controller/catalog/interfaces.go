package catalog

import (
	"context"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

// The controller owns the interface it needs; the manager wires the
// implementation (the catalog source packages). The types they exchange
// (catalog.Index, catalog.CatalogIndex) are plain values.

// Sources reads catalogs of every source kind and merges their content.
type Sources interface {
	// Index returns the parsed content of the catalog's source. When
	// spec.source.*.secretRef names a Secret, Index reads it for the
	// source's credentials (the reason this controller may get Secrets).
	// An Index with Stale set is the last good content of a source that
	// cannot be read now. An error matching catalog.ErrSourceNotSupported
	// means the spec names a source kind this build cannot read (the
	// Catalog is stalled until its spec changes); other errors are retried
	// with backoff, and the Extensions stay.
	Index(ctx context.Context, cat *v1alpha1.Catalog) (*catalog.Index, error)
	// Forget drops what is remembered of a deleted catalog.
	Forget(catalogName string)
	// Merge combines the content of several catalogs into one
	// ExtensionSpec per extension name: a version several catalogs offer
	// comes from the one with the highest priority (on a tie, the name
	// sorting first), versions highest first. It does not modify its input.
	Merge(indexes []catalog.CatalogIndex) map[string]v1alpha1.ExtensionSpec
}
