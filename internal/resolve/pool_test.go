package resolve

import (
	"reflect"
	"sync"
	"testing"
)

// TestSolveReusesSolversCleanly solves different problems one after
// another, and concurrently, on one Index, whose pooled solvers are reset
// between runs, and wants each resolution to equal the resolution from a fresh Index.
func TestSolveReusesSolversCleanly(t *testing.T) {
	u := catalogUniverse(40, 3)
	problems := []Problem{
		catalogProblem(40, 1), // with failures: many solves, explanations
		catalogProblem(40, 2),
		{ClusterVersion: "v1.29.0", Installations: catalogProblem(40, 3).Installations[:5]}, // another cluster
		catalogProblem(40, 1), // the first again, after the others
	}
	want := make([]*Resolution, len(problems))
	for i, p := range problems {
		want[i] = NewIndex(u).Solve(p)
	}
	shared := NewIndex(u)
	for i, p := range problems {
		if got := shared.Solve(p); !reflect.DeepEqual(got, want[i]) {
			t.Errorf("problem %d in sequence: resolution differs from a fresh Index's\ngot  %+v\nwant %+v", i, got, want[i])
		}
	}
	var wg sync.WaitGroup
	got := make([]*Resolution, len(problems))
	for i, p := range problems {
		wg.Go(func() { got[i] = shared.Solve(p) })
	}
	wg.Wait()
	for i := range problems {
		if !reflect.DeepEqual(got[i], want[i]) {
			t.Errorf("problem %d solved concurrently: resolution differs from a fresh Index's", i)
		}
	}
}
