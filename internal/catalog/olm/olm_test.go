package olm_test

import (
	"archive/tar"
	"bytes"
	"context"
	"errors"
	"net/http"
	"net/http/httptest"
	"os"
	"path/filepath"
	"reflect"
	"slices"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/empty"
	"github.com/google/go-containerregistry/pkg/v1/mutate"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/olm"
	"github.com/annex-platform/annex/internal/catalog/sources"
)

const olmFixtures = "testdata/olm/catalog"

// wantEtcd is the etcd package of the fixture catalog.
func wantEtcd(catalogName string, image string) catalog.Package {
	owned := []string{"etcd.database.coreos.com/v1beta2/EtcdCluster"}
	return catalog.Package{Name: "etcd", Spec: v1alpha1.ExtensionSpec{
		DisplayName:    "etcd",
		Description:    "A message about etcd operator, a description of channels\n",
		Icon:           "data:image/svg+xml;base64,PHN2ZyB4bWxucz0iaHR0cDovL3d3dy53My5vcmcvMjAwMC9zdmciLz4=",
		Keywords:       []string{"etcd", "key value"},
		DefaultChannel: "stable",
		Versions: []v1alpha1.ExtensionVersion{{
			// Inline objects only: fetched back through olm://.
			Version: "0.9.4", Engine: v1alpha1.EngineBundle, KubeVersion: ">=1.25.0",
			Channels: []v1alpha1.ChannelEntry{
				// etcd.v0.9.3 is not in the catalog: that skip is left out.
				{Name: "alpha", Replaces: "0.9.2", Skips: []string{"0.9.0"}, Deprecated: true},
				{Name: "stable", Replaces: "0.9.2", SkipRange: ">=0.9.0 <0.9.4"},
			},
			Operator: &v1alpha1.OperatorInfo{
				InstallModes: []string{"OwnNamespace", "SingleNamespace", "AllNamespaces"},
				OwnedAPIs:    owned, RequiredAPIs: []string{"v1/ConfigMap"},
			},
			Source: v1alpha1.ArtifactSource{Catalog: catalogName, URL: "olm://" + catalogName + "/etcd/etcd.v0.9.4"},
		}, {
			// An image by tag and inline objects: the objects win.
			Version: "0.9.2", Engine: v1alpha1.EngineBundle, KubeVersion: ">=1.21.0",
			Channels: []v1alpha1.ChannelEntry{
				{Name: "alpha", Replaces: "0.9.0", Deprecated: true},
				{Name: "stable"},
			},
			Operator: &v1alpha1.OperatorInfo{InstallModes: []string{"OwnNamespace", "SingleNamespace"}, OwnedAPIs: owned},
			Source:   v1alpha1.ArtifactSource{Catalog: catalogName, URL: "olm://" + catalogName + "/etcd/etcd.v0.9.2"},
		}, {
			// A pinned image; facts from olm.csv.metadata; deprecated.
			Version: "0.9.0", Engine: v1alpha1.EngineBundle, KubeVersion: ">=1.16.0", Deprecated: true,
			Channels: []v1alpha1.ChannelEntry{{Name: "alpha", Deprecated: true}},
			Operator: &v1alpha1.OperatorInfo{InstallModes: []string{"AllNamespaces"}, OwnedAPIs: owned},
			Source:   v1alpha1.ArtifactSource{Catalog: catalogName, URL: "oci://" + image},
		}},
	}}
}

const etcdImage = "quay.io/operatorhubio/etcd@sha256:66a37fd61a06a43969854ee6d3e21087a98b93838e284a6086b13917f96b0d9b"

func asError[T error](err error, target *T) bool { return err != nil && errors.As(err, target) }

