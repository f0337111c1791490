package installation

import (
	"context"
	"fmt"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/readiness"
	"github.com/annex-platform/annex/internal/resolve"
)

// Instances: an installation whose content is namespaced only runs a
// version of its extension apart from the other installations of it when
// it cannot share theirs; one whose content has a cluster-scoped object
// shares the extension's version with them (see the resolve package). The
// resolver decides from status.content, which checkScope records from
// what was rendered, before anything is applied.

// checkScope records the scope of the rendered content (resolve.Content)
// in status.content: its first cluster-scoped object, or none. An instance whose content is
// namespaced only says so in its Resolved condition. When this
// installation was resolved as an instance (a version of its own) but its
// content turns out to be cluster-scoped while another installation of
// the extension on the cluster runs, or is resolved to, another version,
// it stops before anything is applied: a terminal block whose message
// names the object. The next resolve reads status.content and shares the
// version (the Resolved condition set here makes the installation wait on
// the others, so that reconcile comes at once).
func (r *Reconciler) checkScope(_ context.Context, s *scope) (ctrl.Result, error) {
	ns := s.targetNamespace()
	var plans []plan.Plan
	if s.artifact.run != nil {
		plans = s.artifact.run.plans
	}
	refs, rendered := resolve.Content(s.artifact.release, plans, s.inst.Status.Inventory, ns, func(objs []*unstructured.Unstructured) []v1alpha1.ObjectReference {
		return s.target.Applier().Refs(objs, ns)
	})
	if !rendered {
		return ctrl.Result{}, nil
	}
	first := resolve.FirstClusterScoped(refs)
	s.inst.Status.Content = &v1alpha1.ContentScope{
		Version: s.choice.Version.Version, ObservedGeneration: s.inst.Generation, ClusterScoped: first,
	}
	if s.choice.Instance == "" {
		return ctrl.Result{}, nil
	}
	if first == nil {
		if c := meta.FindStatusCondition(s.inst.Status.Conditions, v1alpha1.ConditionResolved); c != nil && c.Status == metav1.ConditionTrue {
			readiness.Set(s.inst, v1alpha1.ConditionResolved, metav1.ConditionTrue, c.Reason, c.Message+fmt.Sprintf(
				"; a version of its own, apart from the other installations of %s: its content is namespaced only", s.inst.Spec.Extension))
		}
		return ctrl.Result{}, nil
	}
	msg := resolve.ScopeConflict(s.inst, s.choice.Version.Version, s.cluster.Installations, s.cluster.Resolution)
	if msg == "" {
		return ctrl.Result{}, nil
	}
	s.block = terminal(v1alpha1.ReasonNoMatchingVersion, msg)
	readiness.Set(s.inst, v1alpha1.ConditionResolved, metav1.ConditionFalse, s.block.Reason, s.block.Message)
	return ctrl.Result{}, nil
}
