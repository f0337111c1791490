package catalog_test

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"io"
	"strings"
	"testing"

	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
)

func TestPackageArchive(t *testing.T) {
	files := catalogtest.DemoPackage("0.1.0")
	first, err := catalog.PackageArchive(files)
	if err != nil {
		t.Fatal(err)
	}
	second, err := catalog.PackageArchive(catalogtest.DemoPackage("0.1.0"))
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
	if p := catalogtest.LoadPackage(t, first); p.Operator.Name != "demo-pkg" || len(p.Templates) != 1 {
		t.Errorf("read %s with %d templates, want demo-pkg with 1", p.Operator.Name, len(p.Templates))
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
	dotDir := tarEntry{Hdr: tar.Header{Name: "./", Typeflag: tar.TypeDir, Mode: 0o755}}
	tests := []struct {
		name    string
		archive []byte
		want    string // "" means accepted
	}{
		// KUDO's layout, files at the root.
		{"package at the root", tgz(t, file("operator.yaml", op), file("params.yaml", ""), file("templates/a.yaml", "a: b\n")), ""},
		// A directory entry before operator.yaml changes nothing.
		{"package with folder entries", tgz(t, tarEntry{Hdr: tar.Header{Name: "templates/", Typeflag: tar.TypeDir, Mode: 0o755}}, file("templates/a.yaml", "a: b\n"), file("operator.yaml", op), file("params.yaml", "")), ""},
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
		{"package with a symlink", tgz(t, file("operator.yaml", op), tarEntry{Hdr: tar.Header{Name: "templates/x.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/shadow"}}), "is a symbolic link"},
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
				catalogtest.LoadPackage(t, tt.archive)
			}
		})
	}
}
