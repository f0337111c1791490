package apply

import (
	"context"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/wait"

	"github.com/annex-platform/annex/internal/apply/reqcount"
)

// TestLazyMapper asks a real API server: kinds and resources of the core
// and named groups, kinds it does not serve, a CRD's kind becoming known
// once the CRD is served, and what it costs — one request per group and
// per group version asked for, none for what it already knows.
func TestLazyMapper(t *testing.T) {
	var counter reqcount.Counter
	a, err := New(counter.Wrap(testConfig(t)))
	if err != nil {
		t.Fatal(err)
	}
	m, ok := a.Mapper.(*LazyMapper)
	if !ok {
		t.Fatalf("New's mapper is %T, want *LazyMapper", a.Mapper)
	}

	for _, tc := range []struct {
		gk         schema.GroupKind
		version    string
		resource   string
		namespaced bool
	}{
		{schema.GroupKind{Kind: "ConfigMap"}, "v1", "configmaps", true},
		{schema.GroupKind{Kind: "Namespace"}, "v1", "namespaces", false},
		{schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1", "deployments", true},
		{schema.GroupKind{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}, "v1", "clusterroles", false},
	} {
		mapping, err := m.RESTMapping(tc.gk)
		if err != nil {
			t.Fatalf("RESTMapping(%v): %v", tc.gk, err)
		}
		if mapping.GroupVersionKind.Version != tc.version || mapping.Resource.Resource != tc.resource ||
			(mapping.Scope.Name() == meta.RESTScopeNameNamespace) != tc.namespaced {
			t.Errorf("RESTMapping(%v) = %v %v %s, want version %s, resource %s, namespaced %v",
				tc.gk, mapping.GroupVersionKind, mapping.Resource, mapping.Scope.Name(), tc.version, tc.resource, tc.namespaced)
		}
	}

	// What is known costs no request.
	before := counter.Snapshot()
	for range 100 {
		if _, err := m.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1"); err != nil {
			t.Fatal(err)
		}
	}
	if got := counter.Snapshot().Sub(before).Total; got != 0 {
		t.Errorf("100 lookups of a known kind sent %d requests, want 0", got)
	}

	// Resources by plural and singular name; every served version.
	if gvk, err := m.KindFor(schema.GroupVersionResource{Group: "apps", Resource: "deployments"}); err != nil || gvk.Kind != "Deployment" || gvk.Version != "v1" {
		t.Errorf("KindFor(apps deployments) = %v, %v", gvk, err)
	}
	if gvr, err := m.ResourceFor(schema.GroupVersionResource{Resource: "configmap"}); err != nil || gvr.Resource != "configmaps" {
		t.Errorf("ResourceFor(configmap) = %v, %v", gvr, err)
	}
	if s, err := m.ResourceSingularizer("configmaps"); err != nil || s != "configmap" {
		t.Errorf("ResourceSingularizer(configmaps) = %q, %v", s, err)
	}
	hpa, err := m.RESTMappings(schema.GroupKind{Group: "autoscaling", Kind: "HorizontalPodAutoscaler"})
	if err != nil || len(hpa) != 2 || hpa[0].GroupVersionKind.Version != "v2" {
		t.Errorf("RESTMappings(HorizontalPodAutoscaler) = %v, %v; want v2 (preferred) and v1", hpa, err)
	}

	// Kinds not served are no-match errors, for a group served or not.
	for _, gk := range []schema.GroupKind{{Group: "apps", Kind: "Nothing"}, {Group: "nothing.example.com", Kind: "Thing"}} {
		if _, err := m.RESTMapping(gk); !meta.IsNoMatchError(err) {
			t.Errorf("RESTMapping(%v) = %v, want a no-match error", gk, err)
		}
	}
	if _, err := m.KindFor(schema.GroupVersionResource{Group: "apps", Resource: "nothings"}); !meta.IsNoMatchError(err) {
		t.Errorf("KindFor(apps nothings) = %v, want a no-match error", err)
	}

	// A kind asked for before its CRD exists is found once it is served.
	group := "lazymapper.annex.test"
	greeting := schema.GroupKind{Group: group, Kind: "Greeting"}
	if _, err := m.RESTMapping(greeting); !meta.IsNoMatchError(err) {
		t.Fatalf("RESTMapping(%v) before its CRD = %v, want a no-match error", greeting, err)
	}
	if err := a.Client.Create(t.Context(), mustObject(t, crdDoc(group))); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = a.Client.Delete(context.Background(), mustObject(t, crdDoc(group))) })
	err = wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(context.Context) (bool, error) {
		mapping, err := m.RESTMapping(greeting)
		if meta.IsNoMatchError(err) {
			return false, nil
		}
		if err == nil && (mapping.Resource.Resource != "greetings" || mapping.Scope.Name() != meta.RESTScopeNameNamespace) {
			t.Errorf("RESTMapping(%v) = %v %s", greeting, mapping.Resource, mapping.Scope.Name())
		}
		return err == nil, err
	})
	if err != nil {
		t.Fatalf("the CRD's kind never became known: %v", err)
	}

	// What it keeps is what was asked for: a few group versions, not
	// every one the server serves.
	m.mu.RLock()
	kept := len(m.versions)
	m.mu.RUnlock()
	if kept > 8 {
		t.Errorf("the mapper keeps %d group versions, want only the ones asked for (≤ 8)", kept)
	}
}
