package resolve

import (
	"fmt"
	"slices"
	"strings"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/readiness"
)

// Content scope: an installation whose content is namespaced only runs a
// version of its extension apart from the others of it when it cannot
// share theirs; one with a cluster-scoped object shares the extension's
// version (ProblemFor reads status.content). These say which object makes
// content cluster-scoped and what stops an instance whose content turns
// out to be.

// FirstClusterScoped returns the cluster-scoped ref (no namespace) that
// best says why content acts on the whole cluster: a
// CustomResourceDefinition, then a webhook configuration or an
// APIService, then any other, each by group, kind and name. Nil when
// there is none.
func FirstClusterScoped(refs []v1alpha1.ObjectReference) *v1alpha1.ObjectReference {
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
	slices.SortStableFunc(refs, func(a, b v1alpha1.ObjectReference) int { return strings.Compare(refKey(a), refKey(b)) })
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

// refKey orders refs by group, kind, namespace and name.
func refKey(ref v1alpha1.ObjectReference) string {
	return ref.Group + "/" + ref.Kind + "/" + ref.Namespace + "/" + ref.Name
}

// otherVersion is another installation of the extension that runs, or is
// resolved to, another version.
type otherVersion struct {
	name string // namespace/name
	text string // "team-a/x runs 1.0.0"
}

// otherVersions lists the other installations of inst's extension on the
// cluster whose content may be cluster-scoped (it is not known to be
// namespaced only) and that run, or are resolved to, a version other than
// ours, in name order. A failed one counts with what it keeps running.
func otherVersions(inst *v1alpha1.ExtensionInstallation, ours string, installations []*v1alpha1.ExtensionInstallation, resolution *Resolution) []otherVersion {
	ext := inst.Spec.Extension
	var out []otherVersion
	for _, other := range installations {
		if other == inst || other.Spec.Extension != ext {
			continue
		}
		if c := other.Status.Content; c != nil && c.ClusterScoped == nil {
			continue // namespaced only: it shares nothing cluster-wide
		}
		name, installed := other.Namespace+"/"+other.Name, other.Status.InstalledVersion
		resolved := ""
		if sel, ok := resolution.For(ext, name); ok && resolution.Failed[name] == nil {
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

// ScopeConflict says, when inst's content (status.content, found
// cluster-scoped) forces one version of its extension on the cluster,
// which another installation of it does not run or is not resolved to,
// what stops inst at version ours and what to do; "" when every other
// shares ours or is namespaced only.
func ScopeConflict(inst *v1alpha1.ExtensionInstallation, ours string, installations []*v1alpha1.ExtensionInstallation, resolution *Resolution) string {
	others := otherVersions(inst, ours, installations, resolution)
	if len(others) == 0 {
		return ""
	}
	ext := inst.Spec.Extension
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
		ClusterScopedText(ext, inst.Status.Content), ext, strings.Join(texts, ", "),
		inst.Namespace+"/"+inst.Name, strings.Join(names, " and "), ext, ours)
	if installed := inst.Status.InstalledVersion; installed != "" {
		msg += fmt.Sprintf("; %s %s keeps running as it is", ext, installed)
	}
	return msg + "."
}

// RecordScope records refs, the scope of inst's content rendered for
// version, in status.content: its first cluster-scoped object, or none.
// For an installation resolved as an instance (a version of its own), an
// instance whose content is namespaced only says so in its Resolved
// condition; one whose content turns out to be cluster-scoped while
// another installation of the extension on the cluster runs, or is
// resolved to, another version (ScopeConflict) stops before anything is
// applied: a terminal stop whose message names the object, which the
// Resolved condition shows too. The next resolve reads status.content
// and shares the version (that condition makes the installation wait on
// the others, so that reconcile comes at once).
func RecordScope(inst *v1alpha1.ExtensionInstallation, choice Selection, refs []v1alpha1.ObjectReference, installations []*v1alpha1.ExtensionInstallation, resolution *Resolution) *news.Stop {
	first := FirstClusterScoped(refs)
	inst.Status.Content = &v1alpha1.ContentScope{Version: choice.Version.Version, ObservedGeneration: inst.Generation, ClusterScoped: first}
	switch {
	case choice.Instance == "":
		return nil
	case first == nil:
		if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionResolved); c != nil && c.Status == metav1.ConditionTrue {
			readiness.Set(inst, v1alpha1.ConditionResolved, metav1.ConditionTrue, c.Reason, c.Message+fmt.Sprintf(
				"; a version of its own, apart from the other installations of %s: its content is namespaced only", inst.Spec.Extension))
		}
		return nil
	}
	msg := ScopeConflict(inst, choice.Version.Version, installations, resolution)
	if msg == "" {
		return nil
	}
	readiness.Set(inst, v1alpha1.ConditionResolved, metav1.ConditionFalse, v1alpha1.ReasonNoMatchingVersion, msg)
	return &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonNoMatchingVersion, Message: msg}
}
