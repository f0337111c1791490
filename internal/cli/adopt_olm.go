package cli

import (
	"cmp"
	"context"
	"fmt"
	"io"
	"strings"

	"github.com/Masterminds/semver/v3"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
	"github.com/annex-platform/annex/internal/cluster"
)

// AdoptOLMOptions configure AdoptOLM.
type AdoptOLMOptions struct {
	// Subscription and Namespace name the OLM v0 Subscription.
	Subscription, Namespace string
	// Cluster is the ManagedCluster the operator runs in; "" is the hub.
	Cluster string
	// Output is table (the default), yaml or json.
	Output Output
	Out    io.Writer
	// DryRun prints what adopting would do and changes nothing.
	DryRun bool
	// InstallationNamespace is the hub namespace of the installation;
	// default: the Subscription's namespace.
	InstallationNamespace string
}

// AdoptOLMView is what `annexctl adopt olm` found: the operator OLM
// installed and the catalog bundle that matches it.
type AdoptOLMView struct {
	adopt.Operator
	// Cluster is the ManagedCluster, or "(hub)".
	Cluster string `json:"cluster"`
	// Extension and Catalog are where Annex found the bundle's version.
	Extension string `json:"extension"`
	Catalog   string `json:"catalog,omitempty"`
}

// AdoptOLMData reads the Subscription, its CSV and InstallPlans, refuses
// an operator whose CSV is not Succeeded, and finds the package's version
// among the Extensions of olm Catalogs (the error names the catalogs
// searched). It changes nothing.
func AdoptOLMData(ctx context.Context, hub client.Reader, clusters *cluster.Registry, o AdoptOLMOptions) (*AdoptOLMView, error) {
	if o.Namespace == "" {
		return nil, Usagef("-n: give the namespace of the Subscription (kubectl get subscriptions -A lists them)")
	}
	where, shown := "the hub cluster", HubCluster
	if o.Cluster != "" {
		where, shown = "ManagedCluster "+o.Cluster, o.Cluster
	}
	target, err := clusters.Target(ctx, o.Cluster)
	if err != nil {
		return nil, fmt.Errorf("reaching %s: %w; check --cluster (annexctl status lists the clusters and whether they are reachable)", where, err)
	}
	op, err := target.Applier().OLMOperator(ctx, o.Namespace, o.Subscription)
	if err != nil {
		return nil, fmt.Errorf("reading OLM Subscription %s/%s in %s: %w", o.Namespace, o.Subscription, where, err)
	}
	if op == nil {
		return nil, fmt.Errorf("no Subscription %q (operators.coreos.com/v1alpha1) in namespace %s of %s; check -n and --cluster (kubectl get subscriptions -A lists them)",
			o.Subscription, o.Namespace, where)
	}
	if err := adopt.CheckOperator(op, adopt.Installation{Extension: op.Package, Version: op.Version, TargetNamespace: op.Namespace}); err != nil {
		return nil, err
	}
	ext, version, err := findBundle(ctx, hub, op)
	if err != nil {
		return nil, err
	}
	return &AdoptOLMView{Operator: *op, Cluster: shown, Extension: ext, Catalog: version.Source.Catalog}, nil
}

// findBundle finds the operator's package at its CSV's version among the
// Extensions of engine Bundle; the error names the olm Catalogs searched.
func findBundle(ctx context.Context, hub client.Reader, op *adopt.Operator) (string, *v1alpha1.ExtensionVersion, error) {
	what := fmt.Sprintf("operator %s %s of Subscription %s/%s (ClusterServiceVersion %s)", op.Package, op.Version, op.Namespace, op.Subscription, op.CSV)
	want, err := semver.NewVersion(op.Version)
	if err != nil {
		return "", nil, fmt.Errorf("%s: version %q is not a semantic version, which no catalog serves", what, op.Version)
	}
	ext := &v1alpha1.Extension{}
	err = hub.Get(ctx, client.ObjectKey{Name: op.Package}, ext)
	if err != nil && !apierrors.IsNotFound(err) {
		return "", nil, fmt.Errorf("%s: reading Extension %q: %w", what, op.Package, err)
	}
	var offered []string
	if err == nil {
		for i := range ext.Spec.Versions {
			v := &ext.Spec.Versions[i]
			got, err := semver.NewVersion(v.Version)
			if err != nil || v.Engine != v1alpha1.EngineBundle {
				continue
			}
			if got.Equal(want) {
				return ext.Name, v, nil
			}
			offered = append(offered, v.Version)
		}
	}
	var catalogs v1alpha1.CatalogList
	if err := hub.List(ctx, &catalogs); err != nil {
		return "", nil, fmt.Errorf("%s: listing Catalogs: %w", what, err)
	}
	var olm []string
	for _, c := range catalogs.Items {
		if c.Spec.Source.OLM != nil {
			olm = append(olm, c.Name)
		}
	}
	searched := "no olm catalogs (annexctl catalog add NAME --olm URL adds one)"
	if len(olm) > 0 {
		searched = "olm catalogs " + strings.Join(olm, ", ")
	}
	if len(offered) == 0 {
		return "", nil, fmt.Errorf("%s is in no olm catalog: searched %s, none offers package %q as a bundle; add an olm Catalog of the catalog the Subscription reads (spec.source %s), then run this again",
			what, searched, op.Package, op.CatalogSource)
	}
	return "", nil, fmt.Errorf("%s is in no olm catalog: searched %s; package %q is offered at %s but not %s; add an olm Catalog that serves it, or upgrade the operator with OLM to a version offered",
		what, searched, op.Package, strings.Join(offered, ", "), op.Version)
}

