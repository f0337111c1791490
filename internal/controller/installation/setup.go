package installation

import (
	"context"
	"errors"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
	"github.com/annex-platform/annex/internal/shard"
	"github.com/annex-platform/annex/internal/valuesfrom"
)

// indexExtension indexes installations by spec.extension so that a change
// of an Extension wakes exactly the installations of it.
const indexExtension = "spec.extension"

// indexValuesSource indexes installations by what their valuesFrom read:
// "Secret/<namespace>/<name>", "ConfigMap/<namespace>/<name>", and
// "Namespace/<name>" for another namespace whose grant decides, so that a
// change wakes exactly the installations that use it.
const indexValuesSource = "annex.dev/values-source"

func valuesSources(o client.Object) []string {
	return valuesfrom.Sources(o.(*v1alpha1.ExtensionInstallation))
}

// usersOf maps a Secret, ConfigMap or Namespace to the installations whose
// values come from it.
func (r *Reconciler) usersOf(kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		key := kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if kind == "Namespace" {
			key = kind + "/" + o.GetName()
		}
		var list v1alpha1.ExtensionInstallationList
		if err := r.Client.List(ctx, &list, client.MatchingFields{indexValuesSource: key}); err != nil {
			return nil
		}
		return requests(list.Items, func(*v1alpha1.ExtensionInstallation) bool { return true })
	}
}

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
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ExtensionInstallation{}, indexExtension,
		func(o client.Object) []string { return []string{o.(*v1alpha1.ExtensionInstallation).Spec.Extension} }); err != nil {
		return err
	}
	if err := mgr.GetFieldIndexer().IndexField(context.Background(), &v1alpha1.ExtensionInstallation{}, indexValuesSource, valuesSources); err != nil {
		return err
	}
	index, err := newInstallationIndex(context.Background(), mgr)
	if err != nil {
		return err
	}
	r.index = index
	r.share = shard.NewShare(r.workers())
	b := ctrl.NewControllerManagedBy(mgr).
		For(&v1alpha1.ExtensionInstallation{}, builder.WithPredicates(r.ofShard(), predicate.Or(
			predicate.GenerationChangedPredicate{}, annotationsChanged(), deletionPredicate(), startedWaitingOnOthers()))).
		// A shard that starts serving a cluster (it claimed it, or took it
		// over), or a cluster reachable again, reconciles every
		// installation on it.
		Watches(&v1alpha1.ManagedCluster{}, handler.EnqueueRequestsFromMapFunc(r.installationsOnCluster),
			builder.WithPredicates(predicate.Or[client.Object](servingChanged(), becameReachable()))).
		Watches(&v1alpha1.Extension{}, handler.EnqueueRequestsFromMapFunc(r.installationsOfExtension)).
		Watches(&v1alpha1.ExtensionInstallation{}, handler.EnqueueRequestsFromMapFunc(r.unsettledOnSameCluster),
			builder.WithPredicates(clusterRelevantChange())).
		// A changed values source re-renders its users within seconds;
		// metadata is enough to know that it changed.
		Watches(&corev1.Secret{}, handler.EnqueueRequestsFromMapFunc(r.usersOf("Secret")), builder.OnlyMetadata).
		Watches(&corev1.ConfigMap{}, handler.EnqueueRequestsFromMapFunc(r.usersOf("ConfigMap")), builder.OnlyMetadata).
		Watches(&corev1.Namespace{}, handler.EnqueueRequestsFromMapFunc(r.usersOf("Namespace")), builder.OnlyMetadata).
		// An Approval wakes the installation it names at once; a changed
		// ApprovalPolicy, those whose change waits for approval.
		Watches(&v1alpha1.Approval{}, handler.EnqueueRequestsFromMapFunc(approvalsWake)).
		Watches(&v1alpha1.ApprovalPolicy{}, handler.EnqueueRequestsFromMapFunc(r.awaitingApproval)).
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

// ofShard passes the events of installations whose cluster this
// manager's shard owns or serves (Fence.Owns); Reconcile checks again,
// for the cache may lag behind a handover.
func (r *Reconciler) ofShard() predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return r.Fence == nil || r.Fence.Owns(context.Background(), o.(*v1alpha1.ExtensionInstallation).Spec.Cluster)
	})
}

// servingChanged passes the update of a ManagedCluster that changes the
// shard serving it (status.shard).
func servingChanged() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.(*v1alpha1.ManagedCluster).Status.Shard != e.ObjectNew.(*v1alpha1.ManagedCluster).Status.Shard
		},
	}
}

// installationsOnCluster maps a ManagedCluster to the installations on it.
func (r *Reconciler) installationsOnCluster(_ context.Context, o client.Object) []reconcile.Request {
	on, err := r.index.on(o.GetName())
	if err != nil {
		return nil
	}
	out := make([]reconcile.Request, 0, len(on))
	for _, i := range on {
		out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: i.Namespace, Name: i.Name}})
	}
	return out
}

