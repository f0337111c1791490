package catalog_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"errors"
	"io"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"strings"
	"testing"

	"go.yaml.in/yaml/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	enginepkg "github.com/annex-platform/annex/internal/engine/pkg"
)

// demoPackage returns the files of a small package at operatorVersion v.
func demoPackage(v string) map[string][]byte {
	return map[string][]byte{
		"operator.yaml": []byte(`apiVersion: kudo.dev/v1beta1
name: demo-pkg
operatorVersion: ` + v + `
appVersion: "5.10"
kubernetesVersion: 1.29.0
description: a demo package
url: https://example.com/demo
extends:
  operator: demo-base
  version: ">=1.0.0"
tasks:
  - name: app
    kind: Apply
    spec:
      resources: [cm.yaml]
plans:
  deploy:
    strategy: serial
    phases:
      - name: main
        strategy: serial
        steps:
          - name: app
            tasks: [app]
`),
		"params.yaml":       []byte("apiVersion: kudo.dev/v1beta1\nparameters:\n  - name: MESSAGE\n    default: hi\n"),
		"templates/cm.yaml": []byte("apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: {{ .Name }}\ndata:\n  message: {{ .Params.MESSAGE }}\n"),
	}
}

// demoVersion is the ExtensionVersion a catalog makes of demoPackage(v).
func demoVersion(v, url, digest, catalogName string) v1alpha1.ExtensionVersion {
	return v1alpha1.ExtensionVersion{
		Version:     v,
		AppVersion:  "5.10",
		KubeVersion: ">=1.29.0",
		Engine:      v1alpha1.EnginePackage,
		Extends:     &v1alpha1.Dependency{Name: "demo-base", Version: ">=1.0.0"},
		Source:      v1alpha1.ArtifactSource{Catalog: catalogName, URL: url, Digest: digest},
	}
}

