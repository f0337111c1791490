package catalog

import (
	"context"
	"errors"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Sources reads a Catalog's content from whichever source its spec names.
type Sources struct {
	Fetcher *Fetcher
	// Builtin returns the content of the catalog compiled into Annex.
	Builtin func(catalogName string) (*Index, error)
}

// ErrSourceNotSupported is returned for source kinds this build cannot read
// yet.
var ErrSourceNotSupported = errors.New("this source kind is not supported by this version of Annex")

// Index returns the parsed content of cat's source.
func (s Sources) Index(ctx context.Context, cat *v1alpha1.Catalog) (*Index, error) {
	switch src := cat.Spec.Source; {
	case src.Helm != nil:
		data, err := s.Fetcher.FetchIndex(ctx, src.Helm.URL)
		if err != nil {
			return nil, err
		}
		return ParseHelmIndex(data, src.Helm.URL, cat.Name)
	case src.Builtin != nil:
		return s.Builtin(cat.Name)
	default:
		return nil, ErrSourceNotSupported
	}
}
