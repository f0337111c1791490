package exampleoperator_test

import (
	"encoding/base64"
	"fmt"
	"net"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	clientgoscheme "k8s.io/client-go/kubernetes/scheme"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/internal/engine/bundle"
	"github.com/annex-platform/annex/internal/exampleoperator"
	"github.com/annex-platform/annex/internal/testenv"
)

// TestOperatorWebhooks runs operator 0.4.0 behind the objects its bundle
// converts to (the certificate Secrets, the webhook Service, the CRD with
// its conversion through that Service, the ValidatingWebhookConfiguration,
// each with the CA bundle), with the serving certificate of the Secret in
// its cert folder and the Service's EndpointSlice pointing at its port on
// 127.0.0.1: a Banner written in capitals is refused at either version
// with the webhook's message; a Banner created at v1beta1 (spec.text) is
// published and Ready, and reads at v1alpha1 with spec.message and at
// v1beta1 with spec.text; it is deleted (its finalizer removed) through
// the webhook.
func TestOperatorWebhooks(t *testing.T) {
	env := testenv.Start(t)
	ctx := t.Context()
	scheme := runtime.NewScheme()
	for _, add := range []func(*runtime.Scheme) error{clientgoscheme.AddToScheme, apiextensionsv1.AddToScheme, exampleoperator.AddToScheme} {
		if err := add(scheme); err != nil {
			t.Fatal(err)
		}
	}
	c, err := client.New(env.Config, client.Options{Scheme: scheme})
	if err != nil {
		t.Fatal(err)
	}
	for _, ns := range []string{"operators", "team-a"} {
		create(t, c, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}})
	}

	// What Annex applies for the bundle, but the Deployment (this test
	// runs the operator) and RBAC (it runs as the admin).
	b := loadBundle(t, "0.4.0")
	p, err := bundle.Convert(b, bundle.Options{InstallNamespace: "operators", Name: "example-operator",
		Certificates: &bundle.CertificateInputs{Now: time.Now(), Secret: func(string) map[string][]byte { return nil }}})
	if err != nil {
		t.Fatal(err)
	}
	certDir := t.TempDir()
	var service *unstructured.Unstructured
	for _, phase := range p.Phases {
		for _, step := range phase.Steps {
			for _, task := range step.Tasks {
				for _, obj := range task.Objects {
					switch obj.GetKind() {
					case "Secret", "Service", "CustomResourceDefinition", "ValidatingWebhookConfiguration":
					default:
						continue
					}
					if obj.GetKind() == "CustomResourceDefinition" {
						crd := &apiextensionsv1.CustomResourceDefinition{}
						if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
							t.Fatal(err)
						}
						applyCRD(t, c, crd)
						continue
					}
					create(t, c, obj.DeepCopy())
					if obj.GetKind() == "Service" {
						service = obj
					}
					if obj.GetKind() == "Secret" && obj.GetName() == bundle.WebhookCertSecretName(bundle.WebhookServiceName(exampleoperator.Name)) {
						for _, key := range []string{"tls.crt", "tls.key"} {
							data, _, _ := unstructured.NestedString(obj.Object, "data", key)
							writeBase64(t, filepath.Join(certDir, key), data)
						}
					}
				}
			}
		}
	}
	if service == nil {
		t.Fatal("the bundle has no webhook Service")
	}
	if _, err := os.Stat(filepath.Join(certDir, "tls.crt")); err != nil {
		t.Fatalf("the bundle has no serving certificate Secret: %v", err)
	}
	port := freePort(t)
	ports, _, _ := unstructured.NestedSlice(service.Object, "spec", "ports")
	portName, _, _ := unstructured.NestedString(ports[0].(map[string]any), "name")
	create(t, c, &discoveryv1.EndpointSlice{
		ObjectMeta:  metav1.ObjectMeta{Namespace: "operators", Name: "example-operator-local", Labels: map[string]string{discoveryv1.LabelServiceName: service.GetName()}},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To(portName), Port: ptr.To(int32(port))}},
	})
	startOperator(t, env, exampleoperator.Options{
		Version: "0.4.0", LeaderElection: true, LeaderElectionNamespace: "operators",
		WebhookHost: "127.0.0.1", WebhookPort: port, WebhookCertDir: certDir,
	})

	// Capitals are refused, at either version, in the webhook's words.
	testenv.Eventually(t, time.Minute, func() error {
		err := c.Create(ctx, banner("team-a", "freeze", "DEPLOYS ARE FROZEN"))
		want := `admission webhook "vbanner.example.annex.dev" denied the request: Banner team-a/freeze: spec.message "DEPLOYS ARE FROZEN" is written in capitals, and a banner does not shout; write it in sentence case, e.g. "Deploys are frozen"`
		if err == nil || !strings.Contains(err.Error(), want) {
			return fmt.Errorf("creating a Banner in capitals: %v; want %q", err, want)
		}
		return nil
	})
	if err := c.Create(ctx, betaBanner("team-a", "freeze", "FROZEN")); err == nil || !strings.Contains(err.Error(), `spec.text "FROZEN" is written in capitals`) {
		t.Errorf("creating a v1beta1 Banner in capitals: %v; want the webhook's refusal naming spec.text", err)
	}

	// Created at v1beta1, read at both.
	create(t, c, betaBanner("team-a", "freeze", "Deploys are frozen until Monday"))
	hello := &exampleoperator.Banner{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "freeze"}}
	waitReady(t, c, hello, metav1.ConditionTrue, exampleoperator.ReasonCreated)
	if hello.Spec.Message != "Deploys are frozen until Monday" || configMap(t, c, "team-a", "freeze-banner").Data["message"] != hello.Spec.Message {
		t.Errorf("at v1alpha1 spec.message is %q, the ConfigMap says %q", hello.Spec.Message, configMap(t, c, "team-a", "freeze-banner").Data["message"])
	}
	beta := betaBanner("team-a", "freeze", "")
	if err := c.Get(ctx, client.ObjectKeyFromObject(beta), beta); err != nil {
		t.Fatal(err)
	}
	spec, _, _ := unstructured.NestedMap(beta.Object, "spec")
	cm, _, _ := unstructured.NestedString(beta.Object, "status", "configMapName")
	if len(spec) != 1 || spec["text"] != "Deploys are frozen until Monday" || cm != "freeze-banner" {
		t.Errorf("at v1beta1: spec %v, status.configMapName %q; want spec.text only and the status", spec, cm)
	}

	// Deleting it removes the finalizer through the webhook (an update
	// that keeps the message).
	if err := c.Delete(ctx, hello); err != nil {
		t.Fatal(err)
	}
	waitGone(t, c, hello)
}

