package installation_test

import (
	"bytes"
	"cmp"
	"context"
	"crypto/tls"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"net"
	"net/http"
	"os"
	"path/filepath"
	"slices"
	"strconv"
	"strings"
	"sync"
	"sync/atomic"
	"testing"
	"time"

	corev1 "k8s.io/api/core/v1"
	discoveryv1 "k8s.io/api/discovery/v1"
	rbacv1 "k8s.io/api/rbac/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"k8s.io/client-go/dynamic"
	"k8s.io/client-go/kubernetes"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine/bundle"
)

const (
	usageGroup      = "usage.example.com"
	usageAPIService = "v1alpha1." + usageGroup
	usageDeploy     = "usage-operator"
	usageService    = "usage-operator-service"
)

// usageCatalog writes a File-Based Catalog of one bundle, usage-operator
// 1.0.0, whose Deployment (scaled to zero: the test serves the API
// itself) serves the aggregated API usage.example.com/v1alpha1 on port
// 6443 (spec.apiservicedefinitions.owned).
func usageCatalog(t *testing.T, dir string) {
	t.Helper()
	csv := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]any{"name": "usage-operator.v1.0.0"},
		"spec": map[string]any{
			"version":      "1.0.0",
			"installModes": []any{map[string]any{"type": "AllNamespaces", "supported": true}},
			"apiservicedefinitions": map[string]any{"owned": []any{map[string]any{
				"name": usageAPIService, "group": usageGroup, "version": "v1alpha1", "kind": "Usage",
				"deploymentName": usageDeploy, "containerPort": 6443,
			}}},
			"install": map[string]any{"strategy": "deployment", "spec": map[string]any{
				"clusterPermissions": []any{map[string]any{"serviceAccountName": usageDeploy, "rules": []any{
					map[string]any{"apiGroups": []any{""}, "resources": []any{"pods"}, "verbs": []any{"get", "list", "watch"}}}}},
				"deployments": []any{map[string]any{"name": usageDeploy, "spec": map[string]any{
					"replicas": 0,
					"selector": map[string]any{"matchLabels": map[string]any{"app": usageDeploy}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": usageDeploy}},
						"spec": map[string]any{"serviceAccountName": usageDeploy, "containers": []any{
							map[string]any{"name": "server", "image": "example.com/usage-operator:1.0.0"}}},
					},
				}}},
			}},
		},
	}
	raw, err := json.Marshal(csv)
	if err != nil {
		t.Fatal(err)
	}
	blobs := []map[string]any{
		{"schema": "olm.package", "name": "usage-operator", "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": "usage-operator", "name": "stable", "entries": []any{map[string]any{"name": "usage-operator.v1.0.0"}}},
		{"schema": "olm.bundle", "package": "usage-operator", "name": "usage-operator.v1.0.0", "properties": []any{
			map[string]any{"type": "olm.package", "value": map[string]any{"packageName": "usage-operator", "version": "1.0.0"}},
			map[string]any{"type": "olm.bundle.object", "value": map[string]any{"data": base64.StdEncoding.EncodeToString(raw)}},
		}},
	}
	var out bytes.Buffer
	for _, b := range blobs {
		line, _ := json.Marshal(b)
		out.Write(line)
		out.WriteByte('\n')
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// startUsageServer is the test's stand-in for the operator's aggregated
// API server: HTTPS on 127.0.0.1 with the serving certificate Annex
// wrote (once loaded), serving discovery of usage.example.com/v1alpha1
// and a list of one Usage in every namespace.
func startUsageServer(t *testing.T) (port int, load func(ns string)) {
	t.Helper()
	ln, err := net.Listen("tcp", "127.0.0.1:0")
	if err != nil {
		t.Fatal(err)
	}
	var cert atomic.Pointer[tls.Certificate]
	reply := func(w http.ResponseWriter, v any) {
		w.Header().Set("Content-Type", "application/json")
		_ = json.NewEncoder(w).Encode(v)
	}
	mux := http.NewServeMux()
	mux.HandleFunc("/apis/"+usageGroup+"/v1alpha1", func(w http.ResponseWriter, _ *http.Request) {
		reply(w, metav1.APIResourceList{TypeMeta: metav1.TypeMeta{Kind: "APIResourceList", APIVersion: "v1"}, GroupVersion: usageGroup + "/v1alpha1",
			APIResources: []metav1.APIResource{{Name: "usages", SingularName: "usage", Namespaced: true, Kind: "Usage", Verbs: metav1.Verbs{"get", "list"}}}})
	})
	mux.HandleFunc("/apis/"+usageGroup+"/v1alpha1/namespaces/{ns}/usages", func(w http.ResponseWriter, r *http.Request) {
		reply(w, map[string]any{"apiVersion": usageGroup + "/v1alpha1", "kind": "UsageList", "metadata": map[string]any{},
			"items": []any{map[string]any{"apiVersion": usageGroup + "/v1alpha1", "kind": "Usage",
				"metadata": map[string]any{"name": "cpu", "namespace": r.PathValue("ns")}, "spec": map[string]any{"millicores": 250}}}})
	})
	srv := &http.Server{Handler: mux, ReadHeaderTimeout: 10 * time.Second, TLSConfig: &tls.Config{
		MinVersion: tls.VersionTLS12,
		GetCertificate: func(*tls.ClientHelloInfo) (*tls.Certificate, error) {
			if c := cert.Load(); c != nil {
				return c, nil
			}
			return nil, fmt.Errorf("no serving certificate yet")
		},
	}}
	go func() { _ = srv.ServeTLS(ln, "", "") }()
	t.Cleanup(func() { _ = srv.Close() })
	return ln.Addr().(*net.TCPAddr).Port, func(ns string) {
		secret := &corev1.Secret{}
		if err := env.Client.Get(t.Context(), client.ObjectKey{Namespace: ns, Name: bundle.WebhookCertSecretName(usageService)}, secret); err != nil {
			t.Fatal(err)
		}
		pair, err := tls.X509KeyPair(secret.Data["tls.crt"], secret.Data["tls.key"])
		if err != nil {
			t.Fatal(err)
		}
		cert.Store(&pair)
	}
}

// An operator bundle that serves an aggregated API (an owned APIService)
// installs on a real API server, which reaches the test's server through
// the Service Annex made (its EndpointSlice points at 127.0.0.1): the
// APIService waits for the Deployment and is registered with the
// installation's CA bundle, the installation is not Ready while the
// APIService's Service has no endpoint, saying so, and Ready once the API
// server finds it Available; a request for the API through the API
// server reaches the operator's server; the service account is bound to
// what an aggregated API server needs; the uninstall deletes the
// APIService before the Deployment and Service, and the bindings in
// kube-system too.
func TestBundleAPIService(t *testing.T) {
	ns := packageNamespace(t)
	ctx := t.Context()
	port, load := startUsageServer(t)
	dir := t.TempDir()
	usageCatalog(t, dir)
	olmCatalog(t, ns, dir)
	install(t, ns, "usage", "usage-operator", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Interval = metav1.Duration{Duration: time.Second}
	})
	waitConditionMessage(t, ns, "usage", v1alpha1.ConditionReady,
		"APIService "+usageAPIService+": Service "+ns+"/"+usageService+" has no ready endpoint")

	load(ns)
	slice := &discoveryv1.EndpointSlice{
		ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: usageService + "-test",
			Labels: map[string]string{discoveryv1.LabelServiceName: usageService}},
		AddressType: discoveryv1.AddressTypeFQDN,
		Endpoints:   []discoveryv1.Endpoint{{Addresses: []string{"127.0.0.1"}, Conditions: discoveryv1.EndpointConditions{Ready: ptr.To(true)}}},
		Ports:       []discoveryv1.EndpointPort{{Name: ptr.To("443"), Port: ptr.To(int32(port)), Protocol: ptr.To(corev1.ProtocolTCP)}},
	}
	if err := env.Client.Create(ctx, slice); err != nil {
		t.Fatal(err)
	}
	got := waitPlan(t, ns, "usage", "install", v1alpha1.PlanComplete, 1)
	eventually(t, 60*time.Second, func() error {
		cur, err := getInstallation(t, ns, "usage")
		if err != nil {
			return err
		}
		if c := findCond(cur, v1alpha1.ConditionReady); c == nil || c.Status != metav1.ConditionTrue {
			return fmt.Errorf("not Ready: %s", describeConditions(cur))
		}
		got = cur
		return nil
	})

	// The APIService: the installation's CA, Available.
	dyn, err := dynamic.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	apiServices := dyn.Resource(schema.GroupVersionResource{Group: "apiregistration.k8s.io", Version: "v1", Resource: "apiservices"})
	caSecret := &corev1.Secret{}
	if err := env.Client.Get(ctx, client.ObjectKey{Namespace: ns, Name: bundle.WebhookCASecretName("usage")}, caSecret); err != nil {
		t.Fatal(err)
	}
	apiService, err := apiServices.Get(ctx, usageAPIService, metav1.GetOptions{})
	if err != nil {
		t.Fatal(err)
	}
	caBundle, _, _ := unstructured.NestedString(apiService.Object, "spec", "caBundle")
	if caBundle != base64.StdEncoding.EncodeToString(caSecret.Data["ca.crt"]) {
		t.Error("the APIService's caBundle is not the installation's CA")
	}
	if !slices.ContainsFunc(got.Status.Inventory, func(r v1alpha1.ObjectReference) bool { return r.Kind == "APIService" && r.Name == usageAPIService }) {
		t.Errorf("the inventory lacks the APIService: %+v", got.Status.Inventory)
	}

	// The API, through the API server.
	cs, err := kubernetes.NewForConfig(env.Config)
	if err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		raw, err := cs.Discovery().RESTClient().Get().AbsPath("/apis/" + usageGroup + "/v1alpha1/namespaces/" + ns + "/usages").DoRaw(ctx)
		if err != nil {
			return err
		}
		if !strings.Contains(string(raw), `"name":"cpu"`) {
			return fmt.Errorf("the API server answered %s", raw)
		}
		return nil
	})

	// What an aggregated API server needs, bound to its service account.
	bound := func() (delegator, reader bool) {
		var crbs rbacv1.ClusterRoleBindingList
		if err := env.Client.List(ctx, &crbs); err != nil {
			t.Fatal(err)
		}
		var rbs rbacv1.RoleBindingList
		if err := env.Client.List(ctx, &rbs, client.InNamespace("kube-system")); err != nil {
			t.Fatal(err)
		}
		ours := func(subjects []rbacv1.Subject) bool {
			return len(subjects) == 1 && subjects[0].Name == usageDeploy && subjects[0].Namespace == ns
		}
		for _, b := range crbs.Items {
			delegator = delegator || ours(b.Subjects) && b.RoleRef.Kind == "ClusterRole" && b.RoleRef.Name == "system:auth-delegator"
		}
		for _, b := range rbs.Items {
			reader = reader || ours(b.Subjects) && b.RoleRef.Kind == "Role" && b.RoleRef.Name == "extension-apiserver-authentication-reader"
		}
		return delegator, reader
	}
	if delegator, reader := bound(); !delegator || !reader {
		t.Errorf("%s bound to system:auth-delegator: %v; to extension-apiserver-authentication-reader in kube-system: %v", usageDeploy, delegator, reader)
	}

	// The uninstall deletes the APIService first, and everything it made.
	order := watchDeletions(t, map[string]dynamic.ResourceInterface{
		"APIService": apiServices,
		"Deployment": dyn.Resource(schema.GroupVersionResource{Group: "apps", Version: "v1", Resource: "deployments"}).Namespace(ns),
		"Service":    dyn.Resource(schema.GroupVersionResource{Version: "v1", Resource: "services"}).Namespace(ns),
	})
	deleteAndWait(t, got)
	deleted := order()
	pos := func(what string) int {
		i := slices.Index(deleted, what)
		if i < 0 {
			t.Fatalf("%s was not deleted; deletions: %v", what, deleted)
		}
		return i
	}
	first := pos("APIService/" + usageAPIService)
	for _, later := range []string{"Deployment/" + usageDeploy, "Service/" + usageService} {
		if pos(later) < first {
			t.Errorf("%s was deleted before the APIService: %v", later, deleted)
		}
	}
	if delegator, reader := bound(); delegator || reader {
		t.Errorf("after the uninstall, %s is still bound to system:auth-delegator: %v; to extension-apiserver-authentication-reader: %v", usageDeploy, delegator, reader)
	}
}

