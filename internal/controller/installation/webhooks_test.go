package installation_test

import (
	"bytes"
	"crypto/tls"
	"crypto/x509"
	"encoding/base64"
	"encoding/json"
	"encoding/pem"
	"fmt"
	"io"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"strings"
	"sync/atomic"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/client-go/dynamic"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine/bundle"
)

const (
	gadgetCRD     = "gadgets.webhooks.annex.dev"
	gadgetDeploy  = "gadget-operator"
	gadgetService = "gadget-operator-service"
	gadgetMax     = 10
)

// gadgetCatalog writes a File-Based Catalog of one bundle, gadget-operator
// 1.0.0: a CRD Gadget served at v1 (spec.size, stored) and v2
// (spec.replicas), a validating webhook on Gadgets and a conversion
// webhook between the versions, both served by Deployment
// gadget-operator (scaled to zero: the test serves the webhooks itself).
func gadgetCatalog(t *testing.T, dir string) {
	t.Helper()
	version := func(name, field string, storage bool) map[string]any {
		return map[string]any{"name": name, "served": true, "storage": storage, "schema": map[string]any{"openAPIV3Schema": map[string]any{
			"type": "object", "properties": map[string]any{"spec": map[string]any{"type": "object", "properties": map[string]any{field: map[string]any{"type": "integer"}}}},
		}}}
	}
	crd := map[string]any{
		"apiVersion": "apiextensions.k8s.io/v1", "kind": "CustomResourceDefinition",
		"metadata": map[string]any{"name": gadgetCRD},
		"spec": map[string]any{
			"group": "webhooks.annex.dev", "scope": "Namespaced",
			"names":    map[string]any{"kind": "Gadget", "plural": "gadgets", "singular": "gadget", "listKind": "GadgetList"},
			"versions": []any{version("v1", "size", true), version("v2", "replicas", false)},
		},
	}
	csv := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]any{"name": "gadget-operator.v1.0.0"},
		"spec": map[string]any{
			"version":                   "1.0.0",
			"installModes":              []any{map[string]any{"type": "AllNamespaces", "supported": true}},
			"customresourcedefinitions": map[string]any{"owned": []any{map[string]any{"name": gadgetCRD, "version": "v1", "kind": "Gadget"}}},
			"install": map[string]any{"strategy": "deployment", "spec": map[string]any{
				"clusterPermissions": []any{map[string]any{"serviceAccountName": gadgetDeploy, "rules": []any{
					map[string]any{"apiGroups": []any{"webhooks.annex.dev"}, "resources": []any{"gadgets"}, "verbs": []any{"get", "list", "watch"}}}}},
				"deployments": []any{map[string]any{"name": gadgetDeploy, "spec": map[string]any{
					"replicas": 0,
					"selector": map[string]any{"matchLabels": map[string]any{"app": gadgetDeploy}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": gadgetDeploy}},
						"spec": map[string]any{"serviceAccountName": gadgetDeploy, "containers": []any{
							map[string]any{"name": "manager", "image": "example.com/gadget-operator:1.0.0"}}},
					},
				}}},
			}},
			"webhookdefinitions": []any{
				map[string]any{"generateName": "vgadget.webhooks.annex.dev", "type": "ValidatingAdmissionWebhook", "deploymentName": gadgetDeploy,
					"containerPort": 443, "targetPort": 9443, "webhookPath": "/validate", "sideEffects": "None", "failurePolicy": "Fail",
					"admissionReviewVersions": []any{"v1"},
					"rules": []any{map[string]any{"apiGroups": []any{"webhooks.annex.dev"}, "apiVersions": []any{"*"}, "resources": []any{"gadgets"},
						"operations": []any{"CREATE", "UPDATE"}}}},
				map[string]any{"generateName": "cgadget.webhooks.annex.dev", "type": "ConversionWebhook", "deploymentName": gadgetDeploy,
					"containerPort": 443, "targetPort": 9443, "webhookPath": "/convert", "admissionReviewVersions": []any{"v1"},
					"conversionCRDs": []any{gadgetCRD}},
			},
		},
	}
	var properties []map[string]any
	properties = append(properties, map[string]any{"type": "olm.package", "value": map[string]any{"packageName": "gadget-operator", "version": "1.0.0"}})
	for _, obj := range []map[string]any{csv, crd} {
		raw, err := json.Marshal(obj)
		if err != nil {
			t.Fatal(err)
		}
		properties = append(properties, map[string]any{"type": "olm.bundle.object", "value": map[string]any{"data": base64.StdEncoding.EncodeToString(raw)}})
	}
	blobs := []map[string]any{
		{"schema": "olm.package", "name": "gadget-operator", "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": "gadget-operator", "name": "stable", "entries": []any{map[string]any{"name": "gadget-operator.v1.0.0"}}},
		{"schema": "olm.bundle", "package": "gadget-operator", "name": "gadget-operator.v1.0.0", "properties": properties},
	}
	var out bytes.Buffer
	for _, b := range blobs {
		raw, _ := json.Marshal(b)
		out.Write(raw)
		out.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// gadgetServer is the test's stand-in for the operator's webhook server:
// HTTPS on 127.0.0.1 with the serving certificate Annex wrote, validating
// Gadgets (spec.size at most gadgetMax) and converting them between v1
// (spec.size) and v2 (spec.replicas).
type gadgetServer struct {
	cert atomic.Pointer[tls.Certificate]
	port int
}

func startGadgetServer(t *testing.T) *gadgetServer {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	s := &gadgetServer{port: ln.Addr().(*net.TCPAddr).Port}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", s.validate)
	mux.HandleFunc("/convert", s.convert)
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := s.cert.Load(); c != nil {
				return c, nil
			}
			return nil, fmt.Errorf("no serving certificate yet")
		},
	}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return s
}

