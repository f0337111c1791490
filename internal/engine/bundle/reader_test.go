package bundle

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"errors"
	"maps"
	"slices"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"
)

// TestLoadFixture checks what Load reads from the fixture bundle.
func TestLoadFixture(t *testing.T) {
	b := loadFixture(t, "memcached-operator")
	if b.Package != "memcached-operator" || b.DefaultChannel != "stable" || strings.Join(b.Channels, ",") != "alpha,stable" {
		t.Errorf("annotations: got package %q channels %v default %q", b.Package, b.Channels, b.DefaultChannel)
	}
	s := b.CSV.Spec
	if b.CSV.Metadata.Name != "memcached-operator.v0.2.0" || s.Version != "0.2.0" || s.Replaces != "memcached-operator.v0.1.0" ||
		len(s.Skips) != 1 || s.MinKubeVersion != "1.28.0" || len(s.InstallModes) != 4 || len(s.RelatedImages) != 1 {
		t.Errorf("CSV fields: got %+v", s)
	}
	if len(s.Install.Spec.Deployments) != 2 || len(s.Install.Spec.Permissions) != 2 || len(s.Install.Spec.ClusterPermissions) != 1 {
		t.Errorf("install strategy: got %d deployments, %d permissions, %d clusterPermissions",
			len(s.Install.Spec.Deployments), len(s.Install.Spec.Permissions), len(s.Install.Spec.ClusterPermissions))
	}
	if len(b.CRDs) != 1 || len(b.Others) != 3 {
		t.Errorf("got %d CRDs and %d other manifests, want 1 and 3", len(b.CRDs), len(b.Others))
	}
}

// TestLoadRefusals feeds Load broken bundles; each must fail with a
// *LoadError naming the file and saying what to do.
func TestLoadRefusals(t *testing.T) {
	cases := []struct {
		name    string
		change  func(files map[string][]byte)
		file    string
		message string
	}{
		// The package is declared in annotations.yaml; without it there is no bundle.
		{"no annotations", func(f map[string][]byte) { delete(f, "metadata/annotations.yaml") }, "", "has no metadata/annotations.yaml"},
		// An empty package name (OLM v1's CheckPackageNameNotEmpty).
		{"no package", func(f map[string][]byte) {
			f["metadata/annotations.yaml"] = []byte("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: registry+v1\n")
		}, "metadata/annotations.yaml", "operators.operatorframework.io.bundle.package.v1 is missing"},
		// A plain or helm bundle is not for this engine.
		{"other media type", func(f map[string][]byte) {
			f["metadata/annotations.yaml"] = []byte("annotations:\n  operators.operatorframework.io.bundle.mediatype.v1: plain+v0\n  operators.operatorframework.io.bundle.package.v1: x\n")
		}, "metadata/annotations.yaml", `is "plain+v0"`},
		// No CSV, no operator.
		{"no CSV", func(f map[string][]byte) { delete(f, "manifests/memcached-operator.clusterserviceversion.yaml") }, "", "has no ClusterServiceVersion"},
		// OLM lets the last of two CSVs win silently; Annex refuses.
		{"two CSVs", func(f map[string][]byte) {
			f["manifests/zz-copy.yaml"] = f["manifests/memcached-operator.clusterserviceversion.yaml"]
		}, "manifests/zz-copy.yaml", "holds a second ClusterServiceVersion"},
		// manifests/ is flat in registry+v1.
		{"subfolder", func(f map[string][]byte) {
			f["manifests/extra/cm.yaml"] = []byte("apiVersion: v1\nkind: ConfigMap\nmetadata: {name: x}\n")
		}, "manifests/extra/cm.yaml", "subfolder"},
		// Deployments come only from the CSV.
		{"deployment manifest", func(f map[string][]byte) {
			f["manifests/deploy.yaml"] = []byte("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: extra}\n")
		}, "manifests/deploy.yaml", `Deployment "extra" is not a kind a registry+v1 bundle may hold`},
		// v1beta1 CRDs are no longer served.
		{"v1beta1 CRD", func(f map[string][]byte) {
			f["manifests/old.yaml"] = []byte("apiVersion: apiextensions.k8s.io/v1beta1\nkind: CustomResourceDefinition\nmetadata: {name: olds.example.com}\n")
		}, "manifests/old.yaml", "convert it"},
		// Not YAML at all.
		{"bad YAML", func(f map[string][]byte) { f["manifests/bad.yaml"] = []byte("kind: [unclosed\n") }, "manifests/bad.yaml", "not valid YAML or JSON"},
		// A document that is not an object.
		{"no kind", func(f map[string][]byte) { f["manifests/nokind.yaml"] = []byte("metadata: {name: x}\n") }, "manifests/nokind.yaml", "no apiVersion or kind"},
		// A path escaping the bundle.
		{"traversal", func(f map[string][]byte) { f["manifests/../../etc/passwd"] = []byte("x") }, "manifests/../../etc/passwd", `contains ".."`},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			files := fixtureFiles(t, "memcached-operator")
			tc.change(files)
			_, err := Load(files)
			var le *LoadError
			if !errors.As(err, &le) {
				t.Fatalf("got %v, want a *LoadError", err)
			}
			if le.File != tc.file || !strings.Contains(le.Message, tc.message) {
				t.Errorf("got file %q message %q, want file %q and a message containing %q", le.File, le.Message, tc.file, tc.message)
			}
		})
	}
}

