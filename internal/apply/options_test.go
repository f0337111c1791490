package apply

import (
	"errors"
	"fmt"
	"strconv"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestTakeOwnership(t *testing.T) {
	a := newApplier(t)
	ctx := t.Context()
	const ns = "take-ownership"
	createNamespace(t, a, ns)
	owner := Owner{Name: "demo", Namespace: "team-a"}
	take := ApplyOptions{TakeOwnership: true}

	// An object someone else made with kubectl, labelled for no installation.
	theirs := mustObject(t, configMapDoc(ns, "settings", "theirs"))
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(theirs), client.FieldOwner("kubectl")); err != nil {
		t.Fatal(err)
	}
	ours := Set{Objects: objects(t, configMapDoc(ns, "settings", "ours"))}
	var conflict *ConflictError
	if _, err := a.Apply(ctx, owner, ns, ours); !errors.As(err, &conflict) {
		t.Fatalf("Apply without TakeOwnership: error = %v, want *ConflictError", err)
	}
	if _, err := a.ApplyWithOptions(ctx, owner, ns, ours, take); err != nil {
		t.Fatalf("Apply with TakeOwnership: %v", err)
	}
	got := read(t, a, ref("", "v1", "ConfigMap", ns, "settings"))
	if v, _, _ := unstructured.NestedString(got.Object, "data", "key"); v != "ours" || !owner.owns(got) {
		t.Errorf("after TakeOwnership data.key = %q, labels %v; want %q and the labels of %s", v, got.GetLabels(), "ours", owner)
	}
	// Annex now owns the field: the next plain apply has no conflict.
	if _, err := a.Apply(ctx, owner, ns, ours); err != nil {
		t.Errorf("Apply after adoption: %v", err)
	}

	// An object of another installation stays refused.
	other := Owner{Name: "other", Namespace: "team-b"}
	if _, err := a.Apply(ctx, other, ns, Set{Objects: objects(t, configMapDoc(ns, "shared", "b"))}); err != nil {
		t.Fatal(err)
	}
	_, err := a.ApplyWithOptions(ctx, owner, ns, Set{Objects: objects(t, configMapDoc(ns, "shared", "a"))}, take)
	if !errors.As(err, &conflict) || conflict.Installation != "team-b/other" {
		t.Fatalf("Apply with TakeOwnership of another installation's object: error = %v, want *ConflictError naming team-b/other", err)
	}
	if got := read(t, a, ref("", "v1", "ConfigMap", ns, "shared")); got.GetLabels()[v1alpha1.LabelInstallationName] != "other" {
		t.Errorf("labels = %v after a refused TakeOwnership, want installation other", got.GetLabels())
	}
}

// Objects of one phase are applied concurrently, but every object of a
// phase is written before any object of the next. The API server gives
// each write a resourceVersion that grows with every write (the etcd
// revision), so the order of writes shows in the objects; none of these
// objects is written again by anyone.
func TestApplyConcurrentPhaseOrder(t *testing.T) {
	a := newApplier(t)
	a.Workers = 8
	ctx := t.Context()
	const group, ns = "order.annex.dev", "phase-order"
	docs := []string{fmt.Sprintf(`{apiVersion: v1, kind: Namespace, metadata: {name: %s}}`, ns)}
	for i := range 6 {
		docs = append(docs,
			fmt.Sprintf(`{apiVersion: %s/v1, kind: Greeting, metadata: {name: hi-%d}}`, group, i),
			configMapDoc("", fmt.Sprintf("config-%d", i), "a"),
			configMapDoc("", fmt.Sprintf("more-%d", i), "b"),
			fmt.Sprintf(`{apiVersion: v1, kind: ServiceAccount, metadata: {name: sa-%d}}`, i),
			fmt.Sprintf(`{apiVersion: rbac.authorization.k8s.io/v1, kind: Role, metadata: {name: role-%d}, rules: []}`, i),
		)
	}
	set := Set{CRDs: objects(t, crdDoc(group)), Objects: objects(t, docs...)}
	inventory, err := a.Apply(ctx, Owner{Name: "demo", Namespace: "team-a"}, ns, set)
	if err != nil {
		t.Fatalf("Apply: %v", err)
	}
	if len(inventory) != 1+len(docs) {
		t.Fatalf("inventory has %d entries, want %d", len(inventory), 1+len(docs))
	}

	crds := definedKinds(set.CRDs)
	type span struct{ first, last int64 }
	spans := map[phase]*span{}
	for _, r := range inventory {
		p := phaseOf(gvkOf(r).GroupKind(), crds)
		if p == phaseCRDs {
			// Its status is written after it was applied.
			continue
		}
		rv, err := strconv.ParseInt(read(t, a, r).GetResourceVersion(), 10, 64)
		if err != nil {
			t.Fatalf("%s: %v", describe(r), err)
		}
		s, ok := spans[p]
		if !ok {
			spans[p] = &span{rv, rv}
			continue
		}
		s.first, s.last = min(s.first, rv), max(s.last, rv)
	}
	order := []phase{phaseNamespaces, phaseRBAC, phaseObjects, phaseCustomResources}
	for i := 1; i < len(order); i++ {
		prev, next := spans[order[i-1]], spans[order[i]]
		if prev == nil || next == nil {
			t.Fatalf("phase %d or %d has no objects", order[i-1], order[i])
		}
		if prev.last >= next.first {
			t.Errorf("phase %d wrote up to revision %d, after phase %d began at %d", order[i-1], prev.last, order[i], next.first)
		}
	}
}
