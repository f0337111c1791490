// Package catalogtest holds what the tests of the catalog packages share:
// a fixed Catalog and Secret lookup, hand-made archives (including the
// hostile ones the writers refuse to produce), a small KUDO package, an
// in-process OCI registry and a heap sampler for the ingest benchmarks.
package catalogtest

import (
	"archive/tar"
	"bytes"
	"compress/gzip"
	"context"
	"encoding/json"
	"io"
	"log"
	"net/http/httptest"
	"os"
	"path/filepath"
	"runtime"
	"runtime/metrics"
	"strings"
	"sync"
	"testing"
	"time"

	"github.com/google/go-containerregistry/pkg/registry"
	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
	enginepkg "github.com/annex-platform/annex/internal/engine/pkg"
)

// Lookup is a catalog.CatalogLookup over fixed objects; Secrets are keyed
// "<namespace>/<name>".
type Lookup struct {
	Catalogs   map[string]*v1alpha1.Catalog
	Secrets    map[string]map[string][]byte
	ConfigMaps map[string]map[string]string
}

// ConfigMap returns the data of ConfigMap ns/name, NotFound when there is
// none.
func (l Lookup) ConfigMap(_ context.Context, ns, name string) (map[string]string, error) {
	data, ok := l.ConfigMaps[ns+"/"+name]
	if !ok {
		return nil, apierrors.NewNotFound(schema.GroupResource{Resource: "configmaps"}, name)
	}
	return data, nil
}

// Catalog returns the named Catalog, nil when there is none.
func (l Lookup) Catalog(_ context.Context, name string) (*v1alpha1.Catalog, error) {
	return l.Catalogs[name], nil
}

// Secret returns the data of the referenced Secret.
func (l Lookup) Secret(_ context.Context, ref v1alpha1.SecretReference) (map[string][]byte, error) {
	return l.Secrets[ref.Namespace+"/"+ref.Name], nil
}

// ChartYAML is the Chart.yaml of a minimal chart "demo" 1.0.0.
const ChartYAML = "apiVersion: v2\nname: demo\nversion: 1.0.0\n"

// TarEntry is one entry of a hand-made archive; hostile archives need
// headers catalog.ChartArchive refuses to write.
type TarEntry struct {
	Hdr  tar.Header
	Body []byte
}

// File is a regular file entry.
func File(name, body string) TarEntry {
	return TarEntry{Hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(len(body))}, Body: []byte(body)}
}

// Zeros is a regular file entry of n zero bytes.
func Zeros(name string, n int) TarEntry {
	return TarEntry{Hdr: tar.Header{Name: name, Typeflag: tar.TypeReg, Mode: 0o644, Size: int64(n)}, Body: make([]byte, n)}
}

// TGZ writes the entries, in order and as given, as a .tgz.
func TGZ(t testing.TB, entries ...TarEntry) []byte {
	t.Helper()
	var buf bytes.Buffer
	zw := gzip.NewWriter(&buf)
	tw := tar.NewWriter(zw)
	for _, e := range entries {
		if err := tw.WriteHeader(&e.Hdr); err != nil {
			t.Fatal(err)
		}
		if _, err := tw.Write(e.Body); err != nil {
			t.Fatal(err)
		}
	}
	if err := tw.Close(); err != nil {
		t.Fatal(err)
	}
	if err := zw.Close(); err != nil {
		t.Fatal(err)
	}
	return buf.Bytes()
}

// Dump shows a value as indented JSON in test failures.
func Dump(v any) string {
	b, err := json.MarshalIndent(v, "", "  ")
	if err != nil {
		return err.Error()
	}
	return string(b)
}

// DemoPackage returns the files of a small package at operatorVersion v.
func DemoPackage(v string) map[string][]byte {
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

// DemoVersion is the ExtensionVersion a catalog makes of DemoPackage(v).
func DemoVersion(v, url, digest, catalogName string) v1alpha1.ExtensionVersion {
	return v1alpha1.ExtensionVersion{
		Version:     v,
		AppVersion:  "5.10",
		KubeVersion: ">=1.29.0",
		Engine:      v1alpha1.EnginePackage,
		Extends:     &v1alpha1.Dependency{Name: "demo-base", Version: ">=1.0.0"},
		Source:      v1alpha1.ArtifactSource{Catalog: catalogName, URL: url, Digest: digest},
	}
}

// WriteFiles writes files (slash-separated paths) below dir.
func WriteFiles(t *testing.T, dir string, files map[string][]byte) {
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

// LoadPackage reads an archive as the package engine does.
func LoadPackage(t *testing.T, archive []byte) *enginepkg.Package {
	t.Helper()
	p, err := enginepkg.LoadArchive(archive)
	if err != nil {
		t.Fatalf("the package engine cannot read the archive: %v", err)
	}
	return p
}

// NewRegistry starts an in-process OCI registry and returns its host.
func NewRegistry(t testing.TB) string {
	t.Helper()
	srv := httptest.NewServer(registry.New(registry.Logger(log.New(io.Discard, "", 0))))
	t.Cleanup(srv.Close)
	return strings.TrimPrefix(srv.URL, "http://")
}

// PeakHeap runs f once and returns the highest heap object bytes sampled
// while it ran, minus those before it.
func PeakHeap(f func() error) (uint64, error) {
	runtime.GC()
	sample := []metrics.Sample{{Name: "/memory/classes/heap/objects:bytes"}}
	read := func() uint64 {
		metrics.Read(sample)
		return sample[0].Value.Uint64()
	}
	base := read()
	peak := base
	stop := make(chan struct{})
	var wg sync.WaitGroup
	wg.Go(func() {
		tick := time.NewTicker(200 * time.Microsecond)
		defer tick.Stop()
		for {
			peak = max(peak, read())
			select {
			case <-stop:
				return
			case <-tick.C:
			}
		}
	})
	err := f()
	last := read()
	close(stop)
	wg.Wait()
	return max(peak, last) - base, err
}
