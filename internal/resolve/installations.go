package resolve

import (
	"fmt"
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ProblemFor states a cluster's installations for the solver, sorted by
// name: each one's range, installed version and upgrade policy (automatic
// upgrades default to on, as in the API), whether it is Separable, and
// otherwise the cluster-scoped object its content last had.
func ProblemFor(clusterVersion string, insts []*v1alpha1.ExtensionInstallation) Problem {
	p := Problem{ClusterVersion: clusterVersion, Installations: make([]Installation, 0, len(insts))}
	for _, inst := range insts {
		p.Installations = append(p.Installations, InstallationOf(inst, inst.Namespace+"/"+inst.Name))
	}
	// In name order, so that the same installations make the same problem
	// whatever order a cache listed them in.
	slices.SortFunc(p.Installations, func(a, b Installation) int { return strings.Compare(a.Name, b.Name) })
	return p
}

// InstallationOf states one installation for the solver under name, its
// "namespace/name" (passed in so that callers that keep it need not build
// it again): its range, installed version and upgrade policy (automatic
// upgrades default to on, as in the API), whether it is Separable, and
// otherwise the cluster-scoped object its content last had.
func InstallationOf(inst *v1alpha1.ExtensionInstallation, name string) Installation {
	in := Installation{
		Name:           name,
		Extension:      inst.Spec.Extension,
		Range:          inst.Spec.Version,
		Installed:      inst.Status.InstalledVersion,
		Automatic:      inst.Spec.Upgrade.Automatic == nil || *inst.Spec.Upgrade.Automatic,
		AllowDowngrade: inst.Spec.Upgrade.AllowDowngrade,
		Separable:      Separable(inst),
		Channel:        inst.Spec.Channel,
		AnyInRange:     inst.Spec.Upgrade.Graph == v1alpha1.UpgradeGraphAnyInRange,
	}
	if !in.Separable {
		in.ClusterScoped = ClusterScopedText(inst.Spec.Extension, inst.Status.Content)
	}
	return in
}

// Separable reports whether inst may run a version of its own when it
// cannot share its extension's (see Installation.Separable), from what its
// status says of its content (status.content):
//
//   - content rendered for the current generation: separable when it is
//     namespaced only, not when it has a cluster-scoped object;
//   - nothing installed and the content for the current generation not
//     known yet: separable. Rendering tells; the controller applies
//     nothing cluster-scoped at a version another installation of the
//     extension runs differently, and records the content, so that the
//     next solve shares the version;
//   - installed, with content rendered for an earlier generation: as that
//     content was;
//   - installed before Annex recorded content: not separable, until it
//     renders.
func Separable(inst *v1alpha1.ExtensionInstallation) bool {
	c := inst.Status.Content
	switch {
	case c != nil && c.ObservedGeneration == inst.Generation:
		return c.ClusterScoped == nil
	case !HasInstalled(inst):
		return true
	case c != nil:
		return c.ClusterScoped == nil
	}
	return false
}

// HasInstalled reports whether anything of inst may be on its cluster: an
// installed version, an apply under way, or an inventory.
func HasInstalled(inst *v1alpha1.ExtensionInstallation) bool {
	return inst.Status.InstalledVersion != "" || inst.Status.Pending != nil || len(inst.Status.Inventory) > 0
}

// ClusterScopedText names the cluster-scoped object of an installation's
// content, for texts: "x 1.0.0 has the cluster-scoped
// CustomResourceDefinition widgets.example.com"; "" when the content is
// not known or has none.
func ClusterScopedText(extension string, c *v1alpha1.ContentScope) string {
	if c == nil || c.ClusterScoped == nil {
		return ""
	}
	return fmt.Sprintf("%s %s has the cluster-scoped %s %s", extension, c.Version, c.ClusterScoped.Kind, c.ClusterScoped.Name)
}

// UniverseOf collects the versions of Extensions.
func UniverseOf(extensions []v1alpha1.Extension) Universe {
	u := make(Universe, len(extensions))
	for i := range extensions {
		u[extensions[i].Name] = extensions[i].Spec.Versions
	}
	return u
}

// SolveDistinct is Solve with installations that ask for exactly the same
// thing — extension, range, installed version, policy, separable or not —
// merged into one requirement, each of them given the outcome of its
// group. A thousand installations of one extension then cost what one
// does. A failed group's explanation is given to every member with the
// member's own name; a group solved as an instance gives each member a
// Selection of its own, under its own key.
func (ix *Index) SolveDistinct(p Problem) *Resolution {
	groups := map[Installation][]string{}
	var reps []Installation
	for _, inst := range p.Installations {
		key := inst
		key.Name = ""
		if _, seen := groups[key]; !seen {
			reps = append(reps, inst)
		}
		groups[key] = append(groups[key], inst.Name)
	}
	if len(reps) == len(p.Installations) {
		return ix.Solve(p)
	}
	resolution := ix.Solve(Problem{ClusterVersion: p.ClusterVersion, Installations: reps, Provided: p.Provided})
	members := map[string][]string{} // representative → every member
	for _, rep := range reps {
		key := rep
		key.Name = ""
		members[rep.Name] = groups[key]
	}
	for _, rep := range reps {
		ex := resolution.Failed[rep.Name]
		if ex == nil {
			continue
		}
		for _, m := range members[rep.Name][1:] {
			resolution.Failed[m] = renamed(ex, rep.Name, m)
		}
	}
	expanded := map[string][]string{} // an instance group's key → every member's key
	for _, rep := range reps {
		key := InstanceKey(rep.Extension, rep.Name)
		sel, ok := resolution.Selected[key]
		if !ok {
			continue
		}
		for _, m := range members[rep.Name] {
			mine := sel
			mine.Instance, mine.RequiredBy = m, []string{m}
			resolution.Selected[InstanceKey(rep.Extension, m)] = mine
			expanded[key] = append(expanded[key], InstanceKey(rep.Extension, m))
		}
	}
	if len(expanded) > 0 {
		resolution.InstallOrder = expandKeys(resolution.InstallOrder, expanded)
		resolution.UninstallOrder = slices.Clone(resolution.InstallOrder)
		slices.Reverse(resolution.UninstallOrder)
	}
	for ext, sel := range resolution.Selected {
		if sel.Instance != "" {
			continue
		}
		var names []string
		for _, n := range sel.RequiredBy {
			if ms, ok := members[n]; ok {
				names = append(names, ms...)
			} else {
				names = append(names, n)
			}
		}
		sort.Strings(names)
		sel.RequiredBy = names
		resolution.Selected[ext] = sel
	}
	return resolution
}

// expandKeys returns order with each key of expanded replaced by its
// keys.
func expandKeys(order []string, expanded map[string][]string) []string {
	out := make([]string, 0, len(order))
	for _, key := range order {
		if keys, ok := expanded[key]; ok {
			out = append(out, keys...)
		} else {
			out = append(out, key)
		}
	}
	return out
}

// renamed returns ex told for installation to instead of from: the names
// are whole tokens ("namespace/name"), so "ns/app-1" is not found inside
// "ns/app-10".
func renamed(ex *Explanation, from, to string) *Explanation {
	token := regexp.MustCompile(`(^|[^A-Za-z0-9./-])` + regexp.QuoteMeta(from) + `($|[^A-Za-z0-9-])`)
	out := *ex
	out.Message = token.ReplaceAllString(ex.Message, "${1}"+to+"${2}")
	out.Installations = make([]string, len(ex.Installations))
	for i, n := range ex.Installations {
		if n == from {
			n = to
		}
		out.Installations[i] = n
	}
	sort.Strings(out.Installations)
	return &out
}
