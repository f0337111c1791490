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
// conflict resolution derives the empty incompatibility. Unlike pub, which
// adds a package's dependencies when it decides it, a run adds the
// dependency and kubeVersion incompatibilities of every extension reachable
// from the requirements up front (see solver).
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
//
// A run works on the extensions reachable from its requirements through
// any version's dependencies: their dependency and kubeVersion
// incompatibilities are all added before the first decision, so what a
// dependency or the cluster rules out is known at decision level 0 rather
// than found by a conflict that undoes every later decision. Solvers are
// pooled per Index; only the state of the reachable extensions is reset.
type solver struct {
	ix        *Index
	kube      *kubeCheck
	reqs      []requirement
	prefer    []int // installed version index per extension, -1 if none
	zeros     vset  // read-only; zeros[:words(n)] is the empty set of n versions
	incs      []incompat
	watches   [][]int // per extension: ids of the incompatibilities watching a term on it
	fresh     []int   // ids added since the last propagation, not yet checked
	assigns   []assignment
	pkgs      []pkgState
	queue     minHeap[candidates] // see decide
	reach     []int               // extensions reachable from the requirements, breadth first
	inReach   []bool              // per extension
	units     []int               // reachable extensions with a one-term incompatibility
	level     int
	serial    int
	conflicts int // conflicts resolved so far
	// maxConflicts, when positive, bounds conflicts: past it the run
	// stops with gaveUp set, and its failure explains nothing.
	maxConflicts int
	gaveUp       bool
	contra       []contradiction // per incompatibility id
	changed      []int           // propagate's work stack
	mem          arena           // the solver's sets are cut from it
	scratch      vset
	// propagateFn replaces propagate when set; tests use it to compare
	// against a reference propagation.
	propagateFn func(s *solver, start int) int
}

// testHookPropagate, when set by a test, is every new solver's
// propagateFn.
var testHookPropagate func(s *solver, start int) int

// newSolver returns a solver for reqs, from the Index's pool; release
// returns it once nothing reads its incompatibilities any more.
func newSolver(ix *Index, kube *kubeCheck, reqs []requirement, prefer []int, extra []incompat) *solver {
	s, _ := ix.solvers.Get().(*solver)
	if s != nil {
		// Pooled before the Index gained copies (see addCopy): room for them.
		for len(s.pkgs) < len(ix.exts) {
			s.watches = append(s.watches, nil)
			s.pkgs = append(s.pkgs, pkgState{decided: -1})
			s.inReach = append(s.inReach, false)
		}
	}
	if s == nil {
		n := len(ix.exts)
		s = &solver{
			ix:      ix,
			zeros:   make(vset, max(1, ix.maxWords)),
			scratch: make(vset, max(1, ix.maxWords)),
			watches: make([][]int, n),
			pkgs:    make([]pkgState, n),
			inReach: make([]bool, n),
			queue:   minHeap[candidates]{less: candidates.less},
		}
		for i := range s.pkgs {
			s.pkgs[i].decided = -1
		}
	}
	s.kube, s.reqs, s.prefer, s.propagateFn = kube, reqs, prefer, testHookPropagate
	for i, r := range reqs {
		s.addIncompat(incompat{terms: []term{{r.pkg, false, r.set}}, kind: r.kind, req: i})
		s.reachFrom(r.pkg)
	}
	for _, inc := range extra {
		s.addIncompat(inc)
	}
	for k := 0; k < len(s.reach); k++ {
		p := s.reach[k]
		e := &ix.exts[p]
		unit := false
		for _, kg := range e.kube {
			if !s.kube.admits(kg.kubeID) {
				s.addIncompat(incompat{terms: kg.terms, kind: causeKube, kubeText: kg.text})
				unit = true
			}
		}
		for _, d := range e.deps {
			s.incs = append(s.incs, incompat{terms: d.terms, kind: causeDependency, group: d.group, active: true})
		}
		if unit || e.unitDep {
			s.units = append(s.units, p)
		}
		for _, to := range e.targets {
			s.reachFrom(to)
		}
	}
	// Nothing is assigned yet, so any two terms may be watched (the first
	// two, as watchBest would choose); run propagates from each
	// requirement's extension and each unit.
	for id := range s.incs {
		inc := &s.incs[id]
		if len(inc.terms) == 0 {
			continue
		}
		inc.watch = [2]int{0, min(1, len(inc.terms)-1)}
		for k, w := range inc.watch {
			if k == 0 || w != inc.watch[0] {
				p := inc.terms[w].pkg
				s.watches[p] = append(s.watches[p], id)
			}
		}
	}
	s.fresh = s.fresh[:0]
	return s
}

