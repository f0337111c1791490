package cli

import (
	"context"
	"errors"
	"fmt"
	"io"
	"maps"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"
	corev1 "k8s.io/api/core/v1"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/apply"
	"github.com/annex-platform/annex/internal/cluster"
	helmengine "github.com/annex-platform/annex/internal/engine/helm"
)

// ArtifactFetcher downloads the archive of an Extension version
// (sources.Artifacts in annexctl).
type ArtifactFetcher interface {
	FetchArtifact(ctx context.Context, src v1alpha1.ArtifactSource) ([]byte, error)
}

// AdoptOptions configure AdoptHelm.
type AdoptOptions struct {
	// Release and Namespace name the Helm release.
	Release, Namespace string
	// Cluster is the ManagedCluster the release runs in; "" is the hub.
	Cluster string
	// Output is table (the default), yaml or json (an AdoptView).
	Output Output
	Out    io.Writer
	// DryRun prints the comparison and changes nothing; otherwise
	// AdoptHelmInPlace writes the installation that adopts the release.
	DryRun bool
	// InstallationNamespace is the hub namespace of the installation
	// AdoptHelmInPlace writes; default: the release's namespace.
	InstallationNamespace string
}

// AdoptView is what `annexctl adopt helm` found: the release revision it
// would adopt, the catalog version that matches its chart, and the
// comparison of Annex's render with the live objects.
type AdoptView struct {
	Release   string `json:"release"`
	Namespace string `json:"namespace"`
	// Cluster is the ManagedCluster, or "(hub)".
	Cluster  string `json:"cluster"`
	Revision int    `json:"revision"`
	// Storage is the Secret or ConfigMap the revision was read from.
	Storage string `json:"storage"`
	Chart   string `json:"chart"`
	Version string `json:"version"`
	// Extension and Catalog are where Annex found the chart's version.
	Extension string `json:"extension"`
	Catalog   string `json:"catalog,omitempty"`
	// Values are the release's user-supplied values, which the
	// installation would take as spec.values.
	Values map[string]any `json:"values,omitempty"`
	// Pods are the running Pods of the release's Deployments,
	// StatefulSets and DaemonSets before adopting: an adoption that writes
	// nothing of a pod template leaves each of them running (KeptObjects
	// says so afterwards).
	Pods []PodRef `json:"pods,omitempty"`
	adopt.Comparison
}

// PodRef is a Pod of a workload of the release.
type PodRef struct {
	Namespace string    `json:"namespace"`
	Name      string    `json:"name"`
	UID       types.UID `json:"uid"`
	// Of is its workload: "Deployment default/web".
	Of string `json:"of"`
}

// AdoptHelm compares a Helm release with what Annex would install in its
// place, and prints the comparison: it reads the release's revisions from
// its storage (Secrets, else ConfigMaps) in the cluster, picks the deployed
// revision, finds the chart's version among the hub's Extensions, renders
// it with the release's user-supplied values through the Helm engine
// (internal/render) as an upgrade of the release, reads the live objects
// and compares them one by one (adopt.Compare). It changes nothing.
//
// Errors name what to do: a release that does not exist (with the
// releases of the namespace), a pending release (with the commands that
// fix it), a chart version in no catalog (with the catalogs searched), a
// chart that does not render with the release's values.
func AdoptHelm(ctx context.Context, hub client.Reader, clusters *cluster.Registry, fetch ArtifactFetcher, o AdoptOptions) error {
	v, err := AdoptHelmData(ctx, hub, clusters, fetch, o)
	if err != nil {
		return err
	}
	if o.Output == OutputYAML || o.Output == OutputJSON {
		return writeData(o.Out, o.Output, v)
	}
	if err := WriteAdopt(o.Out, v); err != nil {
		return err
	}
	_, err = fmt.Fprintln(o.Out, "Nothing was changed (dry run); without --dry-run, annexctl adopt helm adopts the release in place.")
	return err
}

