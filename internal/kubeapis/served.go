package kubeapis

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

// Whether a cluster serves the kinds of a release is decided in two pure
// halves around the one question only the cluster can answer: ToAsk lists
// the group/version/kinds to ask it about, the caller asks (discovery),
// and Unserved judges the release's objects by the Answers.

// Answer is what a cluster's discovery says of one group/version/kind.
type Answer struct {
	// Served is true when the cluster serves the kind in that version.
	Served bool
	// Versions are the versions of the kind's group it serves the kind in
	// ("v1"), sorted; none when it serves the kind in no version.
	Versions []string
	// Namespaced is the kind's scope in the versions it is served in.
	Namespaced bool
}

// UnservedObject is an object of a release whose kind the cluster does
// not serve in the object's apiVersion, so that applying it must fail.
type UnservedObject struct {
	Kind string
	// Namespace is where the object goes ("" when cluster-scoped, or when
	// the kind's scope is unknown and the object names none).
	Namespace, Name string
	// APIVersion is the object's apiVersion.
	APIVersion string
	// Served are the apiVersions the cluster (or, for a kind of a CRD of
	// the release, that CRD) serves the kind in instead ("policy/v1"),
	// sorted; none when it serves the kind in none.
	Served []string
	// Removal is the Kubernetes release that stopped serving APIVersion
	// for Kind and what to use instead, when Removals knows it.
	Removal *Removal
}

// String says what is wrong with the object and what to use instead, in
// the same words for the same object and answers.
func (u UnservedObject) String() string {
	obj := u.Kind + " " + u.Name
	if u.Namespace != "" {
		obj = u.Kind + " " + u.Namespace + "/" + u.Name
	}
	msg := fmt.Sprintf("%s: apiVersion %s is not served", obj, u.APIVersion)
	switch {
	case len(u.Served) > 0:
		msg += fmt.Sprintf(" (the cluster serves %s in %s)", u.Kind, strings.Join(u.Served, ", "))
	case u.Removal == nil:
		gv, _ := schema.ParseGroupVersion(u.APIVersion)
		msg += fmt.Sprintf(" (the cluster serves no kind %q in group %q: the extension or CRD that provides it must be installed first)", u.Kind, gv.Group)
	}
	if r := u.Removal; r != nil {
		msg += fmt.Sprintf("; Kubernetes %s removed %s %s: use %s", r.RemovedIn, u.APIVersion, u.Kind, r.Use)
	}
	return msg
}

// crdGroupKind is the kind of a CustomResourceDefinition.
var crdGroupKind = schema.GroupKind{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition"}

// ToAsk returns the distinct group/version/kinds of objs a cluster must
// be asked about, in the order they first appear: all but the kinds a CRD
// among objs defines, which the release serves itself once that CRD is
// applied.
func ToAsk(objs []*unstructured.Unstructured) []schema.GroupVersionKind {
	defined := definedKinds(objs)
	var out []schema.GroupVersionKind
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		if _, ok := defined[gvk.GroupKind()]; ok || slices.Contains(out, gvk) {
			continue
		}
		out = append(out, gvk)
	}
	return out
}

// Unserved returns the objects of objs that cannot be applied because
// their kind is not served in their apiVersion, in the order of objs: for
// a kind a CRD among objs defines, by that CRD's served versions; for any
// other, by answers, which must hold an Answer for every group/version/kind
// ToAsk(objs) lists (one missing counts as not served). A namespaced
// object without a namespace is placed in defaultNamespace.
func Unserved(objs []*unstructured.Unstructured, answers map[schema.GroupVersionKind]Answer, defaultNamespace string) []UnservedObject {
	defined := definedKinds(objs)
	var out []UnservedObject
	for _, o := range objs {
		gvk := o.GroupVersionKind()
		a, ok := defined[gvk.GroupKind()]
		if ok {
			a.Served = slices.Contains(a.Versions, gvk.Version)
		} else {
			a = answers[gvk]
		}
		if a.Served {
			continue
		}
		u := UnservedObject{Kind: gvk.Kind, Namespace: o.GetNamespace(), Name: o.GetName(), APIVersion: o.GetAPIVersion(),
			Removal: Find(gvk.Group, gvk.Version, gvk.Kind)}
		if u.Namespace == "" && a.Namespaced {
			u.Namespace = defaultNamespace
		}
		for _, v := range a.Versions {
			u.Served = append(u.Served, schema.GroupVersion{Group: gvk.Group, Version: v}.String())
		}
		out = append(out, u)
	}
	return out
}

// Check asks serves about every group/version/kind of objs a cluster
// must be asked about (ToAsk), each once, and returns what of objs it
// cannot take (Unserved). An error is serves', for the first kind it
// could not answer.
func Check(objs []*unstructured.Unstructured, defaultNamespace string, serves func(schema.GroupVersionKind) (Answer, error)) ([]UnservedObject, error) {
	answers := map[schema.GroupVersionKind]Answer{}
	for _, gvk := range ToAsk(objs) {
		a, err := serves(gvk)
		if err != nil {
			return nil, err
		}
		answers[gvk] = a
	}
	return Unserved(objs, answers, defaultNamespace), nil
}

// definedKinds returns the kinds the CRDs among objs define, each with
// the versions its CRD serves and its scope. A CRD of the removed
// apiextensions.k8s.io/v1beta1 form may name its one version in
// spec.version.
func definedKinds(objs []*unstructured.Unstructured) map[schema.GroupKind]Answer {
	kinds := map[schema.GroupKind]Answer{}
	for _, o := range objs {
		if o.GroupVersionKind().GroupKind() != crdGroupKind {
			continue
		}
		group, _, _ := unstructured.NestedString(o.Object, "spec", "group")
		kind, _, _ := unstructured.NestedString(o.Object, "spec", "names", "kind")
		scope, _, _ := unstructured.NestedString(o.Object, "spec", "scope")
		if kind == "" {
			continue
		}
		a := Answer{Namespaced: scope != "Cluster"}
		versions, _, _ := unstructured.NestedSlice(o.Object, "spec", "versions")
		for _, v := range versions {
			m, _ := v.(map[string]any)
			name, _ := m["name"].(string)
			if served, _ := m["served"].(bool); served && name != "" {
				a.Versions = append(a.Versions, name)
			}
		}
		if v, _, _ := unstructured.NestedString(o.Object, "spec", "version"); v != "" && len(versions) == 0 {
			a.Versions = append(a.Versions, v)
		}
		slices.Sort(a.Versions)
		kinds[schema.GroupKind{Group: group, Kind: kind}] = a
	}
	return kinds
}

// maxUnservedNamed bounds how many unserved objects a message names.
const maxUnservedNamed = 5

// UnservedMessage says which objects of version of extension the
// cluster (named so in the message, with its Kubernetes version when
// known) cannot take, and what to do, in the same words for the same
// change; unserved is not empty.
func UnservedMessage(extension, version, cluster, kubeVersion string, unserved []UnservedObject) string {
	parts := make([]string, 0, min(len(unserved), maxUnservedNamed+1))
	for i, u := range unserved {
		if i == maxUnservedNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(unserved)-maxUnservedNamed))
			break
		}
		parts = append(parts, u.String())
	}
	if kubeVersion != "" {
		cluster += " (Kubernetes " + kubeVersion + ")"
	}
	return fmt.Sprintf("%s %s cannot be applied: %s does not serve the kind of %d of its objects, so nothing was applied: %s. "+
		"Choose a version made for this cluster with spec.version, or values that do not render these objects",
		extension, version, cluster, len(unserved), strings.Join(parts, "; "))
}
