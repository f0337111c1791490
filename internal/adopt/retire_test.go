package adopt

import (
	"context"
	"errors"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// retirer is a target cluster that holds one Helm release's storage and
// one OLM operator, and forgets them when asked.
type retirer struct {
	releases  map[string]int // "namespace/name": its storage objects
	operators map[string]int // "namespace/subscription/csv": its objects
	err       error
}

func (r *retirer) RetireHelmRelease(_ context.Context, namespace, name string) (int, error) {
	if r.err != nil {
		return 0, r.err
	}
	n := r.releases[namespace+"/"+name]
	delete(r.releases, namespace+"/"+name)
	return n, nil
}

func (r *retirer) RetireOLMOperator(_ context.Context, op *Operator, inventory []v1alpha1.ObjectReference) (int, error) {
	key := op.Namespace + "/" + op.Subscription + "/" + op.CSV
	if _, ok := r.operators[key]; !ok || r.err != nil {
		return 0, r.err
	}
	delete(r.operators, key)
	return len(inventory), nil
}

func TestRetire(t *testing.T) {
	helm := &v1alpha1.AdoptedFrom{Kind: KindHelmRelease, Name: "web", Namespace: "apps"}
	elsewhere := &v1alpha1.AdoptedFrom{Kind: KindHelmRelease, Name: "web", Namespace: "apps", StorageNamespace: "helm-storage"}
	olm := &v1alpha1.AdoptedFrom{Kind: KindSubscription, Name: "web", Namespace: "operators", Chart: "web-operator", ClusterServiceVersion: "web.v1.0.0"}
	inventory := []v1alpha1.ObjectReference{{Kind: "Deployment", Name: "web"}, {Kind: "ServiceAccount", Name: "web"}}
	for _, tc := range []struct {
		name     string
		from     *v1alpha1.AdoptedFrom
		takeover *Takeover
		err      error
		reason   string // of the Event; "" when it fails
		message  string // the Event's, or the error's
		left     int    // releases and operators the cluster still holds
	}{
		// A Helm release's storage is deleted where the release is.
		{name: "helm release", from: helm, reason: "HelmReleaseRetired",
			message: "deleted the storage of Helm release apps/web (3 objects): helm list no longer shows it; its last manifest is in the record of revision 1", left: 2},
		// Storage kept in another namespace (helm --namespace with
		// HELM_DRIVER storage elsewhere, Flux's storageNamespace) is deleted there.
		{name: "storage elsewhere", from: elsewhere, reason: "HelmReleaseRetired",
			message: "deleted the storage of Helm release helm-storage/web (2 objects): helm list no longer shows it; its last manifest is in the record of revision 1", left: 2},
		// An operator named by the status alone, after a crash lost the
		// Takeover.
		{name: "operator from status", from: olm, reason: "OLMRetired",
			message: "removed the ownerReferences to ClusterServiceVersion operators/web.v1.0.0 from 2 objects, then deleted Subscription operators/web, its InstallPlans and the CSV: OLM no longer manages operator web-operator; its custom resources are untouched", left: 2},
		// The Takeover of this reconcile knows the operator in full.
		{name: "operator from takeover", from: olm, takeover: &Takeover{Operator: &Operator{Subscription: "web", Namespace: "operators", CSV: "web.v1.0.0", Package: "web-operator"}},
			reason: "OLMRetired", left: 2},
		// The cluster's refusal names the release, to be retried.
		{name: "helm fails", from: helm, err: errors.New("forbidden"),
			message: "deleting the storage of adopted Helm release apps/web: forbidden", left: 3},
		// And the operator.
		{name: "operator fails", from: olm, err: errors.New("forbidden"),
			message: "taking operator web-operator over from OLM (Subscription operators/web, ClusterServiceVersion web.v1.0.0): forbidden", left: 3},
	} {
		t.Run(tc.name, func(t *testing.T) {
			r := &retirer{
				releases:  map[string]int{"apps/web": 3, "helm-storage/web": 2},
				operators: map[string]int{"operators/web/web.v1.0.0": 1},
				err:       tc.err,
			}
			done, err := Retire(context.Background(), r, tc.from, tc.takeover, inventory)
			switch {
			case tc.reason == "" && (err == nil || err.Error() != tc.message):
				t.Errorf("Retire() error = %v, want %q", err, tc.message)
			case tc.reason != "" && (err != nil || done.Reason != tc.reason || tc.message != "" && done.Message != tc.message):
				t.Errorf("Retire() = %+v, %v; want %s %q", done, err, tc.reason, tc.message)
			}
			if left := len(r.releases) + len(r.operators); left != tc.left {
				t.Errorf("the cluster holds %d releases and operators after Retire, want %d", left, tc.left)
			}
		})
	}
}
