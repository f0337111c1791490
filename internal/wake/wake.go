// Package wake decides which ExtensionInstallations an event concerns:
// the predicates that pass the changes worth a reconcile, the indexes of
// the cache's installations (by extension, by values source, by cluster,
// and by cluster for those waiting on others), and the functions that map
// a changed Extension, ManagedCluster, installation, values source,
// Approval, ApprovalPolicy or Hook to
// the installations to reconcile. It reads the hub only through the cache
// and the client it is given; the installation controller wires it in
// SetupWithManager. Work per event follows what changed: no function here
// lists the fleet.
package wake

import (
	"context"
	"slices"

	"k8s.io/apimachinery/pkg/api/equality"
	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/event"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/predicate"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/valuesfrom"
)

// IndexExtension indexes installations by spec.extension so that a change
// of an Extension wakes exactly the installations of it.
const IndexExtension = "spec.extension"

// IndexValuesSource indexes installations by what their valuesFrom read:
// "Secret/<namespace>/<name>", "ConfigMap/<namespace>/<name>", and
// "Namespace/<name>" for another namespace whose grant decides, so that a
// change wakes exactly the installations that use it.
const IndexValuesSource = "annex.dev/values-source"

// Extension is the IndexExtension of an installation.
func Extension(o client.Object) []string {
	return []string{o.(*v1alpha1.ExtensionInstallation).Spec.Extension}
}

// ValuesSources is the IndexValuesSource of an installation.
func ValuesSources(o client.Object) []string {
	return valuesfrom.Sources(o.(*v1alpha1.ExtensionInstallation))
}

// UsersOf maps a Secret, ConfigMap or Namespace (kind) to the
// installations whose values come from it, read through c's
// IndexValuesSource.
func UsersOf(c client.Reader, kind string) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		key := kind + "/" + o.GetNamespace() + "/" + o.GetName()
		if kind == "Namespace" {
			key = kind + "/" + o.GetName()
		}
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list, client.MatchingFields{IndexValuesSource: key}); err != nil {
			return nil
		}
		return Requests(list.Items, func(*v1alpha1.ExtensionInstallation) bool { return true })
	}
}

// InstallationsOfExtension maps a changed Extension to the installations
// of it and of every package that extends it (read through c's
// IndexExtension): a new base version within an extends range reaches
// the extensions built on it.
func InstallationsOfExtension(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, o client.Object) []reconcile.Request {
		names := []string{o.GetName()}
		var exts v1alpha1.ExtensionList
		if err := c.List(ctx, &exts, client.UnsafeDisableDeepCopy); err == nil {
			for _, ext := range exts.Items {
				if ExtendsBase(ext, o.GetName()) {
					names = append(names, ext.Name)
				}
			}
		}
		var out []reconcile.Request
		for _, name := range names {
			var list v1alpha1.ExtensionInstallationList
			if err := c.List(ctx, &list, client.MatchingFields{IndexExtension: name}); err != nil {
				return nil
			}
			out = append(out, Requests(list.Items, func(*v1alpha1.ExtensionInstallation) bool { return true })...)
		}
		return out
	}
}

// ExtendsBase reports whether a version of ext extends the package base.
func ExtendsBase(ext v1alpha1.Extension, base string) bool {
	for _, v := range ext.Spec.Versions {
		if v.Extends != nil && v.Extends.Name == base {
			return true
		}
	}
	return false
}

// InstallationsOnCluster maps a ManagedCluster to the installations on it.
func InstallationsOnCluster(x *Index) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		on, err := x.On(o.GetName())
		if err != nil {
			return nil
		}
		out := make([]reconcile.Request, 0, len(on))
		for _, i := range on {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: i.Namespace, Name: i.Name}})
		}
		return out
	}
}

// UnsettledOnSameCluster wakes the installations on the changed one's
// cluster whose outcome may depend on it (see WaitsOnOthers).
// Installations merely in progress are not woken: their own reconcile is
// under way, and waking them would run it again for nothing.
func UnsettledOnSameCluster(x *Index) handler.MapFunc {
	return func(_ context.Context, o client.Object) []reconcile.Request {
		changed := o.(*v1alpha1.ExtensionInstallation)
		waiting, err := x.WaitingOn(changed.Spec.Cluster)
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
}

// WaitsOnOthers reports whether inst's progress may change when another
// installation on its cluster changes: it is being deleted (held while
// others need it), was added for dependencies (released when none does),
// its resolution failed (the others' ranges take part), or it is not Ready
// because it waits for a dependency or conflicts with another
// installation over an object.
func WaitsOnOthers(inst *v1alpha1.ExtensionInstallation) bool {
	if !inst.DeletionTimestamp.IsZero() || inst.Labels[v1alpha1.LabelAddedFor] != "" {
		return true
	}
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionResolved); c != nil && c.Status == metav1.ConditionFalse {
		return true
	}
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionReady)
	return c != nil && c.Status != metav1.ConditionTrue &&
		(c.Reason == v1alpha1.ReasonDependencyNotReady || c.Reason == v1alpha1.ReasonOwnershipConflict)
}

