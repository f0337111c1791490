package profile

import (
	"maps"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// profileNamedBy names the profile an installation is labelled for.
func profileNamedBy(o client.Object) (reconcile.Request, bool) {
	name := o.GetLabels()[v1alpha1.LabelProfile]
	return reconcile.Request{NamespacedName: types.NamespacedName{Name: name}}, name != ""
}

// clusterChangeMatters passes the updates of a ManagedCluster that change
// what a profile reads of it (clusters): its labels, its annotations (the
// record of Default extensions among them), its deletion, its Kubernetes
// version, whether it is reachable, and its maintenance windows. Its
// probe's other findings, such as the count of Ready installations that
// changes with every installation during a rollout, wake no profile.
func clusterChangeMatters() predicate.Predicate {
	return predicate.Funcs{UpdateFunc: func(e event.UpdateEvent) bool {
		old, okOld := e.ObjectOld.(*v1alpha1.ManagedCluster)
		cur, okNew := e.ObjectNew.(*v1alpha1.ManagedCluster)
		if !okOld || !okNew {
			return true
		}
		unreachable := func(mc *v1alpha1.ManagedCluster) bool {
			return meta.IsStatusConditionFalse(mc.Status.Conditions, v1alpha1.ConditionReachable)
		}
		return !maps.Equal(old.Labels, cur.Labels) || !maps.Equal(old.Annotations, cur.Annotations) ||
			old.DeletionTimestamp.IsZero() != cur.DeletionTimestamp.IsZero() ||
			old.Status.KubernetesVersion != cur.Status.KubernetesVersion || unreachable(old) != unreachable(cur) ||
			!equality.Semantic.DeepEqual(old.Spec.MaintenanceWindows, cur.Spec.MaintenanceWindows)
	}}
}
