package bundle

import (
	"bytes"
	"flag"
	"fmt"
	"io/fs"
	"os"
	"path/filepath"
	"strings"
	"testing"

	"sigs.k8s.io/yaml"

	"github.com/annex-platform/annex/internal/gate"
	"github.com/annex-platform/annex/internal/plan"
)

// update rewrites the golden files of this package's tests instead of
// comparing against them: go test ./internal/engine/bundle -update.
var update = flag.Bool("update", false, "rewrite golden files")

// checkGoldenFile compares got with the file at path (below testdata/),
// or rewrites it under -update.
func checkGoldenFile(t *testing.T, path string, got []byte) {
	t.Helper()
	path = filepath.Join("testdata", path)
	if *update {
		if err := os.MkdirAll(filepath.Dir(path), 0o755); err != nil {
			t.Fatal(err)
		}
		if err := os.WriteFile(path, got, 0o644); err != nil {
			t.Fatal(err)
		}
		return
	}
	want, err := os.ReadFile(path)
	if err != nil {
		t.Fatalf("%v (run go test ./internal/engine/bundle -update to create it)", err)
	}
	if !bytes.Equal(got, want) {
		t.Errorf("%s differs from the output; review and run with -update if the change is right.\n--- got\n%s", path, got)
	}
}

// fixtureFiles reads testdata/bundles/<name> as Load takes it.
func fixtureFiles(t *testing.T, name string) map[string][]byte {
	t.Helper()
	root := filepath.Join("testdata", "bundles", name)
	files := map[string][]byte{}
	err := fs.WalkDir(os.DirFS(root), ".", func(p string, d fs.DirEntry, err error) error {
		if err != nil || d.IsDir() {
			return err
		}
		files[p], err = os.ReadFile(filepath.Join(root, p))
		return err
	})
	if err != nil {
		t.Fatal(err)
	}
	return files
}

func loadFixture(t *testing.T, name string) *Bundle {
	t.Helper()
	b, err := Load(fixtureFiles(t, name))
	if err != nil {
		t.Fatal(err)
	}
	return b
}

// dumpPlan prints a plan as YAML documents, each step under a header.
func dumpPlan(t *testing.T, p plan.Plan, o Options) []byte {
	t.Helper()
	var buf bytes.Buffer
	fmt.Fprintf(&buf, "# plan %s (%s), install namespace %s, watch namespaces %q, mode %s\n",
		p.Name, p.Strategy, o.InstallNamespace, o.WatchNamespaces, InstallModeFor(o.InstallNamespace, o.WatchNamespaces))
	for _, ph := range p.Phases {
		for _, st := range ph.Steps {
			for _, task := range st.Tasks {
				fmt.Fprintf(&buf, "# phase %s (%s), step %s, task %s (%s): %d objects\n", ph.Name, ph.Strategy, st.Name, task.Name, task.Kind, len(task.Objects))
				for _, obj := range task.Objects {
					out, err := yaml.Marshal(obj.Object)
					if err != nil {
						t.Fatal(err)
					}
					buf.WriteString("---\n")
					buf.Write(out)
				}
			}
		}
	}
	grants, err := yaml.Marshal(gate.Derive(p.Objects(plan.TaskApply), o.InstallNamespace))
	if err != nil {
		t.Fatal(err)
	}
	buf.WriteString("# gate.Derive(the plan's objects):\n")
	for line := range strings.Lines(string(grants)) {
		buf.WriteString("#   " + line)
	}
	return buf.Bytes()
}

// TestConvertGolden renders the fixture bundle in every install mode.
func TestConvertGolden(t *testing.T) {
	modes := []struct {
		name  string
		watch []string
	}{
		{"all", nil},
		{"own", []string{"operators"}},
		{"single", []string{"team-a"}},
		// Unsorted and with a duplicate: the plan is the same as for the sorted set.
		{"multi", []string{"team-b", "team-a", "team-b"}},
		// spec.resources: the last step, defaulted into the install namespace.
		{"own-resources", []string{"operators"}},
	}
	for _, bundleName := range []string{"memcached-operator"} {
		b := loadFixture(t, bundleName)
		for _, m := range modes {
			t.Run(bundleName+"-"+m.name, func(t *testing.T) {
				o := Options{InstallNamespace: "operators", WatchNamespaces: m.watch, Name: "memcached"}
				if strings.HasSuffix(m.name, "-resources") {
					ready := memcachedResource("cache.example.com/v1alpha1", "Memcached", "", "cache")
					ready.ReadyCondition = "Available"
					o.Resources = []Resource{ready, memcachedResource("cache.example.com/v1alpha1", "Memcached", "operators", "sessions")}
				}
				p, err := Convert(b, o)
				if err != nil {
					t.Fatal(err)
				}
				checkGoldenFile(t, filepath.Join("golden", bundleName+"-"+m.name+".yaml"), dumpPlan(t, p, o))
			})
		}
	}
}
