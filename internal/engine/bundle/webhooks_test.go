package bundle

import (
	"encoding/base64"
	"reflect"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/internal/plan"
)

// webhookFixture is the memcached fixture with a validating and a
// conversion webhook served by its manager Deployment on port 9443.
func webhookFixture(t *testing.T) *Bundle {
	t.Helper()
	b := loadFixture(t, "memcached-operator")
	path := "/validate-cache-example-com-v1alpha1-memcached"
	fail := admissionregistrationv1.Fail
	none := admissionregistrationv1.SideEffectClassNone
	b.CSV.Spec.WebhookDefinitions = []WebhookDefinition{
		{GenerateName: "vmemcached.kb.io", Type: ValidatingAdmissionWebhook, DeploymentName: "memcached-operator-controller-manager",
			ContainerPort: 443, WebhookPath: &path, FailurePolicy: &fail, SideEffects: &none, AdmissionReviewVersions: []string{"v1"},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create, admissionregistrationv1.Update},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{"cache.example.com"}, APIVersions: []string{"v1alpha1"}, Resources: []string{"memcacheds"}},
			}}},
		{GenerateName: "cmemcached.kb.io", Type: ConversionWebhook, DeploymentName: "memcached-operator-controller-manager",
			ContainerPort: 443, AdmissionReviewVersions: []string{"v1"}, ConversionCRDs: []string{"memcacheds.cache.example.com"}},
	}
	return b
}

// secretsOf returns a lookup of the Secrets p applies, as the cluster
// would answer after applying it.
func secretsOf(p plan.Plan) func(string) map[string][]byte {
	found := map[string]map[string][]byte{}
	for _, obj := range p.Objects(plan.TaskApply) {
		if obj.GetKind() != "Secret" {
			continue
		}
		data := map[string][]byte{}
		raw, _, _ := unstructured.NestedStringMap(obj.Object, "data")
		for k, v := range raw {
			data[k], _ = base64.StdEncoding.DecodeString(v)
		}
		found[obj.GetName()] = data
	}
	return func(name string) map[string][]byte { return found[name] }
}

func findObject(p plan.Plan, kind, name string) *unstructured.Unstructured {
	for _, obj := range p.Objects(plan.TaskApply) {
		if obj.GetKind() == kind && obj.GetName() == name {
			return obj
		}
	}
	return nil
}

// A bundle with a validating and a conversion webhook becomes: the CRD
// converted through the webhook's Service, the CA and serving certificate
// Secrets and the Service before the Deployment that mounts them, the
// webhook configuration after it; all with the one CA bundle.
func TestConvertWebhooks(t *testing.T) {
	t0 := time.Date(2026, 11, 27, 12, 0, 0, 0, time.UTC)
	b := webhookFixture(t)
	none := func(string) map[string][]byte { return nil }
	o := Options{InstallNamespace: "operators", Name: "memcached", Certificates: &CertificateInputs{Now: t0, Secret: none}}
	p, err := Convert(b, o)
	if err != nil {
		t.Fatal(err)
	}
	var steps []string
	for _, s := range p.Phases[0].Steps {
		steps = append(steps, s.Name)
	}
	if got, want := strings.Join(steps, ","), "webhook-certificates,crds,rbac,manifests,deployments,webhooks"; got != want {
		t.Errorf("steps %s, want %s", got, want)
	}
	ca := secretsOf(p)("memcached-webhook-ca")["ca.crt"]
	if len(ca) == 0 {
		t.Fatal("no CA Secret memcached-webhook-ca")
	}
	wantBundle := base64.StdEncoding.EncodeToString(ca)
	svcName := "memcached-operator-controller-manager-service"

	svc := findObject(p, "Service", svcName)
	if svc == nil {
		t.Fatalf("no Service %s", svcName)
	}
	sel, _, _ := unstructured.NestedStringMap(svc.Object, "spec", "selector")
	if sel["control-plane"] != "controller-manager" {
		t.Errorf("Service selector %v does not select the manager's pods", sel)
	}
	serving := secretsOf(p)(svcName + "-cert")
	if len(serving["tls.crt"]) == 0 || len(serving["tls.key"]) == 0 {
		t.Fatalf("serving Secret %s-cert lacks tls.crt or tls.key", svcName)
	}

	vwc := findObject(p, "ValidatingWebhookConfiguration", "vmemcached.kb.io")
	if vwc == nil {
		t.Fatal("no ValidatingWebhookConfiguration vmemcached.kb.io")
	}
	hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	cc := hooks[0].(map[string]any)["clientConfig"].(map[string]any)
	if cc["caBundle"] != wantBundle {
		t.Error("the webhook configuration's caBundle is not the CA")
	}
	if svcRef := cc["service"].(map[string]any); svcRef["name"] != svcName || svcRef["namespace"] != "operators" || svcRef["port"] != int64(443) ||
		svcRef["path"] != "/validate-cache-example-com-v1alpha1-memcached" {
		t.Errorf("clientConfig.service = %v", svcRef)
	}

	crd := findObject(p, "CustomResourceDefinition", "memcacheds.cache.example.com")
	strategy, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "strategy")
	crdBundle, _, _ := unstructured.NestedString(crd.Object, "spec", "conversion", "webhook", "clientConfig", "caBundle")
	if strategy != "Webhook" || crdBundle != wantBundle {
		t.Errorf("CRD conversion strategy %q, CA bundle injected %v", strategy, crdBundle == wantBundle)
	}

	dep := findObject(p, "Deployment", "memcached-operator-controller-manager")
	containers, _, _ := unstructured.NestedSlice(dep.Object, "spec", "template", "spec", "containers")
	var mounts []string
	for _, m := range containers[0].(map[string]any)["volumeMounts"].([]any) {
		mounts = append(mounts, m.(map[string]any)["mountPath"].(string))
	}
	if !strings.Contains(strings.Join(mounts, ","), WebhookCertDir) || !strings.Contains(strings.Join(mounts, ","), APIServiceCertDir) {
		t.Errorf("the manager mounts %v, want the serving certificate at %s and %s", mounts, WebhookCertDir, APIServiceCertDir)
	}

	// The next render finds the Secrets applied: the same plan, so the
	// CA and certificates survive reconciles.
	o.Certificates = &CertificateInputs{Now: t0.Add(24 * time.Hour), Secret: secretsOf(p)}
	again, err := Convert(b, o)
	if err != nil {
		t.Fatal(err)
	}
	if !reflect.DeepEqual(again, p) {
		t.Error("a second render with the applied Secrets changed the plan")
	}

	// Close to expiry: a new serving certificate from the same CA.
	o.Certificates = &CertificateInputs{Now: t0.Add(ServingValidity - ServingRenewBefore + 24*time.Hour), Secret: secretsOf(p)}
	rotated, err := Convert(b, o)
	if err != nil {
		t.Fatal(err)
	}
	if string(secretsOf(rotated)(svcName + "-cert")["tls.crt"]) == string(serving["tls.crt"]) {
		t.Error("the serving certificate was not renewed close to expiry")
	}
	if string(secretsOf(rotated)("memcached-webhook-ca")["ca.crt"]) != string(ca) {
		t.Error("renewing the serving certificate replaced the CA")
	}
}

