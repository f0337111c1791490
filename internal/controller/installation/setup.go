package installation

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// indexExtension indexes installations by spec.extension so that a change
// of an Extension wakes exactly the installations of it.
const indexExtension = "spec.extension"

// SetupWithManager registers the controller: it reconciles an installation
// when its spec changes, when its Extension changes (new versions), and when
// another installation on the same cluster changes readiness (it may be a
// dependency).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ExtensionInstallation{}, indexExtension,
		func(o client.Object) []string { return []string{o.(*v1alpha1.ExtensionInstallation).Spec.Extension} }); err != nil {
		return err
	}
	return ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ExtensionInstallation{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionPredicate()))).
		Watches(&v1alpha1.Extension{}, handler.EnqueueRequestsFromMapFunc(r.installationsOfExtension)).
		Watches(&v1alpha1.ExtensionInstallation{}, handler.EnqueueRequestsFromMapFunc(r.waitingOnSameCluster),
			builder.WithPredicates(readinessChanged())).
		Named("extensioninstallation").
		Complete(r)
}

func (r *Reconciler) installationsOfExtension(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexExtension: o.GetName()}); err != nil {
		return nil
	}
	return requests(list.Items, func(*v1alpha1.ExtensionInstallation) bool { return true })
}

// waitingOnSameCluster wakes the installations on the changed one's cluster
// that wait for a dependency.
func (r *Reconciler) waitingOnSameCluster(ctx context.Context, o client.Object) []reconcile.Request {
	changed := o.(*v1alpha1.ExtensionInstallation)
	var list v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	return requests(list.Items, func(i *v1alpha1.ExtensionInstallation) bool {
		ready := findCondition(i, v1alpha1.ConditionReady)
		return i.Spec.Cluster == changed.Spec.Cluster && ready != nil && ready.Reason == v1alpha1.ReasonDependencyNotReady
	})
}

func requests(items []v1alpha1.ExtensionInstallation, keep func(*v1alpha1.ExtensionInstallation) bool) []reconcile.Request {
	var out []reconcile.Request
	for i := range items {
		if keep(&items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: items[i].Namespace, Name: items[i].Name}})
		}
	}
	return out
}

// readinessChanged passes updates that change an installation's installed
// version or Ready condition, and deletions.
func readinessChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*v1alpha1.ExtensionInstallation), e.ObjectNew.(*v1alpha1.ExtensionInstallation)
			return o.Status.InstalledVersion != n.Status.InstalledVersion ||
				!equality.Semantic.DeepEqual(findCondition(o, v1alpha1.ConditionReady), findCondition(n, v1alpha1.ConditionReady))
		},
	}
}

// deletionPredicate passes the update that sets deletionTimestamp (the
// generation does not change for it when finalizers hold the object).
func deletionPredicate() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}