type tarEntry struct {
	name, link string
	typ        byte
	data       []byte
}

func makeTar(t testing.TB, gz bool, entries []tarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	var zw *gzip.Writer
	tw := tar.NewWriter(&buf)
	if gz {
		zw = gzip.NewWriter(&buf)
		tw = tar.NewWriter(zw)
	}
	for _, e := range entries {
		typ := e.typ
		if typ == 0 {
			typ = tar.TypeReg
		}
		if err := tw.WriteHeader(&tar.Header{Name: e.name, Linkname: e.link, Typeflag: typ, Size: int64(len(e.data)), Mode: 0o644}); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.data); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if zw != nil {
		if err := zw.Close(); err != nil {
			t.Fatal(err)
		}
	}
	return buf.Bytes()
}

func fixtureEntries(t testing.TB, files map[string][]byte, prefix string) []tarEntry {
	var out []tarEntry
	for _, name := range slices.Sorted(maps.Keys(files)) {
		out = append(out, tarEntry{name: prefix + name, data: files[name]})
	}
	return out
}

// TestLoadArchive reads the fixture from archives of several shapes, and
// refuses unsafe ones.
func TestLoadArchive(t *testing.T) {
	files := fixtureFiles(t, "memcached-operator")
	for _, tc := range []struct {
		name   string
		gz     bool
		prefix string
	}{
		{"tar at root, as in an image layer", false, "/"},
		{"tar.gz with ./", true, "./"},
		{"tar.gz in one folder", true, "memcached-operator/"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			b, err := LoadArchive(makeTar(t, tc.gz, fixtureEntries(t, files, tc.prefix)))
			if err != nil {
				t.Fatal(err)
			}
			if b.CSV.Metadata.Name != "memcached-operator.v0.2.0" || len(b.Others) != 3 {
				t.Errorf("got CSV %q with %d other manifests", b.CSV.Metadata.Name, len(b.Others))
			}
		})
	}

	refusals := []struct {
		name    string
		extra   tarEntry
		message string
	}{
		// A symlink could point outside the bundle.
		{"symlink", tarEntry{name: "manifests/link.yaml", link: "/etc/passwd", typ: tar.TypeSymlink}, "is a link"},
		// A hard link likewise.
		{"hard link", tarEntry{name: "manifests/hard.yaml", link: "manifests/x", typ: tar.TypeLink}, "is a link"},
		// A device or FIFO is no bundle file.
		{"fifo", tarEntry{name: "manifests/fifo", typ: tar.TypeFifo}, "special file"},
		// Parent-relative paths escape.
		{"traversal", tarEntry{name: "../evil.yaml", data: []byte("x")}, `contains ".."`},
		// A second copy of a file is ambiguous.
		{"duplicate", tarEntry{name: "metadata/annotations.yaml", data: []byte("annotations: {}")}, "appears twice"},
		// A file over the per-file limit.
		{"huge file", tarEntry{name: "manifests/huge.yaml", data: bytes.Repeat([]byte("#"), MaxFileBytes+1)}, "more than the limit"},
	}
	for _, tc := range refusals {
		t.Run(tc.name, func(t *testing.T) {
			_, err := LoadArchive(makeTar(t, true, append(fixtureEntries(t, files, ""), tc.extra)))
			var le *LoadError
			if !errors.As(err, &le) || !strings.Contains(le.Message, tc.message) {
				t.Errorf("got %v, want a *LoadError containing %q", err, tc.message)
			}
		})
	}
	// A decompression bomb stops at MaxExpandedBytes.
	t.Run("bomb", func(t *testing.T) {
		var entries []tarEntry
		for i := range MaxExpandedBytes/MaxFileBytes + 1 {
			entries = append(entries, tarEntry{name: "junk/" + string(rune('a'+i)), data: make([]byte, MaxFileBytes)})
		}
		_, err := LoadArchive(makeTar(t, true, entries))
		if err == nil || !strings.Contains(err.Error(), "decompression bomb") {
			t.Errorf("got %v, want a refusal of the expanded size", err)
		}
	})
}

