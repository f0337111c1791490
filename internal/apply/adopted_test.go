package apply

import (
	"errors"
	"fmt"
	"reflect"
	"slices"
	"testing"

	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// TestApplyDeferHandOver: an adoption (HandOver with DeferHandOver)
// writes none of the objects another tool applied that already match,
// and lists them in Result.Adopted; an edited one is claimed and
// corrected. Owned by UID from then on (Owner.Adopted): a drift check
// and an apply of the same set write nothing, another installation is
// refused them, a revision that changes one claims it with the other
// tool's fields, so that a key it drops is removed; prune deletes an
// adopted object by UID, and leaves one recreated under its name alone.
func TestApplyDeferHandOver(t *testing.T) {
	a, counter := newCountingApplier(t)
	ctx := t.Context()
	const ns = "defer-handover"
	createNamespace(t, a, ns)
	cm := func(name, data string) string {
		return fmt.Sprintf(`{apiVersion: v1, kind: ConfigMap, metadata: {name: %s, namespace: %s}, data: %s}`, name, ns, data)
	}
	// What Helm applied: kept and gone as rendered, edited changed by hand since.
	for _, doc := range []string{cm("kept", "{a: '1', b: '2'}"), cm("edited", "{a: '1', b: '2'}"), cm("gone", "{a: '1'}")} {
		if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(mustObject(t, doc)), client.FieldOwner("helm"), &client.ApplyOptions{Force: ptr.To(true)}); err != nil {
			t.Fatal(err)
		}
	}
	edited := mustObject(t, cm("edited", "{a: 'by hand'}"))
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(edited), client.FieldOwner("kubectl"), &client.ApplyOptions{Force: ptr.To(true)}); err != nil {
		t.Fatal(err)
	}
	ref := func(name string) v1alpha1.ObjectReference {
		return v1alpha1.ObjectReference{Version: "v1", Kind: "ConfigMap", Namespace: ns, Name: name}
	}
	kept, gone := read(t, a, ref("kept")), read(t, a, ref("gone"))
	owner := Owner{Name: "demo", Namespace: "team-a"}
	set := func(docs ...string) Set { return Set{Objects: objects(t, docs...)} }
	adoption := ApplyOptions{TakeOwnership: true, HandOver: []string{"helm", "helm-controller"}, DeferHandOver: true}

	before := counter.Snapshot()
	res, err := a.ApplyWithOptions(ctx, owner, ns, set(cm("kept", "{a: '1', b: '2'}"), cm("edited", "{a: '1', b: '2'}"), cm("gone", "{a: '1'}")), adoption)
	if err != nil {
		t.Fatal(err)
	}
	if used := counter.Snapshot().Sub(before); used.Writes != 2 {
		t.Errorf("the adoption made %d writes (%v), want 2: edited claimed and applied", used.Writes, used.ByMethod)
	}
	var adopted []string
	for _, o := range res.Adopted {
		adopted = append(adopted, o.Name)
		if !slices.Equal(o.FieldManagers, []string{"helm"}) || o.Digest == "" {
			t.Errorf("Result.Adopted %s: %+v", o.Name, o)
		}
	}
	if !slices.Equal(adopted, []string{"gone", "kept"}) {
		t.Errorf("Result.Adopted names %v, want gone and kept", adopted)
	}
	if now := read(t, a, ref("kept")); now.GetResourceVersion() != kept.GetResourceVersion() || owner.labelled(now) {
		t.Errorf("kept was written: resourceVersion %s, was %s; labels %v", now.GetResourceVersion(), kept.GetResourceVersion(), now.GetLabels())
	}
	if now := read(t, a, ref("edited")); !owner.labelled(now) || slices.Contains(managers(now), "helm") || now.Object["data"].(map[string]any)["a"] != "1" {
		t.Errorf("edited: labels %v, managers %v, data %v; want claimed and corrected", now.GetLabels(), managers(now), now.Object["data"])
	}

	// Owned by UID: the same set is checked and applied without a write.
	owner.Adopted = res.Adopted
	same := set(cm("kept", "{a: '1', b: '2'}"), cm("edited", "{a: '1', b: '2'}"), cm("gone", "{a: '1'}"))
	before = counter.Snapshot()
	if drifts, _, err := a.Diff(ctx, owner, same, ns); err != nil || len(drifts) != 0 {
		t.Errorf("Diff of the adopted set = %+v, %v; want no drift", drifts, err)
	}
	again, err := a.ApplyWithOptions(ctx, owner, ns, same, ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	if used := counter.Snapshot().Sub(before); used.Writes != 0 {
		t.Errorf("Diff and Apply of the adopted set made %v requests, want reads only", used.ByMethod)
	}
	if !reflect.DeepEqual(again.Adopted, res.Adopted) {
		t.Errorf("Result.Adopted after an apply that changed nothing: %+v, want %+v", again.Adopted, res.Adopted)
	}

	// Another installation is refused them, as if they carried labels.
	other := Owner{Name: "other", Namespace: "team-b", AdoptedByOthers: map[types.UID]string{kept.GetUID(): owner.String()}}
	_, err = a.ApplyWithOptions(ctx, other, ns, set(cm("kept", "{a: '1', b: '2'}")), ApplyOptions{TakeOwnership: true})
	var conflict *ConflictError
	if !errors.As(err, &conflict) || conflict.Installation != owner.String() {
		t.Errorf("another installation applying kept: %v, want a conflict naming %s", err, owner)
	}

	// A revision that drops b from kept claims it: helm's fields are
	// Annex's, so the apply removes b. gone left the set: pruned by UID.
	res, err = a.ApplyWithOptions(ctx, owner, ns, set(cm("kept", "{a: '1'}"), cm("edited", "{a: '1', b: '2'}")), ApplyOptions{})
	if err != nil {
		t.Fatal(err)
	}
	now := read(t, a, ref("kept"))
	if data := now.Object["data"].(map[string]any); !reflect.DeepEqual(data, map[string]any{"a": "1"}) || !owner.labelled(now) || slices.Contains(managers(now), "helm") {
		t.Errorf("kept after a revision that drops b: data %v, labels %v, managers %v", data, now.GetLabels(), managers(now))
	}
	if len(res.Adopted) != 0 {
		t.Errorf("Result.Adopted %+v, want none: kept is claimed", res.Adopted)
	}
	// gone, recreated by someone else under its name, is not the adopted
	// object: prune leaves it alone.
	if err := a.Client.Delete(ctx, gone); err != nil {
		t.Fatal(err)
	}
	if err := a.Client.Create(ctx, mustObject(t, cm("gone", "{a: 'theirs'}"))); err != nil {
		t.Fatal(err)
	}
	if deleted, err := a.Prune(ctx, owner, []v1alpha1.ObjectReference{ref("edited"), ref("gone"), ref("kept")}, res.Inventory); err != nil || len(deleted) != 0 {
		t.Errorf("Prune of a recreated gone: deleted %v (err=%v), want nothing", deleted, err)
	}
	theirs := read(t, a, ref("gone"))
	if theirs == nil {
		t.Fatal("the recreated gone was deleted")
	}
	// The adopted object itself is pruned.
	owner.Adopted = append(owner.Adopted, v1alpha1.AdoptedObject{ObjectReference: ref("gone"), UID: theirs.GetUID()})
	if deleted, err := a.Prune(ctx, owner, []v1alpha1.ObjectReference{ref("edited"), ref("gone"), ref("kept")}, res.Inventory); err != nil || len(deleted) != 1 {
		t.Errorf("Prune of adopted gone: deleted %v (err=%v), want it", deleted, err)
	}
	if obj := read(t, a, ref("gone")); obj != nil {
		t.Errorf("adopted gone not pruned: %v", obj.GetUID())
	}
}
