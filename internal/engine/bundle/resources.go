package bundle

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// StepResources is the last step of the install plan: the custom
// resources of spec.resources, applied once the operator's Deployments
// are Available.
const StepResources = "resources"

// Resource is one custom resource the installation asks for
// (spec.resources[i]).
type Resource struct {
	Object *unstructured.Unstructured
	// ReadyCondition is the condition type that says it is ready; empty
	// for kstatus rules.
	ReadyCondition string
}

// resources checks o.Resources against the bundle and returns them as
// they are applied, or an *UnsupportedError naming spec.resources[i]:
//
//   - each is of an API the bundle's CRDs define and serve (kind and
//     group match a CRD, its version is served): spec.resources creates
//     what this operator manages, not arbitrary objects;
//   - a namespaced one without a namespace goes into the install
//     namespace; its namespace must be one the operator watches (a
//     resource nobody watches never becomes ready); a cluster-scoped one
//     must not name a namespace;
//   - no two are the same object;
//   - each is annotated annex.dev/await-status, and ReadyCondition
//     becomes annex.dev/ready-condition, which the applier's health
//     reads: a resource is not ready before its operator reported on it.
//
// The objects are copies; o.Resources is not changed.
func (c *converter) resources() ([]*unstructured.Unstructured, error) {
	refuse := func(i int, field, format string, args ...any) error {
		return &UnsupportedError{CSV: c.b.CSV.Metadata.Name, Field: fmt.Sprintf("spec.resources[%d].%s", i, field), Message: fmt.Sprintf(format, args...)}
	}
	defined := c.definedAPIs()
	seen := map[string]int{}
	var out []*unstructured.Unstructured
	for i, r := range c.o.Resources {
		obj := r.Object.DeepCopy()
		gvk := obj.GroupVersionKind()
		api, ok := defined[gvk.GroupKind()]
		if !ok {
			return nil, refuse(i, "object.kind", "%s (%s) is not an API this operator's bundle defines; it defines %s",
				gvk.Kind, gvk.GroupVersion(), describeAPIs(defined))
		}
		if !slices.Contains(api.versions, gvk.Version) {
			return nil, refuse(i, "object.apiVersion", "%s is not a served version of %s; use one of %s",
				gvk.GroupVersion(), api.crd, strings.Join(api.versions, ", "))
		}
		if errs := validation.IsDNS1123Subdomain(obj.GetName()); len(errs) > 0 {
			return nil, refuse(i, "object.metadata.name", "%q is not a valid object name (%s)", obj.GetName(), strings.Join(errs, "; "))
		}
		switch {
		case !api.namespaced && obj.GetNamespace() != "":
			return nil, refuse(i, "object.metadata.namespace", "%s is cluster-scoped; remove the namespace %q", gvk.Kind, obj.GetNamespace())
		case api.namespaced && obj.GetNamespace() == "":
			obj.SetNamespace(c.o.InstallNamespace)
		}
		if ns := obj.GetNamespace(); ns != "" && !c.watches(ns) {
			return nil, refuse(i, "object.metadata.namespace", "%s is not watched by the operator (spec.watchNamespaces: [%s]), so the resource would never become ready; put it in a watched namespace or watch %s too",
				ns, strings.Join(c.targets, ", "), ns)
		}
		key := gvk.GroupKind().String() + "/" + obj.GetNamespace() + "/" + obj.GetName()
		if j, dup := seen[key]; dup {
			return nil, refuse(i, "object", "%s %s is spec.resources[%d] already; keep one", gvk.Kind, objectName(obj), j)
		}
		seen[key] = i
		annotations := obj.GetAnnotations()
		if annotations == nil {
			annotations = map[string]string{}
		}
		annotations[v1alpha1.AnnotationAwaitStatus] = "true"
		if r.ReadyCondition != "" {
			annotations[v1alpha1.AnnotationReadyCondition] = r.ReadyCondition
		}
		obj.SetAnnotations(annotations)
		out = append(out, obj)
	}
	return out, nil
}

// definedAPI is what a CRD of the bundle defines.
type definedAPI struct {
	crd        string
	kind       string
	namespaced bool
	versions   []string // served
}

func (c *converter) definedAPIs() map[schema.GroupKind]definedAPI {
	apis := map[schema.GroupKind]definedAPI{}
	for _, crd := range c.b.CRDs {
		group, _, _ := unstructured.NestedString(crd.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(crd.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(crd.Object, "spec", "scope")
		api := definedAPI{crd: crd.GetName(), kind: kind, namespaced: scope != "Cluster"}
		versions, _, _ := unstructured.NestedSlice(crd.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			if served, _ := m["served"].(bool); served && name != "" {
				api.versions = append(api.versions, name)
			}
		}
		apis[schema.GroupKind{Group: group, Kind: kind}] = api
	}
	return apis
}

// watches reports whether the operator watches namespace ns.
func (c *converter) watches(ns string) bool {
	return c.allNamespaces() || slices.Contains(c.targets, ns)
}

func describeAPIs(apis map[schema.GroupKind]definedAPI) string {
	if len(apis) == 0 {
		return "none"
	}
	var out []string
	for gk, api := range apis {
		out = append(out, fmt.Sprintf("%s (%s/%s)", gk.Kind, gk.Group, strings.Join(api.versions, ",")))
	}
	slices.Sort(out)
	return strings.Join(out, ", ")
}

func objectName(obj *unstructured.Unstructured) string {
	if obj.GetNamespace() == "" {
		return obj.GetName()
	}
	return obj.GetNamespace() + "/" + obj.GetName()
}
