//go:build tools

// Package fluxcrds records the API packages whose CRDs the tests generate,
// so that `go mod tidy` keeps them.
package fluxcrds

import (
	_ "github.com/fluxcd/helm-controller/api/v2"
	_ "github.com/fluxcd/source-controller/api/v1"
)
