package apply

import (
	"context"
	"encoding/json"
	"errors"
	"fmt"
	"path"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/fields"
	"k8s.io/apimachinery/pkg/labels"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"k8s.io/utils/ptr"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/failpoint"
)

// Prune deletes the objects listed in old but not in current (a change of
// API version alone is not a removal), and returns the references of those
// it deleted. It deletes only objects that still carry owner's labels, or
// are the very objects (same UID) of owner.Adopted: an object someone else
// took over, or recreated, stays. An object already gone
// counts as pruned and is not returned.
//
// CRDs are never pruned: deleting a CRD deletes every custom resource of
// its kind in the cluster, so a CRD is removed only by Delete with
// deleteCRDs.
//
// Deletes use background propagation and go in reverse phase order; Prune
// does not wait for objects to disappear. Objects are deleted without a
// read first, on conditions the server checks (see doomed). A failure to
// delete one object does not stop the others; the errors are joined
// *ObjectErrors.
func (a *Applier) Prune(ctx context.Context, owner Owner, old, current []v1alpha1.ObjectReference) ([]v1alpha1.ObjectReference, error) {
	var gone []v1alpha1.ObjectReference
	for _, ref := range removed(old, current) {
		if gvkOf(ref).GroupKind() != crdGroupKind {
			gone = append(gone, ref)
		}
	}
	if len(gone) == 0 {
		return nil, nil
	}
	crds, err := a.definedKindsOf(ctx, slices.Concat(old, current))
	if err != nil {
		return nil, err
	}
	live, err := a.doomed(ctx, owner, gone)
	if err != nil {
		return nil, err
	}
	var (
		deleted []v1alpha1.ObjectReference
		errs    []error
	)
	for _, obj := range inDeleteOrder(live, crds) {
		ref := refOf(obj)
		outcome, err := a.deleteOwned(ctx, owner, obj)
		failpoint.Hit(failpoint.DuringPrune, owner.String())
		switch {
		case err != nil:
			errs = append(errs, &ObjectError{Op: "delete", Object: ref, Err: err})
		case outcome != deleteAbsent:
			deleted = append(deleted, ref)
		}
	}
	return deleted, errors.Join(errs...)
}

// Delete removes the objects of inventory that carry owner's labels (or
// are, by UID, those of owner.Adopted; for some kinds, unchanged since
// Annex applied them: see doomed), and returns how many of them may still
// exist: those its deletes found waiting, and those of the phases it did
// not reach (not read, so an object already gone or not owner's counts
// there too); the caller calls Delete again until that is 0. Objects not
// labelled for owner are left alone and, once their phase is reached, not
// counted; CRDs too, unless deleteCRDs.
//
// Objects go in reverse phase order: webhook configurations, custom
// resources, everything else, RBAC — once the Pods of the inventory's
// workloads are gone too (see workloadPods) —, namespaces, and CRDs last.
// Delete issues the deletes (background propagation) of one phase,
// Workers at a time, and moves to the next only when that phase's objects
// are gone, so that an operator still runs while its custom resources are
// finalized. An object counts as gone when the server says its delete
// removed it at once; one that waits for finalizers is deleted again by
// the next call, which the server answers without changing it. Once
// everything is gone, CRDs kept (deleteCRDs false) lose owner's labels:
// they belong to no installation any more, and the next one to apply them
// takes them. Errors are joined *ObjectErrors.
func (a *Applier) Delete(ctx context.Context, owner Owner, inventory []v1alpha1.ObjectReference, deleteCRDs bool) (remaining int, err error) {
	crds, err := a.definedKindsOf(ctx, inventory)
	if err != nil {
		return 0, err
	}
	var targets []v1alpha1.ObjectReference
	for _, ref := range inventory {
		if deleteCRDs || gvkOf(ref).GroupKind() != crdGroupKind {
			targets = append(targets, ref)
		}
	}
	live, err := a.doomed(ctx, owner, targets)
	if err != nil {
		return 0, err
	}
	live = inDeleteOrder(live, crds)

	podsGone := false
	for start := 0; start < len(live); {
		p := phaseOf(live[start].GroupVersionKind().GroupKind(), crds)
		if p <= phaseRBAC && !podsGone {
			// The workloads are gone; their Pods may still be stopping.
			pods, err := a.workloadPods(ctx, inventory)
			if err != nil || pods > 0 {
				return len(live) - start, err
			}
			podsGone = true
		}
		end := start
		for end < len(live) && phaseOf(live[end].GroupVersionKind().GroupKind(), crds) == p {
			end++
		}
		phaseObjs := live[start:end]
		errs := make([]error, len(phaseObjs))
		stays := make([]bool, len(phaseObjs))
		forEach(a.workers(), len(phaseObjs), func(i int) {
			obj := phaseObjs[i]
			outcome, err := a.deleteOwned(ctx, owner, obj)
			failpoint.Hit(failpoint.UninstallAfterFirstDelete, owner.String())
			if err != nil {
				errs[i] = &ObjectError{Op: "delete", Object: refOf(obj), Err: err}
			}
			stays[i] = err != nil || outcome == deletePending
		})
		left := 0
		for _, s := range stays {
			if s {
				left++
			}
		}
		if err := errors.Join(errs...); left > 0 || err != nil {
			// Later phases wait until this one is gone.
			return left + len(live) - end, err
		}
		start = end
	}
	if !deleteCRDs {
		// Everything else is gone: the kept CRDs belong to no one now, so
		// that a later installation of the extension applies them again
		// instead of refusing objects of a deleted installation.
		return 0, a.releaseCRDs(ctx, owner, inventory)
	}
	return 0, nil
}

