package cli

import (
	"context"
	"encoding/json"
	"fmt"
	"io"
	"time"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/cluster"
	"github.com/annex-platform/annex/internal/convert/flux"
)

// HelmReleaseOptions are the inputs of `annexctl adopt helmrelease`.
type HelmReleaseOptions struct {
	// Name and Namespace name the Flux HelmRelease.
	Name, Namespace string
	// Cluster is the ManagedCluster Flux runs on; empty: the hub.
	Cluster string
	// DryRun suspends nothing and creates no Catalog.
	DryRun bool
	// CatalogTimeout bounds the wait for a Catalog this command creates
	// to be synced.
	CatalogTimeout time.Duration
	Out            io.Writer
}

// The Flux kinds adopt helmrelease reads.
var (
	helmReleaseGVK = schema.GroupVersionKind{Group: flux.HelmGroup, Version: "v2", Kind: "HelmRelease"}
	// sourceVersions are tried in order: OCIRepository was v1beta2 before
	// Flux 2.6.
	sourceVersions = []string{"v1", "v1beta2"}
)

// PrepareHelmRelease readies a Flux HelmRelease's Helm release for
// adoption and returns the options that adopt it (AdoptHelm or
// AdoptHelmInPlace): the release's name and storage namespace, as
// helm-controller computes them. Unless o.DryRun, it first makes sure a
// Catalog serves the chart (creating one from the HelmRelease's
// HelmRepository or OCIRepository when none does, and waiting until it
// is synced), then suspends the HelmRelease (spec.suspend), so that
// helm-controller no longer upgrades the release, and deleting the
// HelmRelease afterwards uninstalls nothing. Someone who may not patch
// the HelmRelease is told the one command that suspends it.
func PrepareHelmRelease(ctx context.Context, hub client.Client, clusters *cluster.Registry, o HelmReleaseOptions) (AdoptOptions, error) {
	where := "the hub cluster"
	if o.Cluster != "" {
		where = "ManagedCluster " + o.Cluster
	}
	target, err := clusters.Target(ctx, o.Cluster)
	if err != nil {
		return AdoptOptions{}, fmt.Errorf("reaching %s: %w; check --cluster (annexctl status lists the clusters)", where, err)
	}
	c := target.Applier().Client
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(helmReleaseGVK)
	switch err := c.Get(ctx, types.NamespacedName{Namespace: o.Namespace, Name: o.Name}, obj); {
	case meta.IsNoMatchError(err):
		return AdoptOptions{}, fmt.Errorf("%s serves no HelmRelease API (%s): Flux's helm-controller is not installed there; adopt a plain Helm release with annexctl adopt helm", where, helmReleaseGVK.GroupVersion())
	case apierrors.IsNotFound(err):
		return AdoptOptions{}, fmt.Errorf("HelmRelease %s/%s not found on %s; flux get helmreleases -n %s lists them", o.Namespace, o.Name, where, o.Namespace)
	case err != nil:
		return AdoptOptions{}, fmt.Errorf("reading HelmRelease %s/%s on %s: %w", o.Namespace, o.Name, where, err)
	}
	raw, err := json.Marshal(obj.Object)
	if err != nil {
		return AdoptOptions{}, err
	}
	hr, err := flux.ParseHelmRelease(raw)
	if err != nil {
		return AdoptOptions{}, err
	}
	for _, n := range hr.Notes() {
		fmt.Fprintln(o.Out, "note:", n)
	}
	if err := ensureCatalog(ctx, hub, c, hr, o); err != nil {
		return AdoptOptions{}, err
	}
	if err := suspend(ctx, c, obj, hr, o); err != nil {
		return AdoptOptions{}, err
	}
	return AdoptOptions{Release: hr.ReleaseName(), Namespace: hr.StorageNamespace(), Cluster: o.Cluster, DryRun: o.DryRun, Out: o.Out}, nil
}

