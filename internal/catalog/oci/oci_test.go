package oci_test

import (
	"bytes"
	"context"
	"encoding/json"
	"reflect"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog"
	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/catalog/sources"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

type rawManifest []byte

func (m rawManifest) RawManifest() ([]byte, error)        { return m, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// blob is one blob of a hand-made manifest.
type blob struct {
	data []byte
	mt   types.MediaType
}

// pushManifest stores config and layers under repository:tag as written.
func pushManifest(t *testing.T, repository, tag string, config blob, layers ...blob) {
	t.Helper()
	repo, err := name.NewRepository(repository)
	if err != nil {
		t.Fatal(err)
	}
	var descs []v1.Descriptor
	for _, b := range append([]blob{config}, layers...) {
		layer := static.NewLayer(b.data, b.mt)
		if err := remote.WriteLayer(repo, layer); err != nil {
			t.Fatal(err)
		}
		digest, _ := layer.Digest()
		descs = append(descs, v1.Descriptor{MediaType: b.mt, Digest: digest, Size: int64(len(b.data))})
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": string(types.OCIManifestSchema1),
		"config": descs[0], "layers": descs[1:],
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(repo.Tag(tag), rawManifest(manifest)); err != nil {
		t.Fatal(err)
	}
}

// TestOCIPackages pushes packages with PushPackage next to a Helm chart,
// lists the repository as a catalog and fetches a package back.
func TestOCIPackages(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	ctx := context.Background()
	destination := "oci://" + host + "/charts"

	// A Helm chart, as `helm push` stores it.
	chart := helmrepo.Chart{Name: "chart", Version: "1.0.0", Files: map[string]string{"templates/cm.yaml": "a: b\n"}}
	chartArchive, err := helmrepo.Archive(chart)
	if err != nil {
		t.Fatal(err)
	}
	pushManifest(t, host+"/charts/chart", "1.0.0",
		blob{[]byte(`{"apiVersion":"v2","name":"chart","version":"1.0.0"}`), oci.MediaTypeHelmConfig},
		blob{chartArchive, oci.MediaTypeHelmChart})

	archives := map[string][]byte{}
	refs := map[string]string{}
	for _, v := range []string{"0.1.0", "0.2.0+build.1"} {
		archive, err := catalog.PackageArchive(catalogtest.DemoPackage(v))
		if err != nil {
			t.Fatal(err)
		}
		ref, err := oci.PushPackage(ctx, archive, destination, oci.PushOptions{PlainHTTP: true})
		if err != nil {
			t.Fatalf("PushPackage(%s): %v", v, err)
		}
		if !strings.HasPrefix(ref, "oci://"+host+"/charts/demo-pkg@sha256:") {
			t.Errorf("PushPackage(%s) = %q, want oci://%s/charts/demo-pkg@sha256:...", v, ref, host)
		}
		// The same archive is the same manifest.
		again, err := oci.PushPackage(ctx, archive, destination+"/", oci.PushOptions{PlainHTTP: true})
		if err != nil || again != ref {
			t.Errorf("pushing %s again = %q, %v; want %q", v, again, err, ref)
		}
		archives[v], refs[v] = archive, ref
	}
	// A manifest of Annex's config without its content layer is skipped.
	pushManifest(t, host+"/charts/demo-pkg", "9.9.9",
		blob{[]byte(`{"name":"demo-pkg","operatorVersion":"9.9.9"}`), oci.MediaTypePackageConfig},
		blob{chartArchive, oci.MediaTypeHelmChart})

	cat := &v1alpha1.Catalog{Spec: v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: destination}}}}
	cat.Name = "oci"
	f := &catalog.Fetcher{}
	index, err := (&sources.Catalogs{Fetcher: f}).Index(ctx, cat)
	if err != nil {
		t.Fatal(err)
	}
	wantSkipped := `entry "demo-pkg" tag "9.9.9": manifest has 0 layers of media type ` + oci.MediaTypePackageContent
	if len(index.Skipped) != 1 || !strings.HasPrefix(index.Skipped[0], wantSkipped) {
		t.Errorf("Skipped = %q, want %q", index.Skipped, wantSkipped)
	}
	if len(index.Packages) != 2 || index.Packages[0].Name != "chart" || index.Packages[1].Name != "demo-pkg" {
		t.Fatalf("index = %s", catalogtest.Dump(index))
	}
	if v := index.Packages[0].Spec.Versions[0]; v.Engine != "" || v.Source.Digest != catalog.Digest(chartArchive) {
		t.Errorf("chart version = %+v, want engine Helm and the chart's digest", v)
	}
	demo := index.Packages[1].Spec
	if len(demo.Versions) != 2 {
		t.Fatalf("demo-pkg versions = %s", catalogtest.Dump(demo.Versions))
	}
	for _, v := range demo.Versions {
		want := catalogtest.DemoVersion(v.Version, refs[v.Version], catalog.Digest(archives[v.Version]), "oci")
		if !reflect.DeepEqual(v, want) {
			t.Errorf("version:\ngot  %s\nwant %s", catalogtest.Dump(v), catalogtest.Dump(want))
		}
		data, err := (sources.Artifacts{Fetcher: f}).FetchArtifact(ctx, v.Source)
		if err != nil {
			t.Fatalf("FetchArtifact(%s): %v", v.Source.URL, err)
		}
		if !bytes.Equal(data, archives[v.Version]) {
			t.Errorf("%s: fetched bytes differ from the pushed archive", v.Version)
		}
		if p := catalogtest.LoadPackage(t, data); p.Operator.OperatorVersion != v.Version {
			t.Errorf("%s: the fetched package is %s", v.Version, p.Operator.OperatorVersion)
		}
	}
	if demo.Description != "a demo package" || demo.Home != "https://example.com/demo" {
		t.Errorf("description %q home %q, want operator.yaml's", demo.Description, demo.Home)
	}
}

func TestPushPackageRefusals(t *testing.T) {
	host := catalogtest.NewRegistry(t)
	good, err := catalog.PackageArchive(catalogtest.DemoPackage("0.1.0"))
	if err != nil {
		t.Fatal(err)
	}
	badVersion, err := catalog.PackageArchive(catalogtest.DemoPackage("one"))
	if err != nil {
		t.Fatal(err)
	}
	chart, err := helmrepo.Archive(helmrepo.Chart{Name: "chart", Version: "1.0.0"})
	if err != nil {
		t.Fatal(err)
	}
	tests := []struct {
		name        string
		archive     []byte
		destination string
		plainHTTP   bool
		want        string
	}{
		// Plain HTTP would expose credentials beyond this machine.
		{"plain http to another host", good, "oci://registry.example.com/charts", true, "plain HTTP is only for a registry on this machine"},
		// The destination names the protocol.
		{"no oci://", good, host + "/charts", true, "the destination is oci://<registry>/<repository>"},
		// What a catalog would skip is not pushed.
		{"bad version", badVersion, "oci://" + host + "/charts", true, "operatorVersion is not semver"},
		// A chart is no package.
		{"a chart", chart, "oci://" + host + "/charts", true, "has no operator.yaml"},
		// Not an archive at all.
		{"not an archive", []byte("hello"), "oci://" + host + "/charts", true, "not gzip-compressed"},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			_, err := oci.PushPackage(context.Background(), tt.archive, tt.destination, oci.PushOptions{PlainHTTP: tt.plainHTTP})
			if err == nil || !strings.Contains(err.Error(), tt.want) {
				t.Fatalf("PushPackage() = %v, want an error containing %q", err, tt.want)
			}
		})
	}
}
