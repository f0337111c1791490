package installation

import (
	"context"
	"errors"

	corev1 "k8s.io/api/core/v1"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/builder"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/controller"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/source"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/shard"
	"github.com/annex-platform/annex/internal/wake"
)

// SetupWithManager registers the controller: it reconciles an installation
// when its spec changes, when its Extension changes (new versions), when
// another installation on the same cluster comes, goes, or changes version or
// readiness (the cluster is resolved as a whole), when a Secret, ConfigMap
// or Namespace its values come from changes, when the cluster's
// Kubernetes version changes (ClusterEvents) or it is reachable again,
// when an Approval names
// it or an ApprovalPolicy changes while its change awaits approval, and
// when a hook's resource made for it changes, its HookRequest is deleted,
// or a Hook changes while its change waits on hooks (watchHooks).
func (r *Reconciler) SetupWithManager(mgr ctrl.Manager) error {
	if r.Hooks == nil {
		return errors.New("installation controller: Hooks is required")
	}
	index, err := wake.NewIndex(context.Background(), mgr.GetCache())
	if err != nil {
		return err
	}
	r.index = index
	r.share = shard.NewShare(r.workers())
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ExtensionInstallation{}, builder.WithPredicates(wake.OfShard(r.Fence), predicate.Or(
			predicate.GenerationChangedPredicate{}, wake.AnnotationsChanged(), wake.DeletionStarted(), wake.StartedWaitingOnOthers()))).
		// A shard that starts serving a cluster (it claimed it, or took it
		// over), or a cluster reachable again, reconciles every
		// installation on it.
		Watches(&v1alpha1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(wake.InstallationsOnCluster(index)),
			builder.WithPredicates(predicate.Or[client.Object](wake.ServingChanged(), wake.BecameReachable()))).
		Watches(&v1alpha1.Extension{}, handler.EnqueueRequestsFromMapFunc(wake.InstallationsOfExtension(r.Client))).
		Watches(&v1alpha1.ExtensionInstallation{}, handler.EnqueueRequestsFromMapFunc(wake.UnsettledOnSameCluster(index)),
			builder.WithPredicates(wake.ClusterRelevantChange())).
		// A changed values source re-renders its users within seconds;
		// metadata is enough to know that it changed.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(wake.UsersOf(r.Client, "Secret")), builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(wake.UsersOf(r.Client, "ConfigMap")), builder.OnlyMetadata).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(wake.UsersOf(r.Client, "Namespace")), builder.OnlyMetadata).
		// An Approval wakes the installation it names at once; a changed
		// ApprovalPolicy, those whose change waits for approval.
		Watches(&v1alpha1.Approval{}, handler.EnqueueRequestsFromMapFunc(wake.NamedByApproval)).
		Watches(&v1alpha1.ApprovalPolicy{}, handler.EnqueueRequestsFromMapFunc(wake.AwaitingApproval(r.Client))).
		Named("extensioninstallation").
		// Reconciles mostly wait: on API servers, and on hook Jobs awaited
		// inside them. Many workers keep one slow cluster or hook from
		// holding up every other installation.
		WithOptions(controller.Options{MaxConcurrentReconciles: r.workers()})
	if r.ClusterEvents != nil {
		b = b.WatchesRawSource(source.Channel(r.ClusterEvents, &handler.EnqueueRequestForObject{}))
	}
	c, err := r.watchHooks(b).Build(r)
	if err != nil {
		return err
	}
	r.Hooks.WakeThrough(c)
	return nil
}

// DefaultWorkers is how many installations reconcile at once when
// Reconciler.Workers is zero. A reconcile spends most of its time waiting
// for API servers (and hook Jobs), so this is well above the core count.
const DefaultWorkers = 32

func (r *Reconciler) workers() int {
	if r.Workers > 0 {
		return r.Workers
	}
	return DefaultWorkers
}
