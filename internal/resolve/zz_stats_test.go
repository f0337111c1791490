package resolve

import "testing"

func TestTmpStats(t *testing.T) {
	for _, exts := range []int{500} {
		ix := NewIndex(catalogUniverse(exts, 1))
		p := satisfiableProblem(ix, exts, 1)
		testHookPropagate = func(x *solver, start int) int {
			before := x.level
			f := x.propagate(start)
			if x.level < before {
				a := x.assigns[len(x.assigns)-1]
				inc := x.incs[a.cause]
				t.Logf("backjump %d -> %d learned kind %d terms %d derivedFrom %d,%d", before, x.level, inc.kind, len(inc.terms), inc.left, inc.right)
				for _, tm := range inc.terms { t.Logf("   %s pos=%v %v", ix.exts[tm.pkg].name, tm.pos, tm.set.members()) }
				if inc.kind == causeDerived {
					for _, id := range []int{inc.left, inc.right} {
						c := x.incs[id]
						t.Logf("   from kind %d", c.kind)
						for _, tm := range c.terms { t.Logf("      %s pos=%v %v", ix.exts[tm.pkg].name, tm.pos, tm.set.members()) }
					}
				}
			}
			return f
		}
		ix.Solve(p)
		testHookPropagate = nil
	}
}
