package manager

import (
	"context"
	"fmt"
	"strings"
	"time"

	corev1 "k8s.io/api/core/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/apply"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/cluster"
	"github.com/annex-platform/annex/internal/crdmigrate"
	"github.com/annex-platform/annex/internal/kubeapis"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/target"
	"github.com/annex-platform/annex/internal/verify"
)

// installationClusters lets cluster.Registry serve the installation
// controller's Clusters interface: the controller owns the interface, the
// wiring adapts the implementation to it.
type installationClusters struct{ registry *cluster.Registry }

func (c installationClusters) Target(ctx context.Context, name string) (target.Cluster, error) {
	t, err := c.registry.Target(ctx, name)
	if err != nil {
		return nil, err
	}
	return installationTarget{t}, nil
}

type installationTarget struct{ *cluster.Target }

func (t installationTarget) Applier() target.Applier { return applierAdapter{t.Target.Applier()} }

func (t installationTarget) ApplierAs(user string) (target.Applier, error) {
	a, err := t.Target.ApplierAs(user)
	if err != nil {
		return nil, err
	}
	return applierAdapter{a}, nil
}

// ResourceScope asks the REST mapper the Target's appliers share, which
// reloads discovery on a miss.
func (t installationTarget) ResourceScope(_ context.Context, gr schema.GroupResource) (namespaced, known bool, err error) {
	mapper := t.Target.Applier().Mapper
	gvk, err := mapper.KindFor(gr.WithVersion(""))
	if err == nil {
		var mapping *meta.RESTMapping
		if mapping, err = mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			return mapping.Scope.Name() == meta.RESTScopeNameNamespace, true, nil
		}
	}
	if meta.IsNoMatchError(err) {
		return false, false, nil
	}
	return false, false, err
}

// Serves asks the REST mapper the Target's appliers share, which reloads
// discovery on a miss.
func (t installationTarget) Serves(_ context.Context, gvk schema.GroupVersionKind) (kubeapis.Answer, error) {
	return t.Target.Applier().Serves(gvk)
}

// CRDs reads the CustomResourceDefinitions with the Target's applier's
// client (the cluster's own identity), one request each.
func (t installationTarget) CRDs(ctx context.Context, names []string) (map[string]*unstructured.Unstructured, error) {
	out := make(map[string]*unstructured.Unstructured, len(names))
	for _, name := range names {
		crd := &unstructured.Unstructured{}
		crd.SetGroupVersionKind(apiextensionsv1.SchemeGroupVersion.WithKind("CustomResourceDefinition"))
		err := t.Target.Applier().Client.Get(ctx, client.ObjectKey{Name: name}, crd)
		switch {
		case apierrors.IsNotFound(err):
			continue
		case err != nil:
			return nil, fmt.Errorf("reading CustomResourceDefinition %s: %w", name, err)
		}
		out[name] = crd
	}
	return out, nil
}

// MigrateStoredVersions runs crdmigrate with the Target's applier's client.
func (t installationTarget) MigrateStoredVersions(ctx context.Context, name string) (target.StorageMigration, error) {
	res, err := crdmigrate.Migrate(ctx, t.Target.Applier().Client, name, crdmigrate.DefaultPageSize)
	return target.StorageMigration{StorageVersion: res.StorageVersion, Objects: res.Objects, Trimmed: res.Trimmed}, err
}

// applierAdapter lets apply.Applier serve the controller's interface.
type applierAdapter struct{ a *apply.Applier }

func (w applierAdapter) Refs(objects []*unstructured.Unstructured, ns string) []v1alpha1.ObjectReference {
	return w.a.Refs(apply.Set{Objects: objects}, ns)
}

func (w applierAdapter) Apply(ctx context.Context, o target.Owner, ns string, set target.Set, opts target.ApplyOptions) (target.Applied, error) {
	res, err := w.a.ApplyWithOptions(ctx, apply.Owner(o), ns, applySet(set), apply.ApplyOptions{TakeOwnership: opts.TakeOwnership, HandOver: opts.HandOver, DeferHandOver: opts.DeferHandOver, Create: opts.Create})
	return appliedOf(res), err
}