// checkFixtureIndex checks the index of both fixture files.
func checkFixtureIndex(t *testing.T, index *catalog.Index, catalogName string) {
	t.Helper()
	names := []string{}
	for _, p := range index.Packages {
		names = append(names, p.Name)
	}
	if !reflect.DeepEqual(names, []string{"etcd", "prometheus"}) {
		t.Fatalf("packages = %v, want etcd and prometheus", names)
	}
	if got, want := index.Packages[0], wantEtcd(catalogName, etcdImage); !reflect.DeepEqual(got, want) {
		t.Errorf("etcd:\n got %+v\nwant %+v", got, want)
	}
	prom := index.Packages[1].Spec
	if prom.DefaultChannel != "beta" || prom.DisplayName != "Prometheus Operator" || len(prom.Versions) != 2 {
		t.Fatalf("prometheus = %+v", prom)
	}
	for _, v := range prom.Versions {
		if !v.Deprecated {
			t.Errorf("prometheus %s: not deprecated, but the package is", v.Version)
		}
	}
	top := prom.Versions[0]
	if top.Version != "0.37.0" || !reflect.DeepEqual(top.Channels, []v1alpha1.ChannelEntry{{Name: "beta", Replaces: "0.32.0"}}) ||
		!reflect.DeepEqual(top.Operator.RequiredAPIs, []string{"cert-manager.io/v1/Certificate"}) ||
		!reflect.DeepEqual(top.Operator.InstallModes, []string{"OwnNamespace", "AllNamespaces"}) ||
		top.Source.URL != "oci://quay.io/operatorhubio/prometheus@sha256:"+strings.Repeat("2", 64) {
		t.Errorf("prometheus 0.37.0 = %+v", top)
	}
	if index.OtherBlobs != 1 {
		t.Errorf("OtherBlobs = %d, want 1 (example.com.annotations)", index.OtherBlobs)
	}
	wantSkipped := []string{
		`olm.bundle package "etcd" name "etcd.v1.0": properties[0] olm.package: version "1.0" is not semver`,
		`olm.bundle package "prometheus" name "prometheusoperator.0.38.0": field properties: must be`,
		`package "orphan": has bundles or channels but no olm.package blob`,
	}
	if len(index.Skipped) != len(wantSkipped) {
		t.Fatalf("skipped = %q, want %d lines", index.Skipped, len(wantSkipped))
	}
	for _, w := range wantSkipped {
		if !slices.ContainsFunc(index.Skipped, func(s string) bool { return strings.HasPrefix(s, w) }) {
			t.Errorf("skipped = %q, want a line starting %q", index.Skipped, w)
		}
	}
	if !strings.HasPrefix(index.Digest, "sha256:") {
		t.Errorf("digest = %q", index.Digest)
	}
}

// TestOLMDirectory reads the fixture folder (YAML and JSON files, and a
// file that is neither) through sources.Catalogs.
func TestOLMDirectory(t *testing.T) {
	root, err := filepath.Abs(olmFixtures)
	if err != nil {
		t.Fatal(err)
	}
	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Path: root}}}}
	cat.Name = "operatorhub"
	catalogs := &sources.Catalogs{Fetcher: &catalog.Fetcher{}}
	index, err := catalogs.Index(context.Background(), cat)
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureIndex(t, index, "operatorhub")
	again, err := catalogs.Index(context.Background(), cat)
	if err != nil || again.Digest != index.Digest {
		t.Errorf("second read: digest %q, err %v; want the same digest %q", again.Digest, err, index.Digest)
	}
}

