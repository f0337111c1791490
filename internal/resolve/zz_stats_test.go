package resolve

import "testing"

func TestTmpStats(t *testing.T) {
	for _, exts := range []int{500} {
		ix := NewIndex(catalogUniverse(exts, 1))
		p := satisfiableProblem(ix, exts, 1)
		dump := func(x *solver, pkg int) {
			for _, ai := range x.pkgs[pkg].assigns {
				a := x.assigns[ai]
				kind := -1
				if a.cause >= 0 { kind = int(x.incs[a.cause].kind) }
				t.Logf("     %s #%d level %d pos=%v %v cause %d kind %d acc %v", ix.exts[pkg].name, ai, a.level, a.term.pos, a.term.set.members(), a.cause, kind, a.acc.set.members())
			}
		}
		n := 0
		debugConflict = func(x *solver, id int) {
			if n > 0 { return }
			n++
			inc := x.incs[id]
			t.Logf("conflict inc %d kind %d level %d", id, inc.kind, x.level)
			for _, tm := range inc.terms {
				t.Logf("  term %s pos=%v %v", ix.exts[tm.pkg].name, tm.pos, tm.set.members())
				dump(x, tm.pkg)
			}
		}
		ix.Solve(p)
		debugConflict = nil
	}
}
