package apply

import (
	"context"
	"errors"
	"fmt"
	"maps"
	"os"
	"slices"
	"strings"
	"sync"
	"testing"
	"time"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/apimachinery/pkg/util/wait"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/testenv"
)

// The integration tests share one kube-apiserver and etcd (internal/testenv),
// started by the first test that needs them; each test works in its own
// namespaces and API groups. The pure tests run without them.
var cluster struct {
	once sync.Once
	env  *testenv.Env
	stop func()
	err  error
}

func TestMain(m *testing.M) {
	code := m.Run()
	if cluster.stop != nil {
		cluster.stop()
	}
	os.Exit(code)
}

// testConfig returns the REST config of the shared test API server.
func testConfig(t *testing.T) *rest.Config {
	t.Helper()
	cluster.once.Do(func() {
		cluster.env, cluster.stop, cluster.err = testenv.StartShared()
	})
	if cluster.err != nil {
		t.Fatal(cluster.err)
	}
	return cluster.env.Config
}

// newApplier returns an Applier, with a fresh REST mapper, for the shared
// test API server.
func newApplier(t *testing.T) *Applier {
	t.Helper()
	a, err := New(testConfig(t))
	if err != nil {
		t.Fatal(err)
	}
	return a
}

func objects(t *testing.T, docs ...string) []*unstructured.Unstructured {
	t.Helper()
	var out []*unstructured.Unstructured
	for _, d := range docs {
		out = append(out, mustObject(t, d))
	}
	return out
}

func crdDoc(group string) string {
	return fmt.Sprintf(`
apiVersion: apiextensions.k8s.io/v1
kind: CustomResourceDefinition
metadata: {name: greetings.%[1]s}
spec:
  group: %[1]s
  scope: Namespaced
  names: {kind: Greeting, plural: greetings, singular: greeting, listKind: GreetingList}
  versions:
  - name: v1
    served: true
    storage: true
    schema:
      openAPIV3Schema:
        type: object
        properties:
          spec: {type: object, x-kubernetes-preserve-unknown-fields: true}`, group)
}

func deploymentDoc(ns string, replicas int) string {
	return fmt.Sprintf(`
apiVersion: apps/v1
kind: Deployment
metadata: {name: web, namespace: %s}
spec:
  replicas: %d
  selector: {matchLabels: {app: web}}
  template:
    metadata: {labels: {app: web}}
    spec:
      serviceAccountName: web
      containers: [{name: web, image: "registry.example/web:1.0"}]`, ns, replicas)
}

func configMapDoc(ns, name, value string) string {
	return fmt.Sprintf(`
apiVersion: v1
kind: ConfigMap
metadata: {name: %s, namespace: %q}
data: {key: %q}`, name, ns, value)
}

// read returns the object ref names, or nil when it does not exist.
func read(t *testing.T, a *Applier, r v1alpha1.ObjectReference) *unstructured.Unstructured {
	t.Helper()
	obj, err := a.get(t.Context(), r)
	if err != nil {
		t.Fatalf("read %s: %v", describe(r), err)
	}
	return obj
}

func createNamespace(t *testing.T, a *Applier, name string) {
	t.Helper()
	ns := mustObject(t, fmt.Sprintf("{apiVersion: v1, kind: Namespace, metadata: {name: %s}}", name))
	if err := a.Client.Create(t.Context(), ns); err != nil {
		t.Fatal(err)
	}
}

// deleteUntilGone calls Delete until it reports nothing remaining.
func deleteUntilGone(t *testing.T, a *Applier, owner Owner, inventory []v1alpha1.ObjectReference, deleteCRDs bool) {
	t.Helper()
	var last error
	err := wait.PollUntilContextTimeout(t.Context(), 100*time.Millisecond, 30*time.Second, true, func(ctx context.Context) (bool, error) {
		remaining, err := a.Delete(ctx, owner, inventory, deleteCRDs)
		last = err
		return err == nil && remaining == 0, nil
	})
	if err != nil {
		t.Fatalf("Delete never reached 0 remaining: %v (last error: %v)", err, last)
	}
}

