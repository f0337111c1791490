package resolve

import (
	"cmp"
	"fmt"
	"slices"
	"sort"
	"strings"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// ReasonDependencyCycle is the Explanation reason for installations whose
// only possible versions depend on each other in a ring.
const ReasonDependencyCycle = v1alpha1.ReasonDependencyCycle

// maxCycleRounds bounds how often a solution with a dependency cycle is
// ruled out and solving starts again.
const maxCycleRounds = 100

// Installation is one ExtensionInstallation on the cluster, as the solver
// sees it.
type Installation struct {
	Name           string // "namespace/name", used in texts
	Extension      string
	Range          string // spec.version; "" means any
	Installed      string // the installed version; "" when not installed
	Automatic      bool   // the installed version may move up (within Range)
	AllowDowngrade bool   // the installed version may move down
	// Separable lets the installation run a version of its own, apart
	// from the other installations of its extension, when it cannot share
	// theirs: its content is namespaced only (see the package doc and
	// resolve.Separable). Solved apart it is an instance: its Selection is
	// Resolution.Selected[InstanceKey(Extension, Name)], its dependencies are met
	// by the shared versions, and it meets no other extension's
	// dependency.
	Separable bool
	// ClusterScoped says, for texts, what makes an installation that is
	// not Separable share its extension's version: "x 1.0.0 has the
	// cluster-scoped CustomResourceDefinition widgets.example.com". ""
	// when nothing is known.
	ClusterScoped string
	// Channel is spec.channel, for an operator package (versions with
	// channels): "" means the package's defaultChannel, or, without one,
	// every channel.
	Channel string
	// AnyInRange is spec.upgrade.graph AnyInRange: an installed operator
	// may move to any version of its channel in Range, not only along the
	// channel's upgrade edges.
	AnyInRange bool
}

// InstanceKey is the key of an instance's Selection in Resolution.Selected:
// "x@namespace/name".
func InstanceKey(extension, installation string) string { return extension + "@" + installation }

// Problem is every installation on one cluster and the cluster's version.
type Problem struct {
	// ClusterVersion is as discovery reports it: "v1.33.4-gke.100",
	// "v1.31.2+k3s1".
	ClusterVersion string
	Installations  []Installation
	// Provided maps an API ("group/version/Kind") whose CRD is on the
	// cluster, owned by an installation, to that installation's
	// extension: it meets an operator's requirement of the API whatever
	// the catalogs say (see withRequirements). Nil when unknown.
	Provided map[string]string
}

// Selection is the version chosen for one extension.
type Selection struct {
	Extension string
	Version   v1alpha1.ExtensionVersion
	// RequiredBy names, for an added dependency, the selected versions that
	// need it ("hello 0.2.0"); for a requested extension, the installations
	// that request it. Sorted.
	RequiredBy []string
	// Kept is true when the installed version was kept although a higher
	// one satisfies every installation's range and the cluster.
	Kept bool
	// Instance names the installation ("namespace/name") that a Selection
	// serves alone, as an instance; "" for the version the extension's
	// shared installations and its dependents agree on.
	Instance string
	// Channel is the channel an operator package was resolved in ("" for
	// other extensions, and for a package without a defaultChannel whose
	// installation names no channel: every channel counted);
	// DefaultChannelUsed is set when it is the package's defaultChannel
	// because spec.channel is empty.
	Channel            string
	DefaultChannelUsed bool
	// Target is, when the chosen version is not a direct successor of the
	// installed one, the version the upgrade graph leads to; Version is
	// then the next hop, the first edge on the way. Install Version, wait
	// until it is healthy, and solve again. Nil when Version is the
	// target. Hop says so in words: "x 0.3.0 is not a successor of 0.1.0
	// in channel stable; 0.2.0 is — it will be installed first".
	Target *v1alpha1.ExtensionVersion
	Hop    string
	// Providers are how the version's required APIs are met: the
	// extension each one became a dependency on, and why that one (see
	// withRequirements). Version.Dependencies holds those dependencies.
	Providers []ProviderChoice
}

// Resolution is the outcome of a Solve.
type Resolution struct {
	// Selected holds one version per extension on the cluster, requested
	// or added, by extension name, and one per instance, by
	// InstanceKey. Use For to find an installation's.
	Selected map[string]Selection
	// Added are the dependencies no installation requests, sorted by
	// extension; the caller creates installations for them.
	Added []Selection
	// InstallOrder lists the keys of Selected, dependencies first, ties by
	// extension name (an extension's instances after its shared version);
	// UninstallOrder is its reverse.
	InstallOrder   []string
	UninstallOrder []string
	// Failed maps an installation name to why it cannot be satisfied
	// together with the installations that did not fail.
	Failed map[string]*Explanation
}

// For returns the Selection that serves installation ("namespace/name")
// of extension: its own when it was solved as an instance, else the
// extension's shared one.
func (p *Resolution) For(extension, installation string) (Selection, bool) {
	if sel, ok := p.Selected[InstanceKey(extension, installation)]; ok {
		return sel, true
	}
	sel, ok := p.Selected[extension]
	return sel, ok
}

// problem is one Solve call: the installations sorted by name, each with its
// requirements, and what the texts need.
type problem struct {
	ix         *Index
	cluster    *semver.Version
	clusterRaw string
	kube       *kubeCheck
	insts      []Installation
	installed  []int // per installation: version index of Installed, -1
	reqs       [][]requirement
	prefer     []int
	apart      []bool          // per installation: solved as an instance, on its own copy of its extension
	channels   []channelChoice // per installation: the channel it resolves in
}

// attempt is one solve over a set of installations.
type attempt struct {
	s      *solver
	fail   int   // the empty incompatibility, -1 on success
	chosen []int // on success: version index per extension, -1 if absent
	// stuck is a cycle that kept coming back after maxCycleRounds.
	stuck []pick
	// gaveUp is a bounded solve that stopped before an answer.
	gaveUp bool
}

func (a attempt) ok() bool { return a.fail < 0 && a.stuck == nil && !a.gaveUp }

// release returns the attempt's solver to its pool; afterwards only chosen
// and stuck may be read.
func (a attempt) release() { a.s.release() }

// solvable reports whether a solves, and releases it.
func (a attempt) solvable() bool {
	defer a.release()
	return a.ok()
}

// Solve chooses one version per extension for the whole cluster. See the
// package documentation for the rules. Solve is deterministic and never
// fails as a whole: installations that cannot be satisfied are in
// Resolution.Failed, the rest are solved without them.
func (ix *Index) Solve(p Problem) *Resolution {
	if v := ix.variantFor(p); v != ix {
		return v.Solve(p)
	}
	resolution := &Resolution{Selected: map[string]Selection{}, Failed: map[string]*Explanation{}}
	insts := slices.Clone(p.Installations)
	sort.SliceStable(insts, func(i, j int) bool { return insts[i].Name < insts[j].Name })

	cluster, err := ParseClusterVersion(p.ClusterVersion)
	if err != nil {
		for _, in := range insts {
			resolution.Failed[in.Name] = &Explanation{
				Reason: v1alpha1.ReasonClusterUnavailable,
				Message: fmt.Sprintf("the cluster reports Kubernetes version %q, which is not a semantic version; "+
					"no version of %s can be checked against it", p.ClusterVersion, in.Extension),
				Installations: []string{in.Name},
			}
		}
		return resolution
	}
	pr := &problem{ix: ix, cluster: cluster, clusterRaw: strings.TrimSpace(p.ClusterVersion),
		kube: ix.kubeChecker(cluster), insts: insts}
	pr.prefer = make([]int, len(ix.exts))
	for i := range pr.prefer {
		pr.prefer[i] = -1
	}
	pr.installed = make([]int, len(insts))
	pr.reqs = make([][]requirement, len(insts))
	pr.apart = make([]bool, len(insts))
	pr.channels = make([]channelChoice, len(insts))
	var active []int
	for i := range insts {
		if ex := pr.require(i); ex != nil {
			resolution.Failed[insts[i].Name] = ex
			continue
		}
		active = append(active, i)
	}

	// Drop one installation named in each conflict until the rest solve
	// (or, for a Separable one that leaves the conflict so, solve it apart
	// from then on); then take back every dropped one that fits with the
	// final set, apart if it fits only so, so that each failure conflicts
	// with installations that did not fail.
	var dropped []int
	final := pr.solve(active, pr.kube)
	for !final.ok() {
		victim, separate := pr.victim(final, active)
		final.release()
		if separate {
			pr.separate(victim)
		} else {
			dropped = append(dropped, victim)
			active = slices.DeleteFunc(active, func(i int) bool { return i == victim })
		}
		final = pr.solve(active, pr.kube)
	}
	for _, d := range dropped {
		with := append(slices.Clone(active), d)
		slices.Sort(with)
		a := pr.solve(with, pr.kube)
		if !a.ok() && insts[d].Separable && !pr.apart[d] {
			a.release()
			pr.separate(d)
			a = pr.solve(with, pr.kube)
		}
		if a.ok() {
			final.release()
			active, final = with, a
			continue
		}
		resolution.Failed[insts[d].Name] = pr.explain(d, a, active)
		a.release()
	}
	pr.fillResolution(resolution, active, final.chosen)
	final.release()
	return resolution
}

// separate solves installation i apart from now on, on its own copy of
// its extension. The problem's Index gains a copy per separated
// installation, so a problem without conflicts costs none.
func (pr *problem) separate(i int) {
	pr.apart[i] = true
	in := pr.insts[i]
	if pr.ix.base == nil {
		pr.ix = pr.ix.forInstances([]Installation{in})
	} else {
		pr.ix.addCopy(instanceOf{key: InstanceKey(in.Extension, in.Name), pkg: pr.ix.byName[in.Extension]})
	}
	for len(pr.prefer) < len(pr.ix.exts) {
		pr.prefer = append(pr.prefer, -1)
	}
	_ = pr.require(i) // it passed on the shared extension, so it passes on a copy
}

// require states installation i's requirements (see requirements), on
// its own copy of its extension when it is solved apart, and notes its
// installed version as the one to prefer.
func (pr *problem) require(i int) *Explanation {
	reqs, ex := pr.requirements(i)
	if ex != nil {
		return ex
	}
	pr.reqs[i] = reqs
	if pkg, in := reqs[0].pkg, pr.installed[i]; in >= 0 && pr.prefer[pkg] < 0 {
		pr.prefer[pkg] = in
	}
	return nil
}

// forInstances returns ix with a copy of the extension of each Separable
// installation among insts (see withInstances), to solve it apart, or ix
// itself when there is none.
func (ix *Index) forInstances(insts []Installation) *Index {
	var copies []instanceOf
	for _, in := range insts {
		if !in.Separable {
			continue
		}
		if pkg, known := ix.byName[in.Extension]; known {
			copies = append(copies, instanceOf{key: InstanceKey(in.Extension, in.Name), pkg: pkg})
		}
	}
	if len(copies) == 0 {
		return ix
	}
	return ix.withInstances(copies)
}

// requirements turns an installation into constraints on its extension:
// its range, and the installed version's policy. Problems that need no
// solving (unknown extension, bad range, nothing in range) come back as an
// Explanation.
func (pr *problem) requirements(i int) ([]requirement, *Explanation) {
	in := pr.insts[i]
	pr.installed[i] = -1
	pkg, ok := pr.ix.byName[in.Extension]
	if !ok {
		return nil, &Explanation{
			Reason: v1alpha1.ReasonExtensionNotFound,
			Message: fmt.Sprintf("no catalog offers an extension named %q (spec.extension of %s); check the name with "+
				"`kubectl get extensions`, or add a Catalog that offers %s.", in.Extension, in.Name, in.Extension),
			Installations: []string{in.Name},
		}
	}
	if pr.apart[i] {
		pkg = pr.ix.instances[InstanceKey(in.Extension, in.Name)]
	}
	e := &pr.ix.exts[pkg]
	inRange, c, err := pr.ix.installRange(pkg, in.Range)
	if err != nil {
		return nil, &Explanation{
			Reason: v1alpha1.ReasonNoMatchingVersion,
			Message: fmt.Sprintf("spec.version of %s: %q is not a version range (%v); use e.g. \"^1.4\", \">=1.2 <2\" or \"*\".",
				in.Name, in.Range, err),
			Installations: []string{in.Name},
		}
	}
	if inRange.empty() {
		return nil, &Explanation{
			Reason:        v1alpha1.ReasonNoMatchingVersion,
			Message:       pr.noVersionInRange(in, e, c),
			Installations: []string{in.Name},
		}
	}
	if in.Installed == "" {
		set, ex := pr.channelRequirement(i, e, inRange, -1, nil)
		if ex != nil {
			return nil, ex
		}
		return []requirement{{inst: i, pkg: pkg, set: set, kind: causeRange}}, nil
	}
	// Installed is normally a catalog version as written, found without
	// parsing; versions are unique and ascending, so those not below it
	// are the ones from its index on.
	idx, found := e.byVersion[in.Installed]
	var iv *semver.Version
	if !found {
		if iv, err = semver.NewVersion(in.Installed); err != nil {
			// not a version Annex installed: treat as not installed
			set, ex := pr.channelRequirement(i, e, inRange, -1, nil)
			if ex != nil {
				return nil, ex
			}
			return []requirement{{inst: i, pkg: pkg, set: set, kind: causeRange}}, nil
		}
		idx = -1
		for k := range e.versions {
			if e.versions[k].sv.Equal(iv) {
				idx = k
			}
		}
	}
	pr.installed[i] = idx
	isv := iv
	if idx >= 0 {
		isv = e.versions[idx].sv
	}
	set, ex := pr.channelRequirement(i, e, inRange, idx, isv)
	if ex != nil {
		return nil, ex
	}
	reqs := []requirement{{inst: i, pkg: pkg, set: set, kind: causeRange}}
	switch {
	case !in.Automatic && idx < 0:
		return nil, &Explanation{
			Reason: v1alpha1.ReasonNoMatchingVersion,
			Message: fmt.Sprintf("%s keeps %s %s (installed; automatic upgrades are off), but no catalog offers %s %s any more. "+
				"Turn on spec.upgrade.automatic of %s, or add a Catalog that offers %s %s.",
				in.Name, in.Extension, in.Installed, in.Extension, in.Installed, in.Name, in.Extension, in.Installed),
			Installations: []string{in.Name},
		}
	case !in.Automatic:
		one := make(vset, words(len(e.versions)))
		one.add(idx)
		reqs = append(reqs, requirement{inst: i, pkg: pkg, set: one, kind: causePin})
	case !in.AllowDowngrade:
		up := make(vset, words(len(e.versions)))
		for k := range e.versions {
			if found && k >= idx || !found && !e.versions[k].sv.LessThan(iv) {
				up.add(k)
			}
		}
		if up.empty() {
			return nil, &Explanation{
				Reason: v1alpha1.ReasonNoMatchingVersion,
				Message: fmt.Sprintf("%s has %s %s installed and downgrades are not allowed, but no catalog offers %s %s or higher any more. "+
					"Set spec.upgrade.allowDowngrade of %s, or add a Catalog that offers %s >=%s.",
					in.Name, in.Extension, in.Installed, in.Extension, in.Installed, in.Name, in.Extension, in.Installed),
				Installations: []string{in.Name},
			}
		}
		reqs = append(reqs, requirement{inst: i, pkg: pkg, set: up, kind: causeNoDowngrade})
	}
	return reqs, nil
}

func (pr *problem) noVersionInRange(in Installation, e *extIndex, c *semver.Constraints) string {
	var avail []string
	hint := ""
	for k := len(e.versions) - 1; k >= 0; k-- {
		v := e.versions[k].sv
		if len(avail) < 5 {
			avail = append(avail, e.versions[k].spec.Version)
		}
		release := semver.New(v.Major(), v.Minor(), v.Patch(), "", "")
		if hint == "" && v.Prerelease() != "" && c.Check(release) {
			hint = fmt.Sprintf("; pre-releases match only a range that names one, such as \">=%s-0\"", release)
		}
	}
	if n := len(e.versions); n > 5 {
		avail = append(avail, fmt.Sprintf("and %d more", n-5))
	}
	return fmt.Sprintf("%s wants %s %s, but no catalog offers a version in that range (available: %s)%s. Change spec.version of %s.",
		in.Name, in.Extension, rangeOrAny(in.Range), strings.Join(avail, ", "), hint, in.Name)
}

func rangeOrAny(r string) string {
	if r = strings.TrimSpace(r); r == "" {
		return "*"
	}
	return r
}

// solve runs PubGrub over the given installations; a solution with a
// dependency cycle is ruled out by a new incompatibility and solving starts
// again.
func (pr *problem) solve(active []int, kube *kubeCheck) attempt {
	var reqs []requirement
	for _, i := range active {
		reqs = append(reqs, pr.reqs[i]...)
	}
	return pr.solveReqs(reqs, kube, 0)
}

// solveReqs solves reqs; with maxConflicts positive, a run that meets more
// conflicts gives up and the attempt is not ok.
func (pr *problem) solveReqs(reqs []requirement, kube *kubeCheck, maxConflicts int) attempt {
	var extra []incompat
	for round := 0; ; round++ {
		s := newSolver(pr.ix, kube, reqs, pr.prefer, extra)
		s.maxConflicts = maxConflicts
		if f := s.run(); f >= 0 {
			return attempt{s: s, fail: f, gaveUp: s.gaveUp}
		}
		chosen := s.chosen()
		cyc := findCycle(pr.ix, chosen)
		if cyc == nil {
			return attempt{s: s, fail: -1, chosen: chosen}
		}
		if round == maxCycleRounds {
			return attempt{s: s, fail: -1, chosen: chosen, stuck: cyc}
		}
		s.release()
		inc := incompat{kind: causeCycle, cycle: cyc}
		for _, p := range cyc {
			one := make(vset, words(len(pr.ix.exts[p.pkg].versions)))
			one.add(p.ver)
			inc.terms = mergeTerm(inc.terms, term{p.pkg, true, one}, newSet)
		}
		extra = append(extra, inc)
	}
}

// findCycle returns the first dependency cycle among the chosen versions
// (depth-first in name order), or nil.
func findCycle(ix *Index, chosen []int) []pick {
	const (
		white = iota
		grey
		black
	)
	color := make([]uint8, len(chosen))
	var stack []pick
	var found []pick
	var visit func(p int) bool
	visit = func(p int) bool {
		color[p] = grey
		stack = append(stack, pick{p, chosen[p]})
		for _, g := range depsSorted(ix, p, chosen[p]) {
			if g.to < 0 || chosen[g.to] < 0 {
				continue
			}
			switch color[g.to] {
			case grey:
				for k := range stack {
					if stack[k].pkg == g.to {
						found = slices.Clone(stack[k:])
						return true
					}
				}
			case white:
				if visit(g.to) {
					return true
				}
			}
		}
		stack = stack[:len(stack)-1]
		color[p] = black
		return false
	}
	for p := range chosen {
		if chosen[p] >= 0 && color[p] == white && visit(p) {
			return found
		}
	}
	return nil
}

// depsSorted returns a version's dependency groups ordered by target id.
func depsSorted(ix *Index, pkg, ver int) []*depGroup {
	deps := slices.Clone(ix.exts[pkg].versions[ver].deps)
	sort.Slice(deps, func(i, j int) bool { return deps[i].to < deps[j].to })
	return deps
}

// named returns the installations whose requirements the failure used.
func (pr *problem) named(a attempt) []int {
	if a.stuck != nil {
		return pr.reaching(a)
	}
	var out []int
	for _, id := range a.s.leaves(a.fail) {
		inc := &a.s.incs[id]
		if inc.kind == causeRange || inc.kind == causePin || inc.kind == causeNoDowngrade {
			out = append(out, a.s.reqs[inc.req].inst)
		}
	}
	slices.Sort(out)
	return slices.Compact(out)
}

// reaching returns the installations whose extension depends, directly or
// not, on a cycle that could not be ruled out.
func (pr *problem) reaching(a attempt) []int {
	inCycle := map[int]bool{}
	for _, p := range a.stuck {
		inCycle[p.pkg] = true
	}
	var out []int
	for _, r := range a.s.reqs {
		if r.kind == causeRange && pr.reaches(r.pkg, a.chosen, inCycle, map[int]bool{}) {
			out = append(out, r.inst)
		}
	}
	return out
}

func (pr *problem) reaches(p int, chosen []int, target, seen map[int]bool) bool {
	if target[p] {
		return true
	}
	if seen[p] || chosen[p] < 0 {
		return false
	}
	seen[p] = true
	for _, g := range pr.ix.exts[p].versions[chosen[p]].deps {
		if g.to >= 0 && pr.reaches(g.to, chosen, target, seen) {
			return true
		}
	}
	return false
}

// victim picks which installation named in a failure to set aside, and
// whether to separate it rather than drop it: first one that may run
// apart and cannot share its extension's version with what else the
// failure asks of it (another installation's requirement, or a
// dependency, admits none of the versions it admits); then one not yet
// installed before one that is running; then the last by name. Other
// Separable ones are dropped and, if they fit only so, taken back apart.
func (pr *problem) victim(a attempt, active []int) (int, bool) {
	named := pr.named(a)
	if len(named) == 0 {
		return active[len(active)-1], false // cannot happen: a failure always rests on a requirement
	}
	var leaves []int
	if a.stuck == nil {
		leaves = a.s.leaves(a.fail)
	}
	cannotShare := func(i int) bool {
		if !pr.insts[i].Separable || pr.apart[i] {
			return false
		}
		pkg := pr.reqs[i][0].pkg
		mine := fullSet(len(pr.ix.exts[pkg].versions))
		for _, r := range pr.reqs[i] {
			mine = mine.and(r.set)
		}
		for _, id := range leaves {
			inc := &a.s.incs[id]
			switch inc.kind {
			case causeRange, causePin, causeNoDowngrade:
				if r := a.s.reqs[inc.req]; r.inst != i && r.pkg == pkg && r.set.disjoint(mine) {
					return true
				}
			case causeDependency:
				if g := inc.group; g.to == pkg && g.from != pkg && g.allowed.disjoint(mine) {
					return true
				}
			}
		}
		return false
	}
	separate := map[int]bool{}
	for _, i := range named {
		separate[i] = cannotShare(i)
	}
	best := named[0]
	for _, i := range named[1:] {
		lb, li := separate[best], separate[i]
		bi, ii := pr.insts[best].Installed != "", pr.insts[i].Installed != ""
		if li && !lb || li == lb && (bi && !ii || bi == ii && i > best) {
			best = i
		}
	}
	return best, separate[best]
}

// leaves returns the external incompatibilities a derivation rests on, in
// depth-first order, each once.
func (s *solver) leaves(root int) []int {
	var out []int
	seen := map[int]bool{}
	var walk func(id int)
	walk = func(id int) {
		if seen[id] {
			return
		}
		seen[id] = true
		inc := &s.incs[id]
		if inc.kind != causeDerived {
			out = append(out, id)
			return
		}
		walk(inc.left)
		walk(inc.right)
	}
	walk(root)
	return out
}

// fillResolution turns the chosen versions into Selections and orders.
func (pr *problem) fillResolution(resolution *Resolution, active []int, chosen []int) {
	ix := pr.ix
	requested := map[int][]string{}
	for _, i := range active {
		pkg := pr.reqs[i][0].pkg
		requested[pkg] = append(requested[pkg], pr.insts[i].Name)
	}
	neededBy := make([][]string, len(chosen))
	selected, added := 0, 0
	for p, v := range chosen {
		if v < 0 {
			continue
		}
		selected++
		if _, ok := requested[p]; !ok {
			added++
		}
		for _, g := range ix.exts[p].versions[v].deps {
			if g.to >= 0 && g.to != p {
				neededBy[g.to] = append(neededBy[g.to], ix.exts[p].versions[v].label)
			}
		}
	}
	resolution.Selected = make(map[string]Selection, selected)
	if added > 0 {
		resolution.Added = make([]Selection, 0, added)
	}
	for p, v := range chosen {
		if v < 0 {
			continue
		}
		sel := Selection{Extension: ix.exts[p].name, Version: ix.exts[p].versions[v].spec}
		sel.Providers = ix.choices[ix.exts[p].name+" "+sel.Version.Version]
		if names, ok := requested[p]; ok {
			sel.RequiredBy = names // active is sorted by name already
			sel.Kept = pr.kept(p, v, active)
			if ix.origin(p) != p {
				sel.Instance = names[0] // a copy serves one installation
			}
			// The channel and next hop are the first installation's
			// (by name); the installations sharing a version normally
			// agree on both.
			for _, i := range active {
				if pr.reqs[i][0].pkg == p {
					pr.hop(&sel, i, p, v)
					break
				}
			}
		} else {
			sel.RequiredBy = neededBy[p]
			sort.Strings(sel.RequiredBy)
			resolution.Added = append(resolution.Added, sel)
		}
		resolution.Selected[ix.key(p)] = sel
	}
	resolution.InstallOrder = installOrder(ix, chosen)
	if n := len(resolution.InstallOrder); n > 0 {
		resolution.UninstallOrder = make([]string, n)
		for i, name := range resolution.InstallOrder {
			resolution.UninstallOrder[n-1-i] = name
		}
	}
}

// kept reports whether v is an installed version of pkg while a higher
// version fits every range on pkg and the cluster.
func (pr *problem) kept(pkg, v int, active []int) bool {
	isInstalled := false
	fits := fullSet(len(pr.ix.exts[pkg].versions))
	for _, i := range active {
		if pr.reqs[i][0].pkg != pkg {
			continue
		}
		isInstalled = isInstalled || pr.installed[i] == v
		fits = fits.and(pr.reqs[i][0].set)
	}
	if !isInstalled {
		return false
	}
	vs := pr.ix.exts[pkg].versions
	for k := v + 1; k < len(vs); k++ {
		if fits.has(k) && pr.kube.runsOn(&vs[k]) {
			return true
		}
	}
	return false
}

// installOrder sorts the chosen extensions topologically, dependencies
// first, ties by name, an extension before its instances (Kahn's algorithm
// taking the lowest rank each time; ids are ranks but for instances).
func installOrder(ix *Index, chosen []int) []string {
	rank := func(p int) int { return p }
	if ix.base != nil {
		ranks := make([]int, len(chosen))
		var ids []int
		for p, v := range chosen {
			if v >= 0 {
				ids = append(ids, p)
			}
		}
		slices.SortFunc(ids, func(a, b int) int {
			return cmp.Or(cmp.Compare(ix.exts[a].name, ix.exts[b].name), cmp.Compare(ix.key(a), ix.key(b)))
		})
		for r, p := range ids {
			ranks[p] = r
		}
		rank = func(p int) int { return ranks[p] }
	}
	indeg := make([]int, len(chosen))
	users := make([][]int, len(chosen))
	for p, v := range chosen {
		if v < 0 {
			continue
		}
		for _, g := range ix.exts[p].versions[v].deps {
			if g.to >= 0 && g.to != p && chosen[g.to] >= 0 {
				indeg[p]++
				users[g.to] = append(users[g.to], p)
			}
		}
	}
	ready := minHeap[int]{less: func(a, b int) bool { return rank(a) < rank(b) }}
	n := 0
	for p, v := range chosen {
		if v < 0 {
			continue
		}
		n++
		if indeg[p] == 0 {
			ready.push(p)
		}
	}
	out := make([]string, 0, n)
	for ready.len() > 0 {
		p := ready.pop()
		out = append(out, ix.key(p))
		for _, u := range users[p] {
			if indeg[u]--; indeg[u] == 0 {
				ready.push(u)
			}
		}
	}
	return out
}
