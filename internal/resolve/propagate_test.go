package resolve

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"testing"
)

// referencePropagate is unit propagation without watched terms: after a
// change to an extension it checks every active incompatibility that
// mentions it, newest first, in full. It is the propagation the watched
// one must agree with.
func referencePropagate(s *solver, start int) int {
	s.fresh = s.fresh[:0]
	changed := []int{start}
	for len(changed) > 0 {
		pkg := changed[len(changed)-1]
		changed = changed[:len(changed)-1]
	scan:
		for id := len(s.incs) - 1; id >= 0; id-- {
			if !s.incs[id].active || !mentions(s.incs[id], pkg) {
				continue
			}
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

func mentions(inc incompat, pkg int) bool {
	for _, t := range inc.terms {
		if t.pkg == pkg {
			return true
		}
	}
	return false
}

func containsInt(xs []int, x int) bool {
	for _, y := range xs {
		if y == x {
			return true
		}
	}
	return false
}

// TestWatchedPropagationMatchesReference solves the 500 property problems
// with watched propagation and with the reference and wants the same
// selections and the same failed installations. On the larger benchmark
// catalogs, where hundreds of conflicts are learned in a different order,
// the two may settle on different (equally valid) selections: there both
// resolutions must pass the independent verifier.
func TestWatchedPropagationMatchesReference(t *testing.T) {
	type case_ struct {
		name  string
		u     Universe
		p     Problem
		exact bool
	}
	var cases []case_
	for seed := range uint64(500) {
		u, p := randomProblem(rand.New(rand.NewPCG(seed, 42)))
		cases = append(cases, case_{fmt.Sprintf("property seed %d", seed), u, p, true})
	}
	for seed := range uint64(3) {
		cases = append(cases, case_{"catalog", catalogUniverse(40, seed), catalogProblem(40, seed), false})
		cases = append(cases, case_{"adversarial", syntheticUniverse(40, seed), syntheticProblem(40, seed), false})
	}
	cases = append(cases, case_{"chain", chainUniverse(20), Problem{ClusterVersion: "v1.31.0", Installations: []Installation{
		want("apps/head", "link-000", ">=4"), auto("apps/mid", "link-010", "", "4.0.0", false)}}, true})
	differ := 0
	for _, c := range cases {
		ix := NewIndex(c.u)
		watched := ix.Solve(c.p)
		testHookPropagate = referencePropagate
		ref := ix.Solve(c.p)
		testHookPropagate = nil
		if reflect.DeepEqual(watched, ref) {
			continue
		}
		differ++
		if c.exact && (!reflect.DeepEqual(watched.Selected, ref.Selected) || !slices.Equal(failedNames(watched), failedNames(ref))) {
			t.Errorf("%s: resolutions differ\nwatched   %+v\nreference %+v", c.name, watched, ref)
		}
		for _, resolution := range []*Resolution{watched, ref} {
			var ok []Installation
			for _, in := range c.p.Installations {
				if _, failed := resolution.Failed[in.Name]; !failed {
					ok = append(ok, in)
				}
			}
			assign := map[string]string{}
			for ext, sel := range resolution.Selected {
				assign[ext] = sel.Version.Version
			}
			if v := newChecker(c.u, c.p.ClusterVersion).violation(assign, ok); v != "" {
				t.Errorf("%s: resolution violates a constraint: %s", c.name, v)
			}
		}
	}
	t.Logf("%d of %d resolutions differ from the reference's", differ, len(cases))
}

func failedNames(p *Resolution) []string {
	var out []string
	for name := range p.Failed {
		out = append(out, name)
	}
	slices.Sort(out)
	return out
}
