package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An APIService is served by the Service it names, and says in its
// Available condition whether its server answers as it must.
func TestAPIServiceHealth(t *testing.T) {
	apiService := func(service string, conditions ...map[string]any) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: map[string]any{"spec": map[string]any{"group": "metrics.example.com", "version": "v1alpha1"}}}
		obj.SetAPIVersion("apiregistration.k8s.io/v1")
		obj.SetKind("APIService")
		obj.SetName("v1alpha1.metrics.example.com")
		if service != "" {
			_ = unstructured.SetNestedMap(obj.Object, map[string]any{"namespace": "operators", "name": service, "port": int64(443)}, "spec", "service")
		}
		if len(conditions) > 0 {
			list := make([]any, len(conditions))
			for i, c := range conditions {
				list[i] = c
			}
			_ = unstructured.SetNestedSlice(obj.Object, list, "status", "conditions")
		}
		return obj
	}
	unavailable := map[string]any{"type": "Available", "status": "False", "reason": "FailedDiscoveryCheck", "message": "failing or missing response from https://10.0.0.1:443/apis/metrics.example.com/v1alpha1"}
	available := map[string]any{"type": "Available", "status": "True", "reason": "Passed"}

	if !webhookKinds[apiServiceGroupKind] {
		t.Error("APIServices are not applied last and deleted first")
	}
	svcs := webhookServices(apiService("metrics-server"))
	if len(svcs) != 1 || svcs[0].namespace != "operators" || svcs[0].name != "metrics-server" ||
		svcs[0].what != "APIService v1alpha1.metrics.example.com" || svcs[0].effect != "metrics.example.com/v1alpha1 cannot be served or discovered" {
		t.Errorf("webhookServices = %+v", svcs)
	}
	if svcs := webhookServices(apiService("")); len(svcs) != 0 {
		t.Errorf("a local APIService (served by the API server) calls %+v", svcs)
	}
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"not judged yet", apiService("metrics-server"), ""},
		{"available", apiService("metrics-server", available), ""},
		{"local", apiService("", unavailable), ""},
		{"unavailable", apiService("metrics-server", unavailable),
			"APIService v1alpha1.metrics.example.com is not Available (FailedDiscoveryCheck: failing or missing response from https://10.0.0.1:443/apis/metrics.example.com/v1alpha1); see the aggregated API server's logs"},
	} {
		if got := apiServiceUnavailable(tc.obj); got != tc.want {
			t.Errorf("%s: %q, want %q", tc.name, got, tc.want)
		}
	}
	if got := apiServiceUnavailable(&unstructured.Unstructured{Object: map[string]any{"apiVersion": "v1", "kind": "ConfigMap"}}); got != "" {
		t.Errorf("a ConfigMap: %q", got)
	}
}
