package installation_test

import (
	"bufio"
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"fmt"
	"os"
	"path/filepath"
	"strconv"
	"strings"
	"sync"
	"testing"

	appsv1 "k8s.io/api/apps/v1"
	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/watch"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv/helmrepo"
)

// requiredGroup is the API group of the provider's CRD in this test: the
// memcached fixture's, renamed so that no other test's catalog offers it.
const requiredGroup = "cache.required.example.com"

// providerCatalog writes memcachedCatalog's catalog of package pkgName,
// with the bundle's API group renamed to requiredGroup.
func providerCatalog(t *testing.T, dir, pkgName string) {
	t.Helper()
	memcachedCatalog(t, dir, pkgName)
	path := filepath.Join(dir, "catalog.json")
	data, err := os.ReadFile(path)
	if err != nil {
		t.Fatal(err)
	}
	var out bytes.Buffer
	sc := bufio.NewScanner(bytes.NewReader(data))
	sc.Buffer(nil, 16<<20)
	for sc.Scan() {
		blob := map[string]any{}
		if err := json.Unmarshal(sc.Bytes(), &blob); err != nil {
			t.Fatal(err)
		}
		props, _ := blob["properties"].([]any)
		for _, p := range props {
			p := p.(map[string]any)
			if p["type"] != "olm.bundle.object" {
				continue
			}
			value := p["value"].(map[string]any)
			raw, err := base64.StdEncoding.DecodeString(value["data"].(string))
			if err != nil {
				t.Fatal(err)
			}
			raw = bytes.ReplaceAll(raw, []byte("cache.example.com"), []byte(requiredGroup))
			value["data"] = base64.StdEncoding.EncodeToString(raw)
		}
		line, _ := json.Marshal(blob)
		out.Write(append(line, '\n'))
	}
	if err := os.WriteFile(path, out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// requiredAPI is an API a bundle of requiringCatalog requires.
type requiredAPI struct{ group, version, kind, plural string }

// memcachedAPI is the provider's API in providerCatalog.
var memcachedAPI = requiredAPI{requiredGroup, "v1alpha1", "Memcached", "memcacheds"}

func (a requiredAPI) String() string { return a.group + "/" + a.version + "/" + a.kind }

// requiringCatalog writes a File-Based Catalog of package pkgName 1.0.0:
// an operator with one Deployment (scaled to zero) and no CRD of its own,
// whose bundle requires api twice over, as an olm.gvk.required property
// and in its CSV's required CRDs.
func requiringCatalog(t *testing.T, dir, pkgName string, api requiredAPI) {
	t.Helper()
	name := pkgName + ".v1.0.0"
	csv := map[string]any{
		"apiVersion": "operators.coreos.com/v1alpha1", "kind": "ClusterServiceVersion",
		"metadata": map[string]any{"name": name},
		"spec": map[string]any{
			"version":      "1.0.0",
			"installModes": []any{map[string]any{"type": "AllNamespaces", "supported": true}, map[string]any{"type": "OwnNamespace", "supported": true}},
			"customresourcedefinitions": map[string]any{"required": []any{
				map[string]any{"name": api.plural + "." + api.group, "version": api.version, "kind": api.kind},
			}},
			"install": map[string]any{"strategy": "deployment", "spec": map[string]any{
				"clusterPermissions": []any{map[string]any{"serviceAccountName": pkgName, "rules": []any{
					map[string]any{"apiGroups": []any{api.group}, "resources": []any{api.plural}, "verbs": []any{"get", "list", "watch"}},
				}}},
				"deployments": []any{map[string]any{"name": pkgName, "spec": map[string]any{
					"replicas": 0,
					"selector": map[string]any{"matchLabels": map[string]any{"app": pkgName}},
					"template": map[string]any{
						"metadata": map[string]any{"labels": map[string]any{"app": pkgName}},
						"spec": map[string]any{"serviceAccountName": pkgName, "containers": []any{
							map[string]any{"name": "manager", "image": "example.com/" + pkgName + ":1.0.0"},
						}},
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
		{"schema": "olm.package", "name": pkgName, "defaultChannel": "stable"},
		{"schema": "olm.channel", "package": pkgName, "name": "stable", "entries": []any{map[string]any{"name": name}}},
		{"schema": "olm.bundle", "package": pkgName, "name": name, "properties": []any{
			map[string]any{"type": "olm.package", "value": map[string]any{"packageName": pkgName, "version": "1.0.0"}},
			map[string]any{"type": "olm.gvk.required", "value": map[string]any{"group": api.group, "version": api.version, "kind": api.kind}},
			map[string]any{"type": "olm.bundle.object", "value": map[string]any{"data": base64.StdEncoding.EncodeToString(raw)}},
		}},
	}
	var out bytes.Buffer
	for _, b := range blobs {
		line, _ := json.Marshal(b)
		out.Write(append(line, '\n'))
	}
	if err := os.WriteFile(filepath.Join(dir, "catalog.json"), out.Bytes(), 0o644); err != nil {
		t.Fatal(err)
	}
}

// revisions records, from watches opened before the test acts, the etcd
// revision at which the provider's installation was first Ready and the
// revisions at which the dependent's first objects were created.
type revisions struct {
	mu            sync.Mutex
	providerReady int
	dependent     []int
}

func (r *revisions) watch(t *testing.T, ns, provider, dependent string) {
	t.Helper()
	wc, err := client.NewWithWatch(env.Config, client.Options{Scheme: env.Scheme})
	if err != nil {
		t.Fatal(err)
	}
	ctx, cancel := context.WithCancel(context.Background())
	t.Cleanup(cancel)
	for _, list := range []client.ObjectList{&v1alpha1.ExtensionInstallationList{}, &appsv1.DeploymentList{}, &corev1.ServiceAccountList{}} {
		w, err := wc.Watch(ctx, list, client.InNamespace(ns))
		if err != nil {
			t.Fatal(err)
		}
		go func() {
			defer w.Stop()
			for {
				select {
				case <-ctx.Done():
					return
				case ev, ok := <-w.ResultChan():
					if !ok {
						return
					}
					r.observe(ev, provider, dependent)
				}
			}
		}()
	}
}

func (r *revisions) observe(ev watch.Event, provider, dependent string) {
	obj, ok := ev.Object.(client.Object)
	if !ok {
		return
	}
	rv, _ := strconv.Atoi(obj.GetResourceVersion())
	r.mu.Lock()
	defer r.mu.Unlock()
	switch o := obj.(type) {
	case *v1alpha1.ExtensionInstallation:
		if o.Name == provider && r.providerReady == 0 && meta.IsStatusConditionTrue(o.Status.Conditions, v1alpha1.ConditionReady) {
			r.providerReady = rv
		}
	default:
		if ev.Type == watch.Added && strings.HasPrefix(obj.GetName(), dependent) {
			r.dependent = append(r.dependent, rv)
		}
	}
}

// An operator bundle that requires another operator's API (olm.gvk.required
// and its CSV's required CRDs) from another catalog: the operator that owns
// the API is added as a dependency, and is Ready before anything of the
// dependent is applied; the Resolved condition says which provider and
// why. Deleting the provider is held while the dependent runs; deleting
// the dependent releases the provider.
func TestBundleRequiringAnotherOperatorsAPI(t *testing.T) {
	ns := packageNamespace(t)
	providerDir, dependentDir := t.TempDir(), t.TempDir()
	providerCatalog(t, providerDir, "memcached-provider")
	requiringCatalog(t, dependentDir, "memcached-user", memcachedAPI)
	olmCatalog(t, ns, providerDir)
	olmCatalog(t, ns+"-apps", dependentDir)

	var revs revisions
	revs.watch(t, ns, "memcached-provider", "memcached-user")

	user := install(t, ns, "memcached-user", "memcached-user", "")
	user = waitCondition(t, user, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	resolved := meta.FindStatusCondition(user.Status.Conditions, v1alpha1.ConditionResolved)
	if want := "it requires " + memcachedAPI.String() + ", from memcached-provider (the only extension that owns it)"; !strings.Contains(resolved.Message, want) {
		t.Errorf("Resolved: %q, want it to contain %q", resolved.Message, want)
	}

	provider, err := getInstallation(t, ns, "memcached-provider")
	if err != nil {
		t.Fatalf("the provider was not added: %v", err)
	}
	if provider.Labels[v1alpha1.LabelAddedFor] != "dependencies" || strings.Join(provider.Status.RequiredBy, ",") != ns+"/memcached-user" {
		t.Errorf("provider: labels %v, requiredBy %v; want added for dependencies, required by %s/memcached-user", provider.Labels, provider.Status.RequiredBy, ns)
	}
	crd := &metav1.PartialObjectMetadata{}
	crd.SetGroupVersionKind(schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"})
	if err := env.Client.Get(t.Context(), client.ObjectKey{Name: "memcacheds." + requiredGroup}, crd); err != nil {
		t.Errorf("the provider's CRD: %v", err)
	}

	revs.mu.Lock()
	ready, dependent := revs.providerReady, append([]int(nil), revs.dependent...)
	revs.mu.Unlock()
	if ready == 0 || len(dependent) == 0 {
		t.Fatalf("watched: provider Ready at revision %d, the dependent's objects created at %v", ready, dependent)
	}
	for _, rv := range dependent {
		if rv < ready {
			t.Errorf("an object of memcached-user was created at revision %d, before memcached-provider was Ready (revision %d)", rv, ready)
		}
	}

	// The provider is held while the operator that requires its API runs.
	if err := env.Client.Delete(t.Context(), provider); err != nil {
		t.Fatal(err)
	}
	waitConditionMessage(t, ns, "memcached-provider", v1alpha1.ConditionReady,
		"deletion held: memcached-provider still needed by "+ns+"/memcached-user (memcached-user 1.0.0)")

	if err := env.Client.Delete(t.Context(), user); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "memcached-user")
	waitGone(t, ns, "memcached-provider")
}

// widgetCRDChart is a chart whose only object is the CustomResourceDefinition
// of api: no catalog says it owns the API, its installation does.
func widgetCRDChart(api requiredAPI) helmrepo.Chart {
	crd := fmt.Sprintf(`apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata:
  name: %[4]s.%[1]s
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: %[3]s, listKind: %[3]sList, plural: %[4]s, singular: %[5]s}
  versions:
  - name: %[2]s
    served: true
    storage: true
    schema:
      openAPIV3Schema: {type: object, x-kubernetes-preserve-unknown-fields: true}
`, api.group, api.version, api.kind, api.plural, strings.ToLower(api.kind))
	return helmrepo.Chart{Name: "widget-crds", Version: "1.0.0", Files: map[string]string{"templates/crd.yaml": crd}}
}

// An operator requiring an API that no catalog's operator owns, but whose
// CRD an installation on the cluster owns (here a chart's): that
// installation meets the requirement, nothing is added, and the operator
// installs; the Resolved condition says so, and the chart's installation
// is held while the operator runs.
func TestBundleRequiringAnAPIInstalledByAChart(t *testing.T) {
	widgets := requiredAPI{"crds.required.example.com", "v1", "Widget", "widgets"}
	ns, _ := setup(t, widgetCRDChart(widgets))
	dir := t.TempDir()
	requiringCatalog(t, dir, "widget-user", widgets)
	olmCatalog(t, ns+"-apps", dir)

	crds := install(t, ns, "widget-crds", "widget-crds", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Uninstall.DeleteCRDs = true })
	waitCondition(t, crds, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	user := install(t, ns, "widget-user", "widget-user", "")
	user = waitCondition(t, user, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	resolved := meta.FindStatusCondition(user.Status.Conditions, v1alpha1.ConditionResolved)
	if want := "it requires " + widgets.String() + ", from widget-crds (its installation on the cluster owns the API's CRD)"; !strings.Contains(resolved.Message, want) {
		t.Errorf("Resolved: %q, want it to contain %q", resolved.Message, want)
	}
	var all v1alpha1.ExtensionInstallationList
	if err := env.Client.List(t.Context(), &all, client.InNamespace(ns)); err != nil {
		t.Fatal(err)
	}
	if len(all.Items) != 2 {
		var names []string
		for _, i := range all.Items {
			names = append(names, i.Name)
		}
		t.Errorf("installations %v, want widget-crds and widget-user only", names)
	}

	// The chart's installation is held while the operator runs.
	if err := env.Client.Delete(t.Context(), crds); err != nil {
		t.Fatal(err)
	}
	waitConditionMessage(t, ns, "widget-crds", v1alpha1.ConditionReady,
		"deletion held: widget-crds still needed by "+ns+"/widget-user (widget-user 1.0.0)")

	if err := env.Client.Delete(t.Context(), user); err != nil {
		t.Fatal(err)
	}
	waitGone(t, ns, "widget-user")
	waitGone(t, ns, "widget-crds")
}