// TestOLMURL reads each fixture file as one stream over HTTP; a stream
// that does not start with "{" is YAML.
func TestOLMURL(t *testing.T) {
	srv := httptest.NewServer(http.FileServer(http.Dir(olmFixtures)))
	t.Cleanup(srv.Close)
	f := &catalog.Fetcher{}
	ctx := context.Background()
	for _, tc := range []struct{ file, pkg string }{
		{"/etcd/catalog.yaml", "etcd"},
		{"/prometheus/catalog.json", "prometheus"},
	} {
		index, err := olm.Index(ctx, f, &v1alpha1.OLMSource{URL: srv.URL + tc.file}, "web", nil)
		if err != nil {
			t.Fatalf("%s: %v", tc.file, err)
		}
		if len(index.Packages) != 1 || index.Packages[0].Name != tc.pkg {
			t.Fatalf("%s: packages %+v", tc.file, index.Packages)
		}
		if tc.pkg == "etcd" && !reflect.DeepEqual(index.Packages[0], wantEtcd("web", etcdImage)) {
			t.Errorf("etcd over HTTP:\n got %+v\nwant %+v", index.Packages[0], wantEtcd("web", etcdImage))
		}
	}
	// A server error is a FetchError (retry); a body over the limit is
	// TooLargeError.
	if _, err := olm.Index(ctx, f, &v1alpha1.OLMSource{URL: srv.URL + "/missing.json"}, "web", nil); err == nil || !strings.Contains(err.Error(), "404") {
		t.Errorf("missing file: err = %v", err)
	}
	small := &catalog.Fetcher{Limits: catalog.Limits{MaxCatalogBytes: 100}}
	var tl *catalog.TooLargeError
	if _, err := olm.Index(ctx, small, &v1alpha1.OLMSource{URL: srv.URL + "/etcd/catalog.yaml"}, "web", nil); !asError(err, &tl) {
		t.Errorf("over the limit: err = %v, want TooLargeError", err)
	}
}

