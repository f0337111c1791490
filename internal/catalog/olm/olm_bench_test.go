package olm_test

import (
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/olm"
)

// syntheticCSV is a ClusterServiceVersion of realistic shape and size (a
// deployment, RBAC, owned CRD descriptions, alm-examples and a long
// description), about 5 KiB as JSON.
func syntheticCSV(pkg, version string) map[string]any {
	rules := []map[string]any{}
	for _, r := range []string{"pods", "services", "endpoints", "persistentvolumeclaims", "events", "configmaps", "secrets"} {
		rules = append(rules, map[string]any{"apiGroups": []string{""}, "resources": []string{r}, "verbs": []string{"create", "delete", "get", "list", "patch", "update", "watch"}})
	}
	return map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]any{"name": pkg + ".v" + version, "annotations": map[string]any{
			"alm-examples":   fmt.Sprintf(`[{"apiVersion":"%s.example.com/v1","kind":"Cluster","metadata":{"name":"example"},"spec":{"size":3,"version":"%s"}}]`, pkg, version),
			"capabilities":   "Full Lifecycle",
			"categories":     "Database",
			"containerImage": "quay.io/example/" + pkg + ":v" + version,
			"createdAt":      "2024-03-01T00:00:00Z",
			"repository":     "https://github.com/example/" + pkg,
			"support":        "Example Inc.",
		}},
		"spec": map[string]any{
			"displayName": strings.ToUpper(pkg[:1]) + pkg[1:], "version": version, "minKubeVersion": "1.24.0",
			"description": strings.Repeat("The "+pkg+" operator manages clusters of the application: scaling, backups, upgrades and failover. ", 12),
			"keywords":    []string{pkg, "database", "operator"},
			"installModes": []map[string]any{
				{"type": "OwnNamespace", "supported": true}, {"type": "SingleNamespace", "supported": true},
				{"type": "MultiNamespace", "supported": false}, {"type": "AllNamespaces", "supported": true},
			},
			"customresourcedefinitions": map[string]any{"owned": []map[string]any{{
				"name": "clusters." + pkg + ".example.com", "version": "v1", "kind": "Cluster", "displayName": "Cluster",
				"description": "A cluster of " + pkg,
				"specDescriptors": []map[string]any{
					{"path": "size", "displayName": "Size", "description": "Number of members", "x-descriptors": []string{"urn:alm:descriptor:com.tectonic.ui:podCount"}},
					{"path": "version", "displayName": "Version", "description": "Application version", "x-descriptors": []string{"urn:alm:descriptor:com.tectonic.ui:text"}},
				},
			}}},
			"install": map[string]any{"strategy": "deployment", "spec": map[string]any{
				"clusterPermissions": []map[string]any{{"serviceAccountName": pkg + "-operator", "rules": rules}},
				"permissions":        []map[string]any{{"serviceAccountName": pkg + "-operator", "rules": rules}},
				"deployments": []map[string]any{{"name": pkg + "-operator", "spec": map[string]any{
					"replicas": 1, "selector": map[string]any{"matchLabels": map[string]any{"name": pkg + "-operator"}},
					"template": map[string]any{"metadata": map[string]any{"labels": map[string]any{"name": pkg + "-operator"}}, "spec": map[string]any{
						"serviceAccountName": pkg + "-operator",
						"containers": []map[string]any{{
							"name": "operator", "image": "quay.io/example/" + pkg + "@sha256:" + strings.Repeat("ab", 32),
							"command": []string{"/manager"}, "args": []string{"--leader-elect", "--metrics-bind-address=:8080"},
							"env":       []map[string]any{{"name": "WATCH_NAMESPACE", "valueFrom": map[string]any{"fieldRef": map[string]any{"fieldPath": "metadata.annotations['olm.targetNamespaces']"}}}},
							"resources": map[string]any{"limits": map[string]any{"cpu": "500m", "memory": "256Mi"}, "requests": map[string]any{"cpu": "100m", "memory": "64Mi"}},
						}},
					}},
				}}},
			}},
		},
	}
}

