package resolve

import (
	"cmp"
	"slices"

	"github.com/Masterminds/semver/v3"
)

// This file is the PubGrub core: unit propagation over incompatibilities,
// decisions, and conflict resolution that learns a new incompatibility and
// backjumps. Packages are extension ids of an Index; version sets are vsets
// over each extension's known versions. Unlike pub there is no root
// package: the installations' requirements are incompatibilities with one
// negative term, propagated at decision level 0, and solving fails when
// conflict resolution derives the empty incompatibility.
//
// Unit propagation uses two watched terms per incompatibility, as CDCL SAT
// solvers do with literals: an incompatibility can only become almost
// satisfied (one term left) or satisfied when a term it watches becomes
// satisfied, so a change to an extension revisits only the
// incompatibilities that watch a term on it. See propagate for the
// invariant that makes this complete.

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

// intersectInto writes a ∩ b into dst (len(dst) == len(a.set)) and returns
// it as a term; dst may be a.set or b.set.
func intersectInto(dst vset, a, b term) term {
	switch {
	case a.pos && b.pos:
		return term{a.pkg, true, dst.setAnd(a.set, b.set)}
	case a.pos:
		return term{a.pkg, true, dst.setAndNot(a.set, b.set)}
	case b.pos:
		return term{a.pkg, true, dst.setAndNot(b.set, a.set)}
	default:
		return term{a.pkg, false, dst.setOr(a.set, b.set)}
	}
}

// intersect returns a ∩ b in newly allocated memory.
func intersect(a, b term) term {
	return intersectInto(make(vset, len(a.set)), a, b)
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
	// watch holds the indices into terms of the watched terms (equal for a
	// one-term incompatibility); active is false for a derived
	// incompatibility that only explains another and takes no part in
	// propagation.
	watch  [2]int
	active bool
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
	acc    term // the intersection of the extension's assignments up to this one
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
	count   int   // acc.set.count() when acc.pos: the candidates left
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
	watches [][]int // per extension: ids of the incompatibilities watching a term on it
	fresh   []int   // ids added since the last propagation, not yet checked
	assigns []assignment
	pkgs    []pkgState
	touched []int // extensions with assignments, in first-touch order
	level   int
	serial  int
	contra  []contradiction // per incompatibility id
	loaded  []bool          // kube incompatibilities added
	added   []bool          // per dependency group id: incompatibility added
	changed []int           // propagate's work stack
	mem     vset            // arena the solver's sets are cut from
	kubePkgs []int
	pending  []int
	depsDone []bool
	// propagateFn replaces propagate when set; tests use it to compare
	// against a reference propagation.
	propagateFn func(s *solver, start int) int
}

// testHookPropagate, when set by a test, is every new solver's
// propagateFn.
var testHookPropagate func(s *solver, start int) int