func TestApplyWholeSetInOneCall(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const group, ns = "whole.annex.dev", "whole"
	owner := Owner{Name: "demo", Namespace: "team-a"}
	set := Set{
		CRDs: objects(t, crdDoc(group)),
		// Out of order on purpose: Apply puts them in phases.
		Objects: objects(t,
			fmt.Sprintf(`{apiVersion: %s/v1, kind: Greeting, metadata: {name: hi}, spec: {text: hello}}`, group),
			deploymentDoc("", 0),
			configMapDoc("", "settings", "a"),
			fmt.Sprintf(`{apiVersion: v1, kind: ServiceAccount, metadata: {name: web, namespace: %s}}`, ns),
			fmt.Sprintf(`{apiVersion: v1, kind: Namespace, metadata: {name: %s, namespace: ignored}}`, ns),
		),
	}
	before := set.Objects[0].DeepCopy()

	inventory, err := a.Apply(ctx, owner, ns, set)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	want := []v1alpha1.ObjectReference{
		ref("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "greetings."+group),
		ref("", "v1", "Namespace", "", ns),
		ref("", "v1", "ServiceAccount", ns, "web"),
		ref("", "v1", "ConfigMap", ns, "settings"),
		ref("apps", "v1", "Deployment", ns, "web"),
		ref(group, "v1", "Greeting", ns, "hi"),
	}
	if !slices.Equal(unversioned(inventory), want) {
		t.Fatalf("inventory =\n%v\nwant\n%v", inventory, want)
	}
	if !equalObjects(set.Objects[0], before) {
		t.Errorf("Apply modified the caller's object: %v", set.Objects[0].Object)
	}

	versions := map[v1alpha1.ObjectReference]string{}
	for _, r := range inventory {
		obj := read(t, a, r)
		if obj == nil {
			t.Fatalf("%s does not exist after Apply", describe(r))
		}
		for k, v := range owner.labels() {
			if obj.GetLabels()[k] != v {
				t.Errorf("%s: label %s = %q, want %q", describe(r), k, obj.GetLabels()[k], v)
			}
		}
		versions[r] = obj.GetResourceVersion()
	}

	// Applying the same set again changes nothing.
	again, err := a.Apply(ctx, owner, ns, set)
	if err != nil {
		t.Fatalf("second Apply: %v", err)
	}
	if !slices.Equal(again, inventory) {
		t.Errorf("second inventory =\n%v\nwant\n%v", again, inventory)
	}
	for _, r := range inventory {
		if rv := read(t, a, r).GetResourceVersion(); rv != versions[r] {
			t.Errorf("%s: resourceVersion changed from %s to %s on an identical apply", describe(r), versions[r], rv)
		}
	}

	h, err := a.Health(ctx, inventory)
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	if !h.Ready || h.Failed || len(h.Pending) != 0 {
		t.Errorf("Health = %+v, want Ready; summary: %s", h, h.Summary())
	}
}

func equalObjects(a, b *unstructured.Unstructured) bool {
	x, _ := a.MarshalJSON()
	y, _ := b.MarshalJSON()
	return string(x) == string(y)
}

func TestApplyMissingKind(t *testing.T) {
	a := newApplier(t)
	const ns = "missing-kind"
	createNamespace(t, a, ns)
	set := Set{Objects: objects(t,
		configMapDoc(ns, "first", "a"),
		`{apiVersion: x.y/v1, kind: Foo, metadata: {name: foo, namespace: missing-kind}}`,
	)}

	_, err := a.Apply(t.Context(), Owner{Name: "demo", Namespace: "team-a"}, ns, set)
	var objErr *ObjectError
	if !errors.As(err, &objErr) {
		t.Fatalf("Apply error = %v, want *ObjectError", err)
	}
	want := `apply Foo missing-kind/foo: no API kind "Foo" in group "x.y": install the extension that provides it first`
	if err.Error() != want {
		t.Errorf("error =\n%s\nwant\n%s", err, want)
	}
	// Nothing is written when a kind is missing.
	if read(t, a, ref("", "v1", "ConfigMap", ns, "first")) != nil {
		t.Error("ConfigMap was applied although the set has a missing kind")
	}
}

func TestApplyFieldOwnedByAnotherManager(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "field-conflict"
	createNamespace(t, a, ns)
	theirs := mustObject(t, configMapDoc(ns, "settings", "theirs"))
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(theirs), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}

	_, err := a.Apply(ctx, Owner{Name: "demo", Namespace: "team-a"}, ns, Set{Objects: objects(t, configMapDoc(ns, "settings", "ours"))})
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("Apply error = %v, want *ConflictError", err)
	}
	if !slices.Equal(conflict.Managers, []string{"kubectl"}) || !slices.Equal(conflict.Fields, []string{".data.key"}) {
		t.Errorf("conflict = %+v, want manager kubectl on .data.key", conflict)
	}
	for _, part := range []string{"ConfigMap field-conflict/settings", `"annex"`, `"kubectl"`, ".data.key", "delete the object"} {
		if !strings.Contains(err.Error(), part) {
			t.Errorf("error %q does not mention %q", err, part)
		}
	}
	got := read(t, a, ref("", "v1", "ConfigMap", ns, "settings"))
	if v, _, _ := unstructured.NestedString(got.Object, "data", "key"); v != "theirs" {
		t.Errorf("data.key = %q after a refused apply, want %q", v, "theirs")
	}
}

