package olm_test

import (
	"archive/tar"
	"context"
	"errors"
	"reflect"
	"strings"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/olm"
)

// TestFetchBundleBuiltin serves bundles of the built-in catalog from the
// archive Fetcher.Builtin returns: the same files whether the bundle's
// folders are at the root of the archive or in one top folder, with the
// digest, the archive checks and the Limits of a chart.
func TestFetchBundleBuiltin(t *testing.T) {
	const csv = "apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata:\n  name: demo.v1.0.0\n"
	const annotations = "annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n"
	file, tgz := catalogtest.File, catalogtest.TGZ
	bundle := map[string][]byte{
		"manifests/demo.clusterserviceversion.yaml": []byte(csv),
		"metadata/annotations.yaml":                 []byte(annotations),
	}
	root := tgz(t, file("manifests/demo.clusterserviceversion.yaml", csv), file("metadata/annotations.yaml", annotations))
	symlink := tgz(t, file("metadata/annotations.yaml", annotations),
		catalogtest.TarEntry{Hdr: tar.Header{Name: "manifests/csv.yaml", Typeflag: tar.TypeSymlink, Linkname: "/etc/passwd"}})
	tests := []struct {
		name    string
		archive []byte
		digest  string // "" means the archive's own
		want    string // "" means bundle is served
	}{
		// The folders at the root, as `tar -C bundle manifests metadata` writes them.
		{"root", root, "", ""},
		// One top folder holding the bundle; other files in it are not the bundle's.
		{"folder", tgz(t, file("demo/manifests/demo.clusterserviceversion.yaml", csv), file("demo/metadata/annotations.yaml", annotations), file("demo/README.md", "not part of the bundle")), "", ""},
		// `tar -C bundle .` writes "./" names.
		{"dotslash", tgz(t, file("./manifests/demo.clusterserviceversion.yaml", csv), file("./metadata/annotations.yaml", annotations)), "", ""},
		// The archive is not the one the catalog recorded.
		{"digest", root, catalog.Digest([]byte("other")), "but the catalog recorded"},
		// A link in manifests/ could make the bundle read another file.
		{"symlink", symlink, "", `entry "manifests/csv.yaml": is a symbolic link`},
		// Beside manifests/ and metadata/ at the root nothing else belongs.
		{"beside", tgz(t, file("manifests/demo.clusterserviceversion.yaml", csv), file("other/x.yaml", "a: b\n")), "", `is outside the chart folder "manifests"`},
		// An entry climbing out of the bundle.
		{"traversal", tgz(t, file("manifests/../../x.yaml", csv)), "", `contains ".."`},
		// A file beyond the per-file limit of the test's Fetcher.
		{"big", tgz(t, catalogtest.Zeros("manifests/big.yaml", 4096), file("metadata/annotations.yaml", annotations)), "", "more than the limit of 1024 bytes per file"},
		// A chart folder is no bundle.
		{"chart", tgz(t, file("demo/Chart.yaml", catalogtest.ChartYAML)), "", "has no manifests/ or metadata/ folder"},
		// Builtin's error names the URL.
		{"missing", nil, "", `artifact URL "builtin://missing/1.0.0": no such built-in bundle`},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			var gotName, gotVersion string
			f := &catalog.Fetcher{
				Limits: catalog.Limits{MaxFileBytes: 1024},
				Builtin: func(name, version string) ([]byte, error) {
					gotName, gotVersion = name, version
					if tt.archive == nil {
						return nil, errors.New("no such built-in bundle")
					}
					return tt.archive, nil
				},
			}
			digest := tt.digest
			if digest == "" && tt.archive != nil {
				digest = catalog.Digest(tt.archive)
			}
			files, err := olm.FetchBundle(context.Background(), f, v1alpha1.ArtifactSource{Catalog: "builtin", URL: "builtin://" + tt.name + "/1.0.0", Digest: digest})
			if gotName != tt.name || gotVersion != "1.0.0" {
				t.Errorf("Builtin(%q, %q), want (%q, 1.0.0)", gotName, gotVersion, tt.name)
			}
			if tt.want != "" {
				if err == nil || !strings.Contains(err.Error(), tt.want) {
					t.Fatalf("FetchBundle() = %v, want an error containing %q", err, tt.want)
				}
				return
			}
			if err != nil {
				t.Fatal(err)
			}
			if !reflect.DeepEqual(files, bundle) {
				t.Errorf("files = %q, want %q", files, bundle)
			}
		})
	}

	// The errors are the typed ones callers classify.
	f := &catalog.Fetcher{Builtin: func(string, string) ([]byte, error) { return symlink, nil }}
	var unsafe *catalog.UnsafeArchiveError
	if _, err := olm.FetchBundle(context.Background(), f, v1alpha1.ArtifactSource{URL: "builtin://symlink/1.0.0"}); !errors.As(err, &unsafe) {
		t.Errorf("symlink: err = %v, want an *UnsafeArchiveError", err)
	}
	var mismatch *catalog.DigestMismatchError
	if _, err := olm.FetchBundle(context.Background(), f, v1alpha1.ArtifactSource{URL: "builtin://symlink/1.0.0", Digest: catalog.Digest(nil)}); !errors.As(err, &mismatch) {
		t.Errorf("wrong digest: err = %v, want a *DigestMismatchError", err)
	}
	if _, err := olm.FetchBundle(context.Background(), &catalog.Fetcher{}, v1alpha1.ArtifactSource{URL: "builtin://root/1.0.0"}); err == nil || !strings.Contains(err.Error(), "Fetcher.Builtin is nil") {
		t.Errorf("no Builtin: err = %v, want one naming Fetcher.Builtin", err)
	}
}
