package apply

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/client-go/rest"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/apply/reqcount"
)

// TestDeleteUnread: objects of kinds no controller writes back are deleted
// without a read when the inventory holds the resourceVersion they were
// applied at; one changed since is read first, and deleted only if it is
// still the installation's.
func TestDeleteUnread(t *testing.T) {
	a, counter := newCountingApplier(t)
	ctx := t.Context()
	const ns = "delete-unread"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	inventory, err := a.Apply(ctx, owner, ns, Set{Objects: objects(t,
		configMapDoc(ns, "unchanged", "a"), configMapDoc(ns, "annotated", "a"), configMapDoc(ns, "detached", "a"),
		`{apiVersion: v1, kind: ServiceAccount, metadata: {name: web}}`,
	)})
	if err != nil {
		t.Fatal(err)
	}
	for _, r := range inventory {
		if r.ResourceVersion == "" {
			t.Fatalf("inventory entry %s has no resourceVersion", describe(r))
		}
	}
	// Someone annotates one object, which stays the installation's, and
	// takes another over by dropping Annex's labels.
	annotated := read(t, a, ref("", "v1", "ConfigMap", ns, "annotated"))
	if err := a.Client.Patch(ctx, annotated, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"annotations":{"note":"mine too"}}}`))); err != nil {
		t.Fatal(err)
	}
	detached := read(t, a, ref("", "v1", "ConfigMap", ns, "detached"))
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:null,%q:null,%q:null}}}`,
		v1alpha1.LabelManagedBy, v1alpha1.LabelInstallationName, v1alpha1.LabelInstallationNamespace)
	if err := a.Client.Patch(ctx, detached, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}

	before := counter.Snapshot()
	remaining, err := a.Delete(ctx, owner, inventory, false)
	if err != nil || remaining != 0 {
		t.Fatalf("Delete = %d, %v; want 0, nil", remaining, err)
	}
	got := counter.Snapshot().Sub(before).ByMethod
	// unchanged and web: one DELETE each, unread; annotated and detached:
	// a refused DELETE, a read, and for annotated a DELETE by UID.
	if got["GET"] != 2 || got["DELETE"] != 5 || len(got) != 2 {
		t.Errorf("requests = %v, want GET 2 (the changed objects) and DELETE 5", got)
	}
	for name, wantExists := range map[string]bool{"unchanged": false, "annotated": false, "detached": true} {
		if exists := read(t, a, ref("", "v1", "ConfigMap", ns, name)) != nil; exists != wantExists {
			t.Errorf("ConfigMap %s exists = %v after Delete, want %v", name, exists, wantExists)
		}
	}
	if read(t, a, ref("", "v1", "ServiceAccount", ns, "web")) != nil {
		t.Error("ServiceAccount web exists after Delete")
	}

	// A second Delete (the uninstall calls it until nothing remains) finds
	// the unread objects gone.
	if remaining, err := a.Delete(ctx, owner, inventory, false); err != nil || remaining != 0 {
		t.Errorf("second Delete = %d, %v; want 0, nil", remaining, err)
	}
}

func TestUnreadDeletable(t *testing.T) {
	for _, tc := range []struct {
		group, kind string
		want        bool
	}{
		{"", "ConfigMap", true},
		{"", "ServiceAccount", true},
		{"rbac.authorization.k8s.io", "ClusterRoleBinding", true},
		{"", "PersistentVolumeClaim", false},
		{"apps", "Deployment", false},
		{"networking.k8s.io", "Ingress", false},
		{"admissionregistration.k8s.io", "ValidatingWebhookConfiguration", false},
		{"example.com", "Widget", false},
	} {
		if got := unreadDeletable(gvkOf(ref(tc.group, "v1", tc.kind, "", "x")).GroupKind()); got != tc.want {
			t.Errorf("unreadDeletable(%s %s) = %v, want %v", tc.group, tc.kind, got, tc.want)
		}
	}
}

