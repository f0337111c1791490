package resolve

import (
	"regexp"
	"slices"
	"sort"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ProblemFor states a cluster's installations for the solver, sorted by
// name: each one's range, installed version and upgrade policy (automatic
// upgrades default to on, as in the API).
func ProblemFor(clusterVersion string, insts []*v1alpha1.ExtensionInstallation) Problem {
	p := Problem{ClusterVersion: clusterVersion, Installations: make([]Installation, 0, len(insts))}
	for _, inst := range insts {
		p.Installations = append(p.Installations, Installation{
			Name:           inst.Namespace + "/" + inst.Name,
			Extension:      inst.Spec.Extension,
			Range:          inst.Spec.Version,
			Installed:      inst.Status.InstalledVersion,
			Automatic:      inst.Spec.Upgrade.Automatic == nil || *inst.Spec.Upgrade.Automatic,
			AllowDowngrade: inst.Spec.Upgrade.AllowDowngrade,
		})
	}
	// In name order, so that the same installations make the same problem
	// whatever order a cache listed them in.
	slices.SortFunc(p.Installations, func(a, b Installation) int { return strings.Compare(a.Name, b.Name) })
	return p
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
// thing — extension, range, installed version and policy — merged into one
// requirement, each of them given the outcome of its group. A thousand
// installations of one extension then cost what one does. A failed group's
// explanation is given to every member with the member's own name.
func (ix *Index) SolveDistinct(p Problem) *Plan {
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
	plan := ix.Solve(Problem{ClusterVersion: p.ClusterVersion, Installations: reps})
	members := map[string][]string{} // representative → every member
	for _, rep := range reps {
		key := rep
		key.Name = ""
		members[rep.Name] = groups[key]
	}
	for _, rep := range reps {
		ex := plan.Failed[rep.Name]
		if ex == nil {
			continue
		}
		for _, m := range members[rep.Name][1:] {
			plan.Failed[m] = renamed(ex, rep.Name, m)
		}
	}
	for ext, sel := range plan.Selected {
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
		plan.Selected[ext] = sel
	}
	return plan
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
