package installation_test

import (
	"bytes"
	"context"
	"encoding/base64"
	"encoding/json"
	"os"
	"path/filepath"
	"slices"
	"strings"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/yaml"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// memcachedCatalog writes a File-Based Catalog of the bundle engine's
// memcached-operator fixture, its Deployments scaled to zero (nothing
// runs pods in this test's cluster) and MultiNamespace unsupported, as
// one bundle per version, each replacing the one before it in channel
// alpha.
func memcachedCatalog(t *testing.T, dir, pkgName string, versions ...string) {
	t.Helper()
	if len(versions) == 0 {
		versions = []string{"0.1.0"}
	}
	alpha := fbcChannel{name: "alpha"}
	for i, v := range versions {
		e := fbcChannelEntry{version: v}
		if i > 0 {
			e.replaces = versions[i-1]
		}
		alpha.entries = append(alpha.entries, e)
	}
	memcachedChannels(t, dir, pkgName, alpha)
}

// fbcChannel is an olm.channel of a test catalog; its first channel is
// the package's defaultChannel.
type fbcChannel struct {
	name    string
	entries []fbcChannelEntry
}

type fbcChannelEntry struct{ version, replaces, skipRange string }

// memcachedChannels writes memcachedCatalog's catalog with channels: a
// bundle for every version an entry names.
func memcachedChannels(t *testing.T, dir, pkgName string, channels ...fbcChannel) {
	t.Helper()
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
	blobs := []map[string]any{{"schema": "olm.package", "name": pkgName, "defaultChannel": channels[0].name}}
	bundleName := func(v string) string { return pkgName + ".v" + v }
	var versions []string
	for _, ch := range channels {
		var entries []map[string]any
		for _, e := range ch.entries {
			entry := map[string]any{"name": bundleName(e.version)}
			if e.replaces != "" {
				entry["replaces"] = bundleName(e.replaces)
			}
			if e.skipRange != "" {
				entry["skipRange"] = e.skipRange
			}
			entries = append(entries, entry)
			if !slices.Contains(versions, e.version) {
				versions = append(versions, e.version)
			}
		}
		blobs = append(blobs, map[string]any{"schema": "olm.channel", "package": pkgName, "name": ch.name, "entries": entries})
	}
	for _, v := range versions {
		properties := []map[string]any{{"type": "olm.package", "value": map[string]any{"packageName": pkgName, "version": v}}}
		for _, obj := range objects {
			u := (&unstructured.Unstructured{Object: obj}).DeepCopy()
			if u.GetKind() == "ClusterServiceVersion" {
				_ = unstructured.SetNestedField(u.Object, v, "spec", "version")
				u.SetName(bundleName(v))
			}
			raw, err := json.Marshal(u.Object)
			if err != nil {
				t.Fatal(err)
			}
			properties = append(properties, map[string]any{"type": "olm.bundle.object",
				"value": map[string]any{"data": base64.StdEncoding.EncodeToString(raw)}})
		}
		blobs = append(blobs, map[string]any{"schema": "olm.bundle", "package": pkgName, "name": bundleName(v), "properties": properties})
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

// An operator bundle from an olm catalog installs through the bundle
// engine's plan (CRDs, RBAC, manifests, Deployments); an install mode the
// bundle does not support is refused naming spec.watchNamespaces; the
// uninstall removes what it applied.
func TestBundleInstallsOperator(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	memcachedCatalog(t, dir, "memcached-operator")
	olmCatalog(t, ns, dir)

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
	// Watching all namespaces, it may manage Memcacheds everywhere; status
	// says so.
	if p := got.Status.Permissions; p == nil || p.ClusterScoped == 0 ||
		!slices.ContainsFunc(p.ClusterWide, func(l string) bool { return strings.HasSuffix(l, " on memcacheds.cache.example.com") }) {
		t.Errorf("status.permissions = %+v, want the cluster-wide grant on memcacheds and the cluster-scoped objects counted", p)
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

// olmCatalog creates Catalog ns of the File-Based Catalog in dir, deleted
// when the test ends.
func olmCatalog(t *testing.T, ns, dir string) {
	t.Helper()
	cat := &v1alpha1.Catalog{
		ObjectMeta: metav1.ObjectMeta{Name: ns},
		Spec:       v1alpha1.CatalogSpec{Source: v1alpha1.CatalogSource{OLM: &v1alpha1.OLMSource{Path: dir}}},
	}
	if err := env.Client.Create(t.Context(), cat); err != nil {
		t.Fatal(err)
	}
	t.Cleanup(func() { _ = env.Client.Delete(context.Background(), cat) })
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
	olmCatalog(t, ns, dir)

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

// Channels: an explicit channel is followed; a version that is not a
// successor of the installed bundle in it is refused, naming both; a
// switch to a channel whose skipRange reaches the version upgrades in one
// hop.
func TestBundleChannels(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	memcachedChannels(t, dir, "memcached-channels",
		// 0.3.0 is in stable, but nothing there replaces toward it.
		fbcChannel{name: "stable", entries: []fbcChannelEntry{{version: "0.1.0"}, {version: "0.2.0", replaces: "0.1.0"}, {version: "0.3.0"}}},
		fbcChannel{name: "fast", entries: []fbcChannelEntry{{version: "0.1.0"}, {version: "0.3.0", skipRange: ">=0.1.0 <0.3.0"}}},
	)
	olmCatalog(t, ns, dir)

	install(t, ns, "memcached", "memcached-channels", "0.1.0", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Channel = "stable"
		i.Spec.Uninstall.DeleteCRDs = true
	})
	got := waitPlan(t, ns, "memcached", "install", v1alpha1.PlanComplete, 1)
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")

	// 0.3.0 is in channel stable but no edge leads there from 0.1.0.
	update(t, ns, "memcached", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Version = "0.3.0" })
	eventually(t, 60*time.Second, func() error {
		cur, err := getInstallation(t, ns, "memcached")
		if err != nil {
			return err
		}
		c := meta.FindStatusCondition(cur.Status.Conditions, v1alpha1.ConditionResolved)
		if c == nil || c.Status != metav1.ConditionFalse || c.ObservedGeneration != cur.Generation {
			return errString("not refused yet")
		}
		if !strings.Contains(c.Message, "0.3.0 is not a successor of 0.1.0 in channel stable") {
			t.Fatalf("the refusal does not name the successor rule: %s", c.Message)
		}
		if cur.Status.InstalledVersion != "0.1.0" {
			t.Fatalf("installed %s after a refusal", cur.Status.InstalledVersion)
		}
		return nil
	})

	// Channel fast: 0.3.0 skips everything from 0.1.0 on.
	update(t, ns, "memcached", func(i *v1alpha1.ExtensionInstallation) { i.Spec.Channel = "fast" })
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
	if n := len(got.Status.History); n != 2 || got.Status.History[1].Version != "0.1.0" {
		t.Errorf("history %v, want 0.1.0 then 0.3.0 in one hop", got.Status.History)
	}
	deleteAndWait(t, got)
}

// spec.resources: the custom resources are created once the operator is
// up, their own conditions decide Ready (a configured condition type
// here) and a failing one's message reaches the installation; a removed
// one is pruned; on deletion they go first and the operator waits for
// their finalizers, bounded by spec.uninstall.timeout.
func TestBundleResources(t *testing.T) {
	ns := packageNamespace(t)
	dir := t.TempDir()
	memcachedCatalog(t, dir, "memcached-resources")
	olmCatalog(t, ns, dir)
	memcachedGVK := schema.GroupVersionKind{Group: "cache.example.com", Version: "v1alpha1", Kind: "Memcached"}
	resource := func(name string) v1alpha1.CustomResource {
		raw, _ := json.Marshal(map[string]any{
			"apiVersion": "cache.example.com/v1alpha1", "kind": "Memcached",
			"metadata": map[string]any{"name": name}, "spec": map[string]any{"size": 1},
		})
		return v1alpha1.CustomResource{Object: runtime.RawExtension{Raw: raw}, ReadyCondition: "Available"}
	}
	// The test plays the operator: it writes the resource's status.
	setAvailable := func(name, status, reason, message string) {
		t.Helper()
		eventually(t, 30*time.Second, func() error {
			cr, err := get(t, memcachedGVK, ns, name)
			if err != nil {
				return err
			}
			_ = unstructured.SetNestedSlice(cr.Object, []any{map[string]any{
				"type": "Available", "status": status, "reason": reason, "message": message,
				"lastTransitionTime": time.Now().UTC().Format(time.RFC3339),
			}}, "status", "conditions")
			return env.Client.Status().Update(t.Context(), cr)
		})
	}

	install(t, ns, "memcached", "memcached-resources", "", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Resources = []v1alpha1.CustomResource{resource("cache")}
		i.Spec.Uninstall.DeleteCRDs = true
		i.Spec.Uninstall.Timeout = metav1.Duration{Duration: 2 * time.Second}
	})
	// The operator is up (its Deployments scaled to zero are Available at
	// once); the resource exists but has no Available condition yet.
	got := waitConditionMessage(t, ns, "memcached", v1alpha1.ConditionReady, "Memcached "+ns+"/cache: no Available condition yet")
	if st := got.Status.Resources; len(st) != 1 || st[0].Name != "cache" || st[0].Ready != metav1.ConditionFalse {
		t.Errorf("status.resources = %+v, want cache not ready", st)
	}

	// A failing resource: its own message reaches the installation.
	setAvailable("cache", "False", "InvalidSize", "size 1 is below the minimum of 3")
	got = waitConditionMessage(t, ns, "memcached", v1alpha1.ConditionReady, "Available condition is False: InvalidSize: size 1 is below the minimum of 3")
	if st := got.Status.Resources; len(st) != 1 || !strings.Contains(st[0].Message, "size 1 is below the minimum of 3") {
		t.Errorf("status.resources = %+v, want the resource's message", st)
	}

	setAvailable("cache", "True", "Running", "3 pods")
	got = waitCondition(t, got, v1alpha1.ConditionReady, metav1.ConditionTrue, "")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionReady); !strings.Contains(c.Message, "its resource Memcached "+ns+"/cache is ready") {
		t.Errorf("Ready does not name the resource: %s", c.Message)
	}
	if st := got.Status.Resources; len(st) != 1 || st[0].Ready != metav1.ConditionTrue {
		t.Errorf("status.resources = %+v, want cache ready", st)
	}

	// Replacing the resource prunes the old one once the new one is ready.
	update(t, ns, "memcached", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Resources = []v1alpha1.CustomResource{resource("sessions")}
	})
	setAvailable("sessions", "True", "Running", "3 pods")
	got = waitConditionMessage(t, ns, "memcached", v1alpha1.ConditionReady, "its resource Memcached "+ns+"/sessions is ready")
	if _, err := get(t, memcachedGVK, ns, "cache"); err == nil {
		t.Errorf("Memcached cache left spec.resources but was not pruned")
	}

	// The operator's finalizer: deletion waits for it with the operator
	// still installed, and says so once spec.uninstall.timeout is over.
	eventually(t, 30*time.Second, func() error {
		cr, err := get(t, memcachedGVK, ns, "sessions")
		if err != nil {
			return err
		}
		cr.SetFinalizers([]string{"cache.example.com/cleanup"})
		return env.Client.Update(t.Context(), cr)
	})
	if err := env.Client.Delete(t.Context(), got); err != nil {
		t.Fatal(err)
	}
	got = waitConditionMessage(t, ns, "memcached", v1alpha1.ConditionStalled,
		"Memcached "+ns+"/sessions: being deleted, waiting for finalizers cache.example.com/cleanup")
	if c := meta.FindStatusCondition(got.Status.Conditions, v1alpha1.ConditionStalled); c.Reason != v1alpha1.ReasonFinalizersPending || !strings.Contains(c.Message, "spec.uninstall.onTimeout: RemoveFinalizers") {
		t.Errorf("Stalled = %s: %s, want FinalizersPending saying what to do", c.Reason, c.Message)
	}
	for _, d := range []string{"memcached-operator-controller-manager", "memcached-operator-exporter"} {
		if _, err := get(t, deploymentGVK, ns, d); err != nil {
			t.Errorf("operator Deployment %s went before its resource: %v", d, err)
		}
	}

	// Giving up on the finalizer lets deletion go on.
	update(t, ns, "memcached", func(i *v1alpha1.ExtensionInstallation) {
		i.Spec.Uninstall.OnTimeout = v1alpha1.UninstallRemoveFinalizers
	})
	eventually(t, 60*time.Second, func() error {
		if _, err := getInstallation(t, ns, "memcached"); err == nil {
			return errString("still there")
		}
		if _, err := get(t, deploymentGVK, ns, "memcached-operator-controller-manager"); err == nil {
			return errString("the operator is still there")
		}
		return nil
	})
}

// waitConditionMessage waits until the installation's condition of type
// condType has a message containing fragment, and returns it.
func waitConditionMessage(t *testing.T, ns, name, condType, fragment string) *v1alpha1.ExtensionInstallation {
	t.Helper()
	var got *v1alpha1.ExtensionInstallation
	var last string
	deadline := time.Now().Add(60 * time.Second)
	for time.Now().Before(deadline) {
		cur, err := getInstallation(t, ns, name)
		if err == nil {
			if c := meta.FindStatusCondition(cur.Status.Conditions, condType); c != nil {
				last = c.Message
				if strings.Contains(c.Message, fragment) {
					got = cur
					break
				}
			}
		}
		time.Sleep(200 * time.Millisecond)
	}
	if got == nil {
		t.Fatalf("%s/%s: condition %s never said %q; last: %q", ns, name, condType, fragment, last)
	}
	return got
}

// deleteAndWait deletes the installation and waits until it is gone.
func deleteAndWait(t *testing.T, inst *v1alpha1.ExtensionInstallation) {
	t.Helper()
	if err := env.Client.Delete(t.Context(), inst); err != nil {
		t.Fatal(err)
	}
	eventually(t, 60*time.Second, func() error {
		if _, err := getInstallation(t, inst.Namespace, inst.Name); err == nil {
			return errString("still there")
		}
		return nil
	})
}
