package helm_test

import (
	"bytes"
	"context"
	"net/http"
	"net/http/httptest"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/helm"
	"github.com/annex-platform/annex/internal/catalog/sources"
)

// TestPackageMetadataOf reads the metadata of a packed package.
func TestPackageMetadataOf(t *testing.T) {
	first, err := catalog.PackageArchive(catalogtest.DemoPackage("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	m, err := helm.PackageMetadataOf(first)
	if err != nil {
		t.Fatal(err)
	}
	want := &helm.PackageMetadata{Name: "demo-pkg", OperatorVersion: "0.1.0", AppVersion: "5.10", Description: "a demo package",
		KubernetesVersion: "1.29.0", URL: "https://example.com/demo", Extends: &helm.PackageExtends{Operator: "demo-base", Version: ">=1.0.0"}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("PackageMetadataOf = %+v, want %+v", m, want)
	}
}

// TestHelmIndexPackages serves a repository of packages over HTTP, with an
// index.yaml written by AddPackageToIndex, and installs from it.
func TestHelmIndexPackages(t *testing.T) {
	files := map[string][]byte{}
	var index []byte
	for _, v := range []string{"0.1.0", "0.2.0"} {
		archive, err := catalog.PackageArchive(catalogtest.DemoPackage(v))
		if err != nil {
			t.Fatal(err)
		}
		name := helm.PackageFileName("demo-pkg", v)
		files["/charts/"+name] = archive
		if index, err = helm.AddPackageToIndex(index, archive, name); err != nil {
			t.Fatal(err)
		}
	}
	files["/charts/index.yaml"] = index
	srv := httptest.NewServer(http.HandlerFunc(func(w http.ResponseWriter, r *http.Request) {
		data, ok := files[r.URL.Path]
		if !ok {
			http.NotFound(w, r)
			return
		}
		_, _ = w.Write(data)
	}))
	defer srv.Close()

	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: srv.URL + "/charts"}}}}
	cat.Name = "repo"
	f := &catalog.Fetcher{}
	s := &sources.Catalogs{Fetcher: f}
	got, err := s.Index(context.Background(), cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Packages) != 1 || len(got.Skipped) != 0 {
		t.Fatalf("index = %s", catalogtest.Dump(got))
	}
	want := []v1alpha1.ExtensionVersion{
		catalogtest.DemoVersion("0.2.0", srv.URL+"/charts/demo-pkg-0.2.0.tgz", catalog.Digest(files["/charts/demo-pkg-0.2.0.tgz"]), "repo"),
		catalogtest.DemoVersion("0.1.0", srv.URL+"/charts/demo-pkg-0.1.0.tgz", catalog.Digest(files["/charts/demo-pkg-0.1.0.tgz"]), "repo"),
	}
	if !reflect.DeepEqual(got.Packages[0].Spec.Versions, want) {
		t.Errorf("versions:\ngot  %s\nwant %s", catalogtest.Dump(got.Packages[0].Spec.Versions), catalogtest.Dump(want))
	}
	for _, v := range want {
		data, err := (sources.Artifacts{Fetcher: f}).FetchArtifact(context.Background(), v.Source)
		if err != nil {
			t.Fatalf("FetchArtifact: %v", err)
		}
		catalogtest.LoadPackage(t, data)
	}
}