func newSolver(ix *Index, kubeOK func(string) bool, reqs []requirement, prefer []int, extra []incompat) *solver {
	n := len(ix.exts)
	s := &solver{
		ix: ix, kubeOK: kubeOK, reqs: reqs, prefer: prefer,
		zeros:       make(vset, max(1, ix.maxWords)),
		watches:     make([][]int, n),
		pkgs:        make([]pkgState, n),
		loaded:      make([]bool, n),
		depsDone:    make([]bool, n),
		added:       make([]bool, ix.groups),
		propagateFn: testHookPropagate,
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
	// EXPERIMENT: kube for every reachable extension at level 0.
	var queue []int
	for _, r := range reqs {
		if !s.loaded[r.pkg] {
			s.loaded[r.pkg] = true
			queue = append(queue, r.pkg)
		}
	}
	for len(queue) > 0 {
		p := queue[0]
		queue = queue[1:]
		s.addKube(p)
		s.addDeps(p)
		s.kubePkgs = append(s.kubePkgs, p)
		for _, v := range ix.exts[p].versions {
			for _, g := range v.deps {
				if g.to >= 0 && !s.loaded[g.to] {
					s.loaded[g.to] = true
					queue = append(queue, g.to)
				}
			}
		}
	}
	// Nothing is assigned yet, so any two terms may be watched; run
	// propagates from each requirement's extension.
	for _, id := range s.fresh {
		s.watchBest(id, -1)
	}
	s.fresh = s.fresh[:0]
	return s
}

// alloc returns an empty set of n words cut from the solver's arena, so a
// run allocates a few large blocks instead of one slice per set.
func (s *solver) alloc(n int) vset {
	if len(s.mem) < n {
		s.mem = make(vset, max(1024, n))
	}
	v := s.mem[:n:n]
	s.mem = s.mem[n:]
	return v
}

func (s *solver) any(pkg int) term {
	return term{pkg, false, s.zeros[:words(len(s.ix.exts[pkg].versions))]}
}

// addIncompat stores inc and queues it for the next propagation, which
// checks it in full and chooses its watched terms.
func (s *solver) addIncompat(inc incompat) int {
	id := len(s.incs)
	inc.active = true
	s.incs = append(s.incs, inc)
	s.fresh = append(s.fresh, id)
	return id
}

// watchBest chooses the watched terms of incompatibility id: unsat (a term
// index, or -1) first, then terms that are not satisfied, then the
// satisfied terms whose satisfier came last. Watching the latest satisfied
// term keeps the invariant across backjumps: undoing an assignment undoes
// every later one too.
func (s *solver) watchBest(id, unsat int) {
	inc := &s.incs[id]
	score := func(i int) int {
		if i == unsat {
			return 1 << 62
		}
		if s.relationOf(inc.terms[i]) != relSatisfied {
			return 1<<62 - 1
		}
		return s.firstSatisfying(inc.terms[i])
	}
	best, second := -1, -1
	bestScore, secondScore := -1, -1
	for i := range inc.terms {
		switch sc := score(i); {
		case sc > bestScore:
			second, secondScore = best, bestScore
			best, bestScore = i, sc
		case sc > secondScore:
			second, secondScore = i, sc
		}
	}
	if second < 0 {
		second = best
	}
	inc.watch = [2]int{best, second}
	if len(inc.terms) == 0 {
		return
	}
	s.watches[inc.terms[best].pkg] = append(s.watches[inc.terms[best].pkg], id)
	if second != best {
		s.watches[inc.terms[second].pkg] = append(s.watches[inc.terms[second].pkg], id)
	}
}

// unwatch removes id from the watch lists of its watched terms.
func (s *solver) unwatch(id int) {
	inc := &s.incs[id]
	for k, w := range inc.watch {
		if k == 1 && w == inc.watch[0] || len(inc.terms) == 0 {
			break
		}
		pkg := inc.terms[w].pkg
		s.watches[pkg] = slices.DeleteFunc(s.watches[pkg], func(x int) bool { return x == id })
	}
}

// run solves. It returns -1 on success (chosen holds a version per
// extension, -1 when not selected), or the id of the empty incompatibility
// whose derivation explains the failure.
func (s *solver) run() (failure int) {
	for _, r := range s.reqs {
		if f := s.propagateFrom(r.pkg); f >= 0 {
			return f
		}
	}
	for _, p := range s.kubePkgs {
		if f := s.propagateFrom(p); f >= 0 {
			return f
		}
	}
	for {
		next, done := s.decide()
		if done {
			return -1
		}
		if f := s.propagateFrom(next); f >= 0 {
			return f
		}
	}
}

func (s *solver) propagateFrom(pkg int) int {
	if s.propagateFn != nil {
		return s.propagateFn(s, pkg)
	}
	return s.propagate(pkg)
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

// contradicted reports whether a contradiction remembered for id still
// holds. Further assignments only narrow a term, so a contradiction holds
// until backtracking removes the assignment that caused it.
func (s *solver) contradicted(id int) bool {
	if id >= len(s.contra) {
		return false
	}
	c := s.contra[id]
	if c.serial == 0 {
		return false
	}
	as := s.pkgs[c.pkg].assigns
	return c.pos < len(as) && s.assigns[as[c.pos]].serial == c.serial
}

// remember records that id's term on pkg is contradicted by pkg's latest
// assignment.
func (s *solver) remember(id, pkg int) {
	as := s.pkgs[pkg].assigns
	if len(as) == 0 {
		return
	}
	for id >= len(s.contra) {
		s.contra = append(s.contra, contradiction{})
	}
	s.contra[id] = contradiction{pkg: pkg, pos: len(as) - 1, serial: s.assigns[as[len(as)-1]].serial}
}

// relationInc compares the partial solution to an incompatibility; for
// relAlmost it also returns the one term not yet satisfied.
func (s *solver) relationInc(id int) (relation, int) {
	if s.contradicted(id) {
		return relContradicted, -1
	}
	unsat := -1
	for i, t := range s.incs[id].terms {
		switch s.relationOf(t) {
		case relContradicted:
			s.remember(id, t.pkg)
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
//
// Incompatibilities added since the last propagation are checked in full
// first, newest first. Then each changed extension's watchers are visited,
// newest first. The invariant, kept by watchBest and by moving a watch off
// a term when it becomes satisfied: each watched term is not satisfied,
// unless the other watched term is contradicted by an earlier assignment
// (or the incompatibility is the conflict being resolved). So an
// incompatibility all of whose unwatched terms are satisfied is found as
// soon as a watched one changes.
func (s *solver) propagate(start int) int {
	s.changed = append(s.changed[:0], start)
	for {
		if n := len(s.fresh); n > 0 {
			id := s.fresh[n-1]
			s.fresh = s.fresh[:n-1]
			rel, unsat := s.relationInc(id)
			s.watchBest(id, unsat)
			switch rel {
			case relSatisfied:
				if f := s.conflict(id); f >= 0 {
					return f
				}
			case relAlmost:
				s.derive(id, unsat)
			}
			continue
		}
		n := len(s.changed)
		if n == 0 {
			return -1
		}
		pkg := s.changed[n-1]
		s.changed = s.changed[:n-1]
		if conflict := s.visitWatchers(pkg); conflict >= 0 {
			if f := s.conflict(conflict); f >= 0 {
				return f
			}
		}
	}
}

// addDeps adds the dependency incompatibilities of every version of pkg.
func (s *solver) addDeps(pkg int) {
	for _, v := range s.ix.exts[pkg].versions {
		for _, g := range v.deps {
			if s.added[g.id] {
				continue
			}
			s.added[g.id] = true
			if inc, ok := s.depIncompat(g); ok {
				s.addIncompat(inc)
			}
		}
	}
}

// derive assigns the negation of id's term unsat and queues its extension.
func (s *solver) derive(id, unsat int) {
	t := s.incs[id].terms[unsat]
	s.assign(t.negate(), id)
	if !slices.Contains(s.changed, t.pkg) {
		s.changed = append(s.changed, t.pkg)
	}
}

// conflict resolves the satisfied incompatibility id, backjumps, and
// derives from the learned incompatibility. It returns the empty
// incompatibility when solving has failed, else -1.
func (s *solver) conflict(id int) int {
	root, ok := s.resolveConflict(id)
	if !ok {
		return root
	}
	_, unsat := s.relationInc(root)
	s.unwatch(root)
	s.watchBest(root, unsat)
	t := s.incs[root].terms[unsat]
	s.assign(t.negate(), root)
	s.changed = append(s.changed[:0], t.pkg)
	return -1
}

// visitWatchers revisits the incompatibilities watching a term on pkg after
// pkg changed: a watch whose term became satisfied moves to another term
// that is not, and an incompatibility with no such term left derives the
// negation of its other watched term or, when that is satisfied too, is a
// conflict, whose id is returned (-1 for none).
func (s *solver) visitWatchers(pkg int) int {
	ws := s.watches[pkg]
	top := len(ws) // ws[top:] are the kept watchers
	conflict := -1
	i := len(ws) - 1
	for ; i >= 0; i-- {
		id := ws[i]
		inc := &s.incs[id]
		slot := 0
		if inc.terms[inc.watch[0]].pkg != pkg {
			slot = 1
		}
		keep, done := s.visit(id, inc, slot)
		if keep {
			top--
			ws[top] = id
		}
		if done {
			conflict = id
			break
		}
	}
	// Put back the unvisited watchers (ws[:i]) and the kept ones.
	n := max(i, 0)
	n += copy(ws[n:], ws[top:])
	s.watches[pkg] = ws[:n]
	return conflict
}

// visit handles one watcher of a changed extension; slot is the watched
// term on it. It reports whether the watch stays and whether id is a
// conflict.
func (s *solver) visit(id int, inc *incompat, slot int) (keep, conflict bool) {
	w := inc.watch[slot]
	if len(inc.terms) == 1 {
		switch s.relationOf(inc.terms[0]) {
		case relSatisfied:
			return true, true
		case relInconclusive:
			s.derive(id, 0)
		}
		return true, false
	}
	if s.contradicted(id) {
		return true, false
	}
	switch s.relationOf(inc.terms[w]) {
	case relContradicted:
		s.remember(id, inc.terms[w].pkg)
		return true, false
	case relInconclusive:
		return true, false
	}
	other := inc.watch[1-slot]
	for k, t := range inc.terms {
		if k == w || k == other {
			continue
		}
		switch s.relationOf(t) {
		case relSatisfied:
			continue
		case relContradicted:
			s.remember(id, t.pkg)
		}
		inc.watch[slot] = k
		s.watches[t.pkg] = append(s.watches[t.pkg], id)
		return false, false
	}
	switch s.relationOf(inc.terms[other]) {
	case relSatisfied:
		return true, true
	case relContradicted:
		s.remember(id, inc.terms[other].pkg)
	default:
		s.derive(id, other)
	}
	return true, false
}

// assign records a derivation (cause >= 0) or a decision (cause -1).
func (s *solver) assign(t term, cause int) {
	st := &s.pkgs[t.pkg]
	if !st.touched {
		st.touched = true
		st.acc = t
		s.touched = append(s.touched, t.pkg)
	} else {
		st.acc = intersectInto(s.alloc(len(t.set)), st.acc, t)
	}
	if st.acc.pos {
		st.count = st.acc.set.count()
	}
	st.assigns = append(st.assigns, len(s.assigns))
	s.serial++
	s.assigns = append(s.assigns, assignment{term: t, acc: st.acc, level: s.level, cause: cause, serial: s.serial})
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
		c := st.count
		if best < 0 || c < bestCount || (c == bestCount && p < best) {
			best, bestCount = p, c
		}
	}
	if best < 0 {
		return 0, true
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
		one := s.alloc(words(len(e.versions)))
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
	for _, k := range s.ix.exts[pkg].kube {
		if !s.kubeOK(k.text) {
			s.addIncompat(incompat{terms: []term{{pkg, true, k.versions}}, kind: causeKube, kubeText: k.text})
		}
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
	current := allowed.highestAnd(s.ix.exts[pkg].current)
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
// when solving has failed. The incompatibilities derived on the way only
// explain the learned one; they are stored inactive.
var debugConflict func(s *solver, id int)

func (s *solver) resolveConflict(id int) (int, bool) {
	if debugConflict != nil {
		debugConflict(s, id)
	}
	for {
		inc := &s.incs[id]
		if len(inc.terms) == 0 {
			return id, false
		}
		satIdx, satTerm, prevLevel := s.satisfier(id)
		sat := s.assigns[satIdx]
		if sat.cause < 0 || prevLevel < sat.level {
			s.backtrack(prevLevel)
			s.incs[id].active = true
			return id, true
		}
		cause := &s.incs[sat.cause]
		var terms []term
		for _, t := range inc.terms {
			if t.pkg != satTerm.pkg {
				terms = s.mergeTerm(terms, t)
			}
		}
		for _, t := range cause.terms {
			if t.pkg != satTerm.pkg {
				terms = s.mergeTerm(terms, t)
			}
		}
		if !subset(sat.term, satTerm) {
			rest := intersectInto(s.alloc(len(satTerm.set)), sat.term, satTerm.negate())
			terms = s.mergeTerm(terms, rest.negate())
		}
		slices.SortFunc(terms, func(a, b term) int { return cmp.Compare(a.pkg, b.pkg) })
		s.incs = append(s.incs, incompat{terms: terms, kind: causeDerived, left: id, right: sat.cause})
		id = len(s.incs) - 1
	}
}

func (s *solver) mergeTerm(terms []term, t term) []term { return mergeTerm(terms, t, s.alloc) }

// mergeTerm adds t to terms, intersecting it with a term on the same
// extension into a set from alloc.
func mergeTerm(terms []term, t term, alloc func(words int) vset) []term {
	for i := range terms {
		if terms[i].pkg == t.pkg {
			terms[i] = intersectInto(alloc(len(t.set)), terms[i], t)
			return terms
		}
	}
	return append(terms, t)
}

// newSet allocates a set of n words.
func newSet(words int) vset { return make(vset, words) }

// satisfier finds the earliest assignment that makes the partial solution
// satisfy incompatibility id, the term it satisfies, and the decision level
// of the previous satisfier (0 when there is none).
func (s *solver) satisfier(id int) (satIdx int, satTerm term, prevLevel int) {
	terms := s.incs[id].terms
	satIdx = -1
	for _, t := range terms {
		if f := s.firstSatisfying(t); f > satIdx {
			satIdx, satTerm = f, t
		}
	}
	for _, t := range terms {
		if t.pkg != satTerm.pkg {
			prevLevel = max(prevLevel, s.assigns[s.firstSatisfying(t)].level)
		}
	}
	sat := s.assigns[satIdx].term
	if !subset(sat, satTerm) {
		scratch := s.zerosScratch(len(sat.set))
		for _, ai := range s.pkgs[satTerm.pkg].assigns {
			if ai >= satIdx {
				break
			}
			if subset(intersectInto(scratch, s.assigns[ai].acc, sat), satTerm) {
				prevLevel = max(prevLevel, s.assigns[ai].level)
				break
			}
		}
	}
	return satIdx, satTerm, prevLevel
}

// zerosScratch returns n words of scratch memory; its contents are
// overwritten by the next call.
func (s *solver) zerosScratch(n int) vset {
	if len(s.mem) < n {
		s.mem = make(vset, max(1024, n))
	}
	return s.mem[:n:n]
}

// firstSatisfying returns the index of the earliest assignment after which
// the extension's assignments satisfy t.
func (s *solver) firstSatisfying(t term) int {
	for _, ai := range s.pkgs[t.pkg].assigns {
		if subset(s.assigns[ai].acc, t) {
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
	for i := len(s.assigns) - 1; i >= n; i-- {
		a := &s.assigns[i]
		st := &s.pkgs[a.term.pkg]
		if a.cause < 0 {
			st.decided = -1
		}
		st.assigns = st.assigns[:len(st.assigns)-1]
		if k := len(st.assigns); k == 0 {
			st.touched = false
		} else {
			st.acc = s.assigns[st.assigns[k-1]].acc
			if st.acc.pos {
				st.count = st.acc.set.count()
			}
		}
	}
	s.assigns = s.assigns[:n]
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
