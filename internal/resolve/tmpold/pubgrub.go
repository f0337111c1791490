package resolve

import (
	"sort"

	"github.com/Masterminds/semver/v3"
)

// This file is the PubGrub core: unit propagation over incompatibilities,
// decisions, and conflict resolution that learns a new incompatibility and
// backjumps. Packages are extension ids of an Index; version sets are vsets
// over each extension's known versions. Unlike pub there is no root
// package: the installations' requirements are incompatibilities with one
// negative term, propagated at decision level 0, and solving fails when
// conflict resolution derives the empty incompatibility.

// term says of one extension that its selected version lies in set (pos) or
// that it is either not selected or selected outside set (!pos).
type term struct {
	pkg int
	pos bool
	set vset
}

func (t term) negate() term { return term{t.pkg, !t.pos, t.set} }

// subset reports a ⊆ b for two terms on the same extension.
func subset(a, b term) bool {
	switch {
	case a.pos && b.pos:
		return a.set.subsetOf(b.set)
	case a.pos:
		return a.set.disjoint(b.set)
	case b.pos:
		return false // "not selected" is in a but never in b
	default:
		return b.set.subsetOf(a.set)
	}
}

// disjoint reports a ∩ b = ∅ for two terms on the same extension.
func disjoint(a, b term) bool {
	switch {
	case a.pos && b.pos:
		return a.set.disjoint(b.set)
	case a.pos:
		return a.set.subsetOf(b.set)
	case b.pos:
		return b.set.subsetOf(a.set)
	default:
		return false // both admit "not selected"
	}
}

func intersect(a, b term) term {
	switch {
	case a.pos && b.pos:
		return term{a.pkg, true, a.set.and(b.set)}
	case a.pos:
		return term{a.pkg, true, a.set.andNot(b.set)}
	case b.pos:
		return term{a.pkg, true, b.set.andNot(a.set)}
	default:
		return term{a.pkg, false, a.set.or(b.set)}
	}
}

type causeKind uint8

const (
	causeDerived     causeKind = iota // resolved from two other incompatibilities
	causeRange                        // an installation's spec.version
	causePin                          // an installed version with automatic upgrades off
	causeNoDowngrade                  // an installed version that may not move down
	causeDependency                   // a dependency group (group.allowed may be empty)
	causeKube                         // versions whose kubeVersion excludes the cluster
	causeCycle                        // selected versions that depend on each other in a ring
)

// incompat is a set of terms that must not all hold. External ones carry
// their cause; derived ones the two incompatibilities they came from.
type incompat struct {
	terms       []term
	kind        causeKind
	req         int // causeRange, causePin, causeNoDowngrade: index into solver.reqs
	group       *depGroup
	kubeText    string
	cycle       []pick // causeCycle, in dependency order
	left, right int    // causeDerived
}

// pick is one extension at one version (a version index).
type pick struct{ pkg, ver int }

// requirement is one constraint an installation puts on its extension.
type requirement struct {
	inst int // index into the sorted installations
	pkg  int
	set  vset
	kind causeKind
}

type assignment struct {
	term   term
	level  int
	cause  int // incompatibility id; -1 for a decision
	serial int // unique within a run, from 1
}

// contradiction records which assignment made an incompatibility's term on
// pkg false: the pos-th assignment of pkg, identified by serial.
type contradiction struct {
	pkg, pos, serial int
}

type pkgState struct {
	touched bool
	acc     term  // intersection of the extension's assignments
	decided int   // version index, -1 if none
	assigns []int // indices into solver.assigns, in order
}

// solver is one PubGrub run. It reads the Index and never writes it.
type solver struct {
	ix      *Index
	kubeOK  func(text string) bool
	reqs    []requirement
	prefer  []int // installed version index per extension, -1 if none
	zeros   vset  // read-only; zeros[:words(n)] is the empty set of n versions
	incs    []incompat
	byPkg   [][]int
	assigns []assignment
	pkgs    []pkgState
	touched []int // extensions with assignments, in first-touch order
	level   int
	serial  int
	contra  []contradiction // per incompatibility id
	loaded  []bool          // kube incompatibilities added
	added   map[int]bool    // dependency groups added
}

