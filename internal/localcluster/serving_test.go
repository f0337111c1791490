package localcluster

import (
	"context"
	"crypto/tls"
	"encoding/json"
	"errors"
	"flag"
	"fmt"
	"net/http"
	"os"
	"os/signal"
	"path/filepath"
	"strconv"
	"strings"
	"syscall"
	"testing"
	"time"

	admissionv1 "k8s.io/api/admission/v1"
	admissionregistrationv1 "k8s.io/api/admissionregistration/v1"
	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"

	"github.com/annex-platform/annex/internal/engine/bundle"
	"github.com/annex-platform/annex/internal/testenv"
)

// helperServeEnv, set in a test Pod's env, makes the test binary an
// admission webhook server (servingHelper).
const helperServeEnv = "IMAGE_HELPER_SERVE"

// servingHelper plays a webhook server: with --cert-dir and --port (which
// the image's Local gives it) it serves HTTPS on 127.0.0.1 with the
// certificate of its Secret volume and refuses every admission request
// it is sent, naming its Pod, until SIGTERM.
func servingHelper() int {
	fs := flag.NewFlagSet("helper", flag.ContinueOnError)
	certDir := fs.String("cert-dir", "", "")
	port := fs.Int("port", 0, "")
	if err := fs.Parse(os.Args[3:]); err != nil {
		return 2
	}
	cert, err := tls.LoadX509KeyPair(filepath.Join(*certDir, "tls.crt"), filepath.Join(*certDir, "tls.key"))
	if err != nil {
		fmt.Fprintln(os.Stderr, "serving helper:", err)
		return 2
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/validate", func(w http.ResponseWriter, req *http.Request) {
		review := &admissionv1.AdmissionReview{}
		if err := json.NewDecoder(req.Body).Decode(review); err != nil || review.Request == nil {
			http.Error(w, "not an AdmissionReview", http.StatusBadRequest)
			return
		}
		review.Response = &admissionv1.AdmissionResponse{UID: review.Request.UID, Allowed: false,
			Result: &metav1.Status{Message: "refused by the local process of Pod " + os.Getenv("POD_NAME")}}
		review.Request = nil
		_ = json.NewEncoder(w).Encode(review)
	})
	srv := &http.Server{Addr: "127.0.0.1:" + strconv.Itoa(*port), Handler: mux, TLSConfig: &tls.Config{Certificates: []tls.Certificate{cert}}}
	terminated := make(chan os.Signal, 1)
	signal.Notify(terminated, syscall.SIGTERM)
	go func() { <-terminated; _ = srv.Close() }()
	if err := srv.ListenAndServeTLS("", ""); !errors.Is(err, http.ErrServerClosed) {
		fmt.Fprintln(os.Stderr, "serving helper:", err)
		return 2
	}
	return 0
}