func TestAddPackageToIndex(t *testing.T) {
	// An index that already holds a chart, written with a scalar that YAML
	// would read as a number: it must keep its text.
	existing := []byte("apiVersion: v1\nentries:\n  zeta:\n  - name: zeta\n    version: 1.0.0\n    appVersion: 1.10\n    urls: [zeta-1.0.0.tgz]\ngenerated: \"2024-01-01T00:00:00Z\"\n")
	index := existing
	archives := map[string][]byte{}
	for _, v := range []string{"0.1.0", "0.3.0", "0.2.0", "0.1.0"} {
		archive, err := catalog.PackageArchive(catalogtest.DemoPackage(v))
		if err != nil {
			t.Fatal(err)
		}
		archives[v] = archive
		if index, err = helm.AddPackageToIndex(index, archive, helm.PackageFileName("demo-pkg", v)); err != nil {
			t.Fatalf("AddPackageToIndex(%s): %v", v, err)
		}
	}
	for _, keep := range []string{"appVersion: 1.10\n", `generated: "2024-01-01T00:00:00Z"`} {
		if !bytes.Contains(index, []byte(keep)) {
			t.Errorf("the index lost %q:\n%s", keep, index)
		}
	}
	parsed, err := helm.ParseIndex(index, "https://example.com/repo", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.Skipped) != 0 || len(parsed.Packages) != 2 {
		t.Fatalf("index = %s\n%s", catalogtest.Dump(parsed), index)
	}
	// Re-adding 0.1.0 replaced it: three versions, highest first.
	var got []string
	for _, v := range parsed.Packages[0].Spec.Versions {
		got = append(got, v.Version)
		if v.Source.Digest != catalog.Digest(archives[v.Version]) || v.Source.URL != "https://example.com/repo/demo-pkg-"+v.Version+".tgz" {
			t.Errorf("%s: source %+v", v.Version, v.Source)
		}
	}
	if strings.Join(got, " ") != "0.3.0 0.2.0 0.1.0" {
		t.Errorf("versions = %v, want 0.3.0 0.2.0 0.1.0", got)
	}

	// What a catalog would skip is refused, with the catalog's reason.
	bad := catalogtest.DemoPackage("1.x")
	archive, err := catalog.PackageArchive(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := helm.AddPackageToIndex(nil, archive, "x.tgz"); err == nil || !strings.Contains(err.Error(), "operatorVersion is not semver") {
		t.Errorf("AddPackageToIndex with operatorVersion 1.x: error = %v", err)
	}
	// A chart is no package.
	chart, err := catalog.ChartArchive("demo", map[string][]byte{"Chart.yaml": []byte(catalogtest.ChartYAML)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := helm.AddPackageToIndex(nil, chart, "x.tgz"); err == nil || !strings.Contains(err.Error(), "has no operator.yaml") {
		t.Errorf("AddPackageToIndex of a chart: error = %v", err)
	}
	// An index that is no index is not overwritten.
	if _, err := helm.AddPackageToIndex([]byte("- a\n"), archives["0.1.0"], "x.tgz"); err == nil {
		t.Error("AddPackageToIndex over a YAML list succeeded")
	}
}

// FuzzAddPackageToIndex feeds arbitrary index files to AddPackageToIndex:
// it may refuse them, but never panic, and what it writes is an index
// from which ParseIndex reads the package added. Run it longer with
//
//	go test ./internal/catalog/helm -run '^$' -fuzz FuzzAddPackageToIndex -fuzztime 10m
func FuzzAddPackageToIndex(f *testing.F) {
	for _, seed := range []string{
		"",
		"apiVersion: v1\nentries:\n  zeta:\n  - name: zeta\n    version: 1.0.0\n    urls: [z.tgz]\n",
		"apiVersion: v1\nentries:\n  demo-pkg:\n  - name: demo-pkg\n    operatorVersion: 0.1.0\n    urls: [old.tgz]\n  - &a {name: demo-pkg, version: 2.0.0}\n",
		"apiVersion: v1\nentries: ~\n",
		"entries:\n  demo-pkg: 5\n",
	} {
		f.Add([]byte(seed))
	}
	archive, err := catalog.PackageArchive(catalogtest.DemoPackage("0.1.0"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, existing []byte) {
		out, err := helm.AddPackageToIndex(existing, archive, "demo-pkg-0.1.0.tgz")
		if err != nil {
			return
		}
		index, err := helm.ParseIndex(out, "https://example.com/repo", "fuzz")
		if err != nil {
			t.Fatalf("the written index does not parse: %v\n%s", err, out)
		}
		for _, p := range index.Packages {
			if p.Name != "demo-pkg" {
				continue
			}
			for _, v := range p.Spec.Versions {
				if v.Version == "0.1.0" && v.Source.Digest == catalog.Digest(archive) && v.Engine == v1alpha1.EnginePackage {
					return
				}
			}
		}
		t.Fatalf("the written index does not offer demo-pkg 0.1.0:\n%s\n%s", out, catalogtest.Dump(index))
	})
}

// A KudoOperator task makes the package it names a dependency, which the
// index entry carries as Annex's dependencies annotation.
func TestPackageKudoOperatorTasksAreDependencies(t *testing.T) {
	m, err := helm.ParsePackageMetadata([]byte(`name: app
operatorVersion: 1.0.0
tasks:
  - name: zk
    kind: KudoOperator
    spec: {package: zookeeper, operatorVersion: 0.3.0}
  - name: zk-again
    kind: KudoOperator
    spec: {package: zookeeper, operatorVersion: 0.3.0}
  - name: cache
    kind: KudoOperator
    spec: {package: redis}
  - name: app
    kind: Apply
    spec: {resources: [app.yaml]}
`))
	if err != nil {
		t.Fatal(err)
	}
	entry := m.IndexEntry()
	entry["urls"] = []string{"app-1.0.0.tgz"}
	index, err := helm.ParseIndex(mustYAML(t, map[string]any{"apiVersion": "v1", "entries": map[string]any{"app": []any{entry}}}), "https://example.com/", "c")
	if err != nil {
		t.Fatal(err)
	}
	deps := index.Packages[0].Spec.Versions[0].Dependencies
	if len(deps) != 2 || deps[0].Name != "zookeeper" || deps[0].Version != "=0.3.0" || deps[1].Name != "redis" || deps[1].Version != "" {
		t.Fatalf("dependencies: %+v", deps)
	}
}

func mustYAML(t *testing.T, v any) []byte {
	t.Helper()
	data, err := yaml.Marshal(v)
	if err != nil {
		t.Fatal(err)
	}
	return data
}