func (w applierAdapter) Start(o target.Owner, ns string, p plan.Plan, opts target.ApplyOptions) (target.StepRunner, error) {
	run, err := w.a.Start(apply.Owner(o), ns, p, apply.HookOptions{
		ApplyOptions: apply.ApplyOptions{TakeOwnership: opts.TakeOwnership, HandOver: opts.HandOver, DeferHandOver: opts.DeferHandOver, Create: opts.Create},
		HookTimeout:  opts.HookTimeout,
	})
	if err != nil {
		return nil, err
	}
	return stepRunner{run}, nil
}

func (w applierAdapter) HelmRelease(ctx context.Context, namespace, name string) ([]*adopt.Release, string, error) {
	return w.a.HelmRelease(ctx, namespace, name)
}

func (w applierAdapter) RetireHelmRelease(ctx context.Context, namespace, name string) (int, error) {
	return w.a.RetireHelmRelease(ctx, namespace, name)
}

func (w applierAdapter) OLMOperator(ctx context.Context, namespace, name string) (*adopt.Operator, error) {
	return w.a.OLMOperator(ctx, namespace, name)
}

func (w applierAdapter) RetireOLMOperator(ctx context.Context, op *adopt.Operator, inventory []v1alpha1.ObjectReference) (int, error) {
	return w.a.RetireOLMOperator(ctx, op, inventory)
}

func (w applierAdapter) Live(ctx context.Context, ns string, objects []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	return w.a.Live(ctx, ns, objects)
}

// stepRunner lets apply.Run serve the controller's StepRunner.
type stepRunner struct{ r *apply.Run }

func (s stepRunner) Step(ctx context.Context, ref plan.StepRef) error { return s.r.Step(ctx, ref) }
func (s stepRunner) Applied() target.Applied                          { return appliedOf(s.r.Result()) }

func appliedOf(res apply.Result) target.Applied {
	return target.Applied{Inventory: res.Inventory, Health: healthOf(res.Health), Adopted: res.Adopted}
}

func (w applierAdapter) Diff(ctx context.Context, o target.Owner, ns string, set target.Set) ([]target.Drift, target.Health, error) {
	drifts, h, err := w.a.Diff(ctx, apply.Owner(o), applySet(set), ns)
	if err != nil {
		return nil, target.Health{}, err
	}
	out := make([]target.Drift, len(drifts))
	for i, d := range drifts {
		out[i] = target.Drift{Object: d.Object, Missing: d.Missing, Fields: d.Fields}
	}
	return out, healthOf(h), nil
}

func (w applierAdapter) RunDeleteHooks(ctx context.Context, o target.Owner, ns string, set target.Set, post bool, timeout time.Duration) error {
	event := apply.HookPreDelete
	if post {
		event = apply.HookPostDelete
	}
	return w.a.RunDeleteHooks(ctx, apply.Owner(o), ns, applySet(set), event, timeout)
}

func (w applierAdapter) Prune(ctx context.Context, o target.Owner, old, current []v1alpha1.ObjectReference) ([]v1alpha1.ObjectReference, error) {
	return w.a.Prune(ctx, apply.Owner(o), old, current)
}

func (w applierAdapter) Delete(ctx context.Context, o target.Owner, inv []v1alpha1.ObjectReference, deleteCRDs bool) (int, error) {
	return w.a.Delete(ctx, apply.Owner(o), inv, deleteCRDs)
}

func (w applierAdapter) Health(ctx context.Context, inv []v1alpha1.ObjectReference) (target.Health, error) {
	h, err := w.a.Health(ctx, inv)
	if err != nil {
		return target.Health{}, err
	}
	return healthOf(h), nil
}

func healthOf(h apply.Health) target.Health {
	out := target.Health{Total: h.Total, Ready: h.Ready, Failed: h.Failed, Summary: h.Summary()}
	for _, p := range h.Pending {
		out.NotReady = append(out.NotReady, target.ObjectHealth{Object: p.Ref, Status: p.Status, Message: p.Message})
	}
	return out
}