// TestImagesServe runs a webhook server as an image's process: the runner
// writes its Secret volume to a folder and gives it a port on 127.0.0.1
// (through Image.Local), publishes an FQDN EndpointSlice of 127.0.0.1 and
// that port for the Service selecting its Pod once it listens (by the
// targetPort's name), and the API server, with aggregator routing, calls
// the webhook through that Service: a ConfigMap it intercepts is refused
// with the process's message. No slice of the endpointslice controller
// competes with it. Deleting the Deployment removes the slice.
func TestImagesServe(t *testing.T) {
	binDir := testenv.RequireWorkloadsBinDir(t)
	ctx := context.Background()
	self, err := os.Executable()
	if err != nil {
		t.Fatal(err)
	}
	c := startCluster(t, Options{
		Dir: t.TempDir(), BinDir: binDir, Workloads: true, Nodes: 1,
		Images: []Image{{
			Repository: "annex.dev/serving-test",
			Command:    func(tag string) []string { return []string{self, "serving-helper", tag} },
			Local: func(l Local) []string {
				return []string{"--cert-dir=" + l.Dirs["/certs"], "--port=" + strconv.Itoa(l.Ports[8443])}
			},
		}},
	})
	cs, err := kubernetes.NewForConfig(c.RESTConfig())
	if err != nil {
		t.Fatal(err)
	}
	ns := "serving"
	if _, err := cs.CoreV1().Namespaces().Create(ctx, &corev1.Namespace{ObjectMeta: metav1.ObjectMeta{Name: ns}}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	certs, err := bundle.IssueCertificates(bundle.CertificateRequest{Now: time.Now(), CAName: "test CA", DNSNames: []string{"web." + ns + ".svc"}})
	if err != nil {
		t.Fatal(err)
	}
	if _, err := cs.CoreV1().Secrets(ns).Create(ctx, &corev1.Secret{
		ObjectMeta: metav1.ObjectMeta{Name: "web-cert"},
		Data:       map[string][]byte{"tls.crt": certs.Serving.Cert, "tls.key": certs.Serving.Key, "ca.crt": certs.CA.Cert},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	labels := map[string]string{"app": "web"}
	if _, err := cs.CoreV1().Services(ns).Create(ctx, &corev1.Service{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: corev1.ServiceSpec{Selector: labels, Ports: []corev1.ServicePort{
			{Name: "https", Port: 443, TargetPort: intstr.FromString("webhook")},
			{Name: "metrics", Port: 8080}, // targets no containerPort: no endpoint port
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AppsV1().Deployments(ns).Create(ctx, &appsv1.Deployment{
		ObjectMeta: metav1.ObjectMeta{Name: "web"},
		Spec: appsv1.DeploymentSpec{
			Replicas: ptr.To(int32(1)),
			Selector: &metav1.LabelSelector{MatchLabels: labels},
			Template: corev1.PodTemplateSpec{
				ObjectMeta: metav1.ObjectMeta{Labels: labels},
				Spec: corev1.PodSpec{
					Volumes: []corev1.Volume{{Name: "cert", VolumeSource: corev1.VolumeSource{Secret: &corev1.SecretVolumeSource{
						SecretName: "web-cert", Items: []corev1.KeyToPath{{Key: "tls.crt", Path: "tls.crt"}, {Key: "tls.key", Path: "tls.key"}},
					}}}},
					Containers: []corev1.Container{{
						Name:         "server",
						Image:        "annex.dev/serving-test:1.0",
						Ports:        []corev1.ContainerPort{{Name: "webhook", ContainerPort: 8443}},
						VolumeMounts: []corev1.VolumeMount{{Name: "cert", MountPath: "/certs", ReadOnly: true}},
						Env: []corev1.EnvVar{
							{Name: helperServeEnv, Value: "1"},
							{Name: "POD_NAME", ValueFrom: &corev1.EnvVarSource{FieldRef: &corev1.ObjectFieldSelector{FieldPath: "metadata.name"}}},
						},
					}},
				},
			},
		},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}
	if _, err := cs.AdmissionregistrationV1().ValidatingWebhookConfigurations().Create(ctx, &admissionregistrationv1.ValidatingWebhookConfiguration{
		ObjectMeta: metav1.ObjectMeta{Name: "serving-test"},
		Webhooks: []admissionregistrationv1.ValidatingWebhook{{
			Name: "web.serving.example.com",
			ClientConfig: admissionregistrationv1.WebhookClientConfig{
				Service:  &admissionregistrationv1.ServiceReference{Namespace: ns, Name: "web", Path: ptr.To("/validate"), Port: ptr.To(int32(443))},
				CABundle: certs.CA.Cert,
			},
			Rules: []admissionregistrationv1.RuleWithOperations{{
				Operations: []admissionregistrationv1.OperationType{admissionregistrationv1.Create},
				Rule:       admissionregistrationv1.Rule{APIGroups: []string{""}, APIVersions: []string{"v1"}, Resources: []string{"configmaps"}},
			}},
			ObjectSelector:          &metav1.LabelSelector{MatchLabels: map[string]string{"guarded": "yes"}},
			SideEffects:             ptr.To(admissionregistrationv1.SideEffectClassNone),
			AdmissionReviewVersions: []string{"v1"},
		}},
	}, metav1.CreateOptions{}); err != nil {
		t.Fatal(err)
	}

	// The API server reaches the process through the Service.
	eventually(t, time.Minute, func() error {
		_, err := cs.CoreV1().ConfigMaps(ns).Create(ctx, &corev1.ConfigMap{
			ObjectMeta: metav1.ObjectMeta{GenerateName: "guarded-", Labels: map[string]string{"guarded": "yes"}},
		}, metav1.CreateOptions{})
		if err == nil || !strings.Contains(err.Error(), "refused by the local process of Pod web-") {
			return fmt.Errorf("creating a guarded ConfigMap: %v; want the webhook's refusal", err)
		}
		return nil
	})
	slices, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if len(slices.Items) != 1 {
		t.Fatalf("%d EndpointSlices in %s, want the runner's one: %+v", len(slices.Items), ns, slices.Items)
	}
	s := slices.Items[0]
	if s.AddressType != discoveryv1.AddressTypeFQDN || s.Labels[discoveryv1.LabelManagedBy] != sliceManagedBy || s.Labels[discoveryv1.LabelServiceName] != "web" ||
		len(s.Endpoints) != 1 || s.Endpoints[0].Addresses[0] != "127.0.0.1" || len(s.Ports) != 1 || *s.Ports[0].Name != "https" {
		t.Errorf("EndpointSlice %s: %+v; want FQDN 127.0.0.1, port https only, managed by %s", s.Name, s, sliceManagedBy)
	}

	// Deleting the Deployment takes its endpoint away.
	if err := cs.AppsV1().Deployments(ns).Delete(ctx, "web", metav1.DeleteOptions{}); err != nil {
		t.Fatal(err)
	}
	eventually(t, time.Minute, func() error {
		list, err := cs.DiscoveryV1().EndpointSlices(ns).List(ctx, metav1.ListOptions{})
		if err != nil {
			return err
		}
		if len(list.Items) > 0 {
			return fmt.Errorf("%d EndpointSlices left", len(list.Items))
		}
		return nil
	})
}
