package resolve

import (
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/engine"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/target"
)

// Content returns the refs of the objects whose scope decides
// status.content (FirstClusterScoped) for release rel, or false when
// nothing was rendered to decide from (rel is nil). For a release applied
// in one pass (a chart) it is the rendered set, Helm hooks included (a
// hook may create a CRD as well); for one that runs plans across
// reconciles, PlansContent of the plans this change runs. refs turns
// objects placed in the target namespace ns into the applier's
// references.
func Content(rel *engine.Release, plans []plan.Plan, inventory []v1alpha1.ObjectReference, ns string, refs func([]*unstructured.Unstructured) []v1alpha1.ObjectReference) ([]v1alpha1.ObjectReference, bool) {
	switch {
	case rel.Resumable():
		return PlansContent(plans, inventory, ns, refs), true
	case rel == nil:
		return nil, false
	}
	objects := make([]*unstructured.Unstructured, 0, len(rel.CRDs)+len(rel.Objects))
	for _, o := range slices.Concat(rel.CRDs, rel.Objects) {
		objects = append(objects, target.WithoutHook(o))
	}
	return refs(objects), true
}

// PlansContent returns the refs of the objects whose scope decides
// status.content (FirstClusterScoped) for a package's plans: what they
// apply and write, and the cluster-scoped refs of the installed
// revision's inventory that they do not delete (an update plan need not
// apply the CRDs the deploy plan did). The target namespace ns, which
// Annex creates, is not content. refs turns objects into the applier's
// references.
func PlansContent(plans []plan.Plan, inventory []v1alpha1.ObjectReference, ns string, refs func([]*unstructured.Unstructured) []v1alpha1.ObjectReference) []v1alpha1.ObjectReference {
	out := refs(plan.AllApplied(plans))
	var deletes []*unstructured.Unstructured
	for _, p := range plans {
		deletes = append(deletes, p.Objects(plan.TaskDelete)...)
	}
	deleted := map[v1alpha1.ObjectReference]bool{}
	for _, ref := range refs(deletes) {
		deleted[target.Identity(ref)] = true
	}
	for _, ref := range inventory {
		switch {
		case ref.Namespace != "", deleted[target.Identity(ref)]:
		case ref.Group == "" && ref.Kind == "Namespace" && ref.Name == ns:
		default:
			out = append(out, ref)
		}
	}
	return out
}