// releaseCRDs removes owner's labels from the CRDs of inventory that
// carry them.
func (a *Applier) releaseCRDs(ctx context.Context, owner Owner, inventory []v1alpha1.ObjectReference) error {
	var crds []v1alpha1.ObjectReference
	for _, ref := range inventory {
		if gvkOf(ref).GroupKind() == crdGroupKind {
			crds = append(crds, ref)
		}
	}
	live, err := a.liveOwned(ctx, owner, crds)
	if err != nil {
		return err
	}
	release := map[string]any{}
	for k := range owner.labels() {
		release[k] = nil
	}
	patch, err := json.Marshal(map[string]any{"metadata": map[string]any{"labels": release}})
	if err != nil {
		return err
	}
	var errs []error
	for _, obj := range live {
		if !owner.labelled(obj) {
			continue // adopted unwritten (Owner.Adopted): it carries no labels to remove
		}
		if err := a.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch)); err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, &ObjectError{Op: "release", Object: refOf(obj), Err: err})
		}
	}
	return errors.Join(errs...)
}

// definedKindsOf reads the CRDs listed in refs and returns the kinds they
// define. CRDs that no longer exist define nothing.
func (a *Applier) definedKindsOf(ctx context.Context, refs []v1alpha1.ObjectReference) (crdGroupKinds, error) {
	var crds []*unstructured.Unstructured
	for _, ref := range refs {
		if gvkOf(ref).GroupKind() != crdGroupKind {
			continue
		}
		obj, err := a.get(ctx, ref)
		if err != nil {
			return nil, &ObjectError{Op: "read", Object: ref, Err: err}
		}
		if obj != nil {
			crds = append(crds, obj)
		}
	}
	return definedKinds(crds), nil
}

// doomed returns the objects of refs to delete for owner, none of them
// read: stubs (no UID) that deleteOwned deletes only if they are still
// owner's. A stub with a resourceVersion, for a reference that holds the
// one Annex applied the object at and a kind no controller writes back
// (unreadDeletable), is deleted on condition that the object is unchanged
// since; one without is deleted by selection (deleteSelected: the server
// deletes it only if it carries owner's labels). Only the objects of
// owner.Adopted, which Annex has not written and which carry no labels,
// are read first, and returned if they are the adopted ones (by UID).
func (a *Applier) doomed(ctx context.Context, owner Owner, refs []v1alpha1.ObjectReference) ([]*unstructured.Unstructured, error) {
	var read []v1alpha1.ObjectReference
	var out []*unstructured.Unstructured
	for _, ref := range refs {
		if owner.mayHaveAdopted(ref) {
			read = append(read, ref)
			continue
		}
		stub := &unstructured.Unstructured{}
		stub.SetGroupVersionKind(gvkOf(ref))
		stub.SetNamespace(ref.Namespace)
		stub.SetName(ref.Name)
		if unreadDeletable(gvkOf(ref).GroupKind()) {
			stub.SetResourceVersion(ref.ResourceVersion)
		}
		out = append(out, stub)
	}
	live, err := a.liveOwned(ctx, owner, read)
	if err != nil {
		return nil, err
	}
	return append(out, live...), nil
}

