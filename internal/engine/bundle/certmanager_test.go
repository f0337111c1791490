package bundle

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/internal/plan"
)

// Under cert-manager, the first step holds Issuers and Certificates in
// place of Annex's Secrets, nothing carries a caBundle, and every object
// the API server calls a Service for asks cert-manager's CA injector for
// it; a named issuer replaces the installation's own CA.
func TestConvertCertManager(t *testing.T) {
	manager := "memcached-operator-controller-manager"
	svc := manager + "-service"
	b := webhookFixture(t)
	b.CSV.Spec.APIServiceDefinitions.Owned = []APIServiceDescription{{Group: "metrics.example.com", Version: "v1alpha1", Kind: "Metric", DeploymentName: manager}}
	o := Options{InstallNamespace: "operators", Name: "memcached", CertManager: &CertManagerIssuer{}}
	p, err := Convert(b, o)
	if err != nil {
		t.Fatal(err)
	}
	var first []string
	for _, obj := range p.Phases[0].Steps[0].Tasks[0].Objects {
		first = append(first, obj.GetKind()+"/"+obj.GetName())
	}
	want := "Issuer/memcached-selfsigned,Certificate/memcached-webhook-ca,Issuer/memcached-webhook-ca,Certificate/" + svc + "-cert,Service/" + svc
	if got := strings.Join(first, ","); p.Phases[0].Steps[0].Name != StepCertificates || got != want {
		t.Errorf("step %s: %s, want %s", p.Phases[0].Steps[0].Name, got, want)
	}
	ca := findObject(p, "Certificate", "memcached-webhook-ca")
	if isCA, _, _ := unstructured.NestedBool(ca.Object, "spec", "isCA"); !isCA {
		t.Error("the CA Certificate is not a CA")
	}
	serving := findObject(p, "Certificate", svc+"-cert")
	spec, _, _ := unstructured.NestedMap(serving.Object, "spec")
	issuer, _ := spec["issuerRef"].(map[string]any)
	dns, _ := spec["dnsNames"].([]any)
	if spec["secretName"] != svc+"-cert" || issuer["name"] != "memcached-webhook-ca" || issuer["kind"] != "Issuer" ||
		len(dns) == 0 || dns[0] != svc+".operators.svc" || spec["renewBefore"] != "2880h" {
		t.Errorf("serving Certificate spec %v", spec)
	}
	for _, obj := range p.Objects(plan.TaskApply) {
		if obj.GetKind() == "Secret" {
			t.Errorf("Secret %s made under cert-manager", obj.GetName())
		}
		if strings.Contains(strings.Join(strings.Fields(toJSON(t, obj)), ""), `"caBundle"`) {
			t.Errorf("%s %s carries a caBundle", obj.GetKind(), obj.GetName())
		}
	}
	for _, ref := range [][2]string{{"ValidatingWebhookConfiguration", "vmemcached.kb.io"}, {"CustomResourceDefinition", "memcacheds.cache.example.com"}, {"APIService", "v1alpha1.metrics.example.com"}} {
		obj := findObject(p, ref[0], ref[1])
		if obj == nil {
			t.Fatalf("no %s %s", ref[0], ref[1])
		}
		if got := obj.GetAnnotations()[AnnotationInjectCAFrom]; got != "operators/"+svc+"-cert" {
			t.Errorf("%s %s: %s = %q", ref[0], ref[1], AnnotationInjectCAFrom, got)
		}
	}
	dep := findObject(p, "Deployment", manager)
	if !strings.Contains(toJSON(t, dep), svc+"-cert") {
		t.Error("the Deployment does not mount the Certificate's Secret")
	}

	o.CertManager = &CertManagerIssuer{Name: "corp-ca", Kind: "ClusterIssuer"}
	p, err = Convert(b, o)
	if err != nil {
		t.Fatal(err)
	}
	if findObject(p, "Issuer", "memcached-selfsigned") != nil || findObject(p, "Certificate", "memcached-webhook-ca") != nil {
		t.Error("a named issuer still made the installation's own CA")
	}
	issuer, _, _ = unstructured.NestedMap(findObject(p, "Certificate", svc+"-cert").Object, "spec", "issuerRef")
	if issuer["name"] != "corp-ca" || issuer["kind"] != "ClusterIssuer" {
		t.Errorf("issuerRef %v, want ClusterIssuer corp-ca", issuer)
	}
}

func toJSON(t *testing.T, obj *unstructured.Unstructured) string {
	t.Helper()
	raw, err := obj.MarshalJSON()
	if err != nil {
		t.Fatal(err)
	}
	return string(raw)
}
