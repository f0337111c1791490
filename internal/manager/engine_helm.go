package manager

import (
	"context"
	"errors"
	"fmt"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/engine/helm"
	"github.com/annex-platform/annex/internal/metrics"
	"github.com/annex-platform/annex/internal/plan"
)

// helmEngine renders Helm charts with internal/engine/helm. A chart's release
// is its objects and the plan of their one pass (its phases and hook
// weights), and a failed attempt is rolled back.
type helmEngine struct{ fetcher artifactFetcher }

func (e helmEngine) Fetch(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error) {
	return e.fetcher.FetchArtifact(ctx, src)
}

// Render renders the chart with the installation's values, for the
// target cluster's Kubernetes version and API versions.
func (helmEngine) Render(_ context.Context, in engine.Input) (*engine.Release, error) {
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
	return &engine.Release{
		ArtifactDigest: in.ArtifactDigest,
		ValuesDigest:   out.ValuesDigest,
		CRDs:           out.CRDs,
		Objects:        out.Objects,
		ManifestDigest: out.ManifestDigest,
		OnePass:        chartPlan(in.Namespace, in.IsUpgrade),
		RollsBack:      true,
	}, nil
}

// chartPlan makes a chart's one-pass plan: its phases and hook weights in
// Helm's order (apply.ChartSteps) as the steps of one serial phase
// (apply.ChartPlan), the hooks of an install or, with isUpgrade, an
// upgrade; the release's namespace, when among the objects, first.
func chartPlan(namespace string, isUpgrade bool) func(crds, objects []*unstructured.Unstructured) plan.Plan {
	return func(crds, objects []*unstructured.Unstructured) plan.Plan {
		return apply.ChartPlan(apply.ChartSteps(apply.Set{CRDs: crds, Objects: objects}, namespace, isUpgrade))
	}
}

// chartRefusal phrases a render error of the chart ref: invalid values
// and broken templates or archives are refused every time, anything else
// is retried.
func chartRefusal(ref string, err error) *engine.Error {
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
	return &engine.Error{Reason: v1alpha1.ReasonRenderFailed, Message: err.Error(), Retry: true}
}
