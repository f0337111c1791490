package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/controller/installation"
	"github.com/annex-platform/annex/internal/engine/helm"
	"github.com/annex-platform/annex/internal/metrics"
)

// helmEngine renders Helm charts with internal/engine/helm. A chart's release
// is its objects, applied in one pass, and a failed attempt is rolled
// back.
type helmEngine struct{ fetcher artifactFetcher }

func (e helmEngine) Fetch(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	return e.fetcher.FetchArtifact(ctx, src)
}

// Render renders the chart with the installation's values, for the
// target cluster's Kubernetes version and API versions.
func (helmEngine) Render(_ context.Context, in installation.EngineInput) (*installation.Release, error) {
	values, err := in.Facts.Values()
	if err != nil {
		return nil, err
	}
	apiVersions, err := in.Facts.APIVersions()
	if err != nil {
		return nil, err
	}
	start := time.Now()
	out, err := helm.Render(helm.Input{
		Archive:      in.Artifact,
		Name:         in.Name,
		Namespace:    in.Namespace,
		Values:       values,
		KubeVersion:  in.KubeVersion,
		APIVersions:  apiVersions,
		IsUpgrade:    in.IsUpgrade,
		ExtensionRef: in.Ref,
	})
	metrics.ObserveRender(v1alpha1.EngineHelm, time.Since(start))
	if err != nil {
		return nil, chartRefusal(in.Ref, err)
	}
	return &installation.Release{
		ArtifactDigest: in.ArtifactDigest,
		ValuesDigest:   out.ValuesDigest,
		CRDs:           out.CRDs,
		Objects:        out.Objects,
		ManifestDigest: out.ManifestDigest,
		RollsBack:      true,
	}, nil
}

// chartRefusal phrases a render error of the chart ref: invalid values
// and broken templates or archives are refused every time, anything else
// is retried.
func chartRefusal(ref string, err error) *installation.EngineError {
	var valuesErr *helm.ValuesError
	if errors.As(err, &valuesErr) {
		return refused(v1alpha1.ReasonValuesInvalid, fmt.Sprintf("spec.values: %s", valuesErr.Error()))
	}
	var renderErr *helm.RenderError
	if errors.As(err, &renderErr) {
		return refused(v1alpha1.ReasonRenderFailed, fmt.Sprintf("%s does not render: %s; fix spec.values or choose another version with spec.version",
			ref, renderErr.Error()))
	}
	var archiveErr *helm.ArchiveError
	if errors.As(err, &archiveErr) {
		return refused(v1alpha1.ReasonArtifactFailed, fmt.Sprintf("%s: the artifact is not a valid chart: %s; fix the chart in its catalog or choose another version with spec.version",
			ref, archiveErr.Error()))
	}
	return &installation.EngineError{Reason: v1alpha1.ReasonRenderFailed, Message: err.Error(), Retry: true}
}
