package catalog_test

import (
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/name"
	"github.com/google/go-containerregistry/pkg/registry"
	v1 "github.com/google/go-containerregistry/pkg/v1"
	"github.com/google/go-containerregistry/pkg/v1/remote"
	"github.com/google/go-containerregistry/pkg/v1/static"
	"github.com/google/go-containerregistry/pkg/v1/types"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/catalog/oci"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// rawManifest is an OCI manifest pushed as written.
type rawManifest struct{ raw []byte }

func (m rawManifest) RawManifest() ([]byte, error)        { return m.raw, nil }
func (m rawManifest) MediaType() (types.MediaType, error) { return types.OCIManifestSchema1, nil }

// pushChart stores c in an OCI registry as `helm push` does: a config blob
// holding Chart.yaml as JSON, one chart layer, tagged with the version.
func pushChart(t *testing.T, registryHost, repository string, c helmrepo.Chart) {
	t.Helper()
	archive, err := helmrepo.Archive(c)
	if err != nil {
		t.Fatal(err)
	}
	config, err := json.Marshal(map[string]any{"apiVersion": "v2", "name": c.Name, "version": c.Version, "description": c.Description})
	if err != nil {
		t.Fatal(err)
	}
	repo, err := name.NewRepository(registryHost + "/" + repository + "/" + c.Name)
	if err != nil {
		t.Fatal(err)
	}
	var descs []v1.Descriptor
	for _, blob := range []struct {
		data []byte
		mt   types.MediaType
	}{{config, oci.MediaTypeHelmConfig}, {archive, oci.MediaTypeHelmChart}} {
		layer := static.NewLayer(blob.data, blob.mt)
		if err := remote.WriteLayer(repo, layer); err != nil {
			t.Fatal(err)
		}
		digest, _ := layer.Digest()
		descs = append(descs, v1.Descriptor{MediaType: blob.mt, Digest: digest, Size: int64(len(blob.data))})
	}
	manifest, err := json.Marshal(map[string]any{
		"schemaVersion": 2, "mediaType": string(types.OCIManifestSchema1),
		"config": descs[0], "layers": []v1.Descriptor{descs[1]},
	})
	if err != nil {
		t.Fatal(err)
	}
	if err := remote.Put(repo.Tag(strings.ReplaceAll(c.Version, "+", "_")), rawManifest{manifest}); err != nil {
		t.Fatal(err)
	}
}

// TestInstallFromEachSourceKind installs one extension from a Helm
// repository, an OCI registry, a directory (a chart folder and a packed
// archive) and the built-in catalog, each to Ready.
func TestInstallFromEachSourceKind(t *testing.T) {
	ns := namespace(t)

	repo := helmrepo.NewServer(t, configChart("kind-helm", "1.0.0", "helm"))
	createCatalog(t, "kinds-helm", v1alpha1.CatalogSource{Helm: &v1alpha1.HelmSource{URL: repo.URL()}})

	reg := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(reg.Close)
	host := strings.TrimPrefix(reg.URL, "http://")
	pushChart(t, host, "charts", configChart("kind-oci", "1.0.0", "oci"))
	pushChart(t, host, "charts", configChart("kind-oci", "1.1.0+build.1", "oci"))
	createCatalog(t, "kinds-oci", v1alpha1.CatalogSource{OCI: &v1alpha1.OCISource{Repository: "oci://" + host + "/charts"}})

	dir := t.TempDir()
	packed, err := helmrepo.Archive(configChart("kind-tgz", "1.0.0", "directory archive"))
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(filepath.Join(dir, "kind-tgz-1.0.0.tgz"), packed, 0o600); err != nil {
		t.Fatal(err)
	}
	folder := filepath.Join(dir, "kind-dir")
	for p, content := range map[string]string{
		"Chart.yaml":        "apiVersion: v2\nname: kind-dir\nversion: 2.0.0\n",
		"values.yaml":       "from: directory folder\n",
		"templates/cm.yaml": configChart("", "", "").Files["templates/cm.yaml"],
	} {
		if err := os.MkdirAll(filepath.Dir(filepath.Join(folder, p)), 0o700); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(filepath.Join(folder, p), []byte(content), 0o600); err != nil {
			t.Fatal(err)
		}
	}
	// A symbolic link in the folder is skipped, never followed.
	if err := os.Symlink("/etc", filepath.Join(dir, "escape")); err != nil {
		t.Fatal(err)
	}
	createCatalog(t, "kinds-directory", v1alpha1.CatalogSource{Directory: &v1alpha1.DirectorySource{Path: dir}})
	createCatalog(t, "kinds-builtin", v1alpha1.CatalogSource{Builtin: &v1alpha1.BuiltinSource{}})

	for _, c := range []string{"kinds-helm", "kinds-oci", "kinds-directory", "kinds-builtin"} {
		waitCatalogReady(t, c)
	}
	ext, err := getExtension("kind-oci")
	if err != nil {
		t.Fatal(err)
	}
	if v := ext.Spec.Versions[0]; v.Version != "1.1.0+build.1" || !strings.HasPrefix(v.Source.URL, "oci://"+host+"/charts/kind-oci@sha256:") || v.Source.Digest == "" {
		t.Fatalf("OCI version %+v: want 1.1.0+build.1 by manifest digest, with the layer digest", v)
	}
	dirCat := waitCatalogReady(t, "kinds-directory")
	if dirCat.Status.SkippedEntries != 1 || !strings.Contains(meta0(dirCat).Message, "escape: is a symbolic link") {
		t.Fatalf("directory catalog: skipped %d, %q; want the symbolic link skipped", dirCat.Status.SkippedEntries, meta0(dirCat).Message)
	}

	for ext, from := range map[string]string{"kind-helm": "helm", "kind-oci": "oci", "kind-tgz": "directory archive", "kind-dir": "directory folder"} {
		installReady(t, ns, ext, ext, "")
		if got := configMapFrom(t, ns, ext); got != from {
			t.Errorf("%s: ConfigMap from %q, want %q", ext, got, from)
		}
	}
	// The test API server has no nodes: the demo's greeter runs no pods.
	installReady(t, ns, "hello", "hello", `{"replicas":0}`)
	_ = context.Background()
}

func meta0(cat *v1alpha1.Catalog) metav1.Condition {
	for _, c := range cat.Status.Conditions {
		if c.Type == v1alpha1.ConditionReady {
			return c
		}
	}
	return metav1.Condition{}
}