// reachFrom adds pkg to the reachable extensions.
func (s *solver) reachFrom(pkg int) {
	if !s.inReach[pkg] {
		s.inReach[pkg] = true
		s.reach = append(s.reach, pkg)
	}
}

// release resets the solver and returns it to the Index's pool. Only the
// reachable extensions have state to reset.
func (s *solver) release() {
	for _, p := range s.reach {
		s.inReach[p] = false
		s.watches[p] = s.watches[p][:0]
		s.pkgs[p] = pkgState{decided: -1, assigns: s.pkgs[p].assigns[:0]}
	}
	s.kube, s.reqs, s.prefer, s.propagateFn = nil, nil, nil, nil
	s.reach, s.units, s.queue.items = s.reach[:0], s.units[:0], s.queue.items[:0]
	clear(s.incs) // drop references into the catalog and old derivations
	s.incs, s.fresh, s.assigns = s.incs[:0], s.fresh[:0], s.assigns[:0]
	s.contra, s.changed = s.contra[:0], s.changed[:0]
	s.level, s.serial, s.conflicts, s.maxConflicts, s.gaveUp = 0, 0, 0, 0, false
	s.mem.reset()
	s.ix.solvers.Put(s)
}

// arena hands out vsets cut from a few large blocks, so a run allocates a
// few blocks instead of one slice per set, and a pooled solver none.
type arena struct {
	blocks []vset
	cur    int // the block being cut
	off    int // words used of it
}

// alloc returns an empty set of n words.
func (a *arena) alloc(n int) vset {
	for ; a.cur < len(a.blocks); a.cur, a.off = a.cur+1, 0 {
		if b := a.blocks[a.cur]; a.off+n <= len(b) {
			v := b[a.off : a.off+n : a.off+n]
			a.off += n
			clear(v)
			return v
		}
	}
	a.blocks = append(a.blocks, make(vset, max(1024, n)))
	a.off = n
	return a.blocks[a.cur][:n:n]
}

func (a *arena) reset() { a.cur, a.off = 0, 0 }

func (s *solver) alloc(n int) vset { return s.mem.alloc(n) }

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

// run solves, propagating first from each requirement's extension and
// each extension with a one-term incompatibility. It returns -1 on success
// (chosen holds a version per extension, -1 when not selected), or the id
// of the empty incompatibility whose derivation explains the failure.
func (s *solver) run() (failure int) {
	for _, r := range s.reqs {
		if f := s.propagateFrom(r.pkg); f >= 0 {
			return f
		}
	}
	for _, p := range s.units {
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
	for len(s.fresh) > 0 {
		id := s.fresh[len(s.fresh)-1]
		s.fresh = s.fresh[:len(s.fresh)-1]
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
	}
	for len(s.changed) > 0 {
		pkg := s.changed[len(s.changed)-1]
		s.changed = s.changed[:len(s.changed)-1]
		conflict := s.visitWatchers(pkg)
		if conflict < 0 {
			continue
		}
		if f := s.conflict(conflict); f >= 0 {
			return f
		}
	}
	return -1
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
	if s.conflicts++; s.maxConflicts > 0 && s.conflicts > s.maxConflicts {
		s.gaveUp = true
		return id
	}
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
	} else {
		st.acc = intersectInto(s.alloc(len(t.set)), st.acc, t)
	}
	if st.acc.pos {
		st.count = st.acc.set.count()
		s.enqueue(t.pkg)
	}
	st.assigns = append(st.assigns, len(s.assigns))
	s.serial++
	s.assigns = append(s.assigns, assignment{term: t, acc: st.acc, level: s.level, cause: cause, serial: s.serial})
}

