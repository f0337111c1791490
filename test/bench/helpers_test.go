package bench

import (
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/annex-platform/annex/internal/engine/helm"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// The chart Annex and Helm install must render what the plain client
// creates, or the comparison is unfair.
func TestChartRendersAppObjects(t *testing.T) {
	archive, err := helmrepo.Archive(benchChart())
	if err != nil {
		t.Fatal(err)
	}
	out, err := helm.Render(helm.Input{Archive: archive, Name: "app-7", Namespace: "bench"})
	if err != nil {
		t.Fatal(err)
	}
	rendered := map[string]map[string]any{}
	for _, o := range out.Objects {
		rendered[o.GetKind()+"/"+o.GetName()] = o.Object
	}
	want := appObjects("bench", 7)
	if len(rendered) != len(want) {
		t.Fatalf("chart renders %d objects, the plain client creates %d", len(rendered), len(want))
	}
	for _, o := range want {
		key := o.GetObjectKind().GroupVersionKind().Kind + "/" + o.GetName()
		got, ok := rendered[key]
		if !ok {
			t.Errorf("chart does not render %s", key)
			continue
		}
		m, err := runtime.DefaultUnstructuredConverter.ToUnstructured(o)
		if err != nil {
			t.Fatal(err)
		}
		// The typed object carries zero timestamps and an empty status
		// that a chart never writes; compare what both set.
		for _, field := range []string{"spec"} {
			wantField, gotField := normalize(t, m[field]), normalize(t, got[field])
			if !equality.Semantic.DeepEqual(wantField, gotField) {
				t.Errorf("%s.%s: chart renders %v, plain client sends %v", key, field, gotField, wantField)
			}
		}
		gotLabels := got["metadata"].(map[string]any)["labels"]
		if !equality.Semantic.DeepEqual(normalize(t, m["metadata"].(map[string]any)["labels"]), normalize(t, gotLabels)) {
			t.Errorf("%s: labels differ: chart %v, plain client %v", key, gotLabels, o.GetLabels())
		}
	}
}

// normalize drops the zero creationTimestamp of typed pod templates and
// turns every number into int64, as JSON round trips differ in both.
func normalize(t *testing.T, v any) any {
	t.Helper()
	switch x := v.(type) {
	case map[string]any:
		out := map[string]any{}
		for k, e := range x {
			if k == "creationTimestamp" && e == nil {
				continue
			}
			if k == "resources" || k == "strategy" {
				if m, ok := e.(map[string]any); ok && len(m) == 0 {
					continue
				}
			}
			out[k] = normalize(t, e)
		}
		return out
	case []any:
		out := make([]any, len(x))
		for i, e := range x {
			out[i] = normalize(t, e)
		}
		return out
	case float64:
		return int64(x)
	case int32:
		return int64(x)
	case int:
		return int64(x)
	default:
		return v
	}
}

func TestParseProcStatus(t *testing.T) {
	status := []byte("Name:\tannex\nState:\tS (sleeping)\nVmHWM:\t  123456 kB\nVmRSS:\t   98765 kB\nThreads:\t12\n")
	got := parseProcStatus(status)
	for _, tc := range []struct {
		key  string
		want uint64
	}{
		// Fields in kB are read as KiB.
		{"VmHWM", 123456},
		{"VmRSS", 98765},
		// Fields without a unit are left out.
		{"Threads", 0},
	} {
		if got[tc.key] != tc.want {
			t.Errorf("%s = %d, want %d", tc.key, got[tc.key], tc.want)
		}
	}
}

func TestParseProcCPU(t *testing.T) {
	for _, tc := range []struct {
		name string
		stat string
		want time.Duration
		err  bool
	}{
		// utime 150 + stime 50 ticks of 10 ms.
		{"plain", "42 (annex) S 1 42 42 0 -1 4194560 100 0 0 0 150 50 0 0 20 0 12 0", 2 * time.Second, false},
		// A command name with spaces and parentheses does not shift the fields.
		{"odd name", "42 (a (b) c) S 1 42 42 0 -1 4194560 100 0 0 0 7 3 0 0 20 0 12 0", 100 * time.Millisecond, false},
		// A truncated line is an error, not zero.
		{"truncated", "42 (annex) S 1 42", 0, true},
	} {
		got, err := parseProcCPU([]byte(tc.stat))
		if (err != nil) != tc.err || got != tc.want {
			t.Errorf("%s: got %v, %v; want %v, error %v", tc.name, got, err, tc.want, tc.err)
		}
	}
}

func TestProcParent(t *testing.T) {
	for _, tc := range []struct {
		name, stat string
		comm       string
		ppid       int
		ok         bool
	}{
		{"plain", "42 (kube-apiserver) S 7 42 42 0", "kube-apiserver", 7, true},
		{"odd name", "42 (a (b) c) S 9 42 42 0", "a (b) c", 9, true},
		{"truncated", "42 (etcd) S", "", 0, false},
		{"no name", "42 etcd S 7", "", 0, false},
	} {
		comm, ppid, ok := procParent([]byte(tc.stat))
		if comm != tc.comm || ppid != tc.ppid || ok != tc.ok {
			t.Errorf("%s: got %q, %d, %v; want %q, %d, %v", tc.name, comm, ppid, ok, tc.comm, tc.ppid, tc.ok)
		}
	}
}

func TestResourceOf(t *testing.T) {
	for _, tc := range []struct{ path, want string }{
		// A namespaced object of a core kind.
		{"/api/v1/namespaces/bench/services/app-1", "services"},
		// A namespaced collection of a grouped kind.
		{"/apis/apps/v1/namespaces/bench/deployments", "deployments"},
		// A subresource.
		{"/apis/annex.dev/v1alpha1/namespaces/bench/extensioninstallations/app-1/status", "extensioninstallations/status"},
		// A cluster-scoped object.
		{"/apis/annex.dev/v1alpha1/catalogs/bench", "catalogs"},
		// A namespace itself.
		{"/api/v1/namespaces/bench", "namespaces"},
		// Discovery stays whole.
		{"/apis", "/apis"},
		{"/api/v1", "/api/v1"},
	} {
		if got := resourceOf(tc.path); got != tc.want {
			t.Errorf("resourceOf(%q) = %q, want %q", tc.path, got, tc.want)
		}
	}
}
