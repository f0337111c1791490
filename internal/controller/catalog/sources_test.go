package catalog_test

import (
	"context"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"github.com/google/go-containerregistry/pkg/registry"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

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
	helmrepo.PushOCI(t, host, "charts", configChart("kind-oci", "1.0.0", "oci"))
	helmrepo.PushOCI(t, host, "charts", configChart("kind-oci", "1.1.0+build.1", "oci"))
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