func newSolver(ix *Index, kubeOK func(string) bool, reqs []requirement, prefer []int, extra []incompat) *solver {
	n := len(ix.exts)
	maxWords := 1
	for i := range ix.exts {
		maxWords = max(maxWords, words(len(ix.exts[i].versions)))
	}
	s := &solver{
		ix: ix, kubeOK: kubeOK, reqs: reqs, prefer: prefer,
		zeros:  make(vset, maxWords),
		byPkg:  make([][]int, n),
		pkgs:   make([]pkgState, n),
		loaded: make([]bool, n),
		added:  map[int]bool{},
	}
	for i := range s.pkgs {
		s.pkgs[i].decided = -1
	}
	for i, r := range reqs {
		s.addIncompat(incompat{terms: []term{{r.pkg, false, r.set}}, kind: r.kind, req: i})
	}
	for _, inc := range extra {
		s.addIncompat(inc)
	}
	return s
}

func (s *solver) any(pkg int) term {
	return term{pkg, false, s.zeros[:words(len(s.ix.exts[pkg].versions))]}
}

// addIncompat stores inc and indexes it under each of its extensions.
func (s *solver) addIncompat(inc incompat) int {
	id := len(s.incs)
	s.incs = append(s.incs, inc)
	for _, t := range inc.terms {
		s.byPkg[t.pkg] = append(s.byPkg[t.pkg], id)
	}
	return id
}

// run solves. It returns -1 on success (chosen holds a version per
// extension, -1 when not selected), or the id of the empty incompatibility
// whose derivation explains the failure.
func (s *solver) run() (failure int) {
	for _, r := range s.reqs {
		if f := s.propagate(r.pkg); f >= 0 {
			return f
		}
	}
	for {
		next, done := s.decide()
		if done {
			return -1
		}
		if f := s.propagate(next); f >= 0 {
			return f
		}
	}
}

// chosen returns the decided version of every extension, -1 when absent.
func (s *solver) chosen() []int {
	out := make([]int, len(s.pkgs))
	for i := range s.pkgs {
		out[i] = s.pkgs[i].decided
	}
	return out
}

type relation uint8

const (
	relSatisfied relation = iota
	relContradicted
	relInconclusive
	relAlmost
)

// relationOf compares the partial solution to one term.
func (s *solver) relationOf(t term) relation {
	st := &s.pkgs[t.pkg]
	acc := st.acc
	if !st.touched {
		acc = s.any(t.pkg)
	}
	switch {
	case subset(acc, t):
		return relSatisfied
	case disjoint(acc, t):
		return relContradicted
	default:
		return relInconclusive
	}
}

// relationInc compares the partial solution to an incompatibility; for
// relAlmost it also returns the one term not yet satisfied.
//
// A contradiction found once is remembered with the assignment that caused
// it: further assignments only narrow a term, so it holds until backtracking
// removes that assignment. This keeps unit propagation's rescans cheap.
func (s *solver) relationInc(id int) (relation, int) {
	if id < len(s.contra) {
		if c := s.contra[id]; c.serial > 0 {
			as := s.pkgs[c.pkg].assigns
			if c.pos < len(as) && s.assigns[as[c.pos]].serial == c.serial {
				return relContradicted, -1
			}
		}
	}
	unsat := -1
	for i, t := range s.incs[id].terms {
		switch s.relationOf(t) {
		case relContradicted:
			if as := s.pkgs[t.pkg].assigns; len(as) > 0 {
				for id >= len(s.contra) {
					s.contra = append(s.contra, contradiction{})
				}
				s.contra[id] = contradiction{pkg: t.pkg, pos: len(as) - 1, serial: s.assigns[as[len(as)-1]].serial}
			}
			return relContradicted, -1
		case relInconclusive:
			if unsat >= 0 {
				return relInconclusive, -1
			}
			unsat = i
		}
	}
	if unsat < 0 {
		return relSatisfied, -1
	}
	return relAlmost, unsat
}