// installationsOfExtension maps a changed Extension to the installations
// of it and of every package that extends it: a new base version within
// an extends range reaches the extensions built on it.
func (r *Reconciler) installationsOfExtension(ctx context.Context, o client.Object) []reconcile.Request {
	names := []string{o.GetName()}
	var exts v1alpha1.ExtensionList
	if err := r.Client.List(ctx, &exts, client.UnsafeDisableDeepCopy); err == nil {
		for _, ext := range exts.Items {
			if extendsBase(ext, o.GetName()) {
				names = append(names, ext.Name)
			}
		}
	}
	var out []reconcile.Request
	for _, name := range names {
		var list v1alpha1.ExtensionInstallationList
		if err := r.Client.List(ctx, &list, client.MatchingFields{indexExtension: name}); err != nil {
			return nil
		}
		out = append(out, requests(list.Items, func(*v1alpha1.ExtensionInstallation) bool { return true })...)
	}
	return out
}

// extendsBase reports whether a version of ext extends the package base.
func extendsBase(ext v1alpha1.Extension, base string) bool {
	for _, v := range ext.Spec.Versions {
		if v.Extends != nil && v.Extends.Name == base {
			return true
		}
	}
	return false
}

// unsettledOnSameCluster wakes the installations on the changed one's
// cluster whose outcome may depend on it (see waitsOnOthers). Installations
// merely in progress are not woken: their own reconcile is under way, and
// waking them would run it again for nothing.
func (r *Reconciler) unsettledOnSameCluster(_ context.Context, o client.Object) []reconcile.Request {
	changed := o.(*v1alpha1.ExtensionInstallation)
	waiting, err := r.index.waitingOn(changed.Spec.Cluster)
	if err != nil {
		return nil
	}
	var out []reconcile.Request
	for _, i := range waiting {
		if i.Namespace != changed.Namespace || i.Name != changed.Name {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: i.Namespace, Name: i.Name}})
		}
	}
	return out
}

// waitsOnOthers reports whether inst's progress may change when another
// installation on its cluster changes: it is being deleted (held while
// others need it), was added for dependencies (released when none does),
// its resolution failed (the others' ranges take part), or it is not Ready
// because it waits for a dependency or conflicts with another
// installation over an object.
func waitsOnOthers(inst *v1alpha1.ExtensionInstallation) bool {
	if !inst.DeletionTimestamp.IsZero() || inst.Labels[v1alpha1.LabelAddedFor] != "" {
		return true
	}
	if c := findCondition(inst, v1alpha1.ConditionResolved); c != nil && c.Status == metav1.ConditionFalse {
		return true
	}
	c := findCondition(inst, v1alpha1.ConditionReady)
	return c != nil && c.Status != metav1.ConditionTrue &&
		(c.Reason == v1alpha1.ReasonDependencyNotReady || c.Reason == v1alpha1.ReasonOwnershipConflict)
}

// startedWaitingOnOthers passes the status update with which an
// installation starts waiting on others. The reconcile that wrote it may
// have read the others before a change that would have released it, and
// that change's wake-up may have come before the installation looked
// unsettled: one more reconcile, now with a cache at least as new as its
// own status, closes the gap.
func startedWaitingOnOthers() predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !waitsOnOthers(e.ObjectOld.(*v1alpha1.ExtensionInstallation)) && waitsOnOthers(e.ObjectNew.(*v1alpha1.ExtensionInstallation))
		},
	}
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
// installed version, Ready condition or content scope (which decides
// whether it shares its extension's version).
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
				!equality.Semantic.DeepEqual(o.Status.Content, n.Status.Content) ||
				!equality.Semantic.DeepEqual(findCondition(o, v1alpha1.ConditionReady), findCondition(n, v1alpha1.ConditionReady))
		},
	}
}

// profileBookkeeping are the annotations a profile writes on its
// installations for its rollout's own records (when a revision reached
// the installation, and the revision before it); they mean nothing to
// the installation, so writing them does not reconcile it.
var profileBookkeeping = []string{v1alpha1.AnnotationProfileRevisionAt, v1alpha1.AnnotationProfilePreviousRevision,
	v1alpha1.AnnotationProfileMove}

// annotationsChanged passes an update that changes the annotations other
// than profileBookkeeping (a reconcile request, an approval, a pause):
// a profile that takes an installation over from another writes its
// bookkeeping, and an installation whose spec it leaves alone must not be
// reconciled for that.
func annotationsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equalBesides(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations(), profileBookkeeping)
		},
	}
}

// equalBesides reports whether a and b hold the same entries once the
// keys in ignore are left out.
func equalBesides(a, b map[string]string, ignore []string) bool {
	count := func(m map[string]string) int {
		n := len(m)
		for _, k := range ignore {
			if _, ok := m[k]; ok {
				n--
			}
		}
		return n
	}
	if count(a) != count(b) {
		return false
	}
	for k, v := range a {
		if slices.Contains(ignore, k) {
			continue
		}
		if w, ok := b[k]; !ok || w != v {
			return false
		}
	}
	return true
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

// becameReachable passes a ManagedCluster whose condition Reachable turned
// True: its installations (installationsOnCluster) are retried at once
// instead of at the end of their backoff.
func becameReachable() predicate.Funcs {
	reachable := func(o any) bool {
		mc, ok := o.(*v1alpha1.ManagedCluster)
		return ok && meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReachable)
	}
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !reachable(e.ObjectOld) && reachable(e.ObjectNew)
		},
	}
}
