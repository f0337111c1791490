package apply

import (
	"bytes"
	"context"
	"encoding/json"
	"fmt"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/structured-merge-diff/v6/fieldpath"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// handOverOne applies obj for an adoption (ApplyOptions.HandOver): when
// the live object is managed by one of the field managers of handOver,
// Annex takes it over in place — it keeps its UID, and it is written only
// as much as taking it over needs:
//
//   - when a forced server-side apply of obj would change nothing but
//     Annex's labels (drifted finds nothing, or else the server says so,
//     by a dry run — without deferred, always the server), the object is
//     not written at all with deferred (ApplyOptions.DeferHandOver): the
//     caller records it as adopted (Result.Adopted) and the first apply
//     that changes it claims it (claimAdopted). Without deferred, one
//     merge patch adds the labels and rewrites managedFields as that apply
//     would leave them, less the entries of handOver's managers. Either
//     way the spec is not written, so a Deployment keeps its generation
//     and is not rolled.
//   - otherwise, with deferred, the object is claimed (claimAdopted) and
//     obj applied with force; without, obj is applied with force (Annex's
//     values win over edits made by hand), then a merge patch removes the
//     entries of handOver's managers that the apply left sharing Annex's
//     fields.
//
// Afterwards Annex's field manager alone owns what it applies, so that a
// later apply that drops a field removes it. An object of another
// installation is refused (*ConflictError); one that does not exist, or
// that none of handOver's managers manages, is applied as applyOne does,
// with force. Every write carries the resourceVersion read as a
// precondition; an object changed in between is read again.
func (a *Applier) handOverOne(ctx context.Context, owner Owner, obj *unstructured.Unstructured, handOver []string, deferred bool) (*unstructured.Unstructured, error) {
	ref := refOf(obj)
	for attempt := 1; ; attempt++ {
		live, err := a.get(ctx, ref)
		if err != nil {
			return nil, &ObjectError{Op: "apply", Object: ref, Err: err}
		}
		if live == nil || !managedByAny(live, handOver) || owner.adoptedAs(live) != nil {
			return a.applyOne(ctx, owner, obj, true)
		}
		if other := owner.holder(live); other != "" && other != owner.String() {
			return nil, &ConflictError{Object: ref, Installation: other}
		}
		labelFor(obj, owner)
		obj.SetResourceVersion("")
		obj.SetManagedFields(nil)
		out, err := a.handOver(ctx, owner, obj, live, handOver, deferred)
		if err == nil {
			return out, nil
		}
		if apierrors.IsConflict(err) && attempt < maxApplyAttempts {
			continue // changed since it was read
		}
		if c := fieldConflict(ref, err); c != nil {
			return nil, c
		}
		return nil, &ObjectError{Op: "take over", Object: ref, Err: a.explainApplyError(ctx, err)}
	}
}

// handOver takes live over as obj (see handOverOne) and returns the object
// as the server answered the last write, or live when it wrote nothing.
func (a *Applier) handOver(ctx context.Context, owner Owner, obj, live *unstructured.Unstructured, handOver []string, deferred bool) (*unstructured.Unstructured, error) {
	if deferred && len(adoptedDrift(obj, live)) == 0 {
		// Every field obj sets has that value already, and Annex manages
		// none to remove: a forced apply would change nothing but the
		// labels, which the server need not confirm.
		return live, nil
	}
	dry := obj.DeepCopy()
	dry.SetResourceVersion(live.GetResourceVersion())
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry),
		client.FieldOwner(v1alpha1.FieldManager), &client.ApplyOptions{Force: ptr.To(true)}, client.DryRunAll); err != nil {
		return nil, err
	}
	same := sameButOwnerLabels(dry, live)
	switch {
	case same && deferred:
		return live, nil
	case same:
		return a.patchOwnership(ctx, live, owner.labels(), withoutManagers(dry.GetManagedFields(), handOver))
	case deferred:
		claimed, err := a.claimAdopted(ctx, owner, live, handOver)
		if err != nil {
			return nil, err
		}
		applied := obj.DeepCopy()
		applied.SetResourceVersion(claimed.GetResourceVersion())
		err = a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
			client.FieldOwner(v1alpha1.FieldManager), &client.ApplyOptions{Force: ptr.To(true)})
		return applied, err
	}
	applied := obj.DeepCopy()
	applied.SetResourceVersion(live.GetResourceVersion())
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(applied),
		client.FieldOwner(v1alpha1.FieldManager), &client.ApplyOptions{Force: ptr.To(true)}); err != nil {
		return nil, err
	}
	if !managedByAny(applied, handOver) {
		return applied, nil
	}
	return a.patchOwnership(ctx, applied, nil, withoutManagers(applied.GetManagedFields(), handOver))
}

