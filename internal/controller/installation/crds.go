package installation

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/crdcheck"
	"github.com/annex-platform/annex/internal/plan"
)

// The pure part of spec.upgrade.crdPolicy: which CRDs a change brings,
// what crdcheck finds between each and the CRD installed on the target
// cluster, what the policy makes of it, and the words for it. The reads
// of the installed CRDs are gate_crds.go's.

// crdJudgement is what spec.upgrade.crdPolicy makes of the CRDs a change
// would apply (judgeCRDs).
type crdJudgement struct {
	policy v1alpha1.CRDPolicy
	// refused are the findings that refuse the change; empty when it
	// goes on.
	refused []crdcheck.Finding
	// report are the findings of the CRDs the change applies (Warn,
	// Force) or keeps out (Skip); empty under Strict.
	report []crdcheck.Finding
	// keep are the installed CRDs, by name, that the change applies in
	// place of its own (Skip): every proposed CRD that is installed.
	keep map[string]*unstructured.Unstructured
}

// crdPolicyOf is spec.upgrade.crdPolicy; unset is Strict.
func crdPolicyOf(inst *v1alpha1.ExtensionInstallation) v1alpha1.CRDPolicy {
	if p := inst.Spec.Upgrade.CRDPolicy; p != "" {
		return p
	}
	return v1alpha1.CRDPolicyStrict
}

// isCRD reports whether obj is a CustomResourceDefinition.
func isCRD(obj *unstructured.Unstructured) bool {
	gvk := obj.GroupVersionKind()
	return gvk.Group == "apiextensions.k8s.io" && gvk.Kind == "CustomResourceDefinition"
}

