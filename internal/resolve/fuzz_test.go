package resolve

import (
	"math/rand/v2"
	"regexp"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

var rangePattern = regexp.MustCompile(v1alpha1.VersionRangePattern)

// FuzzParseRange: ParseRange never panics, and every range the API
// server's pattern accepts parses.
func FuzzParseRange(f *testing.F) {
	for _, s := range []string{"", "*", "^1.2", "~1.2.3", ">=1.28.0-0", "1.2 - 1.4", ">=1, <2", "^1 || ^2", "1.x", "v1.2.3+build", "!=1.0.0"} {
		f.Add(s)
	}
	f.Fuzz(func(t *testing.T, s string) {
		_, err := ParseRange(s)
		if err != nil && rangePattern.MatchString(s) {
			t.Fatalf("%q matches VersionRangePattern but does not parse: %v", s, err)
		}
	})
}

// FuzzSolve derives a small problem from the input; Solve never panics and
// every resolution passes the independent verifier.
func FuzzSolve(f *testing.F) {
	f.Add(uint64(1), uint64(2))
	f.Add(uint64(77), uint64(9000))
	f.Fuzz(func(t *testing.T, a, b uint64) {
		u, p := randomProblem(rand.New(rand.NewPCG(a, b)))
		resolution := NewIndex(u).Solve(p)
		var ok []Installation
		for _, in := range p.Installations {
			if _, failed := resolution.Failed[in.Name]; !failed {
				ok = append(ok, in)
			}
		}
		assign := map[string]string{}
		for ext, sel := range resolution.Selected {
			assign[ext] = sel.Version.Version
		}
		if v := newChecker(u, p.ClusterVersion).violation(assign, ok); v != "" {
			t.Fatalf("resolution violates a constraint: %s", v)
		}
	})
}