func writeFiles(t *testing.T, dir string, files map[string][]byte) {
	t.Helper()
	for p, data := range files {
		full := filepath.Join(dir, filepath.FromSlash(p))
		if err := os.MkdirAll(filepath.Dir(full), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(full, data, 0o644); err != nil {
			t.Fatal(err)
		}
	}
}

// loadPackage reads an archive as the package engine does.
func loadPackage(t *testing.T, archive []byte) *enginepkg.Package {
	t.Helper()
	p, err := enginepkg.LoadArchive(archive)
	if err != nil {
		t.Fatalf("the package engine cannot read the archive: %v", err)
	}
	return p
}

func TestPackageArchive(t *testing.T) {
	files := demoPackage("0.1.0")
	first, err := catalog.PackageArchive(files)
	if err != nil {
		t.Fatal(err)
	}
	second, err := catalog.PackageArchive(demoPackage("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(first, second) {
		t.Fatal("two archives of the same files differ")
	}
	// KUDO's layout: the files at the root, sorted, no enclosing folder.
	zr, err := gzip.NewReader(bytes.NewReader(first))
	if err != nil {
		t.Fatal(err)
	}
	tr := tar.NewReader(zr)
	var names []string
	for {
		hdr, err := tr.Next()
		if err == io.EOF {
			break
		}
		if err != nil {
			t.Fatal(err)
		}
		names = append(names, hdr.Name)
	}
	if got, want := strings.Join(names, " "), "operator.yaml params.yaml templates/cm.yaml"; got != want {
		t.Errorf("entries = %s, want %s", got, want)
	}
	if err := catalog.CheckArchive(first, catalog.Limits{}); err != nil {
		t.Errorf("CheckArchive refuses a package archive: %v", err)
	}
	if p := loadPackage(t, first); p.Operator.Name != "demo-pkg" || len(p.Templates) != 1 {
		t.Errorf("read %s with %d templates, want demo-pkg with 1", p.Operator.Name, len(p.Templates))
	}
	m, err := catalog.PackageMetadataOf(first)
	if err != nil {
		t.Fatal(err)
	}
	want := &catalog.PackageMetadata{Name: "demo-pkg", OperatorVersion: "0.1.0", AppVersion: "5.10", Description: "a demo package",
		KubernetesVersion: "1.29.0", URL: "https://example.com/demo", Extends: &catalog.PackageExtends{Operator: "demo-base", Version: ">=1.0.0"}}
	if !reflect.DeepEqual(m, want) {
		t.Errorf("PackageMetadataOf = %+v, want %+v", m, want)
	}

	// Without operator.yaml it is no package.
	delete(files, "operator.yaml")
	if _, err := catalog.PackageArchive(files); err == nil || !strings.Contains(err.Error(), "package has no operator.yaml") {
		t.Errorf("PackageArchive without operator.yaml: error = %v", err)
	}
}

// TestCheckArchiveLayouts checks the layouts CheckArchive accepts besides a
// chart folder, and that the package layout opens no door.
func TestCheckArchiveLayouts(t *testing.T) {
	op := "name: p\noperatorVersion: 0.1.0\n"
	dotDir := tarEntry{hdr: tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}}
	tests := []struct {
		name    string
		archive []byte
		want    string // "" means accepted
	}{
		// KUDO's layout, files at the root.
		{"package at the root", tgz(t, file("operator.yaml", op), file("params.yaml", ""), file("templates/a.yaml", "a: b\n")), ""},
		// A directory entry before operator.yaml changes nothing.
		{"package with folder entries", tgz(t, tarEntry{hdr: tar.Header{Name: "templates/", Typeflag: tar.TypeDir, Mode: 0o755}}, file("templates/a.yaml", "a: b\n"), file("operator.yaml", op), file("params.yaml", "")), ""},
		// tar -C dir . writes "./" names, which the package reader reads.
		{"package packed with ./", tgz(t, dotDir, file("./operator.yaml", op), file("./params.yaml", ""), file("./templates/a.yaml", "a: b\n")), ""},
		// A package packed in one folder has a chart's layout.
		{"package in a folder", tgz(t, file("p/operator.yaml", op), file("p/params.yaml", "")), ""},
		// "./" names are no chart's: Helm's loader would misplace them.
		{"chart packed with ./", tgz(t, dotDir, file("./demo/Chart.yaml", chartYAML)), `entry "./": is not a clean path`},
		// Files at the root without operator.yaml are neither.
		{"loose files", tgz(t, file("params.yaml", ""), file("templates/a.yaml", "a: b\n")), "is a file at the top of the archive"},
		// operator.yaml deeper than the root does not make a flat archive a package.
		{"operator.yaml in a subfolder", tgz(t, file("a/operator.yaml", op), file("b/x.yaml", "")), `is outside the chart folder "a"`},
		// The hostile-entry rules hold for packages too.
		{"package with a symlink", tgz(t, file("operator.yaml", op), tarEntry{hdr: tar.Header{Name: "templates/x.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}}), "is a symbolic link"},
		{"package with a parent path", tgz(t, file("operator.yaml", op), file("../x.yaml", "")), `contains ".."`},
		{"package with ./../", tgz(t, file("operator.yaml", op), file("./../x.yaml", "")), `contains ".."`},
		{"package with a duplicate", tgz(t, file("operator.yaml", op), file("./operator.yaml", op)), "appears twice"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			err := catalog.CheckArchive(tt.archive, catalog.Limits{})
			switch {
			case tt.want == "" && err != nil:
				t.Fatalf("CheckArchive() = %v, want it accepted", err)
			case tt.want != "" && (err == nil || !strings.Contains(err.Error(), tt.want)):
				t.Fatalf("CheckArchive() = %v, want an error containing %q", err, tt.want)
			}
			if tt.want == "" {
				loadPackage(t, tt.archive)
			}
		})
	}
}

// TestDirectoryIndexPackages reads a directory catalog holding a package
// folder, a packed package and a chart, and fetches the package the way an
// installation does.
func TestDirectoryIndexPackages(t *testing.T) {
	root := t.TempDir()
	writeFiles(t, filepath.Join(root, "demo-pkg"), demoPackage("0.2.0"))
	packed, err := catalog.PackageArchive(demoPackage("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	writeFiles(t, root, map[string][]byte{
		"demo-pkg-0.1.0.tgz": packed,
		"chart/Chart.yaml":   []byte("apiVersion: v2\nname: chart\nversion: 1.0.0\n"),
		// A folder cannot be both.
		"both/Chart.yaml":    []byte("apiVersion: v2\nname: both\nversion: 1.0.0\n"),
		"both/operator.yaml": []byte("name: both\noperatorVersion: 1.0.0\n"),
	})
	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{Directory: &v1alpha1.DirectorySource{Path: root}}}}
	cat.Name = "dir"
	f := &catalog.Fetcher{Lookup: lookup{catalogs: map[string]*v1alpha1.Catalog{"dir": cat}}}

	index, err := f.DirectoryIndex(root, "dir")
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
	folder, err := catalog.PackPackageFolder(filepath.Join(root, "demo-pkg"), catalog.Limits{})
	if err != nil {
		t.Fatal(err)
	}
	want := []v1alpha1.ExtensionVersion{
		demoVersion("0.2.0", "file://"+filepath.Join(root, "demo-pkg"), catalog.Digest(folder), "dir"),
		demoVersion("0.1.0", "file://"+filepath.Join(root, "demo-pkg-0.1.0.tgz"), catalog.Digest(packed), "dir"),
	}
	if !reflect.DeepEqual(demo.Versions, want) {
		t.Errorf("versions:\ngot  %s\nwant %s", dump(demo.Versions), dump(want))
	}
	if demo.Description != "a demo package" || demo.Home != "https://example.com/demo" {
		t.Errorf("description %q home %q, want operator.yaml's description and url", demo.Description, demo.Home)
	}
	for _, v := range demo.Versions {
		data, err := f.FetchArtifact(context.Background(), v.Source)
		if err != nil {
			t.Fatalf("FetchArtifact(%s): %v", v.Source.URL, err)
		}
		if p := loadPackage(t, data); p.Operator.OperatorVersion != v.Version {
			t.Errorf("%s holds operatorVersion %s, want %s", v.Source.URL, p.Operator.OperatorVersion, v.Version)
		}
	}
}

// TestHelmIndexPackages serves a repository of packages over HTTP, with an
// index.yaml written by AddPackageToIndex, and installs from it.
func TestHelmIndexPackages(t *testing.T) {
	files := map[string][]byte{}
	var index []byte
	for _, v := range []string{"0.1.0", "0.2.0"} {
		archive, err := catalog.PackageArchive(demoPackage(v))
		if err != nil {
			t.Fatal(err)
		}
		name := catalog.PackageFileName("demo-pkg", v)
		files["/charts/"+name] = archive
		if index, err = catalog.AddPackageToIndex(index, archive, name); err != nil {
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
	s := &catalog.Sources{Fetcher: &catalog.Fetcher{}}
	got, err := s.Index(context.Background(), cat)
	if err != nil {
		t.Fatal(err)
	}
	if len(got.Packages) != 1 || len(got.Skipped) != 0 {
		t.Fatalf("index = %s", dump(got))
	}
	want := []v1alpha1.ExtensionVersion{
		demoVersion("0.2.0", srv.URL+"/charts/demo-pkg-0.2.0.tgz", catalog.Digest(files["/charts/demo-pkg-0.2.0.tgz"]), "repo"),
		demoVersion("0.1.0", srv.URL+"/charts/demo-pkg-0.1.0.tgz", catalog.Digest(files["/charts/demo-pkg-0.1.0.tgz"]), "repo"),
	}
	if !reflect.DeepEqual(got.Packages[0].Spec.Versions, want) {
		t.Errorf("versions:\ngot  %s\nwant %s", dump(got.Packages[0].Spec.Versions), dump(want))
	}
	for _, v := range want {
		data, err := s.Fetcher.FetchArtifact(context.Background(), v.Source)
		if err != nil {
			t.Fatalf("FetchArtifact: %v", err)
		}
		loadPackage(t, data)
	}
}

func TestAddPackageToIndex(t *testing.T) {
	// An index that already holds a chart, written with a scalar that YAML
	// would read as a number: it must keep its text.
	existing := []byte("apiVersion: v1\nentries:\n  zeta:\n  - name: zeta\n    version: 1.0.0\n    appVersion: 1.10\n    urls: [zeta-1.0.0.tgz]\ngenerated: \"2024-01-01T00:00:00Z\"\n")
	index := existing
	archives := map[string][]byte{}
	for _, v := range []string{"0.1.0", "0.3.0", "0.2.0", "0.1.0"} {
		archive, err := catalog.PackageArchive(demoPackage(v))
		if err != nil {
			t.Fatal(err)
		}
		archives[v] = archive
		if index, err = catalog.AddPackageToIndex(index, archive, catalog.PackageFileName("demo-pkg", v)); err != nil {
			t.Fatalf("AddPackageToIndex(%s): %v", v, err)
		}
	}
	for _, keep := range []string{"appVersion: 1.10\n", `generated: "2024-01-01T00:00:00Z"`} {
		if !bytes.Contains(index, []byte(keep)) {
			t.Errorf("the index lost %q:\n%s", keep, index)
		}
	}
	parsed, err := catalog.ParseHelmIndex(index, "https://example.com/repo", "r")
	if err != nil {
		t.Fatal(err)
	}
	if len(parsed.Skipped) != 0 || len(parsed.Packages) != 2 {
		t.Fatalf("index = %s\n%s", dump(parsed), index)
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
	bad := demoPackage("1.x")
	archive, err := catalog.PackageArchive(bad)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.AddPackageToIndex(nil, archive, "x.tgz"); err == nil || !strings.Contains(err.Error(), "operatorVersion is not semver") {
		t.Errorf("AddPackageToIndex with operatorVersion 1.x: error = %v", err)
	}
	// A chart is no package.
	chart, err := catalog.ChartArchive("demo", map[string][]byte{"Chart.yaml": []byte(chartYAML)})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := catalog.AddPackageToIndex(nil, chart, "x.tgz"); err == nil || !strings.Contains(err.Error(), "has no operator.yaml") {
		t.Errorf("AddPackageToIndex of a chart: error = %v", err)
	}
	// An index that is no index is not overwritten.
	if _, err := catalog.AddPackageToIndex([]byte("- a\n"), archives["0.1.0"], "x.tgz"); err == nil {
		t.Error("AddPackageToIndex over a YAML list succeeded")
	}
}

// TestPackageArchiveLimits checks that packing a folder applies the
// limits and the regular-files rule of charts.
func TestPackageArchiveLimits(t *testing.T) {
	dir := t.TempDir()
	writeFiles(t, dir, demoPackage("0.1.0"))
	if err := os.Symlink("/etc/passwd", filepath.Join(dir, "templates", "link.yaml")); err != nil {
		t.Fatal(err)
	}
	_, err := catalog.PackPackageFolder(dir, catalog.Limits{})
	var unsafe *catalog.UnsafeArchiveError
	if !errors.As(err, &unsafe) || !strings.Contains(err.Error(), `entry "templates/link.yaml": is a symbolic link`) {
		t.Errorf("PackPackageFolder with a symlink: error = %v", err)
	}
	if _, err := catalog.PackPackageFolder(t.TempDir(), catalog.Limits{}); err == nil || !strings.Contains(err.Error(), "has no operator.yaml") {
		t.Errorf("PackPackageFolder of an empty folder: error = %v", err)
	}
	big := t.TempDir()
	writeFiles(t, big, demoPackage("0.1.0"))
	writeFiles(t, big, map[string][]byte{"templates/big.yaml": make([]byte, 2048)})
	if _, err := catalog.PackPackageFolder(big, catalog.Limits{MaxFileBytes: 1024}); err == nil || !strings.Contains(err.Error(), "per file") {
		t.Errorf("PackPackageFolder over MaxFileBytes: error = %v", err)
	}
}

// FuzzAddPackageToIndex feeds arbitrary index files to AddPackageToIndex:
// it may refuse them, but never panic, and what it writes is an index
// from which ParseHelmIndex reads the package added. Run it longer with
//
//	go test ./internal/catalog -run '^$' -fuzz FuzzAddPackageToIndex -fuzztime 10m
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
	archive, err := catalog.PackageArchive(demoPackage("0.1.0"))
	if err != nil {
		f.Fatal(err)
	}
	f.Fuzz(func(t *testing.T, existing []byte) {
		out, err := catalog.AddPackageToIndex(existing, archive, "demo-pkg-0.1.0.tgz")
		if err != nil {
			return
		}
		index, err := catalog.ParseHelmIndex(out, "https://example.com/repo", "fuzz")
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
		t.Fatalf("the written index does not offer demo-pkg 0.1.0:\n%s\n%s", out, dump(index))
	})
}

// A KudoOperator task makes the package it names a dependency, which the
// index entry carries as Annex's dependencies annotation.
func TestPackageKudoOperatorTasksAreDependencies(t *testing.T) {
	m, err := catalog.ParsePackageMetadata([]byte(`name: app
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
	index, err := catalog.ParseHelmIndex(mustYAML(t, map[string]any{"apiVersion": "v1", "entries": map[string]any{"app": []any{entry}}}), "https://example.com/", "c")
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
