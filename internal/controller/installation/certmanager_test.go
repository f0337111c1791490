package installation_test

import (
	"context"
	"encoding/base64"
	"fmt"
	"strings"
	"testing"
	"time"

	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine/bundle"
)

// certManagerCRDs creates cert-manager's API (Certificate, Issuer,
// ClusterIssuer at cert-manager.io/v1) with open schemas: enough for the
// objects Annex makes; the test plays cert-manager itself.
func certManagerCRDs(t *testing.T) {
	t.Helper()
	open := &apiextensionsv1.JSONSchemaProps{Type: "object", XPreserveUnknownFields: ptr.To(true)}
	for _, c := range []struct {
		kind, plural string
		scope        apiextensionsv1.ResourceScope
	}{{"Certificate", "certificates", apiextensionsv1.NamespaceScoped}, {"Issuer", "issuers", apiextensionsv1.NamespaceScoped}, {"ClusterIssuer", "clusterissuers", apiextensionsv1.ClusterScoped}} {
		crd := &apiextensionsv1.CustomResourceDefinition{
			ObjectMeta: metav1.ObjectMeta{Name: c.plural + ".cert-manager.io"},
			Spec: apiextensionsv1.CustomResourceDefinitionSpec{
				Group: "cert-manager.io", Scope: c.scope,
				Names: apiextensionsv1.CustomResourceDefinitionNames{Kind: c.kind, ListKind: c.kind + "List", Plural: c.plural, Singular: strings.ToLower(c.kind)},
				Versions: []apiextensionsv1.CustomResourceDefinitionVersion{{Name: "v1", Served: true, Storage: true,
					Schema: &apiextensionsv1.CustomResourceValidation{OpenAPIV3Schema: open}}},
			},
		}
		if err := env.Client.Create(t.Context(), crd); err != nil {
			t.Fatal(err)
		}
		t.Cleanup(func() { _ = env.Client.Delete(context.Background(), crd) })
	}
}