// Requests are the reconcile requests of the items keep passes.
func Requests(items []v1alpha1.ExtensionInstallation, keep func(*v1alpha1.ExtensionInstallation) bool) []reconcile.Request {
	var out []reconcile.Request
	for i := range items {
		if keep(&items[i]) {
			out = append(out, reconcile.Request{NamespacedName: types.NamespacedName{Namespace: items[i].Namespace, Name: items[i].Name}})
		}
	}
	return out
}

// onUpdate passes only the updates that pass changed.
func onUpdate(changed func(e event.UpdateEvent) bool) predicate.Funcs {
	return predicate.Funcs{
		CreateFunc:  func(event.CreateEvent) bool { return false },
		DeleteFunc:  func(event.DeleteEvent) bool { return false },
		GenericFunc: func(event.GenericEvent) bool { return false },
		UpdateFunc:  changed,
	}
}

// ServingChanged passes the update of a ManagedCluster that changes the
// shard serving it (status.shard).
func ServingChanged() predicate.Funcs {
	return onUpdate(func(e event.UpdateEvent) bool {
		return e.ObjectOld.(*v1alpha1.ManagedCluster).Status.Shard != e.ObjectNew.(*v1alpha1.ManagedCluster).Status.Shard
	})
}

// BecameReachable passes a ManagedCluster whose condition Reachable turned
// True: its installations (InstallationsOnCluster) are retried at once
// instead of at the end of their backoff.
func BecameReachable() predicate.Funcs {
	reachable := func(o any) bool {
		mc, ok := o.(*v1alpha1.ManagedCluster)
		return ok && meta.IsStatusConditionTrue(mc.Status.Conditions, v1alpha1.ConditionReachable)
	}
	return onUpdate(func(e event.UpdateEvent) bool { return !reachable(e.ObjectOld) && reachable(e.ObjectNew) })
}

// StartedWaitingOnOthers passes the status update with which an
// installation starts waiting on others. The reconcile that wrote it may
// have read the others before a change that would have released it, and
// that change's wake-up may have come before the installation looked
// unsettled: one more reconcile, now with a cache at least as new as its
// own status, closes the gap.
func StartedWaitingOnOthers() predicate.Funcs {
	return onUpdate(func(e event.UpdateEvent) bool {
		return !WaitsOnOthers(e.ObjectOld.(*v1alpha1.ExtensionInstallation)) && WaitsOnOthers(e.ObjectNew.(*v1alpha1.ExtensionInstallation))
	})
}

// ClusterRelevantChange passes what can change another installation's
// resolution or readiness: creation, deletion, a spec change, and a change of
// installed version, Ready condition or content scope (which decides
// whether it shares its extension's version).
func ClusterRelevantChange() predicate.Funcs {
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
				!equality.Semantic.DeepEqual(meta.FindStatusCondition(o.Status.Conditions, v1alpha1.ConditionReady),
					meta.FindStatusCondition(n.Status.Conditions, v1alpha1.ConditionReady))
		},
	}
}

// ProfileBookkeeping are the annotations a profile writes on its
// installations for its rollout's own records (when a revision reached
// the installation, and the revision before it); they mean nothing to
// the installation, so writing them does not reconcile it.
var ProfileBookkeeping = []string{v1alpha1.AnnotationProfileRevisionAt, v1alpha1.AnnotationProfilePreviousRevision,
	v1alpha1.AnnotationProfileMove}

// AnnotationsChanged passes an update that changes the annotations other
// than ProfileBookkeeping (a reconcile request, an approval, a pause):
// a profile that takes an installation over from another writes its
// bookkeeping, and an installation whose spec it leaves alone must not be
// reconciled for that.
func AnnotationsChanged() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return !equalBesides(e.ObjectOld.GetAnnotations(), e.ObjectNew.GetAnnotations(), ProfileBookkeeping)
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

// DeletionStarted passes the update that sets deletionTimestamp (the
// generation does not change for it when finalizers hold the object).
func DeletionStarted() predicate.Funcs {
	return predicate.Funcs{
		UpdateFunc: func(e event.UpdateEvent) bool {
			return e.ObjectOld.GetDeletionTimestamp().IsZero() && !e.ObjectNew.GetDeletionTimestamp().IsZero()
		},
	}
}

// Shard tells whether this manager's shard of managers owns or serves a
// cluster (internal/shard's Fence).
type Shard interface {
	Owns(ctx context.Context, cluster string) bool
}

// OfShard passes the events of installations whose cluster shard owns
// or serves; a nil shard passes all. The reconcile checks again, for the
// cache may lag behind a handover.
func OfShard(shard Shard) predicate.Funcs {
	return predicate.NewPredicateFuncs(func(o client.Object) bool {
		return shard == nil || shard.Owns(context.Background(), o.(*v1alpha1.ExtensionInstallation).Spec.Cluster)
	})
}
