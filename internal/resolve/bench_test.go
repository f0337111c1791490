package resolve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// syntheticUniverse makes exts extensions with 20 versions each (majors 1–4,
// minors 0–4). Each version depends on 2–5 extensions later in name order
// (so there are no cycles) with assorted ranges, and has a kubeVersion.
func syntheticUniverse(exts int, seed uint64) Universe {
	r := rand.New(rand.NewPCG(seed, 7))
	ranges := []string{">=1.0.0", "^2", "^3 || ^4", "~3.1", ">=2.2 <4", "*", "1.2 - 3.4", ">=1.4, <3"}
	kubes := []string{"", ">=1.24.0-0", ">=1.27", ">=1.29.0-0", "<1.30", ">=1.32"}
	u := Universe{}
	for e := range exts {
		name := fmt.Sprintf("ext-%04d", e)
		for major := 1; major <= 4; major++ {
			for minor := range 5 {
				v := v1alpha1.ExtensionVersion{
					Version:     fmt.Sprintf("%d.%d.0", major, minor),
					KubeVersion: kubes[r.IntN(len(kubes))],
					Source:      v1alpha1.ArtifactSource{URL: "builtin://x"},
				}
				for range 2 + r.IntN(4) {
					if e+1 >= exts {
						break
					}
					to := e + 1 + r.IntN(min(40, exts-e-1))
					dep := fmt.Sprintf("ext-%04d", to)
					if slices.ContainsFunc(v.Dependencies, func(d v1alpha1.Dependency) bool { return d.Name == dep }) {
						continue
					}
					v.Dependencies = append(v.Dependencies, v1alpha1.Dependency{Name: dep, Version: ranges[r.IntN(len(ranges))]})
				}
				u[name] = append(u[name], v)
			}
		}
	}
	return u
}

// syntheticProblem requests 50 extensions, a fifth of them installed.
func syntheticProblem(exts int, seed uint64) Problem {
	r := rand.New(rand.NewPCG(seed, 11))
	p := Problem{ClusterVersion: "v1.31.2-gke.1200"}
	for i := range 50 {
		in := Installation{Name: fmt.Sprintf("ns/inst-%02d", i), Extension: fmt.Sprintf("ext-%04d", r.IntN(exts)), Range: "*"}
		if i%5 == 0 {
			in.Installed = fmt.Sprintf("%d.%d.0", 1+r.IntN(4), r.IntN(5))
			in.Automatic = i%10 == 0
			in.AllowDowngrade = true
		}
		p.Installations = append(p.Installations, in)
	}
	return p
}

// chainUniverse is a chain of n extensions, each version needing the next
// one within a range that spans several majors; no version of the last
// extension supports the cluster, so every installation of the chain fails
// with a derivation as long as the chain.
func chainUniverse(n int) Universe {
	u := Universe{}
	for e := range n {
		name := fmt.Sprintf("link-%03d", e)
		for major := 1; major <= 4; major++ {
			for minor := range 5 {
				v := v1alpha1.ExtensionVersion{Version: fmt.Sprintf("%d.%d.0", major, minor), Source: v1alpha1.ArtifactSource{URL: "builtin://x"}}
				if e+1 < n {
					v.Dependencies = []v1alpha1.Dependency{{Name: fmt.Sprintf("link-%03d", e+1), Version: fmt.Sprintf(">=%d.0.0", max(1, major-1))}}
				} else {
					v.KubeVersion = ">=1.40"
				}
				u[name] = append(u[name], v)
			}
		}
	}
	return u
}

// benchSolve runs Solve b.N times and reports p50 and p99 per solve.
func benchSolve(b *testing.B, ix *Index, p Problem) {
	b.ReportAllocs()
	durations := make([]time.Duration, 0, b.N)
	var plan *Plan
	b.ResetTimer()
	for range b.N {
		start := time.Now()
		plan = ix.Solve(p)
		durations = append(durations, time.Since(start))
	}
	b.StopTimer()
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(len(plan.Selected)), "selected")
	b.ReportMetric(float64(len(plan.Failed)), "failed")
}

func BenchmarkSolve1k(b *testing.B) {
	benchSolve(b, NewIndex(syntheticUniverse(50, 1)), syntheticProblem(50, 1))
}

func BenchmarkSolve10k(b *testing.B) {
	benchSolve(b, NewIndex(syntheticUniverse(500, 1)), syntheticProblem(500, 1))
}

func BenchmarkSolveUnsatisfiableChain(b *testing.B) {
	ix := NewIndex(chainUniverse(60))
	benchSolve(b, ix, Problem{ClusterVersion: "v1.31.0", Installations: []Installation{
		want("apps/head", "link-000", ">=4"), auto("apps/mid", "link-030", "", "4.0.0", false),
	}})
}

func BenchmarkNewIndex10k(b *testing.B) {
	u := syntheticUniverse(500, 1)
	b.ReportAllocs()
	for range b.N {
		NewIndex(u)
	}
}
