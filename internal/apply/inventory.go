package apply

import (
	"cmp"
	"slices"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// phase is a step of an apply. Objects of one phase are applied before
// any object of a later phase, and deleted after them.
type phase int

const (
	// phaseCRDs installs CustomResourceDefinitions, so that their kinds
	// exist for everything after them.
	phaseCRDs phase = iota
	// phaseNamespaces creates the namespaces the other objects live in.
	phaseNamespaces
	// phaseRBAC grants the identities and permissions workloads run with.
	phaseRBAC
	// phaseObjects is everything else: workloads, config, services.
	phaseObjects
	// phaseCustomResources holds objects of kinds defined by a CRD of the
	// same set; they come last so that an operator applied in phaseObjects
	// is there to act on them (and, on delete, to clean them up first).
	phaseCustomResources
	// phaseWebhooks holds admission webhook configurations and
	// APIServices: applied after the workloads that serve them, deleted
	// first, so that a webhook or an aggregated API whose server is gone
	// never blocks the cluster's requests or discovery.
	phaseWebhooks
)

// crdGroupKinds is the set of kinds that CRDs of one set define.
type crdGroupKinds map[schema.GroupKind]bool

var (
	crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}
	namespaceGK  = schema.GroupKind{Kind: "Namespace"}
	rbacKinds    = map[schema.GroupKind]bool{
		{Kind: "ServiceAccount"}:                                         true,
		{Group: "rbac.authorization.k8s.io", Kind: "Role"}:               true,
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRole"}:        true,
		{Group: "rbac.authorization.k8s.io", Kind: "RoleBinding"}:        true,
		{Group: "rbac.authorization.k8s.io", Kind: "ClusterRoleBinding"}: true,
	}
)

// phaseOf returns the phase an object of kind gk is applied in; crdsInSet
// holds the kinds defined by the CRDs applied in the same call.
func phaseOf(gk schema.GroupKind, crdsInSet crdGroupKinds) phase {
	switch {
	case gk == crdGroupKind:
		return phaseCRDs
	case gk == namespaceGK:
		return phaseNamespaces
	case rbacKinds[gk]:
		return phaseRBAC
	case crdsInSet[gk]:
		return phaseCustomResources
	case webhookKinds[gk]:
		return phaseWebhooks
	default:
		return phaseObjects
	}
}

// definedKinds returns the kinds defined by the CRDs among objs.
func definedKinds(objs []*unstructured.Unstructured) crdGroupKinds {
	kinds := crdGroupKinds{}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != crdGroupKind {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		if kind != "" {
			kinds[schema.GroupKind{Group: group, Kind: kind}] = true
		}
	}
	return kinds
}

// refOf names an object for the inventory.
func refOf(o *unstructured.Unstructured) v1alpha1.ObjectReference {
	gvk := o.GroupVersionKind()
	return v1alpha1.ObjectReference{
		Group:     gvk.Group,
		Version:   gvk.Version,
		Kind:      gvk.Kind,
		Namespace: o.GetNamespace(),
		Name:      o.GetName(),
	}
}

// withResourceVersions returns refs with the resourceVersion of each
// object as live holds it (nil: none), for the inventory (see doomed).
func withResourceVersions(refs []v1alpha1.ObjectReference, live []*unstructured.Unstructured) []v1alpha1.ObjectReference {
	out := slices.Clone(refs)
	for i, obj := range live {
		if obj != nil {
			out[i].ResourceVersion = obj.GetResourceVersion()
		}
	}
	return out
}

func gvkOf(ref v1alpha1.ObjectReference) schema.GroupVersionKind {
	return schema.GroupVersionKind{Group: ref.Group, Version: ref.Version, Kind: ref.Kind}
}

// objKey identifies an object regardless of the API version it was
// written with: the same Deployment read as apps/v1 or apps/v1beta2 is one
// object.
type objKey struct {
	Group, Kind, Namespace, Name string
}

func keyOf(ref v1alpha1.ObjectReference) objKey {
	return objKey{Group: ref.Group, Kind: ref.Kind, Namespace: ref.Namespace, Name: ref.Name}
}

// compareRefs orders references by group, kind, namespace and name, then
// version, so that equal sets always list in the same order.
func compareRefs(a, b v1alpha1.ObjectReference) int {
	return cmp.Or(
		cmp.Compare(a.Group, b.Group),
		cmp.Compare(a.Kind, b.Kind),
		cmp.Compare(a.Namespace, b.Namespace),
		cmp.Compare(a.Name, b.Name),
		cmp.Compare(a.Version, b.Version),
	)
}

// phasedRef is an inventory entry with the phase it belongs to and, after
// an apply, the object's live state.
type phasedRef struct {
	ref     v1alpha1.ObjectReference
	phase   phase
	live    *unstructured.Unstructured
	adopted *v1alpha1.AdoptedObject // left unwritten for its adoption (Result.Adopted)
}

// sortInventory orders entries by phase, then by compareRefs, and returns
// the references and the live states in that order.
func sortInventory(entries []phasedRef) ([]v1alpha1.ObjectReference, []*unstructured.Unstructured) {
	slices.SortFunc(entries, func(a, b phasedRef) int {
		return cmp.Or(cmp.Compare(a.phase, b.phase), compareRefs(a.ref, b.ref))
	})
	refs := make([]v1alpha1.ObjectReference, len(entries))
	live := make([]*unstructured.Unstructured, len(entries))
	for i, e := range entries {
		refs[i], live[i] = e.ref, e.live
	}
	return refs, live
}

// removed returns the references of old whose objects are not in current,
// in the order of old. A change of API version alone is not a removal.
func removed(old, current []v1alpha1.ObjectReference) []v1alpha1.ObjectReference {
	keep := make(map[objKey]bool, len(current))
	for _, r := range current {
		keep[keyOf(r)] = true
	}
	var out []v1alpha1.ObjectReference
	for _, r := range old {
		if !keep[keyOf(r)] {
			out = append(out, r)
		}
	}
	return out
}