// propagate runs unit propagation from one changed extension. It returns
// the failing incompatibility, or -1.
func (s *solver) propagate(start int) int {
	changed := []int{start}
	for len(changed) > 0 {
		pkg := changed[len(changed)-1]
		changed = changed[:len(changed)-1]
		ids := s.byPkg[pkg]
	scan:
		for i := len(ids) - 1; i >= 0; i-- {
			id := ids[i]
			rel, unsat := s.relationInc(id)
			switch rel {
			case relSatisfied:
				root, ok := s.resolveConflict(id)
				if !ok {
					return root
				}
				_, unsat = s.relationInc(root)
				t := s.incs[root].terms[unsat]
				s.assign(t.negate(), root)
				changed = append(changed[:0], t.pkg)
				break scan
			case relAlmost:
				t := s.incs[id].terms[unsat]
				s.assign(t.negate(), id)
				if !containsInt(changed, t.pkg) {
					changed = append(changed, t.pkg)
				}
			}
		}
	}
	return -1
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// assign records a derivation (cause >= 0) or a decision (cause -1).
func (s *solver) assign(t term, cause int) {
	st := &s.pkgs[t.pkg]
	if !st.touched {
		st.touched = true
		st.acc = t
		s.touched = append(s.touched, t.pkg)
	} else {
		st.acc = intersect(st.acc, t)
	}
	st.assigns = append(st.assigns, len(s.assigns))
	s.serial++
	s.assigns = append(s.assigns, assignment{term: t, level: s.level, cause: cause, serial: s.serial})
}

// decide picks the undecided extension with the fewest candidate versions
// (ties: lowest id, i.e. name order) and its preferred version. It returns
// the extension to propagate from, or done when every required extension
// has a version.
func (s *solver) decide() (pkg int, done bool) {
	best, bestCount := -1, 0
	for _, p := range s.touched {
		st := &s.pkgs[p]
		if !st.acc.pos || st.decided >= 0 {
			continue
		}
		c := st.acc.set.count()
		if best < 0 || c < bestCount || (c == bestCount && p < best) {
			best, bestCount = p, c
		}
	}
	if best < 0 {
		return 0, true
	}
	if !s.loaded[best] {
		s.loaded[best] = true
		s.addKube(best)
		return best, false
	}
	ver := s.choose(best, s.pkgs[best].acc.set)
	e := &s.ix.exts[best]
	conflicting := false
	for _, g := range e.versions[ver].deps {
		if s.added[g.id] {
			continue
		}
		s.added[g.id] = true
		inc, ok := s.depIncompat(g)
		if !ok {
			continue
		}
		id := s.addIncompat(inc)
		// pub's rule: if the decision would satisfy a new incompatibility
		// outright, skip it and let propagation exclude the version.
		if !conflicting && s.othersSatisfied(id, best) {
			conflicting = true
		}
	}
	if !conflicting {
		s.level++
		one := make(vset, words(len(e.versions)))
		one.add(ver)
		s.assign(term{best, true, one}, -1)
		s.pkgs[best].decided = ver
	}
	return best, false
}

func (s *solver) othersSatisfied(id, pkg int) bool {
	for _, t := range s.incs[id].terms {
		if t.pkg != pkg && s.relationOf(t) != relSatisfied {
			return false
		}
	}
	return true
}

// addKube adds, for each kubeVersion text that excludes the cluster, the
// incompatibility "none of these versions".
func (s *solver) addKube(pkg int) {
	vs := s.ix.exts[pkg].versions
	var texts []string
	sets := map[string]vset{}
	for i := range vs {
		if vs[i].kube == nil || s.kubeOK(vs[i].kubeText) {
			continue
		}
		set, ok := sets[vs[i].kubeText]
		if !ok {
			set = make(vset, words(len(vs)))
			sets[vs[i].kubeText] = set
			texts = append(texts, vs[i].kubeText)
		}
		set.add(i)
	}
	sort.Strings(texts)
	for _, text := range texts {
		s.addIncompat(incompat{terms: []term{{pkg, true, sets[text]}}, kind: causeKube, kubeText: text})
	}
}

// depIncompat turns a dependency group into {from ∈ versions, not to ∈
// allowed}; false when it says nothing (a self-dependency every version
// satisfies).
func (s *solver) depIncompat(g *depGroup) (incompat, bool) {
	inc := incompat{kind: causeDependency, group: g}
	switch {
	case g.to < 0 || g.allowed.empty():
		inc.terms = []term{{g.from, true, g.versions}}
	case g.to == g.from:
		rest := g.versions.andNot(g.allowed)
		if rest.empty() {
			return inc, false
		}
		inc.terms = []term{{g.from, true, rest}}
	default:
		inc.terms = []term{{g.from, true, g.versions}, {g.to, false, g.allowed}}
	}
	return inc, true
}

// choose applies the preferences: keep the installed version unless a
// higher current (non-deprecated) one is allowed; otherwise the highest
// current version; a deprecated one only when nothing else is allowed.
func (s *solver) choose(pkg int, allowed vset) int {
	current := allowed.and(s.ix.exts[pkg].current).highest()
	if in := s.prefer[pkg]; in >= 0 && allowed.has(in) && current <= in {
		return in
	}
	if current >= 0 {
		return current
	}
	return allowed.highest()
}

// resolveConflict is PubGrub's conflict resolution. It returns the learned
// incompatibility after backjumping, or the empty incompatibility and false
// when solving has failed.
func (s *solver) resolveConflict(id int) (int, bool) {
	learned := false
	for {
		inc := &s.incs[id]
		if len(inc.terms) == 0 {
			return id, false
		}
		satIdx, satTerm, prevLevel := s.satisfier(id)
		sat := s.assigns[satIdx]
		if sat.cause < 0 || prevLevel < sat.level {
			s.backtrack(prevLevel)
			if learned {
				for _, t := range s.incs[id].terms {
					s.byPkg[t.pkg] = append(s.byPkg[t.pkg], id)
				}
			}
			return id, true
		}
		cause := &s.incs[sat.cause]
		var terms []term
		for _, t := range inc.terms {
			if t.pkg != satTerm.pkg {
				terms = mergeTerm(terms, t)
			}
		}
		for _, t := range cause.terms {
			if t.pkg != satTerm.pkg {
				terms = mergeTerm(terms, t)
			}
		}
		if !subset(sat.term, satTerm) {
			terms = mergeTerm(terms, intersect(sat.term, satTerm.negate()).negate())
		}
		sort.Slice(terms, func(i, j int) bool { return terms[i].pkg < terms[j].pkg })
		s.incs = append(s.incs, incompat{terms: terms, kind: causeDerived, left: id, right: sat.cause})
		id = len(s.incs) - 1
		learned = true
	}
}

// mergeTerm adds t to terms, intersecting it with a term on the same
// extension.
func mergeTerm(terms []term, t term) []term {
	for i := range terms {
		if terms[i].pkg == t.pkg {
			terms[i] = intersect(terms[i], t)
			return terms
		}
	}
	return append(terms, t)
}

// satisfier finds the earliest assignment that makes the partial solution
// satisfy incompatibility id, the term it satisfies, and the decision level
// of the previous satisfier (0 when there is none).
func (s *solver) satisfier(id int) (satIdx int, satTerm term, prevLevel int) {
	terms := s.incs[id].terms
	first := make([]int, len(terms))
	satIdx = -1
	for i, t := range terms {
		first[i] = s.firstSatisfying(t)
		if first[i] > satIdx {
			satIdx, satTerm = first[i], t
		}
	}
	for i, t := range terms {
		if t.pkg != satTerm.pkg {
			prevLevel = max(prevLevel, s.assigns[first[i]].level)
		}
	}
	sat := s.assigns[satIdx].term
	if !subset(sat, satTerm) {
		var acc term
		for k, ai := range s.pkgs[satTerm.pkg].assigns {
			if ai >= satIdx {
				break
			}
			if k == 0 {
				acc = s.assigns[ai].term
			} else {
				acc = intersect(acc, s.assigns[ai].term)
			}
			if subset(intersect(acc, sat), satTerm) {
				prevLevel = max(prevLevel, s.assigns[ai].level)
				break
			}
		}
	}
	return satIdx, satTerm, prevLevel
}

// firstSatisfying returns the index of the earliest assignment after which
// the extension's assignments satisfy t.
func (s *solver) firstSatisfying(t term) int {
	var acc term
	for k, ai := range s.pkgs[t.pkg].assigns {
		if k == 0 {
			acc = s.assigns[ai].term
		} else {
			acc = intersect(acc, s.assigns[ai].term)
		}
		if subset(acc, t) {
			return ai
		}
	}
	panic("resolve: incompatibility not satisfied during conflict resolution")
}

// backtrack removes every assignment above level.
func (s *solver) backtrack(level int) {
	n := len(s.assigns)
	for n > 0 && s.assigns[n-1].level > level {
		n--
	}
	for _, a := range s.assigns[n:] {
		st := &s.pkgs[a.term.pkg]
		if a.cause < 0 {
			st.decided = -1
		}
	}
	dirty := map[int]bool{}
	for _, a := range s.assigns[n:] {
		dirty[a.term.pkg] = true
	}
	s.assigns = s.assigns[:n]
	for pkg := range dirty {
		st := &s.pkgs[pkg]
		k := len(st.assigns)
		for k > 0 && st.assigns[k-1] >= n {
			k--
		}
		st.assigns = st.assigns[:k]
		if k == 0 {
			st.touched = false
			continue
		}
		st.acc = s.assigns[st.assigns[0]].term
		for _, ai := range st.assigns[1:] {
			st.acc = intersect(st.acc, s.assigns[ai].term)
		}
	}
	kept := s.touched[:0]
	for _, p := range s.touched {
		if s.pkgs[p].touched {
			kept = append(kept, p)
		}
	}
	s.touched = kept
	s.level = level
}

// kubeChecker returns a cached test of kubeVersion texts against cluster.
func kubeChecker(cluster *semver.Version) func(string) bool {
	cache := map[string]bool{}
	return func(text string) bool {
		ok, seen := cache[text]
		if !seen {
			ok = KubeVersionAllows(text, cluster)
			cache[text] = ok
		}
		return ok
	}
}