// AdoptOLMFor is the ExtensionInstallation that adopts the operator v
// describes, without reading or writing anything: named after the
// Subscription, in o.InstallationNamespace (default: the Subscription's
// namespace), for the package's Extension at the CSV's version, on the
// Subscription's channel, watching the namespaces OLM's operator group
// gave the CSV, rendering into the Subscription's namespace, and
// spec.adopt.olm naming the Subscription.
func AdoptOLMFor(v *AdoptOLMView, o AdoptOLMOptions) *v1alpha1.ExtensionInstallation {
	ns := cmp.Or(o.InstallationNamespace, v.Namespace)
	inst := &v1alpha1.ExtensionInstallation{
		TypeMeta:   metav1.TypeMeta{APIVersion: v1alpha1.GroupVersion.String(), Kind: "ExtensionInstallation"},
		ObjectMeta: metav1.ObjectMeta{Name: v.Subscription, Namespace: ns},
		Spec: v1alpha1.ExtensionInstallationSpec{
			Extension: v.Extension, Version: v.Version, Channel: v.Channel, Cluster: o.Cluster,
			WatchNamespaces: v.WatchNamespaces,
			Adopt:           &v1alpha1.Adoption{OLM: &v1alpha1.OLMOperatorAdoption{Subscription: v.Subscription}},
		},
	}
	if v.Namespace != ns {
		inst.Spec.TargetNamespace = v.Namespace
	}
	return inst
}

// WriteAdoptOLM prints an AdoptOLMView for people, and what adopting does.
func WriteAdoptOLM(w io.Writer, v *AdoptOLMView) error {
	where := "the hub cluster"
	if v.Cluster != HubCluster {
		where = "ManagedCluster " + v.Cluster
	}
	watching := "all namespaces"
	if len(v.WatchNamespaces) > 0 {
		watching = strings.Join(v.WatchNamespaces, ", ")
	}
	fmt.Fprintf(w, "OLM Subscription %s/%s on %s: package %s, channel %s, ClusterServiceVersion %s (%s), watching %s\n",
		v.Namespace, v.Subscription, where, v.Package, cmp.Or(v.Channel, "(default)"), v.CSV, v.Phase, watching)
	plans := "none"
	if len(v.InstallPlans) > 0 {
		plans = strings.Join(v.InstallPlans, ", ")
	}
	fmt.Fprintf(w, "InstallPlans: %s\n", plans)
	catalog := ""
	if v.Catalog != "" {
		catalog = ", catalog " + v.Catalog
	}
	fmt.Fprintf(w, "Bundle %s %s: Extension %s%s\n", v.Package, v.Version, v.Extension, catalog)
	_, err := fmt.Fprintf(w, "Adopting takes the operator's objects Annex renders from the bundle over in place (each keeps its UID), removes their ownerReferences to %s and OLM's olm.owner labels, then deletes the Subscription, the InstallPlans and the CSV; the operator's custom resources are not touched.\n", v.CSV)
	return err
}

// AdoptOLMInPlace writes the ExtensionInstallation that adopts the
// operator, after the checks of AdoptOLMData (so that it refuses before
// writing anything what the controller would refuse); with the table
// output it prints what it found and the installation it created.
func AdoptOLMInPlace(ctx context.Context, hub client.Client, clusters *cluster.Registry, o AdoptOLMOptions) (*v1alpha1.ExtensionInstallation, error) {
	v, err := AdoptOLMData(ctx, hub, clusters, o)
	if err != nil {
		return nil, err
	}
	if o.DryRun {
		if o.Output != OutputTable {
			return nil, writeData(o.Out, o.Output, v)
		}
		if err := WriteAdoptOLM(o.Out, v); err != nil {
			return nil, err
		}
		_, err := fmt.Fprintln(o.Out, "Nothing was changed (dry run); without --dry-run, annexctl adopt olm adopts the operator in place.")
		return nil, err
	}
	inst := AdoptOLMFor(v, o)
	if o.Output == OutputTable {
		if err := WriteAdoptOLM(o.Out, v); err != nil {
			return nil, err
		}
	}
	created := inst.DeepCopy()
	if err := hub.Create(ctx, created); err != nil {
		if apierrors.IsAlreadyExists(err) {
			return nil, fmt.Errorf("ExtensionInstallation %s/%s exists already: delete it first, or look at it with annexctl status %s -n %s",
				inst.Namespace, inst.Name, inst.Name, inst.Namespace)
		}
		return nil, fmt.Errorf("creating ExtensionInstallation %s/%s: %w", inst.Namespace, inst.Name, err)
	}
	if o.Output == OutputTable {
		if err := WriteObject(o.Out, o.Output, created, "created: it adopts the operator"); err != nil {
			return nil, err
		}
	}
	return created, nil
}

// WriteAdoptedOLM prints what an operator adoption did, from the
// installation's status.
func WriteAdoptedOLM(w io.Writer, inst *v1alpha1.ExtensionInstallation) error {
	from := inst.Status.AdoptedFrom
	if from == nil || !from.StorageRemoved {
		_, err := fmt.Fprintf(w, "ExtensionInstallation %s/%s has not finished adopting the operator; annexctl status %s -n %s says why\n",
			inst.Namespace, inst.Name, inst.Name, inst.Namespace)
		return err
	}
	_, err := fmt.Fprintf(w, "Adopted operator %s %s of OLM Subscription %s/%s in place as ExtensionInstallation %s/%s, revision 1: %d objects; Subscription, InstallPlans and ClusterServiceVersion %s are deleted, the operator keeps running. Upgrade it with annexctl upgrade %s -n %s.\n",
		from.Chart, from.Version, from.Namespace, from.Name, inst.Namespace, inst.Name, inst.Status.InventoryCount, from.ClusterServiceVersion, inst.Name, inst.Namespace)
	return err
}