// unwritten returns what Result.Adopted lists for obj, just applied as
// live: an object that still carries no installation's labels because
// the apply left it unwritten for its adoption — one of owner.Adopted, or
// one handed over with opts.DeferHandOver. It returns nil for every other
// object. obj carries owner's labels (applyOne and handOverOne put them
// on), so that its digest is the one applyOne compares.
func unwritten(owner Owner, obj, live *unstructured.Unstructured, opts ApplyOptions) *v1alpha1.AdoptedObject {
	if live == nil || installationOf(live) != "" {
		return nil
	}
	entry := v1alpha1.AdoptedObject{ObjectReference: refOf(obj), UID: live.GetUID(), Digest: desiredDigest(obj)}
	switch prior := owner.adoptedAs(live); {
	case prior != nil:
		entry.FieldManagers = prior.FieldManagers
	case opts.DeferHandOver && managedByAny(live, opts.HandOver):
		for _, m := range opts.HandOver {
			if managedByAny(live, []string{m}) {
				entry.FieldManagers = append(entry.FieldManagers, m)
			}
		}
	default:
		return nil
	}
	return &entry
}

// unchangedAdopted reports whether obj, labelled for its owner, may leave
// live, the object adopted as adopted, unwritten: obj is what it was
// adopted as (same digest), and live still matches it — by the pure
// comparison, or, when that sees a difference, by the server's dry run
// of a forced apply (defaults and normalisation the comparison cannot
// see). It writes nothing.
func (a *Applier) unchangedAdopted(ctx context.Context, obj, live *unstructured.Unstructured, adopted *v1alpha1.AdoptedObject) (bool, error) {
	if adopted.Digest != desiredDigest(obj) {
		return false, nil
	}
	if len(adoptedDrift(obj, live)) == 0 {
		return true, nil
	}
	dry := obj.DeepCopy()
	dry.SetResourceVersion(live.GetResourceVersion())
	dry.SetManagedFields(nil)
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry),
		client.FieldOwner(v1alpha1.FieldManager), &client.ApplyOptions{Force: ptr.To(true)}, client.DryRunAll); err != nil {
		if apierrors.IsConflict(err) {
			return false, nil // changed since it was read: the claim reads it again
		}
		return false, err
	}
	return sameButOwnerLabels(dry, live), nil
}

// claimAdopted makes live, an object adopted without being written, Annex's
// before Annex first writes it: one merge patch, conditional on live's
// resourceVersion, adds owner's labels and turns the managedFields entries
// of managers (the other tool's: helm, helm-controller) into the entry of
// Annex's applies, so that the apply that follows removes the fields the
// new revision no longer sets, as it would had Annex applied the adopted
// revision itself. Entries of other managers stay theirs. It returns the
// object as the server answered.
func (a *Applier) claimAdopted(ctx context.Context, owner Owner, live *unstructured.Unstructured, managers []string) (*unstructured.Unstructured, error) {
	entries, err := handedOver(live.GetManagedFields(), managers)
	if err != nil {
		return nil, fmt.Errorf("reading the managedFields of %s: %w", live.GetName(), err)
	}
	return a.patchOwnership(ctx, live, owner.labels(), entries)
}

// handedOver returns entries with those of managers (on the object itself,
// not a subresource) and any of Annex's own applies merged into one
// entry of Annex's applies; entries of managers on a subresource are
// dropped, those of everyone else kept as they are.
func handedOver(entries []metav1.ManagedFieldsEntry, managers []string) ([]metav1.ManagedFieldsEntry, error) {
	var (
		out    []metav1.ManagedFieldsEntry
		merged *fieldpath.Set
		claim  metav1.ManagedFieldsEntry
	)
	for _, e := range entries {
		ours := e.Manager == v1alpha1.FieldManager && e.Operation == metav1.ManagedFieldsOperationApply && e.Subresource == ""
		if !ours && !slices.Contains(managers, e.Manager) {
			out = append(out, e)
			continue
		}
		if e.Subresource != "" || e.FieldsV1 == nil {
			continue
		}
		set := &fieldpath.Set{}
		if err := set.FromJSON(bytes.NewReader(e.FieldsV1.Raw)); err != nil {
			return nil, err
		}
		if merged == nil {
			merged, claim = set, e
			continue
		}
		merged = merged.Union(set)
	}
	if merged == nil {
		return out, nil
	}
	raw, err := merged.ToJSON()
	if err != nil {
		return nil, err
	}
	claim.Manager, claim.Operation, claim.Subresource = v1alpha1.FieldManager, metav1.ManagedFieldsOperationApply, ""
	claim.FieldsV1 = &metav1.FieldsV1{Raw: raw}
	return append(out, claim), nil
}

