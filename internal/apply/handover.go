package apply

import (
	"context"
	"encoding/json"
	"reflect"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// handOverOne applies obj for an adoption (ApplyOptions.HandOver): when
// the live object is managed by one of the field managers of handOver,
// Annex takes it over in place — it keeps its UID, and it is written only
// as much as taking it over needs:
//
//   - when a forced server-side apply of obj would change nothing but
//     Annex's labels (the server says so, by a dry run), one merge patch
//     adds the labels and rewrites managedFields as that apply would
//     leave them, less the entries of handOver's managers. The spec is
//     not written, so a Deployment keeps its generation and is not rolled.
//   - otherwise obj is applied with force (Annex's values win over edits
//     made by hand), then a merge patch removes the entries of handOver's
//     managers that the apply left sharing Annex's fields.
//
// Either way, afterwards Annex's field manager alone owns what it applies,
// so that a later apply that drops a field removes it. An object of
// another installation is refused (*ConflictError); one that does not
// exist, or that none of handOver's managers manages, is applied as
// applyOne does, with force. Every write carries the resourceVersion read
// as a precondition; an object changed in between is read again.
func (a *Applier) handOverOne(ctx context.Context, owner Owner, obj *unstructured.Unstructured, handOver []string) (*unstructured.Unstructured, error) {
	ref := refOf(obj)
	for attempt := 1; ; attempt++ {
		live, err := a.get(ctx, ref)
		if err != nil {
			return nil, &ObjectError{Op: "apply", Object: ref, Err: err}
		}
		if live == nil || !managedByAny(live, handOver) {
			return a.applyOne(ctx, owner, obj, true)
		}
		if other := installationOf(live); other != "" && other != owner.String() {
			return nil, &ConflictError{Object: ref, Installation: other}
		}
		labelFor(obj, owner)
		obj.SetResourceVersion("")
		obj.SetManagedFields(nil)
		out, err := a.handOver(ctx, owner, obj, live, handOver)
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
// as the server answered the last write.
func (a *Applier) handOver(ctx context.Context, owner Owner, obj, live *unstructured.Unstructured, handOver []string) (*unstructured.Unstructured, error) {
	dry := obj.DeepCopy()
	dry.SetResourceVersion(live.GetResourceVersion())
	if err := a.Client.Apply(ctx, client.ApplyConfigurationFromUnstructured(dry),
		client.FieldOwner(v1alpha1.FieldManager), &client.ApplyOptions{Force: ptr.To(true)}, client.DryRunAll); err != nil {
		return nil, err
	}
	if sameButOwnerLabels(dry, live) {
		return a.patchOwnership(ctx, live, owner.labels(), withoutManagers(dry.GetManagedFields(), handOver))
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
