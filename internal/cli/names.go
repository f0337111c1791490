package cli

import (
	"context"
	"sort"

	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The *Names functions list resource names for shell completion and for
// error messages that offer the existing ones; each is one LIST, sorted.

// ExtensionNames lists every Extension's name.
func ExtensionNames(ctx context.Context, c client.Reader) ([]string, error) {
	var list v1alpha1.ExtensionList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, e := range list.Items {
		out = append(out, e.Name)
	}
	sort.Strings(out)
	return out, nil
}

// InstallationNames lists the names of the installations in namespace
// ("" for every namespace, then names repeat across namespaces only
// once).
func InstallationNames(ctx context.Context, c client.Reader, namespace string) ([]string, error) {
	var list v1alpha1.ExtensionInstallationList
	if err := c.List(ctx, &list, client.InNamespace(namespace)); err != nil {
		return nil, err
	}
	seen := map[string]bool{}
	var out []string
	for _, i := range list.Items {
		if !seen[i.Name] {
			seen[i.Name] = true
			out = append(out, i.Name)
		}
	}
	sort.Strings(out)
	return out, nil
}

// CatalogNames lists every Catalog's name.
func CatalogNames(ctx context.Context, c client.Reader) ([]string, error) {
	var list v1alpha1.CatalogList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, i := range list.Items {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out, nil
}

// ClusterNames lists every ManagedCluster's name.
func ClusterNames(ctx context.Context, c client.Reader) ([]string, error) {
	var list v1alpha1.ManagedClusterList
	if err := c.List(ctx, &list); err != nil {
		return nil, err
	}
	out := make([]string, 0, len(list.Items))
	for _, i := range list.Items {
		out = append(out, i.Name)
	}
	sort.Strings(out)
	return out, nil
}