// AdoptHelmData is AdoptHelm without the printing.
func AdoptHelmData(ctx context.Context, hub client.Reader, clusters *cluster.Registry, fetch ArtifactFetcher, o AdoptOptions) (*AdoptView, error) {
	if o.Namespace == "" {
		return nil, Usagef("-n: give the namespace of the Helm release (helm list -n NAMESPACE shows it)")
	}
	where := "the hub cluster"
	if o.Cluster != "" {
		where = "ManagedCluster " + o.Cluster
	}
	target, err := clusters.Target(ctx, o.Cluster)
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %w; check --cluster (annexctl status lists the clusters and whether they are reachable)", where, err)
	}
	c := target.Applier().Client
	rel, err := readRelease(ctx, target.Applier(), o.Release, o.Namespace, where)
	if err != nil {
		return nil, err
	}
	ext, version, err := findChart(ctx, hub, rel)
	if err != nil {
		return nil, err
	}
	archive, err := fetch.FetchArtifact(ctx, version.Source)
	if err != nil {
		return nil, fmt.Errorf("chart %s %s of Helm release %s/%s: Extension %q version %s: fetching %s: %w; check catalog %q (annexctl catalog list)",
			rel.Chart, rel.ChartVersion, rel.Namespace, rel.Name, ext, version.Version, version.Source.URL, err, version.Source.Catalog)
	}
	kubeVersion, err := target.KubeVersion(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the Kubernetes version of %s: %w", where, err)
	}
	apiVersions, err := target.APIVersions(ctx)
	if err != nil {
		return nil, fmt.Errorf("reading the API versions of %s: %w", where, err)
	}
	out, err := helmengine.Render(helmengine.Input{
		Archive: archive, Name: rel.Name, Namespace: rel.Namespace, Values: rel.Values,
		KubeVersion: kubeVersion, APIVersions: apiVersions,
		// Adoption takes over a release that is installed: the chart
		// sees an upgrade, as on the release's next helm upgrade.
		IsUpgrade:    true,
		ExtensionRef: ext + " " + version.Version,
	})
	if err != nil {
		return nil, fmt.Errorf("chart %s %s does not render with the values of Helm release %s/%s revision %d (helm get values %s -n %s --revision %d shows them): %w; "+
			"change the values with helm upgrade until the release renders, or add a catalog version of the chart that accepts them",
			rel.Chart, rel.ChartVersion, rel.Namespace, rel.Name, rel.Revision, rel.Name, o.Namespace, rel.Revision, err)
	}
	if out.ChartName != rel.Chart {
		return nil, fmt.Errorf("Extension %q version %s is chart %q, not the release's chart %q; adopt with a catalog that serves chart %q as Extension %q",
			ext, version.Version, out.ChartName, rel.Chart, rel.Chart, rel.Chart)
	}
	rendered := slices.Concat(out.CRDs, out.Objects)
	released, err := adopt.ParseManifest(rel.Manifest)
	if err != nil {
		return nil, fmt.Errorf("Helm release %s/%s revision %d (%s): %w", rel.Namespace, rel.Name, rel.Revision, rel.Storage, err)
	}
	namespaced := scopeOf(target.Applier().Mapper, out.CRDs)
	if err := adopt.Place(rendered, rel.Namespace, namespaced); err != nil {
		return nil, err
	}
	if err := adopt.Place(released, rel.Namespace, namespaced); err != nil {
		return nil, err
	}
	live, err := readLive(ctx, c, rendered)
	if err != nil {
		return nil, fmt.Errorf("reading the objects of Helm release %s/%s in %s: %w", rel.Namespace, rel.Name, where, err)
	}
	pods, err := runningPods(ctx, c, live)
	if err != nil {
		return nil, fmt.Errorf("reading the Pods of Helm release %s/%s in %s: %w", rel.Namespace, rel.Name, where, err)
	}
	shown := HubCluster
	if o.Cluster != "" {
		shown = o.Cluster
	}
	return &AdoptView{
		Release: rel.Name, Namespace: rel.Namespace, Cluster: shown, Revision: rel.Revision, Storage: rel.Storage,
		Chart: rel.Chart, Version: rel.ChartVersion, Extension: ext, Catalog: version.Source.Catalog,
		Values: rel.Values, Pods: pods, Comparison: adopt.Compare(rendered, live, released),
	}, nil
}

// runningPods lists the running Pods that the Deployments, StatefulSets
// and DaemonSets of live select (spec.selector.matchLabels), by name.
func runningPods(ctx context.Context, c client.Reader, live []*unstructured.Unstructured) ([]PodRef, error) {
	var out []PodRef
	for _, w := range live {
		gvk := w.GroupVersionKind()
		if gvk.Group != "apps" || (gvk.Kind != "Deployment" && gvk.Kind != "StatefulSet" && gvk.Kind != "DaemonSet") {
			continue
		}
		selector, _, _ := unstructured.NestedStringMap(w.Object, "spec", "selector", "matchLabels")
		if len(selector) == 0 {
			continue
		}
		var pods corev1.PodList
		if err := c.List(ctx, &pods, client.InNamespace(w.GetNamespace()), client.MatchingLabels(selector)); err != nil {
			return nil, err
		}
		for _, p := range pods.Items {
			if p.Status.Phase == corev1.PodRunning && p.DeletionTimestamp == nil {
				out = append(out, PodRef{Namespace: p.Namespace, Name: p.Name, UID: p.UID, Of: fmt.Sprintf("%s %s/%s", gvk.Kind, w.GetNamespace(), w.GetName())})
			}
		}
	}
	slices.SortFunc(out, func(a, b PodRef) int { return strings.Compare(a.Namespace+"/"+a.Name, b.Namespace+"/"+b.Name) })
	return out, nil
}

