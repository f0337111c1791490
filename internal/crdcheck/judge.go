package crdcheck

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"
)

// What spec.upgrade.crdPolicy makes of a change: which CRDs it brings,
// what Compare finds between each and the CRD installed on the target
// cluster, what the policy decides (Decide), and the words for it. The
// caller reads the installed CRDs and applies the verdict.

// Judgement is what spec.upgrade.crdPolicy makes of the CRDs a change
// would apply (Judge).
type Judgement struct {
	// Policy is the policy judged under.
	Policy Policy
	// Refused are the findings that refuse the change; empty when it
	// goes on.
	Refused []Finding
	// Report are the findings of the CRDs the change applies (Warn,
	// Force) or keeps out (Skip); empty under Strict.
	Report []Finding
	// Keep are the installed CRDs, by name, that the change applies in
	// place of its own (Skip): every proposed CRD that is installed.
	Keep map[string]*unstructured.Unstructured
}

// IsCRD reports whether obj is a CustomResourceDefinition.
func IsCRD(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// In returns the CRDs among objs, each name once (its last), in the
// order of their first appearance.
func In(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	at := map[string]int{}
	for _, o := range objs {
		if !IsCRD(o) {
			continue
		}
		if i, ok := at[o.GetName()]; ok {
			out[i] = o
			continue
		}
		at[o.GetName()] = len(out)
		out = append(out, o)
	}
	return out
}

// Names are the names of crds, in order.
func Names(crds []*unstructured.Unstructured) []string {
	out := make([]string, len(crds))
	for i, c := range crds {
		out[i] = c.GetName()
	}
	return out
}

// FromUnstructured reads obj as a typed CRD.
func FromUnstructured(obj *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s cannot be read: %w", obj.GetName(), err)
	}
	return crd, nil
}

// Judge compares each proposed CRD with the installed one of its
// name (installed lacks the CRDs the cluster does not have: nothing to
// compare, a first install of it) and decides under policy
// (Decide): the change is refused when one CRD is, and its
// report gathers every CRD's. The findings come in the order of
// proposed, each CRD's in crdcheck's stable order, so the same change
// gets the same words. An error: a CRD that cannot be read as one (the
// API server would refuse it as well).
func Judge(policy Policy, proposed []*unstructured.Unstructured, installed map[string]*unstructured.Unstructured) (Judgement, error) {
	j := Judgement{Policy: policy}
	for _, p := range proposed {
		live, ok := installed[p.GetName()]
		if !ok {
			continue
		}
		next, err := FromUnstructured(p)
		if err != nil {
			return Judgement{}, err
		}
		current, err := FromUnstructured(live)
		if err != nil {
			return Judgement{}, err
		}
		d := Decide(policy, Compare(current, next))
		switch d.Action {
		case Refuse:
			j.Refused = append(j.Refused, d.Report...)
		case KeepInstalled:
			if j.Keep == nil {
				j.Keep = map[string]*unstructured.Unstructured{}
			}
			j.Keep[p.GetName()] = keptCRD(p, live)
			j.Report = append(j.Report, d.Report...)
		default:
			j.Report = append(j.Report, d.Report...)
		}
	}
	if len(j.Refused) > 0 {
		j.Report = nil
	}
	return j, nil
}

// keptCRD is what Skip applies for proposed: the installed CRD's spec
// under proposed's metadata (name, labels, annotations), so that the
// apply leaves the installed definition as it is and the CRD stays in the
// inventory, owned, and is removed with it (spec.uninstall.deleteCRDs).
func keptCRD(proposed, installed *unstructured.Unstructured) *unstructured.Unstructured {
	out := &unstructured.Unstructured{Object: map[string]any{}}
	out.SetAPIVersion(proposed.GetAPIVersion())
	out.SetKind(proposed.GetKind())
	out.SetName(proposed.GetName())
	out.SetLabels(proposed.GetLabels())
	out.SetAnnotations(proposed.GetAnnotations())
	if spec, ok := installed.Object["spec"]; ok {
		out.Object["spec"] = runtime.DeepCopyJSONValue(spec)
	}
	return out
}

// WithKept returns objs with each CRD named in keep replaced by the
// kept one; objs is not modified.
func WithKept(objs []*unstructured.Unstructured, keep map[string]*unstructured.Unstructured) []*unstructured.Unstructured {
	if len(keep) == 0 {
		return objs
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o
		if k, ok := keep[o.GetName()]; ok && IsCRD(o) {
			out[i] = k
		}
	}
	return out
}

// maxFindingsNamed bounds how many findings a condition message names.
const maxFindingsNamed = 8

// findingsText joins the findings' messages, at most maxFindingsNamed.
func findingsText(findings []Finding) string {
	parts := make([]string, 0, min(len(findings), maxFindingsNamed+1))
	for i, f := range findings {
		if i == maxFindingsNamed {
			parts = append(parts, fmt.Sprintf("and %d more", len(findings)-maxFindingsNamed))
			break
		}
		parts = append(parts, f.Message)
	}
	return strings.Join(parts, "; ")
}

// RefusalMessage says why the change (ref: "<extension> <version>") is
// refused, naming each CRD, version and field, and what to do: a removed
// stored version or a scope change, which the API server refuses as
// well, asks for another path than a policy.
func RefusalMessage(ref string, j Judgement) string {
	apiServerRefuses := false
	for _, f := range j.Refused {
		if f.Class == StoredVersionRemoved || f.Class == ScopeChanged {
			apiServerRefuses = true
		}
	}
	head := fmt.Sprintf("%s would change CustomResourceDefinitions in ways that can break the objects stored at them or their clients, so nothing of it was applied (spec.upgrade.crdPolicy: %s): %s. ",
		ref, j.Policy, findingsText(j.Refused))
	if apiServerRefuses {
		return head + "The API server refuses such a CRD update under any policy: upgrade first to a version whose CRD still lists the stored version (served: false is enough) with the new storage version; " +
			"Annex then rewrites the stored objects at the new storage version and trims status.storedVersions, after which this version can be installed. " +
			"Or set spec.upgrade.crdPolicy: Skip to keep the installed CRDs"
	}
	return head + "Check or migrate the stored objects and clients, then set spec.upgrade.crdPolicy: Force (or Warn) to apply the change anyway, " +
		"or Skip to keep the installed CRDs; or choose a version whose CRDs keep them valid with spec.version"
}

// ReportMessage says what the change did with the CRD changes a lenient
// policy let through; "" when there are none.
func ReportMessage(ref string, j Judgement) string {
	if len(j.Report) == 0 {
		return ""
	}
	switch j.Policy {
	case Skip:
		names := make([]string, 0, len(j.Keep))
		seen := map[string]bool{}
		for _, f := range j.Report {
			if !seen[f.CRD] {
				seen[f.CRD] = true
				names = append(names, f.CRD)
			}
		}
		return fmt.Sprintf("%s: kept the installed CustomResourceDefinitions %s as they are (spec.upgrade.crdPolicy: Skip), so these changes of the extension were not applied: %s",
			ref, strings.Join(names, ", "), findingsText(j.Report))
	case Force:
		return fmt.Sprintf("%s: applied CustomResourceDefinition changes that can break stored objects or clients, forced by spec.upgrade.crdPolicy: Force: %s", ref, findingsText(j.Report))
	}
	return fmt.Sprintf("%s: applied CustomResourceDefinition changes (spec.upgrade.crdPolicy: %s): %s", ref, j.Policy, findingsText(j.Report))
}