// adoptedDrift is drifted for obj, labelled for its owner, and live, an
// object another tool applied that Annex has not written: Annex's labels
// are not looked for, and, as Annex manages none of its fields, none can
// have been dropped.
func adoptedDrift(obj, live *unstructured.Unstructured) []string {
	fields := drifted(withoutOwnerLabels(obj), live)
	if !managedByAny(live, []string{v1alpha1.FieldManager}) {
		fields = slices.DeleteFunc(fields, func(f string) bool { return f == ".metadata.managedFields" })
	}
	return fields
}

// withoutOwnerLabels returns a copy of obj without the labels Owner puts
// on every object Annex writes, and without the fields the server sets
// (resourceVersion, managedFields), for drifted.
func withoutOwnerLabels(obj *unstructured.Unstructured) *unstructured.Unstructured {
	c := obj.DeepCopy()
	unstructured.RemoveNestedField(c.Object, "metadata", "managedFields")
	unstructured.RemoveNestedField(c.Object, "metadata", "resourceVersion")
	labels := c.GetLabels()
	for k := range (Owner{}).labels() {
		delete(labels, k)
	}
	if len(labels) == 0 {
		labels = nil
	}
	c.SetLabels(labels)
	return c
}

// patchOwnership writes, in one merge patch conditional on obj's
// resourceVersion, the labels (added to obj's) and managedFields (which
// replace obj's). It returns the object as the server answered.
func (a *Applier) patchOwnership(ctx context.Context, obj *unstructured.Unstructured, labels map[string]string, managedFields []metav1.ManagedFieldsEntry) (*unstructured.Unstructured, error) {
	meta := map[string]any{"resourceVersion": obj.GetResourceVersion(), "managedFields": managedFields}
	if len(labels) > 0 {
		meta["labels"] = labels
	}
	data, err := json.Marshal(map[string]any{"metadata": meta})
	if err != nil {
		return nil, err
	}
	out := obj.DeepCopy()
	if err := a.Client.Patch(ctx, out, client.RawPatch(types.MergePatchType, data), client.FieldOwner(v1alpha1.FieldManager)); err != nil {
		return nil, err
	}
	return out, nil
}

// managedByAny reports whether obj has a managedFields entry of one of
// managers.
func managedByAny(obj *unstructured.Unstructured, managers []string) bool {
	return slices.ContainsFunc(obj.GetManagedFields(), func(e metav1.ManagedFieldsEntry) bool {
		return slices.Contains(managers, e.Manager)
	})
}

// withoutManagers returns entries less those of managers.
func withoutManagers(entries []metav1.ManagedFieldsEntry, managers []string) []metav1.ManagedFieldsEntry {
	return slices.DeleteFunc(slices.Clone(entries), func(e metav1.ManagedFieldsEntry) bool {
		return slices.Contains(managers, e.Manager)
	})
}

// sameButOwnerLabels reports whether applied (the server's answer to an
// apply of an object labelled for its owner) equals live but for the
// owner's labels and the bookkeeping an apply updates.
func sameButOwnerLabels(applied, live *unstructured.Unstructured) bool {
	strip := func(o *unstructured.Unstructured) map[string]any {
		c := o.DeepCopy()
		c.SetManagedFields(nil)
		c.SetResourceVersion("")
		c.SetGeneration(0)
		labels := c.GetLabels()
		for k := range (Owner{}).labels() {
			delete(labels, k)
		}
		if len(labels) == 0 {
			labels = nil
		}
		c.SetLabels(labels)
		return c.Object
	}
	return reflect.DeepEqual(strip(applied), strip(live))
}
