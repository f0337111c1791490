package wake

import (
	"context"

	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/handler"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The gates' wake-ups: an installation whose change waits on an approval
// or on hooks is woken by what may release it.

// NamedByApproval maps an Approval to the installation it names.
func NamedByApproval(_ context.Context, o client.Object) []reconcile.Request {
	a := o.(*v1alpha1.Approval)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.Installation}}}
}

// AwaitingApproval maps a changed ApprovalPolicy to the installations
// whose change an approval policy holds (AwaitsApproval): a policy that
// no longer requires approval releases them at once. A new or stricter
// policy holds any change from its next reconcile on.
func AwaitingApproval(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list); err != nil {
			return nil
		}
		return Requests(list.Items, AwaitsApproval)
	}
}

// AwaitsApproval reports whether inst's pending change was judged by the
// approval gate.
func AwaitsApproval(inst *v1alpha1.ExtensionInstallation) bool {
	return inst.Status.Change != nil && inst.Status.Change.Approval != nil
}

// WaitingOnHooks maps a changed Hook (deleted, its kind now served) to
// the installations whose pending change waits for, or was refused by,
// hooks (AwaitsHooks).
func WaitingOnHooks(c client.Reader) handler.MapFunc {
	return func(ctx context.Context, _ client.Object) []reconcile.Request {
		var list v1alpha1.ExtensionInstallationList
		if err := c.List(ctx, &list, client.UnsafeDisableDeepCopy); err != nil {
			return nil
		}
		return Requests(list.Items, AwaitsHooks)
	}
}

// AwaitsHooks reports whether inst's pending change waits for, or was
// refused by, hooks.
func AwaitsHooks(inst *v1alpha1.ExtensionInstallation) bool {
	c := inst.Status.Change
	return c != nil && c.Hooks != nil && c.Hooks.State != v1alpha1.HookSucceeded
}