func TestApplyObjectOfAnotherInstallation(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "other-installation"
	createNamespace(t, a, ns)
	first := Owner{Name: "first", Namespace: "team-a"}
	if _, err := a.Apply(ctx, first, ns, Set{Objects: objects(t, configMapDoc(ns, "shared", "a"))}); err != nil {
		t.Fatal(err)
	}

	second := Owner{Name: "second", Namespace: "team-b"}
	_, err := a.Apply(ctx, second, ns, Set{Objects: objects(t, configMapDoc(ns, "shared", "a"))})
	var conflict *ConflictError
	if !errors.As(err, &conflict) {
		t.Fatalf("Apply error = %v, want *ConflictError", err)
	}
	if conflict.Installation != "team-a/first" || !strings.Contains(err.Error(), "team-a/first") {
		t.Errorf("conflict = %v, want it to name installation team-a/first", err)
	}
	got := read(t, a, ref("", "v1", "ConfigMap", ns, "shared"))
	if name := got.GetLabels()[v1alpha1.LabelInstallationName]; name != "first" {
		t.Errorf("installation label = %q after a refused apply, want %q", name, "first")
	}
}

func TestPrune(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "prune"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}

	old, err := a.Apply(ctx, owner, ns, Set{Objects: objects(t,
		configMapDoc(ns, "stays", "a"), configMapDoc(ns, "leaves", "a"), configMapDoc(ns, "taken", "a"))})
	if err != nil {
		t.Fatal(err)
	}
	// Someone takes "taken" over by dropping Annex's labels: it is no
	// longer Annex's to delete.
	taken := read(t, a, ref("", "v1", "ConfigMap", ns, "taken"))
	patch := []byte(fmt.Sprintf(`{"metadata":{"labels":{%q:null,%q:null,%q:null}}}`,
		v1alpha1.LabelManagedBy, v1alpha1.LabelInstallationName, v1alpha1.LabelInstallationNamespace))
	if err := a.Client.Patch(ctx, taken, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	// An object of another installation listed in old by mistake stays too.
	other := Owner{Name: "other", Namespace: "team-b"}
	if _, err := a.Apply(ctx, other, ns, Set{Objects: objects(t, configMapDoc(ns, "foreign", "a"))}); err != nil {
		t.Fatal(err)
	}
	old = append(old, ref("", "v1", "ConfigMap", ns, "foreign"), ref("", "v1", "ConfigMap", ns, "already-gone"))

	current, err := a.Apply(ctx, owner, ns, Set{Objects: objects(t, configMapDoc(ns, "stays", "a"))})
	if err != nil {
		t.Fatal(err)
	}
	deleted, err := a.Prune(ctx, owner, old, current)
	if err != nil {
		t.Fatalf("Prune: %v", err)
	}
	if want := []v1alpha1.ObjectReference{ref("", "v1", "ConfigMap", ns, "leaves")}; !slices.Equal(deleted, want) {
		t.Errorf("Prune deleted %v, want %v", deleted, want)
	}
	for name, wantExists := range map[string]bool{"stays": true, "leaves": false, "taken": true, "foreign": true} {
		if exists := read(t, a, ref("", "v1", "ConfigMap", ns, name)) != nil; exists != wantExists {
			t.Errorf("ConfigMap %s exists = %v after Prune, want %v", name, exists, wantExists)
		}
	}
}

