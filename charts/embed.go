// Package charts embeds the Helm charts of Annex itself, so that the
// built-in catalog offers them as native extensions: the catalog of an
// Annex binary holds exactly the charts of its own release. They live here,
// at the top of the repository, because `helm install ./charts/annex` is
// where a person looks; go:embed reaches no folder above a package's own,
// which is why this package exists.
package charts

import (
	"embed"
	"io/fs"
)

// The all: prefix keeps templates/_helpers.tpl.
//
//go:embed all:annex
var content embed.FS

// Annex returns the chart of Annex (charts/annex) with Chart.yaml at its
// root.
func Annex() fs.FS {
	sub, err := fs.Sub(content, "annex")
	if err != nil {
		panic(err) // "annex" is a valid path; fs.Sub fails only on an invalid one
	}
	return sub
}
