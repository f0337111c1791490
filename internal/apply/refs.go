package apply

import (
	"slices"

	"k8s.io/apimachinery/pkg/api/meta"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Refs returns the inventory entries that Apply would record for set,
// writing nothing, so that a caller can record its intent before applying.
// Helm hooks are not inventory and are left out.
// The scope of a kind comes from the cluster, or for a kind whose CRD is in
// set from that CRD's spec.scope; a kind known to neither is taken as
// namespaced (Apply would refuse it anyway).
func (a *Applier) Refs(set Set, defaultNamespace string) []v1alpha1.ObjectReference {
	all := regularObjects(slices.Concat(set.CRDs, set.Objects))
	scopes := crdScopes(all)
	refs := make([]v1alpha1.ObjectReference, 0, len(all))
	for _, o := range all {
		gvk := o.GroupVersionKind()
		namespaced := true
		if mapping, err := a.Mapper.RESTMapping(gvk.GroupKind(), gvk.Version); err == nil {
			namespaced = mapping.Scope.Name() == meta.RESTScopeNameNamespace
		} else if scope, ok := scopes[gvk.GroupKind()]; ok {
			namespaced = scope != "Cluster"
		}
		ref := refOf(o)
		switch {
		case !namespaced:
			ref.Namespace = ""
		case ref.Namespace == "":
			ref.Namespace = defaultNamespace
		}
		refs = append(refs, ref)
	}
	slices.SortFunc(refs, compareRefs)
	return refs
}

// crdScopes maps each kind a CRD in objs defines to its spec.scope.
func crdScopes(objs []*unstructured.Unstructured) map[schema.GroupKind]string {
	scopes := map[schema.GroupKind]string{}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != crdGroupKind {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		scopes[schema.GroupKind{Group: group, Kind: kind}] = scope
	}
	return scopes
}