// helmStorageLabels select the storage objects of Helm releases.
var helmStorageLabels = client.MatchingLabels{adopt.LabelOwner: adopt.Owner}

// readRelease reads every revision of the release (Secret driver first,
// as Helm's default, then ConfigMap) and picks the deployed one.
func readRelease(ctx context.Context, a *apply.Applier, name, namespace, where string) (*adopt.Release, error) {
	revisions, driver, err := a.HelmRelease(ctx, namespace, name)
	if err != nil {
		return nil, fmt.Errorf("reading Helm release %s/%s in %s: %w (helm history %s -n %s shows what Helm reads)", namespace, name, where, err, name, namespace)
	}
	if len(revisions) == 0 {
		names, err := HelmReleaseNames(ctx, a.Client, namespace)
		if err != nil {
			return nil, err
		}
		if len(names) == 0 {
			return nil, fmt.Errorf("no Helm release %q in namespace %s of %s: the namespace has no Helm releases (neither Secrets nor ConfigMaps labelled owner=helm); check -n and --cluster",
				name, namespace, where)
		}
		return nil, fmt.Errorf("no Helm release %q in namespace %s of %s; its releases are: %s", name, namespace, where, strings.Join(names, ", "))
	}
	return adopt.Deployed(revisions, driver)
}

// HelmReleaseNames lists the names of the Helm releases of a namespace
// (Secret and ConfigMap storage), sorted, for errors and completion.
func HelmReleaseNames(ctx context.Context, c client.Reader, namespace string) ([]string, error) {
	seen := map[string]bool{}
	var secrets corev1.SecretList
	if err := c.List(ctx, &secrets, client.InNamespace(namespace), helmStorageLabels); err != nil {
		return nil, fmt.Errorf("listing the Helm release Secrets of namespace %s: %w", namespace, err)
	}
	for _, s := range secrets.Items {
		if s.Type == adopt.SecretType && adopt.IsStorage(s.Name, s.Labels) {
			seen[s.Labels[adopt.LabelName]] = true
		}
	}
	var cms corev1.ConfigMapList
	if err := c.List(ctx, &cms, client.InNamespace(namespace), helmStorageLabels); err != nil {
		return nil, fmt.Errorf("listing the Helm release ConfigMaps of namespace %s: %w", namespace, err)
	}
	for _, cm := range cms.Items {
		if adopt.IsStorage(cm.Name, cm.Labels) {
			seen[cm.Labels[adopt.LabelName]] = true
		}
	}
	delete(seen, "")
	names := make([]string, 0, len(seen))
	for n := range seen {
		names = append(names, n)
	}
	sort.Strings(names)
	return names, nil
}

// findChart finds the release's chart version among the hub's Extensions:
// the Extension named after the chart, its version equal to the chart's
// (as semantic versions), of the Helm engine. The error names the
// catalogs searched and the versions they offer.
func findChart(ctx context.Context, hub client.Reader, rel *adopt.Release) (string, *v1alpha1.ExtensionVersion, error) {
	what := fmt.Sprintf("chart %s %s of Helm release %s/%s", rel.Chart, rel.ChartVersion, rel.Namespace, rel.Name)
	want, err := semver.NewVersion(rel.ChartVersion)
	if err != nil {
		return "", nil, fmt.Errorf("%s: version %q is not a semantic version, which no catalog serves", what, rel.ChartVersion)
	}
	ext := &v1alpha1.Extension{}
	err = hub.Get(ctx, client.ObjectKey{Name: rel.Chart}, ext)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", nil, fmt.Errorf("%s: reading Extension %q: %w", what, rel.Chart, err)
	}
	found := err == nil
	var offered []string
	if found {
		for i := range ext.Spec.Versions {
			v := &ext.Spec.Versions[i]
			got, err := semver.NewVersion(v.Version)
			if err != nil {
				continue
			}
			if got.Equal(want) {
				if v.Engine != "" && v.Engine != v1alpha1.EngineHelm {
					return "", nil, fmt.Errorf("%s: Extension %q version %s is engine %s, not a Helm chart; a Helm release can only be adopted from a Helm chart", what, ext.Name, v.Version, v.Engine)
				}
				return ext.Name, v, nil
			}
			offered = append(offered, v.Version)
		}
	}
	catalogs, err := CatalogNames(ctx, hub)
	if err != nil {
		return "", nil, fmt.Errorf("%s: listing Catalogs: %w", what, err)
	}
	searched := "no catalogs (annexctl catalog add NAME URL adds one)"
	if len(catalogs) > 0 {
		searched = "catalogs " + strings.Join(catalogs, ", ")
	}
	if !found {
		return "", nil, fmt.Errorf("%s is in no catalog: searched %s, none offers Extension %q; add a catalog that serves the chart (annexctl catalog add NAME URL), then run this again",
			what, searched, rel.Chart)
	}
	return "", nil, fmt.Errorf("%s is in no catalog: searched %s; Extension %q offers %s but not %s; add a catalog that serves it (annexctl catalog add NAME URL), or helm upgrade the release to a version offered",
		what, searched, rel.Chart, strings.Join(offered, ", "), rel.ChartVersion)
}