// writeSyntheticOLM writes packages × bundles as an OperatorHub-like
// folder (one catalog.json per package, as `opm render` writes it) and
// returns its root and total size.
func writeSyntheticOLM(b *testing.B, packages, bundles int) (string, int64) {
	root := b.TempDir()
	var total int64
	for p := range packages {
		pkg := fmt.Sprintf("operator-%03d", p)
		var sb strings.Builder
		enc := json.NewEncoder(&sb)
		enc.SetIndent("", "    ")
		must := func(v any) {
			if err := enc.Encode(v); err != nil {
				b.Fatal(err)
			}
		}
		must(map[string]any{"schema": "olm.package", "name": pkg, "defaultChannel": "stable", "description": "The " + pkg + " operator"})
		var entries []map[string]any
		for v := range bundles {
			e := map[string]any{"name": fmt.Sprintf("%s.v1.%d.0", pkg, v)}
			if v > 0 {
				e["replaces"] = fmt.Sprintf("%s.v1.%d.0", pkg, v-1)
				e["skipRange"] = fmt.Sprintf(">=1.0.0 <1.%d.0", v)
			}
			entries = append(entries, e)
		}
		must(map[string]any{"schema": "olm.channel", "package": pkg, "name": "stable", "entries": entries})
		must(map[string]any{"schema": "olm.channel", "package": pkg, "name": "fast", "entries": entries[bundles/2:]})
		for v := range bundles {
			version := fmt.Sprintf("1.%d.0", v)
			csv, err := json.Marshal(syntheticCSV(pkg, version))
			if err != nil {
				b.Fatal(err)
			}
			crd := fmt.Sprintf(`{"apiVersion":"apiextensions.k8s.io/v1","kind":"CustomResourceDefinition","metadata":{"name":"clusters.%[1]s.example.com"},"spec":{"group":"%[1]s.example.com","names":{"kind":"Cluster","plural":"clusters"},"scope":"Namespaced","versions":[{"name":"v1","served":true,"storage":true,"schema":{"openAPIV3Schema":{"type":"object","x-kubernetes-preserve-unknown-fields":true}}}]}}`, pkg)
			must(map[string]any{
				"schema": "olm.bundle", "package": pkg, "name": fmt.Sprintf("%s.v%s", pkg, version),
				"image": fmt.Sprintf("quay.io/example/%s-bundle@sha256:%064x", pkg, p*1000+v),
				"properties": []map[string]any{
					{"type": "olm.package", "value": map[string]any{"packageName": pkg, "version": version}},
					{"type": "olm.gvk", "value": map[string]any{"group": pkg + ".example.com", "version": "v1", "kind": "Cluster"}},
					{"type": "olm.gvk.required", "value": map[string]any{"group": "cert-manager.io", "version": "v1", "kind": "Certificate"}},
					{"type": "olm.bundle.object", "value": map[string]any{"data": base64.StdEncoding.EncodeToString(csv)}},
					{"type": "olm.bundle.object", "value": map[string]any{"data": base64.StdEncoding.EncodeToString([]byte(crd))}},
				},
			})
		}
		must(map[string]any{"schema": "olm.deprecations", "package": pkg, "entries": []map[string]any{
			{"reference": map[string]any{"schema": "olm.bundle", "name": pkg + ".v1.0.0"}, "message": "upgrade"},
		}})
		dir := filepath.Join(root, pkg)
		if err := os.MkdirAll(dir, 0o755); err != nil {
			b.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(dir, "catalog.json"), []byte(sb.String()), 0o644); err != nil {
			b.Fatal(err)
		}
		total += int64(sb.Len())
	}
	return root, total
}

// BenchmarkIngestOLM reads a synthetic OperatorHub-size File-Based
// Catalog folder (300 packages × 20 bundles, each bundle with a CSV and a
// CRD as olm.bundle.object, about 8 KiB of base64 per bundle) into an
// Index through olm.Index. Besides ns/op and B/op it reports
// peak-heap-MiB (as BenchmarkIngestIndex) and MB of catalog per op.
func BenchmarkIngestOLM(b *testing.B) {
	const packages, bundles = 300, 20
	root, size := writeSyntheticOLM(b, packages, bundles)
	f := &catalog.Fetcher{}
	src := &v1alpha1.OLMSource{Path: root}
	run := func() error {
		index, err := olm.Index(b.Context(), f, src, "operatorhub", nil)
		if err != nil {
			return err
		}
		n := 0
		for _, p := range index.Packages {
			n += len(p.Spec.Versions)
		}
		if len(index.Packages) != packages || n != packages*bundles || len(index.Skipped) > 0 {
			return fmt.Errorf("got %d packages, %d versions, skipped %v", len(index.Packages), n, index.Skipped)
		}
		return nil
	}
	b.SetBytes(size)
	b.ReportAllocs()
	for b.Loop() {
		if err := run(); err != nil {
			b.Fatal(err)
		}
	}
	b.StopTimer()
	peak, err := catalogtest.PeakHeap(run)
	if err != nil {
		b.Fatal(err)
	}
	b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
	b.ReportMetric(float64(size)/1e6, "catalog-MB")
}
