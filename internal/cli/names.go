package cli

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The *Names functions list resource names for shell completion and for
// error messages that offer the existing ones; each is one LIST, sorted.

// ExtensionNames lists every Extension's name.
func ExtensionNames(ctx context.Context, c client.Reader) ([]string, error) {
	return namesOf(ctx, c, &v1alpha1.ExtensionList{})
}

// InstallationNames lists the names of the installations in namespace
// ("" for every namespace, then names repeat across namespaces only
// once).
func InstallationNames(ctx context.Context, c client.Reader, namespace string) ([]string, error) {
	return namesOf(ctx, c, &v1alpha1.ExtensionInstallationList{}, client.InNamespace(namespace))
}

// CatalogNames lists every Catalog's name.
func CatalogNames(ctx context.Context, c client.Reader) ([]string, error) {
	return namesOf(ctx, c, &v1alpha1.CatalogList{})
}

// ClusterNames lists every ManagedCluster's name.
func ClusterNames(ctx context.Context, c client.Reader) ([]string, error) {
	return namesOf(ctx, c, &v1alpha1.ManagedClusterList{})
}

// namesOf lists list's objects and returns their names, sorted, each
// once.
func namesOf(ctx context.Context, c client.Reader, list client.ObjectList, opts ...client.ListOption) ([]string, error) {
	if err := c.List(ctx, list, opts...); err != nil {
		return nil, err
	}
	var names []string
	if err := meta.EachListItem(list, func(o runtime.Object) error {
		names = append(names, o.(client.Object).GetName())
		return nil
	}); err != nil {
		return nil, err
	}
	slices.Sort(names)
	return slices.Compact(names), nil
}

// ProfileNames lists every ExtensionProfile's name.
func ProfileNames(ctx context.Context, c client.Reader) ([]string, error) {
	return namesOf(ctx, c, &v1alpha1.ExtensionProfileList{})
}

// ClusterLabels lists the labels of every ManagedCluster as key=value,
// sorted, each once: what a cluster label selector can name.
func ClusterLabels(ctx context.Context, c client.Reader) ([]string, error) {
	var list v1alpha1.ManagedClusterList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	var pairs []string
	for _, mc := range list.Items {
		for k, v := range mc.Labels {
			pairs = append(pairs, k+"="+v)
		}
	}
	slices.Sort(pairs)
	return slices.Compact(pairs), nil
}
