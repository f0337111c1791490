package apply

import (
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
)

// An object that asks cert-manager to inject its CA is not healthy while
// a caBundle it needs is empty: the API server cannot trust its server.
func TestCABundleAwaited(t *testing.T) {
	object := func(apiVersion, kind, name string, injected bool, fields map[string]any) *unstructured.Unstructured {
		obj := &unstructured.Unstructured{Object: fields}
		obj.SetAPIVersion(apiVersion)
		obj.SetKind(kind)
		obj.SetName(name)
		if injected {
			obj.SetAnnotations(map[string]string{annotationInjectCAFrom: "operators/gadget-webhook-cert"})
		}
		return obj
	}
	hook := func(ca string) map[string]any {
		cc := map[string]any{"service": map[string]any{"namespace": "operators", "name": "gadget-webhook"}}
		if ca != "" {
			cc["caBundle"] = ca
		}
		return map[string]any{"name": "v.gadgets.example.com", "clientConfig": cc}
	}
	webhooks := func(injected bool, cas ...string) *unstructured.Unstructured {
		var hooks []any
		for _, ca := range cas {
			hooks = append(hooks, hook(ca))
		}
		return object("admissionregistration.k8s.io/v1", "ValidatingWebhookConfiguration", "gadgets", injected, map[string]any{"webhooks": hooks})
	}
	crd := func(strategy, ca string) *unstructured.Unstructured {
		conversion := map[string]any{"strategy": strategy}
		if strategy == "Webhook" {
			cc := map[string]any{"service": map[string]any{"namespace": "operators", "name": "gadget-webhook"}}
			if ca != "" {
				cc["caBundle"] = ca
			}
			conversion["webhook"] = map[string]any{"clientConfig": cc}
		}
		return object("apiextensions.k8s.io/v1", "CustomResourceDefinition", "gadgets.example.com", true, map[string]any{"spec": map[string]any{"conversion": conversion}})
	}
	apiService := func(ca string) *unstructured.Unstructured {
		spec := map[string]any{"service": map[string]any{"namespace": "operators", "name": "usage"}}
		if ca != "" {
			spec["caBundle"] = ca
		}
		return object("apiregistration.k8s.io/v1", "APIService", "v1alpha1.usage.example.com", true, map[string]any{"spec": spec})
	}
	const tail = " is empty), so the API server cannot trust its server yet; check that cert-manager's cainjector runs and that the Certificate is Ready"
	for _, tc := range []struct {
		name string
		obj  *unstructured.Unstructured
		want string
	}{
		{"no injection asked, caBundle empty", webhooks(false, ""), ""},
		{"injected", webhooks(true, "Q0E=", "Q0E="), ""},
		{"one webhook not injected yet", webhooks(true, "Q0E=", ""),
			"ValidatingWebhookConfiguration gadgets waits for cert-manager to inject the CA of Certificate operators/gadget-webhook-cert (cert-manager.io/inject-ca-from: webhooks[1].clientConfig.caBundle" + tail},
		{"a CRD without a conversion webhook", crd("None", ""), ""},
		{"a converted CRD injected", crd("Webhook", "Q0E="), ""},
		{"a converted CRD not injected yet", crd("Webhook", ""),
			"CustomResourceDefinition gadgets.example.com waits for cert-manager to inject the CA of Certificate operators/gadget-webhook-cert (cert-manager.io/inject-ca-from: spec.conversion.webhook.clientConfig.caBundle" + tail},
		{"an APIService injected", apiService("Q0E="), ""},
		{"an APIService not injected yet", apiService(""),
			"APIService v1alpha1.usage.example.com waits for cert-manager to inject the CA of Certificate operators/gadget-webhook-cert (cert-manager.io/inject-ca-from: spec.caBundle" + tail},
		{"a ConfigMap", object("v1", "ConfigMap", "x", true, map[string]any{}), ""},
	} {
		if got := caBundleAwaited(tc.obj); got != tc.want {
			t.Errorf("%s:\n got %q\nwant %q", tc.name, got, tc.want)
		}
	}
}
