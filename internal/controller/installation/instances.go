package installation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/plan"
	"github.com/annex-platform/annex/internal/resolve"
	"github.com/annex-platform/annex/internal/target"
)

// Instances: an installation whose content is namespaced only runs a
// version of its extension apart from the other installations of it when
// it cannot share theirs; one whose content has a cluster-scoped object
// shares the extension's version with them (see the resolve package). The
// resolver decides from status.content, which checkScope records from
// what was rendered, before anything is applied.

// checkScope records the scope of the rendered content in status.content:
// its first cluster-scoped object, or none. An instance whose content is
// namespaced only says so in its Resolved condition. When this
// installation was resolved as an instance (a version of its own) but its
// content turns out to be cluster-scoped while another installation of
// the extension on the cluster runs, or is resolved to, another version,
// it stops before anything is applied: a terminal block whose message
// names the object. The next resolve reads status.content and shares the
// version (the Resolved condition set here makes the installation wait on
// the others, so that reconcile comes at once).
func (r *Reconciler) checkScope(_ context.Context, s *scope) (ctrl.Result, error) {
	refs, rendered := contentRefs(s)
	if !rendered {
		return ctrl.Result{}, nil
	}
	first := firstClusterScoped(refs)
	s.inst.Status.Content = &v1alpha1.ContentScope{
		Version: s.choice.Version.Version, ObservedGeneration: s.inst.Generation, ClusterScoped: first,
	}
	if s.choice.Instance == "" {
		return ctrl.Result{}, nil
	}
	if first == nil {
		if c := meta.FindStatusCondition(s.inst.Status.Conditions, v1alpha1.ConditionResolved); c != nil && c.Status == metav1.ConditionTrue {
			setCondition(s.inst, v1alpha1.ConditionResolved, metav1.ConditionTrue, c.Reason, c.Message+fmt.Sprintf(
				"; a version of its own, apart from the other installations of %s: its content is namespaced only", s.inst.Spec.Extension))
		}
		return ctrl.Result{}, nil
	}
	others := otherVersions(s)
	if len(others) == 0 {
		return ctrl.Result{}, nil
	}
	s.block = terminal(v1alpha1.ReasonNoMatchingVersion, scopeConflictMessage(s, others))
	setCondition(s.inst, v1alpha1.ConditionResolved, metav1.ConditionFalse, s.block.reason, s.block.message)
	return ctrl.Result{}, nil
}

// contentRefs returns the refs of the objects whose scope decides
// status.content, or false when this reconcile rendered nothing to decide
// from. For a chart it is the rendered set, Helm hooks included (a hook
// may create a CRD as well). For a package it is what its plans apply and
// write, and what the installed revision holds that they do not delete
// (an update plan need not apply the CRDs the deploy plan did); with no
// plan to run, the installed revision's inventory. The target namespace
// Annex creates is not content.
func contentRefs(s *scope) ([]v1alpha1.ObjectReference, bool) {
	a, ns := s.target.Applier(), s.targetNamespace()
	if !s.artifact.release.Resumable() {
		if s.artifact.release == nil {
			return nil, false
		}
		objects := make([]*unstructured.Unstructured, 0, len(s.artifact.release.CRDs)+len(s.artifact.release.Objects))
		for _, o := range slices.Concat(s.artifact.release.CRDs, s.artifact.release.Objects) {
			objects = append(objects, withoutHook(o))
		}
		return a.Refs(objects, ns), true
	}
	refs := a.Refs(plan.AllApplied(s.artifact.run.plans), ns)
	var deletes []*unstructured.Unstructured
	for _, p := range s.artifact.run.plans {
		deletes = append(deletes, p.Objects(plan.TaskDelete)...)
	}
	deleted := map[v1alpha1.ObjectReference]bool{}
	for _, ref := range a.Refs(deletes, ns) {
		deleted[target.Identity(ref)] = true
	}
	for _, ref := range s.inst.Status.Inventory {
		switch {
		case ref.Namespace != "", deleted[target.Identity(ref)]:
		case ref.Group == "" && ref.Kind == "Namespace" && ref.Name == ns:
		default:
			refs = append(refs, ref)
		}
	}
	return refs, true
}