// ensureCatalog makes sure a Catalog reads the HelmRelease's source.
func ensureCatalog(ctx context.Context, hub client.Client, c client.Reader, hr *flux.HelmRelease, o HelmReleaseOptions) error {
	ref := hr.SourceRef()
	if ref.Kind != "HelmRepository" && ref.Kind != "OCIRepository" {
		fmt.Fprintf(o.Out, "note: the chart comes from %s %s/%s, which no Annex catalog reads: the chart must be in a catalog already\n", ref.Kind, ref.Namespace, ref.Name)
		return nil
	}
	src, err := readSource(ctx, c, ref)
	if err != nil {
		return err
	}
	var catalogs v1alpha1.CatalogList
	if err := hub.List(ctx, &catalogs); err != nil {
		return fmt.Errorf("listing Catalogs: %w", err)
	}
	for i := range catalogs.Items {
		if flux.Serves(&catalogs.Items[i], src) {
			fmt.Fprintf(o.Out, "Catalog %s serves %s %s/%s (%s)\n", catalogs.Items[i].Name, ref.Kind, ref.Namespace, ref.Name, src.Spec.URL)
			return nil
		}
	}
	cat, notes, err := flux.CatalogFor(src)
	if err != nil {
		return err
	}
	for _, n := range notes {
		fmt.Fprintln(o.Out, "note:", n)
	}
	if o.DryRun {
		return fmt.Errorf("no Catalog serves %s %s/%s (%s): without --dry-run, adopt helmrelease creates Catalog %s; the comparison needs the chart from a catalog, so create that Catalog first (or run without --dry-run) to see it",
			ref.Kind, ref.Namespace, ref.Name, src.Spec.URL, cat.Name)
	}
	if err := hub.Create(ctx, cat); err != nil && !apierrors.IsAlreadyExists(err) {
		return fmt.Errorf("creating Catalog %s for %s %s/%s: %w", cat.Name, ref.Kind, ref.Namespace, ref.Name, err)
	}
	fmt.Fprintf(o.Out, "created Catalog %s for %s %s/%s (%s); waiting until it is synced\n", cat.Name, ref.Kind, ref.Namespace, ref.Name, src.Spec.URL)
	return waitCatalogSynced(ctx, hub, cat.Name, o.CatalogTimeout)
}

// readSource reads the Flux source object ref names.
func readSource(ctx context.Context, c client.Reader, ref flux.SourceRef) (*flux.Source, error) {
	var lastErr error
	for _, v := range sourceVersions {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(schema.GroupVersionKind{Group: flux.SourceGroup, Version: v, Kind: ref.Kind})
		err := c.Get(ctx, types.NamespacedName{Namespace: ref.Namespace, Name: ref.Name}, obj)
		if meta.IsNoMatchError(err) {
			lastErr = err
			continue
		}
		if err != nil {
			return nil, fmt.Errorf("reading the HelmRelease's source %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
		}
		raw, err := json.Marshal(obj.Object)
		if err != nil {
			return nil, err
		}
		src := &flux.Source{}
		if err := json.Unmarshal(raw, src); err != nil {
			return nil, fmt.Errorf("%s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, err)
		}
		return src, nil
	}
	return nil, fmt.Errorf("reading the HelmRelease's source %s %s/%s: %w", ref.Kind, ref.Namespace, ref.Name, lastErr)
}

// waitCatalogSynced waits until Catalog name says Ready, or timeout.
func waitCatalogSynced(ctx context.Context, hub client.Reader, name string, timeout time.Duration) error {
	deadline := time.Now().Add(timeout)
	for {
		var cat v1alpha1.Catalog
		if err := hub.Get(ctx, types.NamespacedName{Name: name}, &cat); err != nil {
			return fmt.Errorf("reading Catalog %s: %w", name, err)
		}
		if c := meta.FindStatusCondition(cat.Status.Conditions, v1alpha1.ConditionReady); c != nil && c.ObservedGeneration == cat.Generation {
			if c.Status == "True" {
				return nil
			}
			if time.Now().After(deadline) {
				return fmt.Errorf("Catalog %s did not sync within %s: %s (annexctl catalog list shows it)", name, timeout, c.Message)
			}
		} else if time.Now().After(deadline) {
			return fmt.Errorf("Catalog %s did not sync within %s: is the manager running? (annexctl catalog list)", name, timeout)
		}
		select {
		case <-ctx.Done():
			return ctx.Err()
		case <-time.After(500 * time.Millisecond):
		}
	}
}

// suspend sets the HelmRelease's spec.suspend.
func suspend(ctx context.Context, c client.Client, obj *unstructured.Unstructured, hr *flux.HelmRelease, o HelmReleaseOptions) error {
	command := fmt.Sprintf("flux suspend helmrelease %s -n %s (or: kubectl patch helmreleases.%s %s -n %s --type merge -p '{\"spec\":{\"suspend\":true}}')",
		o.Name, o.Namespace, flux.HelmGroup, o.Name, o.Namespace)
	switch {
	case hr.Spec.Suspend:
		fmt.Fprintf(o.Out, "HelmRelease %s/%s is suspended already\n", o.Namespace, o.Name)
		return nil
	case o.DryRun:
		fmt.Fprintf(o.Out, "would suspend HelmRelease %s/%s (dry run)\n", o.Namespace, o.Name)
		return nil
	}
	patch := client.RawPatch(types.MergePatchType, []byte(`{"spec":{"suspend":true}}`))
	if err := c.Patch(ctx, obj, patch); err != nil {
		if apierrors.IsForbidden(err) {
			return fmt.Errorf("you may not patch HelmRelease %s/%s (%v): ask someone who may to run\n  %s\nthen run this command again", o.Namespace, o.Name, err, command)
		}
		return fmt.Errorf("suspending HelmRelease %s/%s: %w; suspend it yourself with %s", o.Namespace, o.Name, err, command)
	}
	fmt.Fprintf(o.Out, "suspended HelmRelease %s/%s: helm-controller leaves release %s alone from now on\n", o.Namespace, o.Name, hr.ReleaseName())
	return nil
}