// An operator with webhooks whose installation asks for cert-manager
// waits, saying so, while the cluster does not serve cert-manager's API;
// then has cert-manager issue its serving certificate (a Certificate per
// webhook Service, from the installation's own CA Issuer) and inject the
// CA bundle. The test plays cert-manager: it issues the Secret and
// injects the caBundle under its own field manager. The webhooks then
// work, Annex's later applies leave the injected caBundle alone, and the
// uninstall removes the webhook configuration first and the Certificates
// and Issuers with the rest.
func TestBundleCertManager(t *testing.T) {
	ns := packageNamespace(t)
	ctx := t.Context()
	server := startGadgetServer(t)
	dir := t.TempDir()
	gadgetCatalog(t, dir)
	olmCatalog(t, ns, dir)
	install(t, ns, "gadgets", "gadget-operator", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Uninstall.DeleteCRDs = true
		i.Spec.Interval = metav1.Duration{Duration: time.Second}
		i.Spec.WebhookCertificates = &v1alpha1.WebhookCertificates{Provider: v1alpha1.WebhookCertificatesCertManager}
	})
	waitConditionMessage(t, ns, "gadgets", v1alpha1.ConditionReady,
		"spec.webhookCertificates.provider is CertManager, but the cluster does not serve cert-manager.io/v1 Certificates")

	certManagerCRDs(t)
	// cert-manager's part: the serving certificate, from a CA.
	certName := bundle.WebhookCertSecretName(gadgetService)
	cert := &unstructured.Unstructured{}
	cert.SetAPIVersion("cert-manager.io/v1")
	cert.SetKind("Certificate")
	eventually(t, 60*time.Second, func() error {
		return env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: certName}, cert)
	})
	issuer, _, _ := unstructured.NestedString(cert.Object, "spec", "issuerRef", "name")
	dnsNames, _, _ := unstructured.NestedStringSlice(cert.Object, "spec", "dnsNames")
	if issuer != bundle.WebhookCASecretName("gadgets") || len(dnsNames) == 0 || dnsNames[0] != gadgetService+"."+ns+".svc" {
		t.Fatalf("Certificate %s: issuer %q, dnsNames %v", certName, issuer, dnsNames)
	}
	issued, err := bundle.IssueCertificates(bundle.CertificateRequest{Now: time.Now(), CAName: "test cert-manager CA", DNSNames: dnsNames})
	if err != nil {
		t.Fatal(err)
	}
	secret := &corev1.Secret{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: certName}, Type: corev1.SecretTypeTLS,
		Data: map[string][]byte{"tls.crt": issued.Serving.Cert, "tls.key": issued.Serving.Key, "ca.crt": issued.CA.Cert}}
	if err := env.Client.Create(ctx, secret); err != nil {
		t.Fatal(err)
	}
	server.load(t, ns, certName)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gadgetService + "-test",
			Labels: map[string]string{discoveryv1.LabelServiceName: gadgetService}},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("443"), Port: ptr.To(int32(server.port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}

	// cert-manager's CA injector: the caBundle of every object that asks
	// for it, under its own field manager.
	ca := base64.StdEncoding.EncodeToString(issued.CA.Cert)
	inject := func(obj client.Object, patch string) error {
		if obj.GetAnnotations()[bundle.AnnotationInjectCAFrom] != ns+"/"+certName {
			return fmt.Errorf("%s does not ask for the CA of %s/%s: annotations %v", obj.GetName(), ns, certName, obj.GetAnnotations())
		}
		return env.Client.Patch(ctx, obj, client.RawPatch(types.JSONPatchType, []byte(patch)), client.FieldOwner("cert-manager-cainjector"))
	}
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	eventually(t, 60*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: gadgetCRD}, crd); err != nil {
			return err
		}
		if c := crd.Spec.Conversion; c == nil || c.Webhook == nil || len(c.Webhook.ClientConfig.CABundle) > 0 {
			return fmt.Errorf("CRD conversion %+v: want a webhook without a caBundle", c)
		}
		return inject(crd, `[{"op":"add","path":"/spec/conversion/webhook/clientConfig/caBundle","value":"`+ca+`"}]`)
	})
	// Applied without a caBundle, the webhook is not ready until the
	// injector writes it: the API server could not trust its server.
	waitConditionMessage(t, ns, "gadgets", v1alpha1.ConditionReady,
		"ValidatingWebhookConfiguration vgadget.webhooks.annex.dev waits for cert-manager to inject the CA of Certificate "+ns+"/"+certName)
	eventually(t, 120*time.Second, func() error {
		if err := env.Client.Get(ctx, client.ObjectKey{Name: "vgadget.webhooks.annex.dev"}, vwc); err != nil {
			return err
		}
		if len(vwc.Webhooks[0].ClientConfig.CABundle) > 0 {
			return fmt.Errorf("Annex wrote a caBundle under cert-manager")
		}
		return inject(vwc, `[{"op":"add","path":"/webhooks/0/clientConfig/caBundle","value":"`+ca+`"}]`)
	})
	got := waitPlan(t, ns, "gadgets", "install", v1alpha1.PlanComplete, 1)
	if c := findCond(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("not Ready: %s", describeConditions(got))
	}
	for _, name := range []string{bundle.WebhookCASecretName("gadgets")} {
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: name}, &corev1.Secret{}); err == nil {
			t.Errorf("Annex made its own CA Secret %s under cert-manager", name)
		}
	}

	// The webhook works with cert-manager's certificate.
	expectGadgetRefused(t, ns)
	if err := env.Client.Create(ctx, gadget(ns, "small", "v1", "size", 3)); err != nil {
		t.Fatal(err)
	}
	v2 := gadget(ns, "small", "v2", "replicas", 0)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(v2), v2); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(v2.Object, "spec", "replicas"); n != 3 {
		t.Fatalf("read at v2: spec = %v, want replicas 3", v2.Object["spec"])
	}

	// Annex's later passes (a reconcile a second) leave the injected
	// caBundle alone.
	if err := env.Client.Patch(ctx, got, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"`+v1alpha1.AnnotationSyncRequestedAt+`":"`+time.Now().UTC().Format(time.RFC3339)+`"}}}`))); err != nil {
		t.Fatal(err)
	}
	time.Sleep(3 * time.Second)
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "vgadget.webhooks.annex.dev"}, vwc); err != nil {
		t.Fatal(err)
	}
	if base64.StdEncoding.EncodeToString(vwc.Webhooks[0].ClientConfig.CABundle) != ca {
		t.Error("a later apply removed the caBundle cert-manager injected")
	}
	if err := env.Client.Delete(ctx, gadget(ns, "small", "v1", "size", 0)); err != nil {
		t.Fatal(err)
	}

	// The uninstall: the webhook configuration first; the Certificates and
	// Issuers go with the rest (the Secret is cert-manager's).
	cur, err := getInstallation(t, ns, "gadgets")
	if err != nil {
		t.Fatal(err)
	}
	deleteAndWait(t, cur)
	for _, ref := range [][2]string{{"Certificate", certName}, {"Certificate", bundle.WebhookCASecretName("gadgets")}, {"Issuer", bundle.WebhookCASecretName("gadgets")}, {"Issuer", "gadgets-selfsigned"}} {
		obj := &unstructured.Unstructured{}
		obj.SetAPIVersion("cert-manager.io/v1")
		obj.SetKind(ref[0])
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: ref[1]}, obj); err == nil {
			t.Errorf("%s %s is left after the uninstall", ref[0], ref[1])
		}
	}
}