// withoutHook returns o, or for a Helm hook a copy without its hook
// annotation, so that Refs (which leaves hooks out of an inventory) tells
// its scope too.
func withoutHook(o *unstructured.Unstructured) *unstructured.Unstructured {
	annotations := o.GetAnnotations()
	if _, hook := annotations["helm.sh/hook"]; !hook {
		return o
	}
	c := o.DeepCopy()
	delete(annotations, "helm.sh/hook")
	c.SetAnnotations(annotations)
	return c
}

// firstClusterScoped returns the cluster-scoped ref (no namespace) that
// best says why content acts on the whole cluster: a
// CustomResourceDefinition, then a webhook configuration or an
// APIService, then any other, each by group, kind and name. Nil when
// there is none.
func firstClusterScoped(refs []v1alpha1.ObjectReference) *v1alpha1.ObjectReference {
	rank := func(ref v1alpha1.ObjectReference) int {
		switch {
		case ref.Group == "apiextensions.k8s.io" && ref.Kind == "CustomResourceDefinition":
			return 0
		case ref.Group == "admissionregistration.k8s.io" && strings.HasSuffix(ref.Kind, "WebhookConfiguration"),
			ref.Group == "apiregistration.k8s.io" && ref.Kind == "APIService":
			return 1
		}
		return 2
	}
	refs = slices.Clone(refs)
	slices.SortStableFunc(refs, func(a, b v1alpha1.ObjectReference) int { return strings.Compare(target.RefKey(a), target.RefKey(b)) })
	var best *v1alpha1.ObjectReference
	for i := range refs {
		if refs[i].Namespace == "" && (best == nil || rank(refs[i]) < rank(*best)) {
			best = &refs[i]
		}
	}
	if best == nil {
		return nil
	}
	out := *best
	return &out
}

// otherVersion is another installation of the extension that runs, or is
// resolved to, another version.
type otherVersion struct {
	name string // namespace/name
	text string // "team-a/x runs 1.0.0"
}

// otherVersions lists the other installations of s's extension on the
// cluster whose content may be cluster-scoped (it is not known to be
// namespaced only) and that run, or are resolved to, a version other than
// s's, in name order. A failed one counts with what it keeps running.
func otherVersions(s *scope) []otherVersion {
	ext, ours := s.inst.Spec.Extension, s.choice.Version.Version
	var out []otherVersion
	for _, other := range s.cluster.installations {
		if other == s.inst || other.Spec.Extension != ext {
			continue
		}
		if c := other.Status.Content; c != nil && c.ClusterScoped == nil {
			continue // namespaced only: it shares nothing cluster-wide
		}
		name, installed := nameOf(other), other.Status.InstalledVersion
		resolved := ""
		if sel, ok := s.cluster.resolution.For(ext, name); ok && s.cluster.resolution.Failed[name] == nil {
			resolved = sel.Version.Version
		}
		text := ""
		switch {
		case resolved == "" && (installed == "" || installed == ours), resolved == ours:
			continue
		case resolved == "" || installed == resolved:
			text = fmt.Sprintf("%s runs %s", name, installed)
		case installed == "":
			text = fmt.Sprintf("%s is resolved to %s", name, resolved)
		default:
			text = fmt.Sprintf("%s runs %s and is resolved to %s", name, installed, resolved)
		}
		out = append(out, otherVersion{name: name, text: text})
	}
	slices.SortFunc(out, func(a, b otherVersion) int { return strings.Compare(a.name, b.name) })
	return out
}

// scopeConflictMessage says that s's content forces one version of its
// extension, which the others do not run; others is not empty.
func scopeConflictMessage(s *scope, others []otherVersion) string {
	ext, ours := s.inst.Spec.Extension, s.choice.Version.Version
	var texts, names []string
	for i, o := range others {
		if i == 3 {
			texts = append(texts, fmt.Sprintf("%d more", len(others)-3))
			names = append(names, fmt.Sprintf("%d more", len(others)-3))
			break
		}
		texts, names = append(texts, o.text), append(names, o.name)
	}
	msg := fmt.Sprintf("%s, so one version of %s serves the whole cluster, and %s; set spec.version of %s, or of %s, so that they share a version. Nothing of %s %s was applied",
		resolve.ClusterScopedText(ext, s.inst.Status.Content), ext, strings.Join(texts, ", "),
		nameOf(s.inst), strings.Join(names, " and "), ext, ours)
	if installed := s.inst.Status.InstalledVersion; installed != "" {
		msg += fmt.Sprintf("; %s %s keeps running as it is", ext, installed)
	}
	return msg + "."
}
