package apply

import (
	"fmt"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
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