// unreadDeletable reports whether objects of gk are, in a running cluster,
// changed by no one but whoever applies them: no controller writes their
// status or metadata back, so the resourceVersion they were applied at is
// still theirs when they are deleted. Kinds with a status (workloads,
// Ingresses, custom resources, ...) or a field others fill in (webhook
// configurations' caBundle) are read before they are deleted.
func unreadDeletable(gk schema.GroupKind) bool {
	switch gk.Group {
	case "":
		switch gk.Kind {
		case "ConfigMap", "Secret", "ServiceAccount", "Service":
			return true
		}
	case "rbac.authorization.k8s.io":
		return true
	case "networking.k8s.io":
		return gk.Kind == "NetworkPolicy" || gk.Kind == "IngressClass"
	case "scheduling.k8s.io":
		return gk.Kind == "PriorityClass"
	case "storage.k8s.io":
		return gk.Kind == "StorageClass" || gk.Kind == "CSIDriver"
	}
	return false
}

// deleteOwned deletes obj, one doomed returned, and says what became of
// it. A read obj (it has a UID) is deleted on condition of its UID; an
// unread one with a resourceVersion on condition of that resourceVersion
// (if it changed since, it is read and deleted as a read one is, provided
// it is still owner's); an unread one without by selection
// (deleteSelected).
func (a *Applier) deleteOwned(ctx context.Context, owner Owner, obj *unstructured.Unstructured) (deleteOutcome, error) {
	switch {
	case obj.GetUID() != "":
		return a.deleteOne(ctx, obj)
	case obj.GetResourceVersion() == "":
		return a.deleteSelected(ctx, owner, obj)
	}
	outcome, err := a.deleteOne(ctx, obj)
	if !errors.Is(err, errChanged) {
		return outcome, err
	}
	live, err := a.get(ctx, refOf(obj))
	if err != nil || live == nil || !owner.owns(live) {
		return deleteAbsent, err
	}
	return a.deleteOne(ctx, live)
}

// deleteSelected deletes obj, an unread stub, if it carries owner's
// labels, in one request: a delete of the collection of obj's kind
// selected by obj's name and owner's labels, so that the server checks
// the labels as it deletes (a read, then a delete on condition of the UID
// read, take two). Where the target cluster refuses a delete of a
// collection (the identity may delete but not deletecollection, or an
// aggregated API does not serve it), obj is read and deleted as a read
// one is, and later objects of its resource go that way at once; where it
// answers NotFound, obj is read to tell.
func (a *Applier) deleteSelected(ctx context.Context, owner Owner, obj *unstructured.Unstructured) (deleteOutcome, error) {
	gvk := obj.GroupVersionKind()
	mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return deleteAbsent, nil // the kind is gone, and its objects with it
	}
	if err != nil {
		return deletePending, err
	}
	gr := mapping.Resource.GroupResource()
	if _, refused := a.noCollectionDelete.Load(gr); !refused {
		outcome, err := a.deleteCollection(ctx, owner, mapping, obj)
		switch {
		case apierrors.IsForbidden(err), apierrors.IsMethodNotSupported(err):
			a.noCollectionDelete.Store(gr, true)
		case !apierrors.IsNotFound(err):
			return outcome, err
		}
	}
	live, err := a.get(ctx, refOf(obj))
	if err != nil || live == nil || !owner.owns(live) {
		return deleteAbsent, err
	}
	return a.deleteOne(ctx, live)
}

