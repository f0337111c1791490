package apply

import (
	"context"
	"errors"
	"fmt"
	"slices"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/adopt"
)

// An operator OLM v0 installed, read and retired for an adoption; what
// OLM's objects say is read by internal/adopt.

// OLMOperator reads the Subscription name of namespace, the CSV its
// status.installedCSV names and the InstallPlans that installed that
// CSV. It returns nil, nil when the Subscription (or its kind: OLM is not
// on the cluster) does not exist.
func (a *Applier) OLMOperator(ctx context.Context, namespace, name string) (*adopt.Operator, error) {
	sub, err := a.getKind(ctx, adopt.SubscriptionGVK, namespace, name)
	if sub == nil || err != nil {
		return nil, err
	}
	installed, _, _ := unstructured.NestedString(sub.Object, "status", "installedCSV")
	var csv *unstructured.Unstructured
	if installed != "" {
		if csv, err = a.getKind(ctx, adopt.CSVGVK, namespace, installed); err != nil {
			return nil, err
		}
	}
	op, err := adopt.OperatorOf(sub, csv)
	if err != nil {
		return nil, err
	}
	if err := a.installPlans(ctx, op); err != nil {
		return nil, err
	}
	return op, nil
}

// installPlans adds to op.InstallPlans those of op's namespace that
// installed op.CSV.
func (a *Applier) installPlans(ctx context.Context, op *adopt.Operator) error {
	plans := &unstructured.UnstructuredList{}
	plans.SetGroupVersionKind(adopt.InstallPlanGVK.GroupVersion().WithKind(adopt.InstallPlanGVK.Kind + "List"))
	if err := a.Client.List(ctx, plans, client.InNamespace(op.Namespace)); err != nil && !meta.IsNoMatchError(err) {
		return fmt.Errorf("listing the InstallPlans of namespace %s: %w", op.Namespace, err)
	}
	for i := range plans.Items {
		if p := &plans.Items[i]; op.Installs(p) && !slices.Contains(op.InstallPlans, p.GetName()) {
			op.InstallPlans = append(op.InstallPlans, p.GetName())
		}
	}
	return nil
}

// RetireOLMOperator hands op's operator over from OLM: first every
// object of inventory loses its ownerReferences to op's CSV and the
// olm.owner labels naming it (one merge patch each, only where there is
// something to remove), so that OLM's garbage collection no longer
// reaches it; then op's Subscription (so that OLM installs nothing
// again), its InstallPlans (op.InstallPlans and those of its namespace
// that installed op.CSV) and its CSV are deleted. It returns how many
// objects it orphaned. Objects already gone count as done, so that it can
// be run again after a failure.
func (a *Applier) RetireOLMOperator(ctx context.Context, op *adopt.Operator, inventory []v1alpha1.ObjectReference) (int, error) {
	op = &adopt.Operator{Subscription: op.Subscription, Namespace: op.Namespace, CSV: op.CSV, InstallPlans: slices.Clone(op.InstallPlans)}
	if err := a.installPlans(ctx, op); err != nil {
		return 0, err
	}
	orphaned := 0
	for _, ref := range inventory {
		obj, err := a.get(ctx, ref)
		if err != nil {
			return orphaned, &ObjectError{Op: "read", Object: ref, Err: err}
		}
		if obj == nil {
			continue
		}
		patch, ok, err := adopt.OrphanPatch(obj, op.CSV, op.Namespace)
		if err != nil {
			return orphaned, err
		}
		if !ok {
			continue
		}
		if err := a.Client.Patch(ctx, obj, client.RawPatch(types.MergePatchType, patch), client.FieldOwner(v1alpha1.FieldManager)); err != nil {
			return orphaned, &ObjectError{Op: "orphan from ClusterServiceVersion " + op.CSV, Object: ref, Err: err}
		}
		orphaned++
	}
	type named struct {
		gvk  schema.GroupVersionKind
		name string
	}
	doomed := []named{{adopt.SubscriptionGVK, op.Subscription}}
	for _, p := range op.InstallPlans {
		doomed = append(doomed, named{adopt.InstallPlanGVK, p})
	}
	doomed = append(doomed, named{adopt.CSVGVK, op.CSV})
	var errs []error
	for _, d := range doomed {
		obj := &unstructured.Unstructured{}
		obj.SetGroupVersionKind(d.gvk)
		obj.SetNamespace(op.Namespace)
		obj.SetName(d.name)
		// What still points at it, and only that (OLM's own RBAC of
		// generated names, which Annex rendered afresh), goes with it.
		err := a.Client.Delete(ctx, obj, client.PropagationPolicy(metav1.DeletePropagationBackground))
		if err != nil && !apierrors.IsNotFound(err) && !meta.IsNoMatchError(err) {
			errs = append(errs, fmt.Errorf("deleting %s %s/%s: %w", d.gvk.Kind, op.Namespace, d.name, err))
		}
	}
	return orphaned, errors.Join(errs...)
}

// getKind reads namespace/name of kind gvk; nil, nil when it or its kind
// does not exist.
func (a *Applier) getKind(ctx context.Context, gvk schema.GroupVersionKind, namespace, name string) (*unstructured.Unstructured, error) {
	return a.get(ctx, v1alpha1.ObjectReference{Group: gvk.Group, Version: gvk.Version, Kind: gvk.Kind, Namespace: namespace, Name: name})
}