// load serves the certificate of Secret ns/name.
func (s *gadgetServer) load(t *testing.T, ns, name string) []byte {
	t.Helper()
	secret := &corev1.Secret{}
	if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: name}, secret); err != nil {
		t.Fatal(err)
	}
	pair, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"])
	if err != nil {
		t.Fatalf("secret %s/%s: %v", ns, name, err)
	}
	s.cert.Store(&pair)
	return secret.Data["tls.crt"]
}

func (s *gadgetServer) validate(w http.ResponseWriter, r *http.Request) {
	var review admissionv1.AdmissionReview
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
		return
	}
	obj := &unstructured.Unstructured{}
	if err := obj.UnmarshalJSON(review.Request.Object.Raw); err != nil {
		http.Error(w, err.Error(), http.StatusBadRequest)
		return
	}
	field := "size"
	if obj.GroupVersionKind().Version == "v2" {
		field = "replicas"
	}
	n, _, _ := unstructured.NestedInt64(obj.Object, "spec", field)
	resp := &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: n <= gadgetMax}
	if !resp.Allowed {
		resp.Result = &metav1.Status{Message: fmt.Sprintf("spec.%s %d is above the gadget limit of %d", field, n, gadgetMax)}
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(w).Encode(review)
}

func (s *gadgetServer) convert(w http.ResponseWriter, r *http.Request) {
	var review apiextensionsv1.ConversionReview
	body, _ := io.ReadAll(r.Body)
	if err := json.Unmarshal(body, &review); err != nil || review.Request == nil {
		http.Error(w, "not a ConversionReview", http.StatusBadRequest)
		return
	}
	resp := &apiextensionsv1.ConversionResponse{UID: review.Request.UID, Result: metav1.Status{Status: metav1.StatusSuccess}}
	for _, raw := range review.Request.Objects {
		obj := &unstructured.Unstructured{}
		if err := obj.UnmarshalJSON(raw.Raw); err != nil {
			http.Error(w, err.Error(), http.StatusBadRequest)
			return
		}
		from, to := "size", "replicas"
		if obj.GroupVersionKind().Version == "v2" {
			from, to = to, from
		}
		if n, found, _ := unstructured.NestedInt64(obj.Object, "spec", from); found {
			unstructured.RemoveNestedField(obj.Object, "spec", from)
			_ = unstructured.SetNestedField(obj.Object, n, "spec", to)
		}
		obj.SetAPIVersion(review.Request.DesiredAPIVersion)
		out, _ := json.Marshal(obj.Object)
		resp.ConvertedObjects = append(resp.ConvertedObjects, runtime.RawExtension{Raw: out})
	}
	review.Response, review.Request = resp, nil
	_ = json.NewEncoder(w).Encode(review)
}

// expectGadgetRefused waits until creating a Gadget above the limit in ns
// is refused with the webhook's message (the API server may not have seen
// a new webhook configuration at first).
func expectGadgetRefused(t *testing.T, ns string) {
	t.Helper()
	ctx := t.Context()
	eventually(t, 30*time.Second, func() error {
		err := env.Client.Create(ctx, gadget(ns, "too-big", "v1", "size", gadgetMax+1))
		if err == nil {
			_ = env.Client.Delete(ctx, gadget(ns, "too-big", "v1", "size", 0))
			return errString("a Gadget of size 11 was admitted")
		}
		if !strings.Contains(err.Error(), "spec.size 11 is above the gadget limit of 10") {
			return fmt.Errorf("refused without the webhook's message: %v", err)
		}
		return nil
	})
}