func TestDelete(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const group, ns = "delete.annex.dev", "delete"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	set := Set{
		CRDs: objects(t, crdDoc(group)),
		Objects: objects(t,
			// The finalizer stands for an operator that cleans up.
			fmt.Sprintf(`{apiVersion: %s/v1, kind: Greeting, metadata: {name: hi, finalizers: [%s/cleanup]}}`, group, group),
			`{apiVersion: v1, kind: ServiceAccount, metadata: {name: web}}`,
			deploymentDoc("", 0),
			configMapDoc("", "settings", "a"),
		),
	}
	inventory, err := a.Apply(ctx, owner, ns, set)
	if err != nil {
		t.Fatal(err)
	}
	// An object listed in the inventory but not labelled for owner stays.
	stranger := mustObject(t, configMapDoc(ns, "stranger", "a"))
	if err := a.Client.Create(ctx, stranger); err != nil {
		t.Fatal(err)
	}
	inventory = append(inventory, refOf(stranger))

	greeting := ref(group, "v1", "Greeting", ns, "hi")
	deployment := ref("apps", "v1", "Deployment", ns, "web")
	crd := ref("apiextensions.k8s.io", "v1", "CustomResourceDefinition", "", "greetings."+group)

	// The custom resource waits for its finalizer; nothing after it is
	// deleted yet, and what is not reached yet counts as remaining (it is
	// not read before its delete, so the stranger counts too).
	remaining, err := a.Delete(ctx, owner, inventory, false)
	if err != nil {
		t.Fatalf("Delete: %v", err)
	}
	if remaining != 5 {
		t.Errorf("remaining = %d while the custom resource is finalizing, want 5", remaining)
	}
	if g := read(t, a, greeting); g == nil || g.GetDeletionTimestamp() == nil {
		t.Errorf("Greeting is not being deleted: %v", g)
	}
	if read(t, a, deployment) == nil {
		t.Error("Deployment was deleted before the custom resources were gone")
	}

	// The "operator" finishes.
	g := read(t, a, greeting)
	if err := a.Client.Patch(ctx, g, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	deleteUntilGone(t, a, owner, inventory, false)
	for _, r := range inventory {
		exists := read(t, a, r) != nil
		wantExists := keyOf(r) == keyOf(crd) || r.Name == "stranger"
		if exists != wantExists {
			t.Errorf("%s exists = %v after Delete without CRDs, want %v", describe(r), exists, wantExists)
		}
	}

	// The kept CRD belongs to no one: another installation applies it.
	if owned := installationOf(read(t, a, crd)); owned != "" {
		t.Errorf("kept CRD still belongs to installation %s", owned)
	}
	next := Owner{Name: "demo-again", Namespace: "team-a"}
	again, err := a.Apply(ctx, next, ns, Set{CRDs: objects(t, crdDoc(group))})
	if err != nil {
		t.Fatalf("a new installation cannot apply the kept CRD: %v", err)
	}
	deleteUntilGone(t, a, next, again, true)
	if read(t, a, crd) != nil {
		t.Error("CRD exists after Delete with deleteCRDs")
	}
	if read(t, a, refOf(stranger)) == nil {
		t.Error("Delete removed an object not labelled for the owner")
	}
}

func TestHealthPendingDeployment(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "health"
	createNamespace(t, a, ns)
	set := Set{Objects: objects(t, deploymentDoc(ns, 1), configMapDoc(ns, "settings", "a"))}
	inventory, err := a.Apply(ctx, Owner{Name: "demo", Namespace: "team-a"}, ns, set)
	if err != nil {
		t.Fatal(err)
	}
	missing := ref("", "v1", "ConfigMap", ns, "missing")
	inventory = append(inventory, missing)

	// No controller runs in the test cluster: the Deployment never becomes
	// Available.
	h, err := a.Health(ctx, inventory)
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	if h.Ready || h.Failed {
		t.Errorf("Health = %+v, want not Ready and not Failed", h)
	}
	statuses := map[string]string{}
	for _, p := range h.Pending {
		statuses[describe(p.Ref)] = p.Status
	}
	want := map[string]string{"Deployment health/web": "InProgress", "ConfigMap health/missing": "NotFound"}
	if !maps.Equal(statuses, want) {
		t.Errorf("pending = %v, want %v", statuses, want)
	}
	if s := h.Summary(); !strings.HasPrefix(s, "2 of 3 objects not ready: Deployment health/web: ") {
		t.Errorf("Summary = %q", s)
	} else if !strings.HasSuffix(s, "; ConfigMap health/missing: object not found") {
		t.Errorf("Summary = %q, want it to end with the missing ConfigMap", s)
	}
	// The same state gives the same text.
	if h2, err := a.Health(ctx, inventory); err != nil || h2.Summary() != h.Summary() {
		t.Errorf("second Summary = %q (%v), want %q", h2.Summary(), err, h.Summary())
	}
}

// An object whose kind no longer exists is NotFound, not an error.
func TestHealthOfMissingKind(t *testing.T) {
	a := newApplier(t)
	h, err := a.Health(t.Context(), []v1alpha1.ObjectReference{ref("x.y", "v1", "Foo", "ns", "gone")})
	if err != nil {
		t.Fatalf("Health: %v", err)
	}
	if len(h.Pending) != 1 || h.Pending[0].Status != "NotFound" {
		t.Errorf("Health = %+v, want one NotFound", h)
	}
}

// An apply reports the health of what it wrote from the server's answers:
// the same health a read afterwards gives, for one request per object
// (its read before the write) and one write per changed object.
func TestApplyResultHealth(t *testing.T) {
	a, counter := newCountingApplier(t)
	ctx := t.Context()
	const ns = "applied-health"
	createNamespace(t, a, ns)
	// The mapper reads discovery once per group version it meets; what is
	// counted below is the apply's own requests.
	if _, err := a.Mapper.RESTMapping(schema.GroupKind{Group: "apps", Kind: "Deployment"}, "v1"); err != nil {
		t.Fatal(err)
	}
	owner := Owner{Name: "demo", Namespace: "team-a"}
	cases := []struct {
		name     string
		replicas int
		ready    bool
	}{
		{"scaled to zero", 0, true},
		{"one replica and no controller", 1, false},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			set := Set{Objects: objects(t, deploymentDoc(ns, tc.replicas), configMapDoc(ns, "settings", "a"), serviceDoc(ns, "web"))}
			before := counter.Snapshot()
			res, err := a.ApplyWithOptions(ctx, owner, ns, set, ApplyOptions{})
			if err != nil {
				t.Fatal(err)
			}
			used := counter.Snapshot().Sub(before)
			if used.ByMethod["GET"] != 3 || used.Total-used.ByMethod["GET"] > 3 {
				t.Errorf("apply of 3 objects made %v requests, want 3 reads and at most 3 writes", used.ByMethod)
			}
			read, err := a.Health(ctx, res.Inventory)
			if err != nil {
				t.Fatal(err)
			}
			if res.Health.Ready != tc.ready || res.Health.Total != 3 || res.Health.Summary() != read.Summary() {
				t.Errorf("apply reported health %q (ready %v), want ready %v and what a read says: %q",
					res.Health.Summary(), res.Health.Ready, tc.ready, read.Summary())
			}
		})
	}
}