// crdsIn returns the CRDs among objs, each name once (its last), in the
// order of their first appearance.
func crdsIn(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
	var out []*unstructured.Unstructured
	at := map[string]int{}
	for _, o := range objs {
		if !isCRD(o) {
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

// crdNames are the names of crds, in order.
func crdNames(crds []*unstructured.Unstructured) []string {
	out := make([]string, len(crds))
	for i, c := range crds {
		out[i] = c.GetName()
	}
	return out
}

// toCRD reads obj as a typed CRD.
func toCRD(obj *unstructured.Unstructured) (*apiextensionsv1.CustomResourceDefinition, error) {
	crd := &apiextensionsv1.CustomResourceDefinition{}
	if err := runtime.DefaultUnstructuredConverter.FromUnstructured(obj.Object, crd); err != nil {
		return nil, fmt.Errorf("CustomResourceDefinition %s cannot be read: %w", obj.GetName(), err)
	}
	return crd, nil
}

// judgeCRDs compares each proposed CRD with the installed one of its
// name (installed lacks the CRDs the cluster does not have: nothing to
// compare, a first install of it) and decides under policy
// (crdcheck.Decide): the change is refused when one CRD is, and its
// report gathers every CRD's. The findings come in the order of
// proposed, each CRD's in crdcheck's stable order, so the same change
// gets the same words. An error: a CRD that cannot be read as one (the
// API server would refuse it as well).
func judgeCRDs(policy v1alpha1.CRDPolicy, proposed []*unstructured.Unstructured, installed map[string]*unstructured.Unstructured) (crdJudgement, error) {
	j := crdJudgement{policy: policy}
	for _, p := range proposed {
		live, ok := installed[p.GetName()]
		if !ok {
			continue
		}
		next, err := toCRD(p)
		if err != nil {
			return crdJudgement{}, err
		}
		current, err := toCRD(live)
		if err != nil {
			return crdJudgement{}, err
		}
		d := crdcheck.Decide(crdcheck.Policy(policy), crdcheck.Compare(current, next))
		switch d.Action {
		case crdcheck.Refuse:
			j.refused = append(j.refused, d.Report...)
		case crdcheck.KeepInstalled:
			if j.keep == nil {
				j.keep = map[string]*unstructured.Unstructured{}
			}
			j.keep[p.GetName()] = keptCRD(p, live)
			j.report = append(j.report, d.Report...)
		default:
			j.report = append(j.report, d.Report...)
		}
	}
	if len(j.refused) > 0 {
		j.report = nil
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

// keepInstalled returns objs with each CRD named in keep replaced by the
// kept one; objs is not modified.
func keepInstalled(objs []*unstructured.Unstructured, keep map[string]*unstructured.Unstructured) []*unstructured.Unstructured {
	if len(keep) == 0 {
		return objs
	}
	out := make([]*unstructured.Unstructured, len(objs))
	for i, o := range objs {
		out[i] = o
		if k, ok := keep[o.GetName()]; ok && isCRD(o) {
			out[i] = k
		}
	}
	return out
}

// keepInstalledInPlans returns plans whose Apply tasks apply the kept
// CRDs in place of their own; plans is not modified.
func keepInstalledInPlans(plans []plan.Plan, keep map[string]*unstructured.Unstructured) []plan.Plan {
	if len(keep) == 0 {
		return plans
	}
	return plan.RewriteApplies(plans, func(objs []*unstructured.Unstructured) []*unstructured.Unstructured {
		return keepInstalled(objs, keep)
	})

}

// maxFindingsNamed bounds how many findings a condition message names.
const maxFindingsNamed = 8

// findingsText joins the findings' messages, at most maxFindingsNamed.
func findingsText(findings []crdcheck.Finding) string {
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

// refusalMessage says why the change (ref: "<extension> <version>") is
// refused, naming each CRD, version and field, and what to do: a removed
// stored version or a scope change, which the API server refuses as
// well, asks for another path than a policy.
func refusalMessage(ref string, j crdJudgement) string {
	apiServerRefuses := false
	for _, f := range j.refused {
		if f.Class == crdcheck.StoredVersionRemoved || f.Class == crdcheck.ScopeChanged {
			apiServerRefuses = true
		}
	}
	head := fmt.Sprintf("%s would change CustomResourceDefinitions in ways that can break the objects stored at them or their clients, so nothing of it was applied (spec.upgrade.crdPolicy: %s): %s. ",
		ref, j.policy, findingsText(j.refused))
	if apiServerRefuses {
		return head + "The API server refuses such a CRD update under any policy: upgrade first to a version whose CRD still lists the stored version (served: false is enough) with the new storage version; " +
			"Annex then rewrites the stored objects at the new storage version and trims status.storedVersions, after which this version can be installed. " +
			"Or set spec.upgrade.crdPolicy: Skip to keep the installed CRDs"
	}
	return head + "Check or migrate the stored objects and clients, then set spec.upgrade.crdPolicy: Force (or Warn) to apply the change anyway, " +
		"or Skip to keep the installed CRDs; or choose a version whose CRDs keep them valid with spec.version"
}

// reportMessage says what the change did with the CRD changes a lenient
// policy let through; "" when there are none.
func reportMessage(ref string, j crdJudgement) string {
	if len(j.report) == 0 {
		return ""
	}
	switch j.policy {
	case v1alpha1.CRDPolicySkip:
		names := make([]string, 0, len(j.keep))
		seen := map[string]bool{}
		for _, f := range j.report {
			if !seen[f.CRD] {
				seen[f.CRD] = true
				names = append(names, f.CRD)
			}
		}
		return fmt.Sprintf("%s: kept the installed CustomResourceDefinitions %s as they are (spec.upgrade.crdPolicy: Skip), so these changes of the extension were not applied: %s",
			ref, strings.Join(names, ", "), findingsText(j.report))
	case v1alpha1.CRDPolicyForce:
		return fmt.Sprintf("%s: applied CustomResourceDefinition changes that can break stored objects or clients, forced by spec.upgrade.crdPolicy: Force: %s", ref, findingsText(j.report))
	}
	return fmt.Sprintf("%s: applied CustomResourceDefinition changes (spec.upgrade.crdPolicy: %s): %s", ref, j.policy, findingsText(j.report))
}
