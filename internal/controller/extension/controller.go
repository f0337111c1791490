// Package extension answers requests for an Extension version's values:
// the values schema (values.schema.json) and the default values
// (values.yaml) of a chart, which a Helm repository's index does not
// carry. annexctl show and the console ask by adding the version to the
// annotation annex.dev/values-requested; this controller reads the
// version's archive through the manager's artifact cache, with the
// credentials of the Catalog that supplied it (the manager has them, a
// person's kubeconfig may not reach the repository at all), writes what
// it found into status.values and removes the version from the
// annotation.
//
// Nothing is read at catalog sync: an index of thousands of versions
// costs no archive download until someone looks at one. An answer is kept
// by the archive's digest: a version whose status.values entry has the
// digest of its source is not read again, however often it is asked for;
// the archive itself stays in the manager's content-addressed cache, so
// installing the version later does not download it again either.
package extension

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/predicate"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
)

// Artifacts fetches a version's archive, verified against its digest and
// walked by the archive checks; the manager wires its cache of artifacts.
type Artifacts interface {
	FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error)
}

// Reconciler answers the values requests of Extensions.
type Reconciler struct {
	Client    client.Client
	Artifacts Artifacts
	// Limits bound the archives read; zero fields mean the defaults.
	Limits catalog.Limits
}

// +kubebuilder:rbac:groups=annex.dev,resources=extensions,verbs=get;list;watch;update;patch
// +kubebuilder:rbac:groups=annex.dev,resources=extensions/status,verbs=get;update;patch

// Reconcile answers every version the annotation lists: status first,
// then the annotation loses the versions answered (a request added in the
// meantime conflicts and is answered on the next reconcile).
func (r *Reconciler) Reconcile(ctx context.Context, req ctrl.Request) (ctrl.Result, error) {
	ext := &v1alpha1.Extension{}
	if err := r.Client.Get(ctx, req.NamespacedName, ext); err != nil {
		return ctrl.Result{}, client.IgnoreNotFound(err)
	}
	asked := catalog.RequestedVersions(ext.Annotations[v1alpha1.AnnotationValuesRequested])
	if len(asked) == 0 {
		return ctrl.Result{}, nil
	}
	before := ext.DeepCopy()
	for _, version := range asked {
		entry := r.answer(ctx, ext, version)
		ext.Status.Values = catalog.RememberValues(ext.Status.Values, entry)
	}
	if !equality.Semantic.DeepEqual(before.Status, ext.Status) {
		if err := r.Client.Status().Patch(ctx, ext, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})); err != nil {
			return ctrl.Result{}, err
		}
		before = ext.DeepCopy()
	}
	delete(ext.Annotations, v1alpha1.AnnotationValuesRequested)
	return ctrl.Result{}, client.IgnoreNotFound(r.Client.Patch(ctx, ext, client.MergeFromWithOptions(before, client.MergeFromWithOptimisticLock{})))
}

// answer returns the status.values entry of one asked version: the one
// status has when it is current, else what the archive says, or a message
// saying why there is nothing to read.
func (r *Reconciler) answer(ctx context.Context, ext *v1alpha1.Extension, version string) v1alpha1.VersionValues {
	i := slices.IndexFunc(ext.Spec.Versions, func(v v1alpha1.ExtensionVersion) bool { return v.Version == version })
	if i < 0 {
		return v1alpha1.VersionValues{Version: version, Message: fmt.Sprintf("extension %q has no version %s; annexctl show %s lists its versions", ext.Name, version, ext.Name)}
	}
	v := ext.Spec.Versions[i]
	if held, ok := catalog.CurrentValues(ext, version); ok && held.Message == "" {
		return *held
	}
	entry := v1alpha1.VersionValues{Version: version, Digest: v.Source.Digest}
	if v.Engine != "" && v.Engine != v1alpha1.EngineHelm {
		entry.Message = fmt.Sprintf("version %s is an engine %s artifact, not a chart: it has no values.yaml", version, v.Engine)
		return entry
	}
	data, err := r.Artifacts.FetchArtifact(ctx, v.Source)
	if err != nil {
		entry.Message = fmt.Sprintf("reading the chart of %s %s from %s: %v", ext.Name, version, v.Source.URL, err)
		return entry
	}
	if entry.Digest == "" {
		entry.Digest = catalog.Digest(data)
	}
	values, err := catalog.ReadChartValues(data, r.Limits)
	if err != nil {
		var unsafe *catalog.UnsafeArchiveError
		if errors.As(err, &unsafe) {
			entry.Message = fmt.Sprintf("the chart of %s %s at %s: %v", ext.Name, version, v.Source.URL, err)
		} else {
			entry.Message = fmt.Sprintf("the chart of %s %s: %v; fix the chart and publish a new version", ext.Name, version, err)
		}
		return entry
	}
	if values.Schema != nil {
		entry.Schema = &apiextensionsv1.JSON{Raw: values.Schema}
	}
	if values.Defaults != nil {
		entry.Defaults = &apiextensionsv1.JSON{Raw: values.Defaults}
	}
	return entry
}

// SetupWithManager registers the controller; it reconciles Extensions
// whose annotation annex.dev/values-requested is set.
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	asked := predicate.NewPredicateFuncs(func(o client.Object) bool {
		return o.GetAnnotations()[v1alpha1.AnnotationValuesRequested] != ""
	})
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.Extension{}, builder.WithPredicates(asked)).
		Named("extension-values").
		Complete(r)
}