func gadget(ns, name, version, field string, n int64) *unstructured.Unstructured {
	obj := &unstructured.Unstructured{}
	obj.SetAPIVersion("webhooks.annex.dev/" + version)
	obj.SetKind("Gadget")
	obj.SetNamespace(ns)
	obj.SetName(name)
	_ = unstructured.SetNestedField(obj.Object, n, "spec", field)
	return obj
}

// An operator bundle with a validating and a conversion webhook installs
// on a real API server, which calls the test's webhook server through
// the Service Annex made (its EndpointSlice points at 127.0.0.1): the CA
// bundle is injected, a bad Gadget is refused with the webhook's
// message, a Gadget reads at both versions, the serving certificate is
// renewed when close to expiry (the manager's certificate clock moved
// ahead) under the same CA, a webhook without a ready endpoint makes the
// installation not Ready, saying so, and the uninstall deletes the webhook
// configuration before the operator's Deployment and RBAC.
func TestBundleWebhooks(t *testing.T) {
	ns := packageNamespace(t)
	ctx := t.Context()
	server := startGadgetServer(t)
	// The Service Annex creates selects the operator's pods; nothing runs
	// them here, so the test says where its endpoint is.
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: gadgetService + "-test",
			Labels: map[string]string{discoveryv1.LabelServiceName: gadgetService}},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("443"), Port: ptr.To(int32(server.port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	dir := t.TempDir()
	gadgetCatalog(t, dir)
	olmCatalog(t, ns, dir)
	install(t, ns, "gadgets", "gadget-operator", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Uninstall.DeleteCRDs = true
		i.Spec.Interval = metav1.Duration{Duration: time.Second}
	})
	// Until the webhook's Service has an endpoint, the install waits at
	// its last step, saying why (the CRD converted by the same Service
	// was applied before: its step does not wait for it).
	waitConditionMessage(t, ns, "gadgets", v1alpha1.ConditionReady,
		"webhook vgadget.webhooks.annex.dev: Service "+ns+"/"+gadgetService+" has no ready endpoint")
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	got := waitPlan(t, ns, "gadgets", "install", v1alpha1.PlanComplete, 1)
	if c := findCond(got, v1alpha1.ConditionReady); c.Status != metav1.ConditionTrue {
		t.Fatalf("not Ready: %s", describeConditions(got))
	}

	// The CA bundle is the installation's CA, in the webhook
	// configuration and in the CRD's conversion.
	caSecret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: bundle.WebhookCASecretName("gadgets")}, caSecret); err != nil {
		t.Fatal(err)
	}
	ca := caSecret.Data["ca.crt"]
	vwc := &admissionregistrationv1.ValidatingWebhookConfiguration{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "vgadget.webhooks.annex.dev"}, vwc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vwc.Webhooks[0].ClientConfig.CABundle, ca) {
		t.Error("the ValidatingWebhookConfiguration's caBundle is not the installation's CA")
	}
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: gadgetCRD}, crd); err != nil {
		t.Fatal(err)
	}
	if c := crd.Spec.Conversion; c == nil || c.Strategy != apiextensionsv1.WebhookConverter || !bytes.Equal(c.Webhook.ClientConfig.CABundle, ca) {
		t.Errorf("CRD conversion = %+v, want strategy Webhook with the installation's CA", c)
	}
	certName := bundle.WebhookCertSecretName(gadgetService)
	firstCert := server.load(t, ns, certName)

	// A bad Gadget is refused by the webhook, with its message.
	expectGadgetRefused(t, ns)

	// Created at v1, read at v2 and written back through v2, read at v1.
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
	_ = unstructured.SetNestedField(v2.Object, int64(5), "spec", "replicas")
	if err := env.Client.Update(ctx, v2); err != nil {
		t.Fatal(err)
	}
	v1 := gadget(ns, "small", "v1", "size", 0)
	if err := env.Client.Get(ctx, client.ObjectKeyFromObject(v1), v1); err != nil {
		t.Fatal(err)
	}
	if n, _, _ := unstructured.NestedInt64(v1.Object, "spec", "size"); n != 5 {
		t.Fatalf("read at v1 after writing at v2: spec = %v, want size 5", v1.Object["spec"])
	}

	// Close to expiry, the serving certificate is renewed, by the same CA.
	certificateClockAhead.Store(int64(bundle.ServingValidity - bundle.ServingRenewBefore + 24*time.Hour))
	t.Cleanup(func() { certificateClockAhead.Store(0) })
	renewed := &corev1.Secret{}
	eventually(t, 60*time.Second, func() error {
		secret := renewed
		if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: certName}, secret); err != nil {
			return err
		}
		if bytes.Equal(secret.Data["tls.crt"], firstCert) {
			return errString("the serving certificate was not renewed")
		}
		if !bytes.Equal(secret.Data["ca.crt"], ca) {
			return errString("renewing the serving certificate replaced the CA")
		}
		return nil
	})
	// The renewal is a new revision, whose plan runs to its end.
	waitPlan(t, ns, "gadgets", "install", v1alpha1.PlanComplete, 2)
	// The renewed certificate chains to the CA at the (moved) time it was
	// issued for; it starts then, so the API server, on the wall clock,
	// is still served the first one, which the unchanged bundle trusts.
	roots := x509.NewCertPool()
	if !roots.AppendCertsFromPEM(ca) {
		t.Fatal("ca.crt holds no certificate")
	}
	block, _ := pem.Decode(renewed.Data["tls.crt"])
	if block == nil {
		t.Fatal("the renewed tls.crt holds no PEM")
	}
	leaf, err := x509.ParseCertificate(block.Bytes)
	if err != nil {
		t.Fatal(err)
	}
	if _, err := leaf.Verify(x509.VerifyOptions{Roots: roots, DNSName: gadgetService + "." + ns + ".svc",
		CurrentTime: time.Now().Add(time.Duration(certificateClockAhead.Load()))}); err != nil {
		t.Errorf("the renewed certificate does not verify: %v", err)
	}
	if err := env.Client.Get(ctx, client.ObjectKey{Name: "vgadget.webhooks.annex.dev"}, vwc); err != nil {
		t.Fatal(err)
	}
	if !bytes.Equal(vwc.Webhooks[0].ClientConfig.CABundle, ca) {
		t.Error("the caBundle changed although the CA did not")
	}
	if err := env.Client.Create(ctx, gadget(ns, "after-renewal", "v2", "replicas", 2)); err != nil {
		t.Fatalf("a Gadget after the renewal: %v", err)
	}
	for _, name := range []string{"small", "after-renewal"} {
		if err := env.Client.Delete(ctx, gadget(ns, name, "v1", "size", 0)); err != nil {
			t.Fatal(err)
		}
	}

	// A webhook whose server has gone says so in the Ready condition.
	if err := env.Client.Delete(ctx, slice); err != nil {
		t.Fatal(err)
	}
	got = waitConditionMessage(t, ns, "gadgets", v1alpha1.ConditionReady,
		"webhook vgadget.webhooks.annex.dev: Service "+ns+"/"+gadgetService+" has no ready endpoint")
	if msg := findCond(got, v1alpha1.ConditionReady).Message; !strings.Contains(msg, "conversion webhook: Service "+ns+"/"+gadgetService+" has no ready endpoint") {
		t.Errorf("the Ready condition does not name the CRD's conversion webhook: %s", msg)
	}

	// The uninstall deletes the webhook configuration first.
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	order := watchDeletions(t, map[string]dynamic.ResourceInterface{
		"ValidatingWebhookConfiguration": dyn.Resource(schema.GroupVersionResource{Group: "admissionregistration.k8s.io", Version: "v1", Resource: "validatingwebhookconfigurations"}),
		"Deployment":                     dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns),
		"Service":                        dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace(ns),
		"ServiceAccount":                 dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "serviceaccounts"}).Namespace(ns),
	})
	cur, err := getInstallation(t, ns, "gadgets")
	if err != nil {
		t.Fatal(err)
	}
	deleteAndWait(t, cur)
	deleted := order()
	pos := func(what string) int {
		for i, d := range deleted {
			if d == what {
				return i
			}
		}
		t.Fatalf("%s was not deleted; deletions: %v", what, deleted)
		return -1
	}
	webhook := pos("ValidatingWebhookConfiguration/vgadget.webhooks.annex.dev")
	for _, later := range []string{"Deployment/" + gadgetDeploy, "Service/" + gadgetService, "ServiceAccount/" + gadgetDeploy} {
		if pos(later) < webhook {
			t.Errorf("%s was deleted before the webhook configuration: %v", later, deleted)
		}
	}
	if pos("Deployment/"+gadgetDeploy) > pos("ServiceAccount/"+gadgetDeploy) {
		t.Errorf("the operator's ServiceAccount went before its Deployment: %v", deleted)
	}
}