// scopeOf says whether a kind is namespaced: from the cluster, else from
// the spec.scope of a CRD among crds (a kind the release itself defines),
// else namespaced (its objects are then reported missing).
func scopeOf(mapper meta.RESTMapper, crds []*unstructured.Unstructured) func(schema.GroupVersionKind) (bool, error) {
	return func(gvk schema.GroupVersionKind) (bool, error) {
		m, err := mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
		if err == nil {
			return m.Scope.Name() == meta.RESTScopeNameNamespace, nil
		}
		if !meta.IsNoMatchError(err) {
			return false, fmt.Errorf("looking up API kind %q in group %q: %w", gvk.Kind, gvk.Group, err)
		}
		for _, crd := range crds {
			group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
			kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
			if group == gvk.Group && kind == gvk.Kind {
				scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
				return scope != "Cluster", nil
			}
		}
		return true, nil
	}
}

// readLive reads the live object of each rendered object that is not a
// hook; those that do not exist (or whose kind the cluster does not serve)
// are left out.
func readLive(ctx context.Context, c client.Reader, rendered []*unstructured.Unstructured) ([]*unstructured.Unstructured, error) {
	var live []*unstructured.Unstructured
	var errs []error
	for _, r := range rendered {
		if adopt.IsHook(r) {
			continue
		}
		l := &unstructured.Unstructured{}
		l.SetGroupVersionKind(r.GroupVersionKind())
		err := c.Get(ctx, client.ObjectKeyFromObject(r), l)
		switch {
		case err == nil:
			live = append(live, l)
		case apierrors.IsNotFound(err) || meta.IsNoMatchError(err):
		default:
			errs = append(errs, fmt.Errorf("%s: %w", adopt.RefOf(r), err))
		}
	}
	return live, errors.Join(errs...)
}

// WriteAdopt prints an AdoptView for people: where the release and its
// chart were found, then each object with its state and, when it differs,
// each field as live → Annex, then the counts.
func WriteAdopt(w io.Writer, v *AdoptView) error {
	where := "the hub cluster"
	if v.Cluster != HubCluster {
		where = "ManagedCluster " + v.Cluster
	}
	catalog := ""
	if v.Catalog != "" {
		catalog = ", catalog " + v.Catalog
	}
	fmt.Fprintf(w, "Helm release %s/%s on %s: revision %d, deployed (%s)\n", v.Namespace, v.Release, where, v.Revision, v.Storage)
	values := "no user-supplied values"
	if len(v.Values) > 0 {
		values = "the release's user-supplied values (" + strings.Join(slices.Sorted(maps.Keys(v.Values)), ", ") + ")"
	}
	fmt.Fprintf(w, "Chart %s %s: Extension %s %s%s, rendered with %s\n", v.Chart, v.Version, v.Extension, v.Version, catalog, values)
	fmt.Fprintln(w)
	for _, o := range v.Objects {
		fmt.Fprintf(w, "%-8s %s\n", o.State, o.Object)
		for _, f := range o.Fields {
			fmt.Fprintf(w, "           %s\n", f)
		}
	}
	fmt.Fprintln(w)
	fmt.Fprintf(w, "%d same, %d differ, %d missing, %d extra", v.Count(adopt.Same), v.Count(adopt.Differs), v.Count(adopt.Missing), v.Count(adopt.Extra))
	switch {
	case v.Hooks == 1:
		fmt.Fprint(w, "; 1 Helm hook not compared (adoption does not run it again)")
	case v.Hooks > 1:
		fmt.Fprintf(w, "; %d Helm hooks not compared (adoption does not run them again)", v.Hooks)
	}
	fmt.Fprintln(w, ".")
	if v.Count(adopt.Differs) > 0 {
		fmt.Fprintln(w, "A difference reads live → Annex: adopting writes Annex's value.")
	}
	for _, p := range v.Pods {
		fmt.Fprintf(w, "running  Pod %s/%s of %s (uid %s)\n", p.Namespace, p.Name, p.Of, p.UID)
	}
	return nil
}