func betaBanner(ns, name, text string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{Object: map[string]any{
		"apiVersion": "example.annex.dev/v1beta1", "kind": "Banner",
		"metadata": map[string]any{"namespace": ns, "name": name},
	}}
	if text != "" {
		u.Object["spec"] = map[string]any{"text": text}
	}
	return u
}

// loadBundle reads a bundle of the built-in catalog.
func loadBundle(t *testing.T, version string) *bundle.Bundle {
	t.Helper()
	dir := filepath.Join("..", "catalog", "builtin", "operators", "bundles", "example-operator-"+version)
	files := map[string][]byte{}
	for _, sub := range []string{"manifests", "metadata"} {
		entries, err := os.ReadDir(filepath.Join(dir, sub))
		if err != nil {
			t.Fatal(err)
		}
		for _, e := range entries {
			data, err := os.ReadFile(filepath.Join(dir, sub, e.Name()))
			if err != nil {
				t.Fatal(err)
			}
			files[sub+"/"+e.Name()] = data
		}
	}
	b, err := bundle.Load(files)
	if err != nil {
		t.Fatal(err)
	}
	return b
}

func writeBase64(t *testing.T, path, data string) {
	t.Helper()
	decoded, err := base64.StdEncoding.DecodeString(data)
	if err != nil {
		t.Fatal(err)
	}
	if err := os.WriteFile(path, decoded, 0o600); err != nil {
		t.Fatal(err)
	}
}

func freePort(t *testing.T) int {
	t.Helper()
	l, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	defer l.Close()
	return l.Addr().(*net.TCPAddr).Port
}