// A mutating webhook becomes a MutatingWebhookConfiguration with its
// reinvocation policy and the defaults OLM would give.
func TestConvertMutatingWebhook(t *testing.T) {
	b := webhookFixture(t)
	ifNeeded := admissionregistrationv1.IfNeededReinvocationPolicy
	b.CSV.Spec.WebhookDefinitions = []WebhookDefinition{{GenerateName: "mmemcached.kb.io-", Type: MutatingAdmissionWebhook,
		DeploymentName: "memcached-operator-controller-manager", ReinvocationPolicy: &ifNeeded}}
	p, err := Convert(b, Options{InstallNamespace: "operators", Name: "memcached",
		Certificates: &CertificateInputs{Now: time.Now(), Secret: func(string) map[string][]byte { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	mwc := findObject(p, "MutatingWebhookConfiguration", "mmemcached.kb.io")
	if mwc == nil {
		t.Fatal("no MutatingWebhookConfiguration mmemcached.kb.io (generateName without its trailing dash)")
	}
	hooks, _, _ := unstructured.NestedSlice(mwc.Object, "webhooks")
	hook := hooks[0].(map[string]any)
	for field, want := range map[string]any{"reinvocationPolicy": "IfNeeded", "failurePolicy": "Fail", "sideEffects": "None",
		"matchPolicy": "Equivalent", "timeoutSeconds": int64(10)} {
		if hook[field] != want {
			t.Errorf("%s = %v, want %v", field, hook[field], want)
		}
	}
	if path, _, _ := unstructured.NestedString(hook, "clientConfig", "service", "path"); path != "/" {
		t.Errorf("clientConfig.service.path = %q, want / when webhookPath is unset", path)
	}
	if _, namespaced := hook["namespaceSelector"]; namespaced {
		t.Error("an operator watching all namespaces got a namespaceSelector")
	}
}

// A webhook of an operator watching some namespaces sees only those.
func TestConvertWebhookNamespaceSelector(t *testing.T) {
	b := webhookFixture(t)
	b.CSV.Spec.WebhookDefinitions = b.CSV.Spec.WebhookDefinitions[:1]
	p, err := Convert(b, Options{InstallNamespace: "operators", WatchNamespaces: []string{"operators"}, Name: "memcached",
		Certificates: &CertificateInputs{Now: time.Now(), Secret: func(string) map[string][]byte { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	vwc := findObject(p, "ValidatingWebhookConfiguration", "vmemcached.kb.io")
	hooks, _, _ := unstructured.NestedSlice(vwc.Object, "webhooks")
	exprs, _, _ := unstructured.NestedSlice(hooks[0].(map[string]any), "namespaceSelector", "matchExpressions")
	if len(exprs) != 1 {
		t.Fatalf("namespaceSelector = %v", exprs)
	}
	expr := exprs[0].(map[string]any)
	if expr["key"] != "kubernetes.io/metadata.name" || !reflect.DeepEqual(expr["values"], []any{"operators"}) {
		t.Errorf("namespaceSelector = %v, want kubernetes.io/metadata.name In [operators]", expr)
	}
}