// watchDeletions watches each resource of watches (by the kind it
// names), and returns a function that stops watching and lists the
// deletions seen as Kind/name in the order of their resourceVersions (one
// etcd's revisions, so one order across kinds).
func watchDeletions(t *testing.T, watches map[string]dynamic.ResourceInterface) func() []string {
	t.Helper()
	ctx, cancel := context.WithCancel(t.Context())
	type deletion struct {
		what string
		rv   uint64
	}
	var (
		mu   sync.Mutex
		seen []deletion
		wg   sync.WaitGroup
	)
	for kind, res := range watches {
		w, err := res.Watch(ctx, metav1.ListOptions{})
		if err != nil {
			cancel()
			t.Fatal(err)
		}
		wg.Go(func() {
			defer w.Stop()
			for ev := range w.ResultChan() {
				obj, ok := ev.Object.(*unstructured.Unstructured)
				if ev.Type != watch.Deleted || !ok {
					continue
				}
				rv, _ := strconv.ParseUint(obj.GetResourceVersion(), 10, 64)
				mu.Lock()
				seen = append(seen, deletion{what: kind + "/" + obj.GetName(), rv: rv})
				mu.Unlock()
			}
		})
	}
	return func() []string {
		time.Sleep(time.Second) // the last events arrive
		cancel()
		wg.Wait()
		mu.Lock()
		defer mu.Unlock()
		slices.SortFunc(seen, func(a, b deletion) int { return cmp.Compare(a.rv, b.rv) })
		out := make([]string, len(seen))
		for i, d := range seen {
			out[i] = d.what
		}
		return out
	}
}