// deleteCollection sends deleteSelected's request, with background
// propagation as deleteOne's, and says what became of obj from the
// objects the server answers it selected: none, absent (gone, or not
// owner's); one with finalizers, or being deleted already, or a Pod (which
// stops within its grace period), pending; otherwise removed.
func (a *Applier) deleteCollection(ctx context.Context, owner Owner, mapping *meta.RESTMapping, obj *unstructured.Unstructured) (deleteOutcome, error) {
	body, err := json.Marshal(metav1.DeleteOptions{
		TypeMeta:          metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
	})
	if err != nil {
		return deletePending, err
	}
	answer, err := a.REST.Delete().AbsPath(objectPath(mapping, obj.GetNamespace(), "")).
		Param("labelSelector", labels.SelectorFromSet(owner.labels()).String()).
		Param("fieldSelector", fields.OneTermEqualSelector("metadata.name", obj.GetName()).String()).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Raw()
	if err != nil {
		return deletePending, err
	}
	var selected struct {
		Items []struct {
			Metadata struct {
				DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
				Finalizers        []string     `json:"finalizers"`
			} `json:"metadata"`
		} `json:"items"`
	}
	if err := json.Unmarshal(answer, &selected); err != nil {
		return deletePending, fmt.Errorf("reading the answer to the delete: %w", err)
	}
	if len(selected.Items) == 0 {
		return deleteAbsent, nil
	}
	m := selected.Items[0].Metadata
	if m.DeletionTimestamp != nil || len(m.Finalizers) > 0 || mapping.GroupVersionKind.GroupKind() == (schema.GroupKind{Kind: "Pod"}) {
		return deletePending, nil
	}
	return deleteRemoved, nil
}

// errChanged is deleteOne's answer when an unread object's resourceVersion
// precondition failed: someone changed it since it was applied.
var errChanged = errors.New("the object changed since it was applied")

// liveOwned reads the objects of refs and returns those that exist and
// carry owner's labels, in the order of refs.
func (a *Applier) liveOwned(ctx context.Context, owner Owner, refs []v1alpha1.ObjectReference) ([]*unstructured.Unstructured, error) {
	objs, err := a.getAll(ctx, refs)
	if err != nil {
		return nil, err
	}
	var live []*unstructured.Unstructured
	for _, obj := range objs {
		if obj != nil && owner.owns(obj) {
			live = append(live, obj)
		}
	}
	return live, nil
}

// getAll reads the objects of refs, a.workers() at a time, and returns
// them in the order of refs, nil for those that do not exist. Errors are
// joined *ObjectErrors.
func (a *Applier) getAll(ctx context.Context, refs []v1alpha1.ObjectReference) ([]*unstructured.Unstructured, error) {
	objs := make([]*unstructured.Unstructured, len(refs))
	errs := make([]error, len(refs))
	forEach(a.workers(), len(refs), func(i int) {
		obj, err := a.get(ctx, refs[i])
		if err != nil {
			errs[i] = &ObjectError{Op: "read", Object: refs[i], Err: err}
		}
		objs[i] = obj
	})
	if err := errors.Join(errs...); err != nil {
		return nil, err
	}
	return objs, nil
}

// get reads the object ref names; it returns nil, nil when the object or
// its kind does not exist.
func (a *Applier) get(ctx context.Context, ref v1alpha1.ObjectReference) (*unstructured.Unstructured, error) {
	obj := &unstructured.Unstructured{}
	obj.SetGroupVersionKind(gvkOf(ref))
	err := a.Client.Get(ctx, client.ObjectKey{Namespace: ref.Namespace, Name: ref.Name}, obj)
	if apierrors.IsNotFound(err) || meta.IsNoMatchError(err) {
		return nil, nil
	}
	if err != nil {
		return nil, err
	}
	return obj, nil
}

func (a *Applier) exists(ctx context.Context, obj *unstructured.Unstructured) (bool, error) {
	got, err := a.get(ctx, refOf(obj))
	if err != nil {
		return false, err
	}
	// Only the same object counts: one recreated under the same name by
	// someone else is no longer ours to wait for.
	return got != nil && got.GetUID() == obj.GetUID(), nil
}

// deleteOutcome is what one delete did.
type deleteOutcome int

const (
	// deleteRemoved: the server removed the object at once.
	deleteRemoved deleteOutcome = iota
	// deletePending: the object waits for finalizers or a grace period
	// (or it was being deleted already).
	deletePending
	// deleteAbsent: the object was gone already, or another object has
	// its name now (the UID precondition kept that one from being deleted).
	deleteAbsent
)

