package helm_test

import (
	"fmt"
	"os"
	"path/filepath"
	"strings"
	"testing"

	helmrepo "helm.sh/helm/v4/pkg/repo/v1"

	"github.com/annex-platform/annex/internal/catalog/catalogtest"
	"github.com/annex-platform/annex/internal/catalog/helm"
)

// syntheticIndex writes an index.yaml of charts × versions entries with the
// fields public repositories carry (maintainers, sources, dependencies,
// Artifact Hub annotations, created, digest), the way `helm repo index`
// lays it out.
func syntheticIndex(charts, versions int) []byte {
	var sb strings.Builder
	sb.WriteString("apiVersion: v1\nentries:\n")
	for c := range charts {
		name := fmt.Sprintf("chart-%03d", c)
		fmt.Fprintf(&sb, "  %s:\n", name)
		for v := versions - 1; v >= 0; v-- {
			ver := fmt.Sprintf("%d.%d.%d", 1+v/20, v%20, c%3)
			fmt.Fprintf(&sb, `  - annotations:
      annex.dev/dependencies: |
        - name: cert-manager
          version: ">=1.14.0"
      artifacthub.io/changes: |
        - kind: changed
          description: Bump the application to %[2]s
        - kind: fixed
          description: "Probe timeouts are configurable (#%[3]d)"
      artifacthub.io/license: Apache-2.0
      artifacthub.io/links: |
        - name: Chart Source
          url: https://github.com/example/charts/tree/main/charts/%[1]s
    apiVersion: v2
    appVersion: %[2]s
    created: "2024-03-%02[4]dT10:%02[5]d:00.000000000Z"
    dependencies:
    - condition: redis.enabled
      name: redis
      repository: https://charts.example.com/common
      version: 18.x.x
    description: %[1]s deploys the example application %[1]s with sensible defaults
      for production, metrics and a hardened security context.
    digest: %064[6]x
    home: https://example.com/%[1]s
    icon: https://example.com/%[1]s/logo.png
    keywords:
    - example
    - %[1]s
    - web
    kubeVersion: '>=1.25.0-0'
    maintainers:
    - email: team@example.com
      name: Example Team
    name: %[1]s
    sources:
    - https://github.com/example/%[1]s
    type: application
    urls:
    - https://charts.example.com/%[1]s-%[2]s.tgz
    version: %[2]s
`, name, ver, c*100+v, 1+v%28, v%60, c*1000+v)
		}
	}
	sb.WriteString("generated: \"2024-03-31T00:00:00Z\"\n")
	return []byte(sb.String())
}

// BenchmarkIngestIndex compares turning an index.yaml into Extension specs
// (helm.ParseIndex) with Helm's own loader (repo.LoadIndexFile) on
// the same bytes: 250 charts × 60 versions (named 15MiB, the size it aims
// at; with these realistic entries it is 20.5 MB) and 420 × 120
// (named 50MiB; 69 MB).
// Besides ns/op and B/op it reports peak-heap-MiB, the highest live heap
// seen during one extra, untimed operation, above the heap before it.
func BenchmarkIngestIndex(b *testing.B) {
	for _, size := range []struct {
		name             string
		charts, versions int
	}{{"15MiB", 250, 60}, {"50MiB", 420, 120}} {
		data := syntheticIndex(size.charts, size.versions)
		path := filepath.Join(b.TempDir(), "index.yaml")
		if err := os.WriteFile(path, data, 0o600); err != nil {
			b.Fatal(err)
		}
		wantVersions := size.charts * size.versions
		// Both read the file, as Helm's loader only takes a path.
		annex := func() error {
			data, err := os.ReadFile(path)
			if err != nil {
				return err
			}
			index, err := helm.ParseIndex(data, "https://charts.example.com", "example")
			if err != nil {
				return err
			}
			n := 0
			for _, p := range index.Packages {
				n += len(p.Spec.Versions)
			}
			if n != wantVersions || len(index.Skipped) > 0 {
				return fmt.Errorf("got %d versions, skipped %v", n, index.Skipped)
			}
			return nil
		}
		helm := func() error {
			index, err := helmrepo.LoadIndexFile(path)
			if err != nil {
				return err
			}
			n := 0
			for _, vs := range index.Entries {
				n += len(vs)
			}
			if n != wantVersions {
				return fmt.Errorf("got %d versions", n)
			}
			return nil
		}
		for _, impl := range []struct {
			name string
			run  func() error
		}{{"annex", annex}, {"helm", helm}} {
			b.Run(impl.name+"/"+size.name, func(b *testing.B) {
				b.SetBytes(int64(len(data)))
				b.ReportAllocs()
				for b.Loop() {
					if err := impl.run(); err != nil {
						b.Fatal(err)
					}
				}
				b.StopTimer()
				peak, err := catalogtest.PeakHeap(impl.run)
				if err != nil {
					b.Fatal(err)
				}
				b.ReportMetric(float64(peak)/(1<<20), "peak-heap-MiB")
			})
		}
	}
}