// TestFromObjects reads the fixture's manifests as a catalog's
// olm.bundle.object payloads (JSON) and converts them as Load's bundle.
func TestFromObjects(t *testing.T) {
	files := fixtureFiles(t, "memcached-operator")
	var objs [][]byte
	for _, name := range slices.Sorted(maps.Keys(files)) {
		if !strings.HasPrefix(name, "manifests/") {
			continue
		}
		docs, err := decodeDocuments(name, files[name])
		if err != nil {
			t.Fatal(err)
		}
		for _, d := range docs {
			raw, err := d.obj.MarshalJSON()
			if err != nil {
				t.Fatal(err)
			}
			objs = append(objs, raw)
		}
	}
	fromObjs, err := FromObjects(objs)
	if err != nil {
		t.Fatal(err)
	}
	fromObjs.Package = "memcached-operator"
	o := Options{InstallNamespace: "operators", WatchNamespaces: []string{"team-a"}, Name: "memcached"}
	p1, err := Convert(fromObjs, o)
	if err != nil {
		t.Fatal(err)
	}
	p2, err := Convert(loadFixture(t, "memcached-operator"), o)
	if err != nil {
		t.Fatal(err)
	}
	y1, _ := yaml.Marshal(p1)
	y2, _ := yaml.Marshal(p2)
	if !bytes.Equal(y1, y2) {
		t.Errorf("FromObjects and Load convert differently:\n%s\nvs\n%s", y1, y2)
	}
	// A Deployment is refused here too.
	if _, err := FromObjects([][]byte{[]byte(`{"apiVersion":"apps/v1","kind":"Deployment","metadata":{"name":"x"}}`)}); err == nil {
		t.Error("FromObjects accepted a Deployment")
	}
}

// FuzzLoadArchive checks LoadArchive never panics and returns a bundle or
// a *LoadError: go test ./internal/engine/bundle -fuzz FuzzLoadArchive.
func FuzzLoadArchive(f *testing.F) {
	files := map[string][]byte{
		"metadata/annotations.yaml": []byte("annotations:\n  operators.operatorframework.io.bundle.package.v1: p\n"),
		"manifests/csv.yaml":        []byte("apiVersion: operators.coreos.com/v1alpha1\nkind: ClusterServiceVersion\nmetadata: {name: p.v1}\n"),
	}
	f.Add(makeTar(f, true, fixtureEntries(f, files, "")))
	f.Add(makeTar(f, false, fixtureEntries(f, files, "./")))
	f.Fuzz(func(t *testing.T, data []byte) {
		b, err := LoadArchive(data)
		var le *LoadError
		if err != nil && !errors.As(err, &le) {
			t.Fatalf("error %v is not a *LoadError", err)
		}
		if err == nil && b.CSV.Metadata.Name == "" {
			t.Fatal("bundle without a CSV name")
		}
	})
}