func (w applierAdapter) RemoveFinalizers(ctx context.Context, o target.Owner, refs []v1alpha1.ObjectReference) error {
	return w.a.RemoveFinalizers(ctx, apply.Owner(o), refs)
}

// applySet is the applier's view of a set: its objects.
func applySet(set target.Set) apply.Set { return apply.Set{CRDs: set.CRDs, Objects: set.Objects} }

func (w applierAdapter) RunPipe(ctx context.Context, o target.Owner, ns string, p plan.Pipe) (target.PipeResult, error) {
	res, err := w.a.RunPipe(ctx, apply.Owner(o), ns, p)
	return target.PipeResult{Done: res.Done, Message: res.Message}, err
}

// installationFetcher serves the installation controller's artifacts
// through the caches, and operator bundles from their catalog or image.
type installationFetcher struct {
	*catalog.MemoryCache
	bundles sources.Artifacts
}

func (f installationFetcher) FetchBundle(ctx context.Context, src v1alpha1.ArtifactSource) (map[string][]byte, error) {
	return f.bundles.FetchBundle(ctx, src)
}

// newVerifier is the installations' signature verifier: policies from
// the cached Catalogs, keys from the API server, the archives of charts
// to check against their provenance through the artifact cache, and the
// cluster default policy, when o names one, read from its ConfigMap at
// each verification (so that an administrator's change applies at once).
func newVerifier(mgr ctrl.Manager, o Options, fetcher *catalog.Fetcher, lookup catalog.KubeLookup, artifacts catalog.ArtifactFetcher) *sources.Verifier {
	v := &sources.Verifier{Fetcher: fetcher, Lookup: verifierLookup{cached: mgr.GetClient(), KubeLookup: lookup}, Cache: &verify.Cache{}, Archives: artifacts}
	ns, name, ok := strings.Cut(o.DefaultVerifyPolicy, "/")
	if !ok {
		return v
	}
	v.DefaultName = fmt.Sprintf("ConfigMap %s/%s, key %s", ns, name, sources.DefaultPolicyKey)
	v.Default = defaultPolicy(mgr.GetAPIReader(), ns, name)
	return v
}

// defaultPolicy reads the cluster default signature policy from the
// ConfigMap ns/name through reader at each call: a missing ConfigMap or
// one whose verify.yaml is not a policy is an
// *sources.InvalidDefaultPolicyError (the verifier refuses instead of
// passing); another error is the API server's, retried.
func defaultPolicy(reader client.Reader, ns, name string) func(context.Context) (*v1alpha1.VerificationPolicy, error) {
	return func(ctx context.Context) (*v1alpha1.VerificationPolicy, error) {
		var cm corev1.ConfigMap
		err := reader.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &cm)
		if apierrors.IsNotFound(err) {
			return nil, &sources.InvalidDefaultPolicyError{Problem: fmt.Sprintf("the manager's --default-verify-policy names ConfigMap %s/%s, which does not exist; create it with the policy under %q, or remove the flag", ns, name, sources.DefaultPolicyKey)}
		}
		if err != nil {
			return nil, fmt.Errorf("the default verification policy, ConfigMap %s/%s: %w", ns, name, err)
		}
		p, err := sources.ParseDefaultPolicy([]byte(cm.Data[sources.DefaultPolicyKey]))
		if err != nil {
			return nil, &sources.InvalidDefaultPolicyError{Problem: fmt.Sprintf("the default verification policy, ConfigMap %s/%s: %v", ns, name, err)}
		}
		return p, nil
	}
}

// verifierLookup serves the signature verifier: Catalogs from the
// manager's cache, since every fetch of an artifact asks for its
// catalog's policy, and the Secrets holding keys from the API server, as
// the manager caches no Secret.
type verifierLookup struct {
	cached client.Reader
	catalog.KubeLookup
}

func (l verifierLookup) Catalog(ctx context.Context, name string) (*v1alpha1.Catalog, error) {
	return catalog.KubeLookup{Reader: l.cached}.Catalog(ctx, name)
}