// TestOLMMalformedStream keeps the blobs before a syntax error and names
// the file.
func TestOLMMalformedStream(t *testing.T) {
	in := `{"schema":"olm.package","name":"a"}
{"schema":"olm.bundle","package":"a","name":"a.v1","image":"r.example/a@sha256:` + strings.Repeat("0", 64) + `","properties":[{"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}}]}
{"schema": oops}`
	index, err := olm.Parse(strings.NewReader(in), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(index.Packages) != 1 || len(index.Packages[0].Spec.Versions) != 1 {
		t.Fatalf("packages = %+v", index.Packages)
	}
	if len(index.Skipped) != 1 || !strings.Contains(index.Skipped[0], "document 3 and after: not JSON") {
		t.Errorf("skipped = %q", index.Skipped)
	}
}

// What a bundle requires of other operators: olm.gvk.required and
// olm.package.required properties, and the CRDs and APIServices its CSV
// (here its olm.csv.metadata) owns and requires, each once; a required package
// with a range that is not one skips the bundle, naming the property.
func TestOLMRequirements(t *testing.T) {
	digest := "@sha256:" + strings.Repeat("0", 64)
	in := `{"schema":"olm.package","name":"a"}
{"schema":"olm.bundle","package":"a","name":"a.v1","image":"r.example/a` + digest + `","properties":[
 {"type":"olm.package","value":{"packageName":"a","version":"1.0.0"}},
 {"type":"olm.gvk","value":{"group":"a.example.com","version":"v1","kind":"A"}},
 {"type":"olm.gvk.required","value":{"group":"b.example.com","version":"v1","kind":"B"}},
 {"type":"olm.package.required","value":{"packageName":"c","versionRange":">=1.2.0 <2.0.0"}},
 {"type":"olm.csv.metadata","value":{"customresourcedefinitions":{
   "owned":[{"name":"as.a.example.com","version":"v1","kind":"A"},{"name":"extras.a.example.com","version":"v1beta1","kind":"Extra"}],
   "required":[{"name":"bs.b.example.com","version":"v1","kind":"B"},{"name":"ds.d.example.com","version":"v2","kind":"D"}]},
  "apiservicedefinitions":{
   "owned":[{"name":"v1.metrics.a.example.com","group":"metrics.a.example.com","version":"v1","kind":"Usage","deploymentName":"a"}],
   "required":[{"name":"v1beta1.metrics.k8s.io","group":"metrics.k8s.io","version":"v1beta1","kind":"PodMetrics"}]}}}]}
{"schema":"olm.bundle","package":"a","name":"a.v2","image":"r.example/a` + digest + `","properties":[
 {"type":"olm.package","value":{"packageName":"a","version":"2.0.0"}},
 {"type":"olm.package.required","value":{"packageName":"c","versionRange":"one or two"}}]}
`
	index, err := olm.Parse(strings.NewReader(in), "c")
	if err != nil {
		t.Fatal(err)
	}
	if len(index.Packages) != 1 || len(index.Packages[0].Spec.Versions) != 1 {
		t.Fatalf("packages = %+v", index.Packages)
	}
	want := &v1alpha1.OperatorInfo{
		OwnedAPIs:        []string{"a.example.com/v1/A", "a.example.com/v1beta1/Extra", "metrics.a.example.com/v1/Usage"},
		RequiredAPIs:     []string{"b.example.com/v1/B", "d.example.com/v2/D", "metrics.k8s.io/v1beta1/PodMetrics"},
		RequiredPackages: []v1alpha1.Dependency{{Name: "c", Version: ">=1.2.0 <2.0.0"}},
	}
	if got := index.Packages[0].Spec.Versions[0].Operator; !reflect.DeepEqual(got, want) {
		t.Errorf("operator = %+v, want %+v", got, want)
	}
	if len(index.Skipped) != 1 || !strings.Contains(index.Skipped[0], `olm.package.required: versionRange "one or two" is not a version range`) {
		t.Errorf("skipped = %q", index.Skipped)
	}
}

// TestFetchBundleInline serves an inline bundle's objects as a
// registry+v1 tree, re-read from the catalog's folder.
func TestFetchBundleInline(t *testing.T) {
	root, err := filepath.Abs(olmFixtures)
	if err != nil {
		t.Fatal(err)
	}
	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Path: root}}}}
	f := &catalog.Fetcher{Lookup: catalogtest.Lookup{Catalogs: map[string]*v1alpha1.Catalog{"operatorhub": cat}}}
	ctx := context.Background()
	files, err := olm.FetchBundle(ctx, f, v1alpha1.ArtifactSource{Catalog: "operatorhub", URL: "olm://operatorhub/etcd/etcd.v0.9.4"})
	if err != nil {
		t.Fatal(err)
	}
	var names []string
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	want := []string{
		"manifests/00-clusterserviceversion-etcdoperator.v0.9.4.yaml",
		"manifests/01-customresourcedefinition-etcdclusters.etcd.database.coreos.com.yaml",
		"metadata/annotations.yaml",
	}
	if !reflect.DeepEqual(names, want) {
		t.Fatalf("files = %q, want %q", names, want)
	}
	if !bytes.Contains(files["manifests/00-clusterserviceversion-etcdoperator.v0.9.4.yaml"], []byte(`"minKubeVersion":"1.25.0"`)) ||
		!bytes.Contains(files["metadata/annotations.yaml"], []byte(`operators.operatorframework.io.bundle.package.v1: "etcd"`)) {
		t.Errorf("unexpected content: %s", files["metadata/annotations.yaml"])
	}
	// A bundle no longer in the catalog says to resync.
	if _, err := olm.FetchBundle(ctx, f, v1alpha1.ArtifactSource{Catalog: "operatorhub", URL: "olm://operatorhub/etcd/etcd.v9.9.9"}); err == nil || !strings.Contains(err.Error(), "resync") {
		t.Errorf("gone bundle: err = %v", err)
	}
}

