package target

import (
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// hookAnnotation marks a Helm hook, which the applier runs at its phase
// and leaves out of an inventory.
const hookAnnotation = "helm.sh/hook"

// IsHook reports whether o is a Helm hook.
func IsHook(o *unstructured.Unstructured) bool {
	_, hook := o.GetAnnotations()[hookAnnotation]
	return hook
}

// HasHooks reports whether objs hold a Helm hook, which an apply runs and
// awaits.
func HasHooks(objs []*unstructured.Unstructured) bool {
	for _, o := range objs {
		if IsHook(o) {
			return true
		}
	}
	return false
}

// WithoutHook returns o, or for a Helm hook a copy without its hook
// annotation, so that Refs (which leaves hooks out of an inventory) tells
// its scope too.
func WithoutHook(o *unstructured.Unstructured) *unstructured.Unstructured {
	if !IsHook(o) {
		return o
	}
	annotations := o.GetAnnotations()
	c := o.DeepCopy()
	delete(annotations, hookAnnotation)
	c.SetAnnotations(annotations)
	return c
}

// NamespaceIn returns the Namespace name among objs (not a hook), or
// none.
func NamespaceIn(objs []*unstructured.Unstructured, name string) []*unstructured.Unstructured {
	for _, o := range objs {
		if !IsHook(o) && o.GetAPIVersion() == "v1" && o.GetKind() == "Namespace" && o.GetName() == name {
			return []*unstructured.Unstructured{o}
		}
	}
	return nil
}

// NamespaceObject is Namespace name, as an object to apply.
func NamespaceObject(name string) *unstructured.Unstructured {
	u := &unstructured.Unstructured{}
	u.SetAPIVersion("v1")
	u.SetKind("Namespace")
	u.SetName(name)
	return u
}

// CreatesNamespace says whether inst's target namespace ns is one Annex
// creates. recorded: an earlier revision created it (it is in the
// inventory), so that it stays recorded and is removed with the rest.
// candidate: Annex creates it if it does not exist on the target cluster
// (the caller reads that). Neither on the hub when ns is the
// installation's own namespace, which exists; a namespace someone else
// made is theirs.
func CreatesNamespace(inst *v1alpha1.ExtensionInstallation, ns string) (recorded, candidate bool) {
	if ns == inst.Namespace && inst.Spec.Cluster == "" {
		return false, false
	}
	for _, ref := range inst.Status.Inventory {
		if ref.Kind == "Namespace" && ref.Group == "" && ref.Name == ns {
			return true, true
		}
	}
	return false, true
}
