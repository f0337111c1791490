package catalog_test

import "github.com/annex-platform/annex/internal/catalog/catalogtest"

// Shorthands for the archive builders of package catalogtest.
type tarEntry = catalogtest.TarEntry

var (
	file  = catalogtest.File
	zeros = catalogtest.Zeros
	tgz   = catalogtest.TGZ
)

const chartYAML = catalogtest.ChartYAML
