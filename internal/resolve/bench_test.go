package resolve

import (
	"fmt"
	"math/rand/v2"
	"slices"
	"testing"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// catalogUniverse makes a catalog shaped like real ones (Artifact Hub,
// OperatorHub): exts extensions with 20 versions each (1.0.0–1.9.0 and
// 2.0.0–2.9.0: breaking releases are rare), mostly satisfiable, with some
// conflicts to resolve. Its assumptions:
//
//   - Dependencies form a DAG from higher- to lower-numbered extensions
//     (ext-0042 may need ext-0017, never the reverse), in four layers as in
//     real stacks (cert-manager and operators at the bottom, apps on top):
//     the lowest quarter needs nothing, every other version needs 2–5
//     extensions of lower layers, so chains are at most four deep.
//   - A dependency's range is chosen per major of the dependent, so minors
//     share it, as when a chart bumps a requirement on a major release.
//     Extensions release in step, so major M of a dependent asks for major
//     M (or M-1, 10%) of its dependency: ">=M.m" (half), "^M" (a quarter)
//     or ">=M.m <M+2", where M.m is older than the newest three versions.
//     Each such range matches 4–20 of the target's versions.
//   - 5% of ranges are deliberately tight: an exact version, often
//     one that needs a newer cluster, so some choices fail and the solver
//     backtracks.
//   - kubeVersion is a Helm floor (">=1.2x.0-0") that rises with the
//     version; for about a third of the extensions the newest one to three
//     versions need ">=1.32.0-0", which the 1.31 benchmark cluster does not
//     meet, and a few old versions have a ceiling ("<1.29").
//
// The adversarial catalog (syntheticUniverse) drops these assumptions.
func catalogUniverse(exts int, seed uint64) Universe {
	r := rand.New(rand.NewPCG(seed, 13))
	u := Universe{}
	for e := range exts {
		name := fmt.Sprintf("ext-%04d", e)
		newest := 0 // how many of the newest versions need Kubernetes 1.32
		if r.IntN(3) == 0 {
			newest = 1 + r.IntN(3)
		}
		// The dependencies of each major, with their ranges.
		type dep struct{ name, rng string }
		var byMajor [3][]dep
		below := e * 4 / exts * exts / 4 // the first extension of e's layer
		for major := 1; major <= 2; major++ {
			if below == 0 {
				break
			}
			for range 2 + r.IntN(4) {
				dep1 := fmt.Sprintf("ext-%04d", r.IntN(below))
				if slices.ContainsFunc(byMajor[major], func(d dep) bool { return d.name == dep1 }) {
					continue
				}
				byMajor[major] = append(byMajor[major], dep{dep1, catalogRange(r, major)})
			}
		}
		for major := 1; major <= 2; major++ {
			for minor := range 10 {
				k := (major-1)*10 + minor // 0 oldest … 19 newest
				kube := fmt.Sprintf(">=1.%d.0-0", 22+k/3)
				switch {
				case k >= 20-newest:
					kube = ">=1.32.0-0"
				case k < 3 && r.IntN(10) == 0:
					kube = ">=1.20.0-0 <1.29.0-0"
				}
				v := v1alpha1.ExtensionVersion{
					Version:     fmt.Sprintf("%d.%d.0", major, minor),
					KubeVersion: kube,
					Source:      v1alpha1.ArtifactSource{URL: "builtin://x"},
				}
				for _, d := range byMajor[major] {
					v.Dependencies = append(v.Dependencies, v1alpha1.Dependency{Name: d.name, Version: d.rng})
				}
				u[name] = append(u[name], v)
			}
		}
	}
	return u
}

// catalogRange returns a range over versions 1.0.0–2.9.0 for a dependency
// of a version with the given major.
func catalogRange(r *rand.Rand, major int) string {
	if r.IntN(10) == 0 { // the dependent has not caught up with a new major
		major = max(1, major-1)
	}
	minor := r.IntN(7) // a version released before the dependent
	switch n := r.IntN(100); {
	case n < 5: // tight: one version, which may need a newer cluster
		return fmt.Sprintf("=%d.%d.0", major, minor)
	case n < 55:
		return fmt.Sprintf(">=%d.%d", major, minor)
	case n < 83:
		return fmt.Sprintf("^%d", major)
	default:
		return fmt.Sprintf(">=%d.%d <%d", major, minor, major+2)
	}
}

// catalogProblem requests 50 extensions, two thirds with any version and
// the rest within the current major; a fifth of them are
// installed (at a version the cluster runs), half of those with automatic
// upgrades off.
func catalogProblem(exts int, seed uint64) Problem {
	r := rand.New(rand.NewPCG(seed, 17))
	p := Problem{ClusterVersion: "v1.31.2-gke.1200"}
	for i := range 50 {
		in := Installation{Name: fmt.Sprintf("ns/inst-%02d", i), Extension: fmt.Sprintf("ext-%04d", r.IntN(exts))}
		if r.IntN(3) == 0 {
			in.Range = "^2"
		}
		if i%5 == 0 { // installed within its range on this cluster: below 2.7.0
			in.Installed = fmt.Sprintf("2.%d.0", r.IntN(7))
			in.Automatic = i%10 == 0
			in.AllowDowngrade = true
		}
		p.Installations = append(p.Installations, in)
	}
	return p
}

// syntheticUniverse is the adversarial catalog: exts extensions with 20
// versions each (majors 1–4, minors 0–4). Each version depends on 2–5
// extensions later in name order (so there are no cycles) with ranges
// drawn independently per version, and a third of the versions have a
// kubeVersion the 1.31 cluster fails. Most solves meet hundreds of
// conflicts: it measures the solver's worst case, not a real catalog.
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

// satisfiableProblem is the common case on a real cluster: 50
// installations that were installed before and still fit together, solved
// again to confirm them and to take upgrades. It draws installations as
// catalogProblem does (an extension, any version or "^2"), keeps those that
// a solve on a Kubernetes 1.29 cluster does not fail, and installs them at
// that solve's versions: every installation but each fifth is installed,
// half of those with automatic upgrades off (pinned) and half with
// automatic upgrades on and no downgrades (the API's defaults). Solved on
// the 1.31 benchmark cluster, the automatic ones move up where newer
// versions now admit the cluster. The 1.29 solution still admits 1.31 (the
// catalog's only ceiling is "<1.29"), so the set stays satisfiable;
// benchSatisfiable checks that nothing fails.
func satisfiableProblem(ix *Index, exts int, seed uint64) Problem {
	r := rand.New(rand.NewPCG(seed, 19))
	const older = "v1.29.5"
	var kept []Installation
	for drawn := 0; len(kept) < 50; {
		if drawn > 50*exts {
			panic(fmt.Sprintf("satisfiableProblem: %d of %d drawn installations fit together", len(kept), drawn))
		}
		cands := slices.Clone(kept)
		for len(cands) < 60 {
			in := Installation{Name: fmt.Sprintf("ns/cand-%04d", drawn), Extension: fmt.Sprintf("ext-%04d", r.IntN(exts))}
			if r.IntN(3) == 0 {
				in.Range = "^2"
			}
			cands = append(cands, in)
			drawn++
		}
		// Installations that do not fail fit together; so does any subset.
		resolution := ix.Solve(Problem{ClusterVersion: older, Installations: cands})
		kept = slices.DeleteFunc(cands, func(in Installation) bool { return resolution.Failed[in.Name] != nil })
	}
	kept = kept[:50]
	installedAt := ix.Solve(Problem{ClusterVersion: older, Installations: kept}).Selected
	p := Problem{ClusterVersion: "v1.31.2-gke.1200"}
	for i, in := range kept {
		in.Name = fmt.Sprintf("ns/inst-%02d", i)
		if i%5 != 4 {
			in.Installed = installedAt[in.Extension].Version.Version
			in.Automatic = i%2 == 0
		}
		p.Installations = append(p.Installations, in)
	}
	return p
}

// benchSolve runs Solve in a b.Loop and reports p50 and p99 per solve.
func benchSolve(b *testing.B, ix *Index, p Problem) {
	b.ReportAllocs()
	var durations []time.Duration
	var resolution *Resolution
	for b.Loop() {
		start := time.Now()
		resolution = ix.Solve(p)
		durations = append(durations, time.Since(start))
	}
	slices.Sort(durations)
	b.ReportMetric(float64(durations[len(durations)/2].Nanoseconds()), "p50-ns")
	b.ReportMetric(float64(durations[len(durations)*99/100].Nanoseconds()), "p99-ns")
	b.ReportMetric(float64(len(resolution.Selected)), "selected")
	b.ReportMetric(float64(len(resolution.Failed)), "failed")
}

// benchSatisfiable benchmarks the common case over a catalog of exts
// extensions × 20 versions.
func benchSatisfiable(b *testing.B, exts int) {
	ix := NewIndex(catalogUniverse(exts, 1))
	p := satisfiableProblem(ix, exts, 1)
	if failed := ix.Solve(p).Failed; len(failed) > 0 {
		b.Fatalf("the satisfiable problem has %d failures", len(failed))
	}
	benchSolve(b, ix, p)
}

// The targets (p50 < 2 ms, p99 < 10 ms at 10,000 versions) are for the
// satisfiable case. The other benchmarks are reported alongside:
// WithFailures draws installations that partly conflict, and each failure
// costs extra solves (set aside, take back, check the suggested fixes:
// about 100 solver runs for the 9 failures at 10k).
//
// Measured on the 2-core machine with other builds running (load 5-8),
// benchstat of 6 runs, p50 per Solve, the previous solver → this one:
// Solve1k 0.44 → 0.11 ms, Solve10k 1.85 → 0.44 ms (p99 9.9 → 4.1 ms under
// that load, 1.2 ms on a quieter run), WithFailures1k 10.0 → 4.4 ms,
// WithFailures10k 45.7 → 13.8 ms, Adversarial1k 11.8 → 9.0 ms,
// Adversarial10k 200 → 27 ms, UnsatisfiableChain 10.2 → 3.0 ms. Bytes per
// Solve fell 80-95%; NewIndex10k allocates 22% more bytes (dependency
// incompatibilities, labels and version lookups built once there).
func BenchmarkSolve1k(b *testing.B) { benchSatisfiable(b, 50) }

func BenchmarkSolve10k(b *testing.B) { benchSatisfiable(b, 500) }

func BenchmarkSolveWithFailures1k(b *testing.B) {
	benchSolve(b, NewIndex(catalogUniverse(50, 1)), catalogProblem(50, 1))
}

func BenchmarkSolveWithFailures10k(b *testing.B) {
	benchSolve(b, NewIndex(catalogUniverse(500, 1)), catalogProblem(500, 1))
}

func BenchmarkSolveAdversarial1k(b *testing.B) {
	benchSolve(b, NewIndex(syntheticUniverse(50, 1)), syntheticProblem(50, 1))
}

func BenchmarkSolveAdversarial10k(b *testing.B) {
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
	for b.Loop() {
		NewIndex(u)
	}
}

// operatorUniverse makes a catalog shaped like OperatorHub: pkgs operator
// packages of 20 bundles each (1.0.0–1.9.0, 2.0.0–2.9.0), every bundle in
// channel stable, a replaces chain through all of them, and every other
// one in channel fast too, whose entries skip everything below them
// (skipRange) and replace the previous fast bundle. Packages with an even
// number have stable as their defaultChannel.
func operatorUniverse(pkgs int) (Universe, map[string]string) {
	u, defaults := Universe{}, map[string]string{}
	for p := range pkgs {
		name := fmt.Sprintf("op-%04d", p)
		if p%2 == 0 {
			defaults[name] = "stable"
		}
		prev, prevFast := "", ""
		for k := range 20 {
			version := fmt.Sprintf("%d.%d.0", 1+k/10, k%10)
			v := ev(version, fmt.Sprintf(">=1.%d.0-0", 22+k/3))
			v.Engine = v1alpha1.EngineBundle
			v.Channels = []v1alpha1.ChannelEntry{{Name: "stable", Replaces: prev}}
			if k%2 == 1 {
				v.Channels = append(v.Channels, v1alpha1.ChannelEntry{Name: "fast", Replaces: prevFast,
					SkipRange: ">=1.0.0 <" + version})
				prevFast = version
			}
			prev = version
			u[name] = append(u[name], v)
		}
	}
	return u, defaults
}

// operatorProblem is 50 installations of operators: a third installed at
// an old version and following the graph (several hops to go), some in
// channel fast, some allowed any version in range, the rest new.
func operatorProblem(pkgs int) Problem {
	p := Problem{ClusterVersion: "v1.31.2-gke.1200"}
	for i := range 50 {
		in := Installation{Name: fmt.Sprintf("ops/op-%02d", i), Extension: fmt.Sprintf("op-%04d", i*pkgs/50)}
		switch i % 6 {
		case 0, 3:
			in.Installed, in.Automatic = "1.2.0", true
		case 1:
			in.Channel, in.Range = "fast", "^1"
		case 2:
			in.Channel, in.Installed, in.Automatic = "stable", "1.4.0", true
		case 4:
			in.Installed, in.Automatic, in.AnyInRange = "1.1.0", true, true
		}
		p.Installations = append(p.Installations, in)
	}
	return p
}

// BenchmarkSolveOperators resolves 50 operator installations over an
// OperatorHub-size catalog (300 packages, 6,000 bundles, two channels
// each). The target is p99 < 10 ms.
func BenchmarkSolveOperators(b *testing.B) {
	u, defaults := operatorUniverse(300)
	ix := newIndex(u, defaults, nil, nil)
	p := operatorProblem(300)
	resolution := ix.Solve(p)
	if len(resolution.Failed) > 0 {
		for name, ex := range resolution.Failed {
			b.Fatalf("%s failed: %s", name, ex.Message)
		}
	}
	hops := 0
	for _, sel := range resolution.Selected {
		if sel.Target != nil {
			hops++
		}
	}
	if hops == 0 {
		b.Fatal("no installation has a hop to go")
	}
	benchSolve(b, ix, p)
}
