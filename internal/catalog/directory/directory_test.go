package directory_test

import (
	"context"
	"errors"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/directory"
	"github.com/annex-platform/annex/internal/catalog/sources"
)

// TestDirectoryIndexPackages reads a directory catalog holding a package
// folder, a packed package and a chart, and fetches the package the way an
// installation does.
func TestDirectoryIndexPackages(t *testing.T) {
	root := t.TempDir()
	catalogtest.WriteFiles(t, filepath.Join(root, "demo-pkg"), catalogtest.DemoPackage("0.2.0"))
	packed, err := catalog.PackageArchive(catalogtest.DemoPackage("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	catalogtest.WriteFiles(t, root, map[string][]byte{
		"demo-pkg-0.1.0.tgz": packed,
		"chart/Chart.yaml":   []byte("apiVersion: v2\nname: chart\nversion: 1.0.0\n"),
		// A folder cannot be both.
		"both/Chart.yaml":    []byte("apiVersion: v2\nname: both\nversion: 1.0.0\n"),
		"both/operator.yaml": []byte("name: both\noperatorVersion: 1.0.0\n"),
	})
	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Directory: &v1alpha1.DirectorySource{Path: root}}}}
	cat.Name = "dir"
	f := &catalog.Fetcher{Lookup: catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{"dir": cat}}}

	index, err := directory.Index(root, "dir", catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	if len(index.Skipped) != 1 || !strings.Contains(index.Skipped[0], "holds both Chart.yaml and operator.yaml; a folder is one chart or one package") {
		t.Errorf("Skipped = %q, want the folder holding both", index.Skipped)
	}
	var names []string
	for _, p := range index.Packages {
		names = append(names, p.Name)
	}
	if strings.Join(names, ",") != "chart,demo-pkg" {
		t.Fatalf("packages = %v, want chart and demo-pkg", names)
	}
	if engine := index.Packages[0].Spec.Versions[0].Engine; engine != "" {
		t.Errorf("the chart has engine %q, want none (Helm)", engine)
	}
	demo := index.Packages[1].Spec
	folder, err := directory.PackPackageFolder(filepath.Join(root, "demo-pkg"), catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.ExtensionVersion{
		catalogtest.DemoVersion("0.2.0", "file://"+filepath.Join(root, "demo-pkg"), catalog.Digest(folder), "dir"),
		catalogtest.DemoVersion("0.1.0", "file://"+filepath.Join(root, "demo-pkg-0.1.0.tgz"), catalog.Digest(packed), "dir"),
	}
	if !reflect.DeepEqual(demo.Versions, want) {
		t.Errorf("versions:\ngot  %s\nwant %s", catalogtest.Dump(demo.Versions), catalogtest.Dump(want))
	}
	if demo.Description != "a demo package" || demo.Home != "https://example.com/demo" {
		t.Errorf("description %q home %q, want operator.yaml's description and url", demo.Description, demo.Home)
	}
	for _, v := range demo.Versions {
		data, err := (sources.Artifacts{Fetcher: f}).FetchArtifact(context.Background(), v.Source)
		if err != nil {
			t.Fatalf("FetchArtifact(%s): %v", v.Source.URL, err)
		}
		if p := catalogtest.LoadPackage(t, data); p.Operator.OperatorVersion != v.Version {
			t.Errorf("%s holds operatorVersion %s, want %s", v.Source.URL, p.Operator.OperatorVersion, v.Version)
		}
	}
}

// TestPackageArchiveLimits checks that packing a folder applies the
// limits and the regular-files rule of charts.
func TestPackageArchiveLimits(t *testing.T) {
	dir := t.TempDir()
	catalogtest.WriteFiles(t, dir, catalogtest.DemoPackage("0.1.0"))
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "templates", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := directory.PackPackageFolder(dir, catalog.Limits{})
	var unsafe *catalog.UnsafeArchiveError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), `entry "templates/link.yaml": is a symbolic link`) {
		t.Errorf("PackPackageFolder with a symlink: error = %v", err)
	}
	if _, err := directory.PackPackageFolder(t.TempDir(), catalog.Limits{}); err == nil || !strings.Contains(err.Error(), "has no operator.yaml") {
		t.Errorf("PackPackageFolder of an empty folder: error = %v", err)
	}
	big := t.TempDir()
	catalogtest.WriteFiles(t, big, catalogtest.DemoPackage("0.1.0"))
	catalogtest.WriteFiles(t, big, map[string][]byte{"templates/big.yaml": make([]byte, 2048)})
	if _, err := directory.PackPackageFolder(big, catalog.Limits{MaxFileBytes: 1024}); err == nil || !strings.Contains(err.Error(), "per file") {
		t.Errorf("PackPackageFolder over MaxFileBytes: error = %v", err)
	}
}