// deleteOne deletes obj with background propagation, unless it is already
// being deleted, and says what became of it. The server's answer tells
// whether it is gone, so no read has to follow: a Status (or, for kinds
// that return the deleted object, the object as it was) when it removed
// the object, the object with its deletionTimestamp set when the object
// waits.
func (a *Applier) deleteOne(ctx context.Context, obj *unstructured.Unstructured) (deleteOutcome, error) {
	if obj.GetDeletionTimestamp() != nil {
		return deletePending, nil
	}
	gvk := obj.GroupVersionKind()
	mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version)
	if meta.IsNoMatchError(err) {
		return deleteAbsent, nil // the kind is gone, and its objects with it
	}
	if err != nil {
		return deletePending, err
	}
	// A read object goes only if it is still the same (its UID); an unread
	// one only if it is unchanged since it was applied (its resourceVersion).
	preconditions := &metav1.Preconditions{UID: ptr.To(obj.GetUID())}
	unread := obj.GetUID() == ""
	if unread {
		preconditions = &metav1.Preconditions{ResourceVersion: ptr.To(obj.GetResourceVersion())}
	}
	body, err := json.Marshal(metav1.DeleteOptions{
		TypeMeta:          metav1.TypeMeta{APIVersion: "v1", Kind: "DeleteOptions"},
		PropagationPolicy: ptr.To(metav1.DeletePropagationBackground),
		Preconditions:     preconditions,
	})
	if err != nil {
		return deletePending, err
	}
	answer, err := a.REST.Delete().AbsPath(objectPath(mapping, obj.GetNamespace(), obj.GetName())).
		SetHeader("Content-Type", "application/json").Body(body).Do(ctx).Raw()
	switch {
	case apierrors.IsConflict(err) && unread:
		return deletePending, errChanged
	case apierrors.IsNotFound(err), apierrors.IsConflict(err): // Conflict: the UID precondition failed
		return deleteAbsent, nil
	case err != nil:
		return deletePending, err
	}
	var after struct {
		Kind     string `json:"kind"`
		Metadata struct {
			DeletionTimestamp *metav1.Time `json:"deletionTimestamp"`
		} `json:"metadata"`
	}
	if err := json.Unmarshal(answer, &after); err != nil {
		return deletePending, fmt.Errorf("reading the answer to the delete: %w", err)
	}
	if after.Kind != "Status" && after.Metadata.DeletionTimestamp != nil {
		return deletePending, nil
	}
	return deleteRemoved, nil
}

// objectPath is the URL path of the object name of mapping's resource.
func objectPath(mapping *meta.RESTMapping, namespace, name string) string {
	gv := mapping.Resource.GroupVersion()
	parts := []string{"/apis", gv.Group, gv.Version}
	if gv.Group == "" {
		parts = []string{"/api", gv.Version}
	}
	if mapping.Scope.Name() == meta.RESTScopeNameNamespace {
		parts = append(parts, "namespaces", namespace)
	}
	return path.Join(append(parts, mapping.Resource.Resource, name)...)
}

// inDeleteOrder sorts objs by reverse phase, keeping their order within a
// phase.
func inDeleteOrder(objs []*unstructured.Unstructured, crds crdGroupKinds) []*unstructured.Unstructured {
	slices.SortStableFunc(objs, func(x, y *unstructured.Unstructured) int {
		return int(phaseOf(y.GroupVersionKind().GroupKind(), crds) - phaseOf(x.GroupVersionKind().GroupKind(), crds))
	})
	return objs
}

// RemoveFinalizers removes the finalizers of the objects of refs that
// carry owner's labels and are being deleted, so that their deletion
// completes without the controller that put them there: what those
// finalizers guarded is then not cleaned up. Objects not being deleted,
// not owned, or gone are left alone. The patch carries the object's
// resourceVersion, so a controller that changed the finalizers meanwhile
// wins and the next call looks again. Errors are joined *ObjectErrors.
func (a *Applier) RemoveFinalizers(ctx context.Context, owner Owner, refs []v1alpha1.ObjectReference) error {
	live, err := a.liveOwned(ctx, owner, refs)
	if err != nil {
		return err
	}
	var errs []error
	for _, obj := range live {
		if obj.GetDeletionTimestamp() == nil || len(obj.GetFinalizers()) == 0 {
			continue
		}
		patch, err := json.Marshal(map[string]any{"metadata": map[string]any{
			"finalizers": nil, "resourceVersion": obj.GetResourceVersion(),
		}})
		if err != nil {
			return err
		}
		err = a.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch))
		if err != nil && !apierrors.IsNotFound(err) {
			errs = append(errs, &ObjectError{Op: "remove the finalizers of", Object: refOf(obj), Err: err})
		}
	}
	return errors.Join(errs...)
}
