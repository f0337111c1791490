package adopt

import (
	"cmp"
	"context"
	"fmt"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Retirer deletes, on the target cluster, what another tool keeps of
// what an installation adopted (the target cluster's applier implements
// it). Each returns how many objects it changed.
type Retirer interface {
	// RetireHelmRelease deletes the storage of every revision of Helm
	// release name in namespace.
	RetireHelmRelease(ctx context.Context, namespace, name string) (int, error)
	// RetireOLMOperator removes the ownerReferences to op's CSV and OLM's
	// labels from the objects of inventory, then deletes op's
	// Subscription, its InstallPlans and the CSV.
	RetireOLMOperator(ctx context.Context, op *Operator, inventory []v1alpha1.ObjectReference) (int, error)
}

// Retired is what Retire did, for an Event.
type Retired struct {
	Reason, Message string
}

// Retire makes the tool that installed what from (status.adoptedFrom)
// names forget it, once the status recording revision 1 is written: a
// Helm release's storage is deleted, so that helm list no longer shows
// it; an OLM operator's objects are taken from OLM (their ownerReferences
// to the CSV and OLM's labels go) and then its Subscription, InstallPlans
// and CSV are deleted, so that OLM neither removes nor reinstalls it,
// its custom resources untouched. t, when this reconcile adopted, is
// the Takeover, which knows the operator in full; inventory is the
// installation's. An error names what could not be retired and is the
// cluster's: retried.
func Retire(ctx context.Context, r Retirer, from *v1alpha1.AdoptedFrom, t *Takeover, inventory []v1alpha1.ObjectReference) (Retired, error) {
	if from.Kind == KindSubscription {
		op := &Operator{Subscription: from.Name, Namespace: from.Namespace, CSV: from.ClusterServiceVersion}
		if t != nil && t.Operator != nil {
			op = t.Operator
		}
		n, err := r.RetireOLMOperator(ctx, op, inventory)
		if err != nil {
			return Retired{}, fmt.Errorf("taking operator %s over from OLM (Subscription %s/%s, ClusterServiceVersion %s): %w",
				from.Chart, op.Namespace, op.Subscription, op.CSV, err)
		}
		return Retired{Reason: "OLMRetired", Message: fmt.Sprintf(
			"removed the ownerReferences to ClusterServiceVersion %s/%s from %d objects, then deleted Subscription %s/%s, its InstallPlans and the CSV: OLM no longer manages operator %s; its custom resources are untouched",
			op.Namespace, op.CSV, n, op.Namespace, op.Subscription, from.Chart)}, nil
	}
	ns := cmp.Or(from.StorageNamespace, from.Namespace)
	n, err := r.RetireHelmRelease(ctx, ns, from.Name)
	if err != nil {
		return Retired{}, fmt.Errorf("deleting the storage of adopted Helm release %s/%s: %w", ns, from.Name, err)
	}
	return Retired{Reason: "HelmReleaseRetired", Message: fmt.Sprintf(
		"deleted the storage of Helm release %s/%s (%d objects): helm list no longer shows it; its last manifest is in the record of revision 1", ns, from.Name, n)}, nil
}
