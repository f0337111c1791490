package installation

import (
	"context"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// indexExtension indexes installations by spec.extension so that a change
// of an Extension wakes exactly the installations of it.
const indexExtension = "spec.extension"

// SetupWithManager registers the controller: it reconciles an installation
// when its spec changes, when its Extension changes (new versions), when
// another installation on the same cluster comes, goes, or changes version or
// readiness (the cluster is resolved as a whole), and when the cluster's
// Kubernetes version changes (ClusterEvents).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ExtensionInstallation{}, indexExtension,
		func(o client.Object) []string { return []string{o.(*v1alpha1.ExtensionInstallation).Spec.Extension} }); err != nil {
		return err
	}
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ExtensionInstallation{}, builder.WithPredicates(predicate.Or(
			predicate.GenerationChangedPredicate{}, predicate.AnnotationChangedPredicate{}, deletionPredicate()))).
		Watches(&v1alpha1.Extension{}, handler.EnqueueRequestsFromMapFunc(r.installationsOfExtension)).
		Watches(&v1alpha1.ExtensionInstallation{}, handler.EnqueueRequestsFromMapFunc(r.unsettledOnSameCluster),
			builder.WithPredicates(clusterRelevantChange())).
		Named("extensioninstallation").
		// Hook Jobs are awaited inside a reconcile; several workers keep one
		// slow hook from holding up every other installation.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers()})
	if r.ClusterEvents != nil {
		b = b.WatchesRawSource(source.Channel(r.ClusterEvents, &handler.EnqueueRequestForObject{}))
	}
	return b.Complete(r)
}

func (r *Reconciler) installationsOfExtension(ctx context.Context, o client.Object) []reconcile.Request {
	var list v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &list, client.MatchingFields{indexExtension: o.GetName()}); err != nil {
		return nil
	}
	return requests(list.Items, func(*v1alpha1.ExtensionInstallation) bool { return true })
}

// unsettledOnSameCluster wakes the installations on the changed one's
// cluster whose outcome may depend on it: those not Ready (waiting for a
// dependency, or in conflict), those being deleted (held by dependents), and
// those added for dependencies (released when no longer needed).
func (r *Reconciler) unsettledOnSameCluster(ctx context.Context, o client.Object) []reconcile.Request {
	changed := o.(*v1alpha1.ExtensionInstallation)
	var list v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	return requests(list.Items, func(i *v1alpha1.ExtensionInstallation) bool {
		if i.Spec.Cluster != changed.Spec.Cluster || (i.Namespace == changed.Namespace && i.Name == changed.Name) {
			return false
		}
		return !isReady(i) || !i.DeletionTimestamp.IsZero() || i.Labels[v1alpha1.LabelAddedFor] != ""
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

// clusterRelevantChange passes what can change another installation's
// resolution or readiness: creation, deletion, a spec change, and a change of
// installed version or Ready condition.
func clusterRelevantChange() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return true },
		GenericFunc: func(event.GenericEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return true },
		UpdateFunc: func(e event.UpdateEvent) bool {
			o, n := e.ObjectOld.(*v1alpha1.ExtensionInstallation), e.ObjectNew.(*v1alpha1.ExtensionInstallation)
			return o.Generation != n.Generation ||
				o.DeletionTimestamp.IsZero() != n.DeletionTimestamp.IsZero() ||
				o.Status.InstalledVersion != n.Status.InstalledVersion ||
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

func (r *Reconciler) workers() int {
	if r.Workers > 0 {
		return r.Workers
	}
	return 8
}
