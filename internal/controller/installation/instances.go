package installation

import (
	"context"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/resolve"
)

// Instances: an installation whose content is namespaced only runs a
// version of its extension apart from the other installations of it when
// it cannot share theirs; one whose content has a cluster-scoped object
// shares the extension's version with them (see the resolve package). The
// resolver decides from status.content, which checkScope records from
// what was rendered, before anything is applied.

// checkScope records the scope of the rendered content (resolve.Content)
// in status.content and stops an instance whose content turns out to be
// cluster-scoped while others of its extension run another version
// (resolve.RecordScope), before anything is applied.
func (r *Reconciler) checkScope(_ context.Context, s *scope) (ctrl.Result, error) {
	ns := s.targetNamespace()
	var plans []plan.Plan
	if s.artifact.run != nil {
		plans = s.artifact.run.plans
	}
	refs, rendered := resolve.Content(s.artifact.release, plans, s.inst.Status.Inventory, ns, func(objs []*unstructured.Unstructured) []v1alpha1.ObjectReference {
		return s.target.Applier().Refs(objs, ns)
	})
	if rendered {
		s.block = resolve.RecordScope(s.inst, s.choice, refs, s.cluster.Installations, s.cluster.Resolution)
	}
	return ctrl.Result{}, nil
}
