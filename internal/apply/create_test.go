package apply

import (
	"errors"
	"fmt"
	"reflect"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// TestApplyCreate: a first apply with Create creates each object (one
// request each, no reads); the objects are Annex's and show no drift, and
// an apply of the same set writes nothing; a later revision removes what
// it no longer sets, as an apply of an applied object would, and leaves an
// object it does not change unwritten; an object of another installation
// is refused.
func TestApplyCreate(t *testing.T) {
	a, counter := newCountingApplier(t)
	ctx := t.Context()
	const ns = "create-first"
	createNamespace(t, a, ns)
	for _, doc := range []string{deploymentDoc(ns, 0), configMapDoc(ns, "warm", "up")} {
		// The mapper's discovery reads are not the apply's.
		if _, err := a.Mapper.RESTMapping(mustObject(t, doc).GroupVersionKind().GroupKind(), "v1"); err != nil {
			t.Fatal(err)
		}
	}
	owner := Owner{Name: "demo", Namespace: "team-a"}
	deployment := deploymentWithEnv(ns, "FOO")
	settings := func(data string) string {
		return fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: settings, namespace: %s}, data: %s}`, ns, data)
	}
	set := func(docs ...string) Set { return Set{Objects: objects(t, docs...)} }

	before := counter.Snapshot()
	res, err := a.ApplyWithOptions(ctx, owner, ns, set(deployment, settings("{a: '1', b: '2'}"), serviceDoc(ns, "web")), ApplyOptions{Create: true})
	if err != nil {
		t.Fatal(err)
	}
	if used := counter.Snapshot().Sub(before); used.Total != 3 || used.ByMethod["POST"] != 3 {
		t.Errorf("a first apply of 3 objects with Create made %v requests, want 3 creates and nothing else", used.ByMethod)
	}
	if len(res.Inventory) != 3 || res.Health.Total != 3 {
		t.Errorf("Create's result: inventory %v, health of %d objects; want all 3", res.Inventory, res.Health.Total)
	}
	for _, ref := range res.Inventory {
		obj := read(t, a, ref)
		if !owner.owns(obj) {
			t.Errorf("%s is not labelled for %s: %v", describe(ref), owner, obj.GetLabels())
		}
		if createdEntry(obj) < 0 {
			t.Errorf("%s: managedFields %v, want the entry of Annex's create", describe(ref), managers(obj))
		}
	}

	// The same set again: no drift; read and applied, nothing written.
	before = counter.Snapshot()
	if drifts, _, err := a.Diff(ctx, owner, set(deployment, settings("{a: '1', b: '2'}"), serviceDoc(ns, "web")), ns); err != nil || len(drifts) != 0 {
		t.Errorf("Diff of the created set = %+v, %v; want no drift", drifts, err)
	}
	if _, err := a.ApplyWithOptions(ctx, owner, ns, set(deployment, settings("{a: '1', b: '2'}"), serviceDoc(ns, "web")), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	if used := counter.Snapshot().Sub(before); used.Writes != 0 || used.Total != 6 {
		t.Errorf("Diff and Apply of the created set made %v requests, want 6 reads", used.ByMethod)
	}

	// A revision that drops key b: b is removed; the Deployment, the same,
	// keeps its generation and spec.
	depRef := v1alpha1.ObjectReference{Group: "apps", Version: "v1", Kind: "Deployment", Namespace: ns, Name: "web"}
	dep := read(t, a, depRef)
	if _, err := a.ApplyWithOptions(ctx, owner, ns, set(deployment, settings("{a: '1'}"), serviceDoc(ns, "web")), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	cm := read(t, a, settingsRef(ns))
	if data, _, _ := unstructured.NestedStringMap(cm.Object, "data"); !reflect.DeepEqual(data, map[string]string{"a": "1"}) {
		t.Errorf("ConfigMap data after the revision dropping b = %v, want only a", data)
	}
	dep2 := read(t, a, depRef)
	if dep2.GetGeneration() != dep.GetGeneration() || !reflect.DeepEqual(dep2.Object["spec"], dep.Object["spec"]) {
		t.Errorf("the unchanged Deployment changed: generation %d → %d", dep.GetGeneration(), dep2.GetGeneration())
	}
	if createdEntry(cm) >= 0 || !hasApplyEntry(cm) || cm.GetAnnotations()[annotationCreatedFrom] != "" {
		t.Errorf("the changed ConfigMap: managedFields %v, annotations %v; want Annex's apply entry only, claimed", managers(cm), cm.GetAnnotations())
	}
	if dep2.GetResourceVersion() != dep.GetResourceVersion() || createdEntry(dep2) < 0 {
		t.Errorf("the Deployment the revision left as created was written (resourceVersion %s → %s, managedFields %v)",
			dep.GetResourceVersion(), dep2.GetResourceVersion(), managers(dep2))
	}

	// A revision that drops the Deployment's env var removes it.
	if _, err := a.ApplyWithOptions(ctx, owner, ns, set(deploymentWithEnv(ns, ""), settings("{a: '1'}"), serviceDoc(ns, "web")), ApplyOptions{}); err != nil {
		t.Fatal(err)
	}
	containers, _, _ := unstructured.NestedSlice(read(t, a, depRef).Object, "spec", "template", "spec", "containers")
	if env := containers[0].(map[string]any)["env"]; env != nil {
		t.Errorf("env after the revision dropping it = %v, want none", env)
	}
	if dep3 := read(t, a, depRef); createdEntry(dep3) >= 0 || !hasApplyEntry(dep3) || dep3.GetAnnotations()[annotationCreatedFrom] != "" {
		t.Errorf("the changed Deployment: managedFields %v, annotations %v; want Annex's apply entry only, claimed", managers(dep3), dep3.GetAnnotations())
	}

	// Create meets an object of another installation: refused, not written.
	other := Owner{Name: "other", Namespace: "team-b"}
	_, err = a.ApplyWithOptions(ctx, other, ns, set(settings("{a: 'theirs'}")), ApplyOptions{Create: true})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.Installation != owner.String() {
		t.Errorf("Create of another installation's object: %v, want a ConflictError naming %s", err, owner)
	}
	if data, _, _ := unstructured.NestedStringMap(read(t, a, settingsRef(ns)).Object, "data"); data["a"] != "1" {
		t.Errorf("the refused Create changed the ConfigMap: %v", data)
	}
}

func settingsRef(ns string) v1alpha1.ObjectReference {
	return v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: "settings"}
}

// deploymentWithEnv is deploymentDoc with 0 replicas and, unless name is
// empty, one environment variable of that name.
func deploymentWithEnv(ns, name string) string {
	env := ""
	if name != "" {
		env = fmt.Sprintf(", env: [{name: %s, value: bar}]", name)
	}
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s}
spec:
  replicas: 0
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      containers: [{name: web, image: "registry.example/web:1.0"%s}]`, ns, env)
}

func hasApplyEntry(obj *unstructured.Unstructured) bool {
	for _, e := range obj.GetManagedFields() {
		if e.Manager == v1alpha1.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == "" {
			return true
		}
	}
	return false
}

func managers(obj *unstructured.Unstructured) []string {
	var out []string
	for _, e := range obj.GetManagedFields() {
		out = append(out, fmt.Sprintf("%s/%s%s", e.Manager, e.Operation, e.Subresource))
	}
	return out
}
