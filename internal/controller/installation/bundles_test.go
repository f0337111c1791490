package installation_test

import (
	"bytes"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// memcachedCatalog writes a File-Based Catalog of the bundle engine's
// memcached-operator fixture, its Deployments scaled to zero (nothing
// runs pods in this test's cluster) and MultiNamespace unsupported, as
// one bundle of channel alpha.
func memcachedCatalog(t *testing.T, dir, pkgName string, versions ...string) {
	t.Helper()
	if len(versions) == 0 {
		versions = []string{"0.1.0"}
	}
	manifests := filepath.Join("..", "..", "engine", "bundle", "testdata", "bundles", "memcached-operator", "manifests")
	entries, err := os.ReadDir(manifests)
	if err != nil {
		t.Fatal(err)
	}
	var objects []map[string]any
	for _, e := range entries {
		data, err := os.ReadFile(filepath.Join(manifests, e.Name()))
		if err != nil {
			t.Fatal(err)
		}
		dec := yaml.NewYAMLOrJSONDecoder(bytes.NewReader(data), 4096)
		for {
			obj := map[string]any{}
			if err := dec.Decode(&obj); err != nil {
				break
			}
			if len(obj) == 0 {
				continue
			}
			u := &unstructured.Unstructured{Object: obj}
			if u.GetKind() == "ClusterServiceVersion" {
				deployments, _, _ := unstructured.NestedSlice(obj, "spec", "install", "spec", "deployments")
				for _, d := range deployments {
					_ = unstructured.SetNestedField(d.(map[string]any), int64(0), "spec", "replicas")
				}
				_ = unstructured.SetNestedSlice(obj, deployments, "spec", "install", "spec", "deployments")

				// This operator cannot watch several namespaces.
				modes, _, _ := unstructured.NestedSlice(obj, "spec", "installModes")
				for _, m := range modes {
					if m.(map[string]any)["type"] == "MultiNamespace" {
						m.(map[string]any)["supported"] = false
					}
				}
				_ = unstructured.SetNestedSlice(obj, modes, "spec", "installModes")
			}
			objects = append(objects, obj)
		}
	}
	// Each version replaces the one before it in channel alpha.
	blobs := []map[string]any{{"schema": "olm.package", "name": pkgName, "defaultChannel": "alpha"}}
	var entries2 []map[string]any
	for i, v := range versions {
		entry := map[string]any{"name": pkgName + ".v" + v}
		if i > 0 {
			entry["replaces"] = pkgName + ".v" + versions[i-1]
		}
		entries2 = append(entries2, entry)
		properties := []map[string]any{{"type": "olm.package", "value": map[string]any{"packageName": pkgName, "version": v}}}
		for _, obj := range objects {
			u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
			if u.GetKind() == "ClusterServiceVersion" {
				_ = unstructured.SetNestedField(u.Object, v, "spec", "version")
				u.SetName(pkgName + ".v" + v)
			}
			raw, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			properties = append(properties, map[string]any{"type": "olm.bundle.object",
				"value": map[string]any{"data": base64.StdEncoding.EncodeToString(raw)}})
		}
		blobs = append(blobs, map[string]any{"schema": "olm.bundle", "package": pkgName, "name": pkgName + ".v" + v, "properties": properties})
	}
	blobs = append(blobs, map[string]any{"schema": "olm.channel", "package": pkgName, "name": "alpha", "entries": entries2})
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

// An operator bundle from an olm catalog installs through the bundle
// engine's plan (CRDs, RBAC, manifests, Deployments); an install mode the
// bundle does not support is refused naming spec.watchNamespaces; the
// uninstall removes what it applied.
func TestBundleInstallsOperator(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	memcachedCatalog(t, dir, "memcached-operator")
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Path: dir}}},
	}
	if err := env.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), cat) })

	install(t, ns, "memcached", "memcached-operator", "", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Uninstall.DeleteCRDs = true })
	got := waitPlan(t, ns, "memcached", "install", v1alpha1.PlanComplete, 1)
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	crd := schema.GroupVersionKind{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition"}
	if _, err := get(t, crd, "", "memcacheds.cache.example.com"); err != nil {
		t.Errorf("the bundle's CRD: %v", err)
	}
	kinds := map[string]int{}
	for _, ref := range got.Status.Inventory {
		kinds[ref.Kind]++
	}
	for _, kind := range []string{"CustomResourceDefinition", "ServiceAccount", "ClusterRole", "ClusterRoleBinding", "Deployment"} {
		if kinds[kind] == 0 {
			t.Errorf("no %s in the inventory: %v", kind, kinds)
		}
	}

	// Another install mode the bundle does not support is refused before
	// anything is applied.
	update(t, ns, "memcached", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.WatchNamespaces = []string{"a", "b", "c"}
	})
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionFalse, v1alpha1.ReasonRenderFailed)
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "watchNamespaces") {
		t.Errorf("refusal does not name spec.watchNamespaces: %s", c.Message)
	}

	if err := env.Client.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		_, err := getInstallation(t, ns, "memcached")
		if err == nil {
			return errString("still there")
		}
		return nil
	})
}

type errString string

func (e errString) Error() string { return string(e) }

// An upgrade across two edges of the catalog's graph walks them: 0.1.0 →
// 0.2.0 (healthy) → 0.3.0, each its own revision, and the Resolved
// condition names the channel the package's default gave.
func TestBundleUpgradeWalksTheGraph(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	memcachedCatalog(t, dir, "memcached-walk", "0.1.0", "0.2.0", "0.3.0")
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Path: dir}}},
	}
	if err := env.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(t.Context(), cat) })

	install(t, ns, "memcached", "memcached-walk", "0.1.0", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Uninstall.DeleteCRDs = true })
	got := waitPlan(t, ns, "memcached", "install", v1alpha1.PlanComplete, 1)
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionResolved); !strings.Contains(c.Message, "channel alpha (the package's default") {
		t.Errorf("Resolved does not say which channel: %s", c.Message)
	}

	update(t, ns, "memcached", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "0.3.0" })
	eventually(t, 60*time.Second, func() error {
		cur, err := getInstallation(t, ns, "memcached")
		if err != nil {
			return err
		}
		if cur.Status.InstalledVersion != "0.3.0" || !meta.IsStatusConditionTrue(cur.Status.Conditions, v1alpha1.ConditionReady) {
			return errString("installed " + cur.Status.InstalledVersion)
		}
		got = cur
		return nil
	})
	var walked []string
	for i := len(got.Status.History) - 1; i >= 0; i-- {
		walked = append(walked, got.Status.History[i].Version)
	}
	if strings.Join(walked, " → ") != "0.1.0 → 0.2.0 → 0.3.0" {
		t.Errorf("revisions %v, want one per edge: 0.1.0 → 0.2.0 → 0.3.0", walked)
	}
	if err := env.Client.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if _, err := getInstallation(t, ns, "memcached"); err == nil {
			return errString("still there")
		}
		return nil
	})
}
