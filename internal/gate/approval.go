package gate

// This file decides, from the admin's ApprovalPolicies and what a change
// does, whether the change needs an Approval and why. It is pure: the
// caller reads the policies, the labels they select on and both
// revisions' objects.

import (
	"fmt"
	"maps"
	"slices"
	"strings"

	"github.com/Masterminds/semver/v3"
	"k8s.io/apimachinery/pkg/api/equality"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/labels"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Subject is what an ApprovalPolicy's selector looks at: an installation,
// and the labels of its namespace and of its ManagedCluster.
type Subject struct {
	Namespace, Extension string
	// Cluster is spec.cluster; "" is the hub.
	Cluster         string
	NamespaceLabels map[string]string
	// ClusterLabels are the ManagedCluster's labels (nil for the hub).
	ClusterLabels map[string]string
}

// Selects reports whether sel selects s: every criterion it sets must
// match. A selector that does not parse selects everything, so that a
// broken policy errs on the side of asking for approval.
func Selects(sel v1alpha1.ApprovalSelector, s Subject) bool {
	cluster := s.Cluster
	if cluster == "" {
		cluster = v1alpha1.HubClusterName
	}
	switch {
	case len(sel.Namespaces) > 0 && !slices.Contains(sel.Namespaces, s.Namespace),
		len(sel.Extensions) > 0 && !slices.Contains(sel.Extensions, s.Extension),
		len(sel.Clusters) > 0 && !slices.Contains(sel.Clusters, cluster),
		!matches(sel.NamespaceSelector, s.NamespaceLabels, true),
		!matches(sel.ClusterSelector, s.ClusterLabels, s.Cluster != ""):
		return false
	}
	return true
}

// matches reports whether ls selects set; a nil ls selects everything,
// and nothing selects an object that does not exist (exists false).
func matches(ls *metav1.LabelSelector, set map[string]string, exists bool) bool {
	if ls == nil {
		return true
	}
	if !exists {
		return false
	}
	sel, err := metav1.LabelSelectorAsSelector(ls)
	if err != nil {
		return true
	}
	return sel.Matches(labels.Set(set))
}

// ChangeFacts is what the approval rules judge of a change.
type ChangeFacts struct {
	// From is the installed version ("" for a first install), To the
	// version the change applies.
	From, To string
	// PermissionsGrow is Diff's Grows against the installed revision.
	PermissionsGrow []string
	// CRDChanges is CRDChanges against the installed revision.
	CRDChanges []string
}

// Verdict says whether a change needs approval.
type Verdict struct {
	// Reasons, one per requirement met, e.g. "Major: 1.4.2 → 2.0.0";
	// empty when no approval is needed.
	Reasons []string
	// Policies are the names of the policies whose requirements are met,
	// sorted.
	Policies []string
}

// Required reports whether approval is required: the union of the
// requirements of every policy given (the caller passes those that
// select the installation). A change needs approval when any policy
// requires it.
func Required(policies []v1alpha1.ApprovalPolicy, f ChangeFacts) Verdict {
	met := map[v1alpha1.ApprovalRequirement]string{}
	for _, req := range []v1alpha1.ApprovalRequirement{
		v1alpha1.ApprovalFirstInstall, v1alpha1.ApprovalPatch, v1alpha1.ApprovalMinor, v1alpha1.ApprovalMajor,
		v1alpha1.ApprovalDowngrade, v1alpha1.ApprovalPermissionGrowth, v1alpha1.ApprovalCRDChange,
	} {
		if reason := f.meets(req); reason != "" {
			met[req] = reason
		}
	}
	var v Verdict
	seen := map[string]bool{}
	for _, p := range policies {
		reqs := p.Spec.Require
		switch p.Spec.Preset {
		case v1alpha1.ApprovalManual:
			reqs = nil
			if !seen["Manual"] {
				seen["Manual"] = true
				v.Reasons = append(v.Reasons, "Manual: every change of "+describeVersions(f))
			}
			v.Policies = append(v.Policies, p.Name)
		case v1alpha1.ApprovalAutomatic:
			reqs = nil
		}
		requires := false
		for _, req := range reqs {
			reason, ok := met[req]
			if !ok {
				continue
			}
			requires = true
			if !seen[string(req)] {
				seen[string(req)] = true
				v.Reasons = append(v.Reasons, string(req)+": "+reason)
			}
		}
		if requires {
			v.Policies = append(v.Policies, p.Name)
		}
	}
	slices.Sort(v.Policies)
	v.Policies = slices.Compact(v.Policies)
	return v
}

// meets says how the change meets req ("" when it does not).
func (f ChangeFacts) meets(req v1alpha1.ApprovalRequirement) string {
	switch req {
	case v1alpha1.ApprovalFirstInstall:
		if f.From == "" {
			return "installs " + f.To
		}
	case v1alpha1.ApprovalPermissionGrowth:
		return strings.Join(f.PermissionsGrow, "; ")
	case v1alpha1.ApprovalCRDChange:
		return strings.Join(f.CRDChanges, "; ")
	default:
		if f.From != "" && versionStep(f.From, f.To) == req {
			return f.From + " → " + f.To
		}
	}
	return ""
}

func describeVersions(f ChangeFacts) string {
	switch {
	case f.From == "":
		return "installs " + f.To
	case f.From == f.To:
		return f.To + " (new values or content)"
	}
	return f.From + " → " + f.To
}

// versionStep classifies a move between versions: Downgrade, Major,
// Minor or Patch (a pre-release or build change counts as Patch); "" for
// the same version. Versions that are not semver count as Major when they
// differ, the most cautious answer.
func versionStep(from, to string) v1alpha1.ApprovalRequirement {
	a, errA := semver.NewVersion(from)
	b, errB := semver.NewVersion(to)
	switch {
	case errA != nil || errB != nil:
		if from == to {
			return ""
		}
		return v1alpha1.ApprovalMajor
	case b.LessThan(a):
		return v1alpha1.ApprovalDowngrade
	case a.Major() != b.Major():
		return v1alpha1.ApprovalMajor
	case a.Minor() != b.Minor():
		return v1alpha1.ApprovalMinor
	case a.Equal(b) && a.Metadata() == b.Metadata():
		return ""
	}
	return v1alpha1.ApprovalPatch
}

// CRDChanges compares the CustomResourceDefinitions among next with
// those among installed: "creates CustomResourceDefinition x", "changes
// CustomResourceDefinition x (spec.versions)" naming the top-level spec
// fields that differ, and "no longer ships CustomResourceDefinition x".
// Sorted by name within each kind of line.
func CRDChanges(installed, next []*unstructured.Unstructured) []string {
	was, will := crdsByName(installed), crdsByName(next)
	var created, changed, dropped []string
	for _, name := range slices.Sorted(maps.Keys(will)) {
		old, ok := was[name]
		if !ok {
			created = append(created, "creates CustomResourceDefinition "+name)
			continue
		}
		if fields := differingFields(specOf(old), specOf(will[name])); len(fields) > 0 {
			changed = append(changed, fmt.Sprintf("changes CustomResourceDefinition %s (%s)", name, strings.Join(fields, ", ")))
		}
	}
	for _, name := range slices.Sorted(maps.Keys(was)) {
		if _, ok := will[name]; !ok {
			dropped = append(dropped, "no longer ships CustomResourceDefinition "+name)
		}
	}
	return slices.Concat(created, changed, dropped)
}

func crdsByName(objs []*unstructured.Unstructured) map[string]*unstructured.Unstructured {
	out := map[string]*unstructured.Unstructured{}
	for _, o := range objs {
		if o.GetKind() == "CustomResourceDefinition" && strings.HasPrefix(o.GetAPIVersion(), "apiextensions.k8s.io/") {
			out[o.GetName()] = o
		}
	}
	return out
}

func specOf(o *unstructured.Unstructured) map[string]any {
	spec, _, _ := unstructured.NestedMap(o.Object, "spec")
	return spec
}

// differingFields names the keys of two specs whose values differ, as
// "spec.<key>", sorted.
func differingFields(a, b map[string]any) []string {
	keys := map[string]bool{}
	for k := range a {
		keys[k] = true
	}
	for k := range b {
		keys[k] = true
	}
	var out []string
	for _, k := range slices.Sorted(maps.Keys(keys)) {
		if !equality.Semantic.DeepEqual(a[k], b[k]) {
			out = append(out, "spec."+k)
		}
	}
	return out
}