// tarLayer builds an uncompressed layer; a name ending in "@" is a
// symbolic link.
func tarLayer(t *testing.T, files map[string]string) v1.Layer {
	t.Helper()
	var buf bytes.Buffer
	tw := tar.NewWriter(&buf)
	names := make([]string, 0, len(files))
	for n := range files {
		names = append(names, n)
	}
	slices.Sort(names)
	for _, n := range names {
		hdr := &tar.Header{Name: n, Mode: 0o644, Size: int64(len(files[n])), Typeflag: tar.TypeReg}
		if target, ok := strings.CutSuffix(n, "@"); ok {
			hdr = &tar.Header{Name: target, Typeflag: tar.TypeSymlink, Linkname: files[n], Mode: 0o777}
		}
		if err := tw.WriteHeader(hdr); err != nil {
			t.Fatal(err)
		}
		if hdr.Typeflag == tar.TypeReg {
			if _, err := tw.Write([]byte(files[n])); err != nil {
				t.Fatal(err)
			}
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	return static.NewLayer(buf.Bytes(), types.OCIUncompressedLayer)
}

// pushImage writes an image of the given layers and returns its digest
// reference.
func pushImage(t *testing.T, ref string, labels map[string]string, layers ...v1.Layer) string {
	t.Helper()
	img, err := mutate.AppendLayers(empty.Image, layers...)
	if err != nil {
		t.Fatal(err)
	}
	if labels != nil {
		if img, err = mutate.Config(img, v1.Config{Labels: labels}); err != nil {
			t.Fatal(err)
		}
	}
	tag, err := name.NewTag(ref)
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Write(tag, img); err != nil {
		t.Fatal(err)
	}
	d, err := img.Digest()
	if err != nil {
		t.Fatal(err)
	}
	return tag.Context().Name() + "@" + d.String()
}

// TestOLMImage reads a catalog image (FBC under the folder its label
// names, split over two layers) and fetches a bundle image by digest; a
// bundle image with a link in manifests/ is refused.
func TestOLMImage(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	ctx := context.Background()
	etcdYAML, err := os.ReadFile(filepath.Join(olmFixtures, "etcd/catalog.yaml"))
	if err != nil {
		t.Fatal(err)
	}
	promJSON, err := os.ReadFile(filepath.Join(olmFixtures, "prometheus/catalog.json"))
	if err != nil {
		t.Fatal(err)
	}
	pushImage(t, host+"/catalog:latest", map[string]string{"operators.operatorframework.io.index.configs.v1": "/fbc"},
		tarLayer(t, map[string]string{"fbc/etcd/catalog.yaml": string(etcdYAML), "bin/opm": "binary"}),
		tarLayer(t, map[string]string{"fbc/prometheus/catalog.json": string(promJSON), "configs/ignored.json": "{}"}))
	f := &catalog.Fetcher{}
	index, err := olm.Index(ctx, f, &v1alpha1.OLMSource{Image: host + "/catalog:latest"}, "images", nil)
	if err != nil {
		t.Fatal(err)
	}
	checkFixtureIndex(t, index, "images")

	bundle := pushImage(t, host+"/etcd-bundle:v0.9.0", nil, tarLayer(t, map[string]string{
		"manifests/etcdoperator.clusterserviceversion.yaml": "kind: ClusterServiceVersion\n",
		"metadata/annotations.yaml":                         "annotations: {}\n",
		"root/other":                                        "not part of the bundle",
	}))
	files, err := olm.FetchBundle(ctx, f, v1alpha1.ArtifactSource{URL: "oci://" + bundle})
	if err != nil {
		t.Fatal(err)
	}
	if len(files) != 2 || string(files["metadata/annotations.yaml"]) != "annotations: {}\n" {
		t.Errorf("bundle files = %q", files)
	}
	hostile := pushImage(t, host+"/hostile-bundle:v1", nil, tarLayer(t, map[string]string{
		"manifests/csv.yaml@": "/etc/passwd",
		"metadata/a.yaml":     "annotations: {}\n",
	}))
	var unsafe *catalog.UnsafeArchiveError
	if _, err := olm.FetchBundle(ctx, f, v1alpha1.ArtifactSource{URL: "oci://" + hostile}); !asError(err, &unsafe) {
		t.Errorf("link in manifests/: err = %v, want UnsafeArchiveError", err)
	}
}