// decide picks the undecided extension with the fewest candidate versions
// (ties: lowest id, i.e. name order) from the decision queue, and its
// preferred version. It returns the extension to propagate from, or done
// when every required extension has a version. Every dependency of the
// candidates is known already (see solver), so a decision never satisfies
// an incompatibility outright.
func (s *solver) decide() (pkg int, done bool) {
	best := -1
	for s.queue.len() > 0 && best < 0 {
		c := s.queue.pop()
		if st := &s.pkgs[c.pkg]; st.touched && st.acc.pos && st.decided < 0 && st.count == c.count {
			best = c.pkg
		}
	}
	if best < 0 {
		return 0, true
	}
	ver := s.choose(best, s.pkgs[best].acc.set)
	s.level++
	one := s.alloc(words(len(s.ix.exts[best].versions)))
	one.add(ver)
	s.assign(term{best, true, one}, -1)
	s.pkgs[best].decided = ver
	return best, false
}

// depIncompat returns the terms of a dependency group's incompatibility,
// {from ∈ versions, not to ∈ allowed}; false when it says nothing (a
// self-dependency every version satisfies).
func depIncompat(g *depGroup) ([]term, bool) {
	switch {
	case g.to < 0 || g.allowed.empty():
		return []term{{g.from, true, g.versions}}, true
	case g.to == g.from:
		rest := g.versions.andNot(g.allowed)
		if rest.empty() {
			return nil, false
		}
		return []term{{g.from, true, rest}}, true
	default:
		return []term{{g.from, true, g.versions}, {g.to, false, g.allowed}}, true
	}
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
func (s *solver) resolveConflict(id int) (int, bool) {
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
		scratch := s.scratch[:len(sat.set)]
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
	for _, a := range s.assigns[n:] {
		if st := &s.pkgs[a.term.pkg]; st.touched && st.acc.pos && st.decided < 0 {
			s.enqueue(a.term.pkg)
		}
	}
	s.assigns = s.assigns[:n]
	s.level = level
}

// candidates is an entry of the decision queue: pkg had count candidate
// versions left. The queue holds an entry with the current count for every
// extension that must be selected and is undecided; entries that no longer
// match their extension's state are skipped when they come up.
type candidates struct{ count, pkg int }

// less orders by fewest candidates, then lowest id.
func (a candidates) less(b candidates) bool {
	return a.count < b.count || a.count == b.count && a.pkg < b.pkg
}

// enqueue adds pkg with its current count to the decision queue.
func (s *solver) enqueue(pkg int) { s.queue.push(candidates{s.pkgs[pkg].count, pkg}) }

// kubeCheck tells which of an Index's kubeVersion ranges admit one
// cluster version, checking each range at most once.
type kubeCheck struct {
	ranges  []*semver.Constraints // Index.kubeRanges
	cluster *semver.Version
	memo    []int8 // per kube id: 0 not checked yet, 1 admits, -1 excludes
}

func (ix *Index) kubeChecker(cluster *semver.Version) *kubeCheck {
	return &kubeCheck{ranges: ix.kubeRanges, cluster: cluster, memo: make([]int8, len(ix.kubeRanges))}
}

// admits reports whether range id admits the cluster.
func (k *kubeCheck) admits(id int) bool {
	if k.memo[id] == 0 {
		k.memo[id] = -1
		if k.ranges[id].Check(k.cluster) {
			k.memo[id] = 1
		}
	}
	return k.memo[id] > 0
}

// runsOn reports whether a version's kubeVersion admits the cluster.
func (k *kubeCheck) runsOn(v *indexedVersion) bool { return v.kubeID < 0 || k.admits(v.kubeID) }
