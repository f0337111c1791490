package manager

import (
	"context"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/controller/installation"
	"github.com/annex-platform/annex/internal/engine"
)

// artifactFetcher downloads artifacts and verifies their digests: a
// chart's or a package's archive, an operator bundle's registry+v1 tree.
type artifactFetcher interface {
	FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error)
	FetchBundle(ctx context.Context, src v1alpha1.ArtifactSource) (map[string][]byte, error)
}

// engines are the installation controller's Engines: internal/engine/helm
// for Helm charts, internal/engine/pkg for Annex packages and
// internal/engine/bundle for OLM bundles, each behind the controller's
// Engine interface.
func engines(f artifactFetcher) map[v1alpha1.Engine]installation.Engine {
	return map[v1alpha1.Engine]installation.Engine{
		v1alpha1.EngineHelm:    helmEngine{f},
		v1alpha1.EnginePackage: packageEngine{f},
		v1alpha1.EngineBundle:  bundleEngine{f},
	}
}

// refused is an engine's refusal of an input that fails the same way
// every time.
func refused(reason, message string) *engine.Error {
	return &engine.Error{Reason: reason, Message: message}
}