// TestDeleteSelected: objects of kinds a controller writes back are
// deleted unread, each in one request that selects it by name and the
// installation's labels: one handed over to another installation stays,
// one waiting for a finalizer counts as remaining until it is gone, and
// one adopted without being written (no labels) is read and deleted by
// UID.
func TestDeleteSelected(t *testing.T) {
	a, counter := newCountingApplier(t)
	ctx := t.Context()
	const ns = "delete-selected"
	createNamespace(t, a, ns)
	deployment := func(name string) string {
		return fmt.Sprintf(`{apiVersion: apps/v1, kind: Deployment, metadata: {name: %s, namespace: %s}, spec: {replicas: 0,
  selector: {matchLabels: {app: %[1]s}}, template: {metadata: {labels: {app: %[1]s}}, spec: {containers: [{name: c, image: "registry.example/c:1"}]}}}}`, name, ns)
	}
	owner := Owner{Name: "demo", Namespace: "team-a"}
	inventory, err := a.Apply(ctx, owner, ns, Set{Objects: objects(t, deployment("web"), deployment("handed"), deployment("guarded"))})
	if err != nil {
		t.Fatal(err)
	}
	// Another installation took handed over; guarded waits for a finalizer.
	handed := read(t, a, ref("apps", "v1", "Deployment", ns, "handed"))
	patch := fmt.Appendf(nil, `{"metadata":{"labels":{%q:"other"}}}`, v1alpha1.LabelInstallationName)
	if err := a.Client.Patch(ctx, handed, client.RawPatch(types.MergePatchType, patch)); err != nil {
		t.Fatal(err)
	}
	guarded := read(t, a, ref("apps", "v1", "Deployment", ns, "guarded"))
	if err := a.Client.Patch(ctx, guarded, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":["example.com/hold"]}}`))); err != nil {
		t.Fatal(err)
	}
	// Another tool's Deployment, adopted without being written.
	adopted := mustObject(t, deployment("adopted"))
	if err := a.Client.Create(ctx, adopted); err != nil {
		t.Fatal(err)
	}
	adoptedRef := ref("apps", "v1", "Deployment", ns, "adopted")
	owner.Adopted = []v1alpha1.AdoptedObject{{ObjectReference: adoptedRef, UID: adopted.GetUID()}}
	inventory = append(inventory, adoptedRef)

	before := counter.Snapshot()
	remaining, err := a.Delete(ctx, owner, inventory, false)
	if err != nil || remaining != 1 {
		t.Fatalf("Delete = %d, %v; want 1 (guarded), nil", remaining, err)
	}
	// web, handed, guarded: one DELETE each; adopted: a read and a DELETE.
	if got := counter.Snapshot().Sub(before).ByMethod; got["GET"] != 1 || got["DELETE"] != 4 || len(got) != 2 {
		t.Errorf("requests = %v, want GET 1 (the adopted object) and DELETE 4", got)
	}
	for name, wantExists := range map[string]bool{"web": false, "handed": true, "adopted": false, "guarded": true} {
		if exists := read(t, a, ref("apps", "v1", "Deployment", ns, name)) != nil; exists != wantExists {
			t.Errorf("Deployment %s exists = %v after Delete, want %v", name, exists, wantExists)
		}
	}
	if g := read(t, a, ref("apps", "v1", "Deployment", ns, "guarded")); g.GetDeletionTimestamp() == nil {
		t.Error("Deployment guarded is not being deleted")
	}
	if remaining, err := a.Delete(ctx, owner, inventory, false); err != nil || remaining != 1 {
		t.Errorf("Delete while guarded's finalizer stays = %d, %v; want 1, nil", remaining, err)
	}
	guarded = read(t, a, ref("apps", "v1", "Deployment", ns, "guarded"))
	if err := a.Client.Patch(ctx, guarded, client.RawPatch(types.MergePatchType, []byte(`{"metadata":{"finalizers":null}}`))); err != nil {
		t.Fatal(err)
	}
	if remaining, err := a.Delete(ctx, owner, inventory, false); err != nil || remaining != 0 {
		t.Errorf("Delete after the finalizer went = %d, %v; want 0, nil", remaining, err)
	}
	if read(t, a, ref("apps", "v1", "Deployment", ns, "handed")) == nil {
		t.Error("Deployment handed, another installation's, was deleted")
	}
}

// TestDeleteSelectedRefused: an identity that may delete objects but not
// collections of them has its objects read and deleted by UID; the
// refusal is asked once per resource.
func TestDeleteSelectedRefused(t *testing.T) {
	admin := newApplier(t)
	ctx := t.Context()
	const ns, user = "delete-selected-refused", "annex-test-no-deletecollection"
	createNamespace(t, admin, ns)
	for _, doc := range []string{
		fmt.Sprintf(`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: deleter, namespace: %s},
  rules: [{apiGroups: [""], resources: [configmaps], verbs: [get, delete]}]}`, ns),
		fmt.Sprintf(`{apiVersion: rbac.authorization.k8s.io/v1, kind: RoleBinding, metadata: {name: deleter, namespace: %s},
  roleRef: {apiGroup: rbac.authorization.k8s.io, kind: Role, name: deleter}, subjects: [{apiGroup: rbac.authorization.k8s.io, kind: User, name: %s}]}`, ns, user),
	} {
		if err := admin.Client.Create(ctx, mustObject(t, doc)); err != nil {
			t.Fatal(err)
		}
	}
	owner := Owner{Name: "demo", Namespace: "team-a"}
	inventory, err := admin.Apply(ctx, owner, ns, Set{Objects: objects(t, configMapDoc(ns, "one", "a"), configMapDoc(ns, "two", "a"))})
	if err != nil {
		t.Fatal(err)
	}
	for i := range inventory {
		inventory[i].ResourceVersion = "" // deleted by selection, as kinds with a status are
	}
	counter := &reqcount.Counter{}
	cfg := rest.CopyConfig(testConfig(t))
	cfg.Impersonate = rest.ImpersonationConfig{UserName: user}
	a, err := New(counter.Wrap(cfg))
	if err != nil {
		t.Fatal(err)
	}
	a.Workers = 1
	if _, err := a.Mapper.RESTMapping(schema.GroupKind{Kind: "ConfigMap"}, "v1"); err != nil {
		t.Fatal(err) // discovery, not counted below
	}
	before := counter.Snapshot()
	if remaining, err := a.Delete(ctx, owner, inventory, false); err != nil || remaining != 0 {
		t.Fatalf("Delete = %d, %v; want 0, nil", remaining, err)
	}
	// One refused delete of the collection, then a read and a DELETE each.
	if got := counter.Snapshot().Sub(before).ByMethod; got["GET"] != 2 || got["DELETE"] != 3 {
		t.Errorf("requests = %v, want GET 2 and DELETE 3 (one of them refused)", got)
	}
	for _, name := range []string{"one", "two"} {
		if read(t, admin, ref("", "v1", "ConfigMap", ns, name)) != nil {
			t.Errorf("ConfigMap %s exists after Delete", name)
		}
	}
}
