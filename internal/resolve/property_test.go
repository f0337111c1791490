package resolve

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"sort"
	"strings"
	"testing"

	"github.com/Masterminds/semver/v3"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// randomProblem builds a small catalog and a few installations from a seed.
func randomProblem(r *rand.Rand) (Universe, Problem) {
	versions := []string{"1.0.0", "1.1.0", "1.2.0-rc.1", "2.0.0", "2.1.0", "3.0.0"}
	kubes := []string{"", "", ">=1.28", "<1.30", ">=1.30.0-0", "~1.28 || >=1.31"}
	ranges := []string{"", "^1", ">=1.1", "<2", "~2.0", "^2 || ^1", ">=1.2.0-0", "2.0.0 - 3.0.0", "*"}
	names := []string{"a", "b", "c", "d", "e"}[:2+r.IntN(4)]
	u := Universe{}
	for _, n := range names {
		for _, v := range versions {
			if r.IntN(3) == 0 {
				continue
			}
			var deps []string
			for range r.IntN(3) {
				dep := names[r.IntN(len(names))]
				if r.IntN(12) == 0 {
					dep = "zz" // no catalog offers it
				}
				if dep == n || slices.ContainsFunc(deps, func(d string) bool { return strings.HasPrefix(d, dep+" ") }) {
					continue
				}
				deps = append(deps, dep+" "+ranges[r.IntN(len(ranges))])
			}
			x := ev(v, kubes[r.IntN(len(kubes))], deps...)
			x.Deprecated = r.IntN(7) == 0
			u[n] = append(u[n], x)
		}
	}
	clusters := []string{"v1.28.3", "v1.29.0-gke.1", "v1.31.2+k3s1"}
	p := Problem{ClusterVersion: clusters[r.IntN(len(clusters))]}
	for i := range 1 + r.IntN(4) {
		in := Installation{Name: fmt.Sprintf("ns/i%d", i), Extension: names[r.IntN(len(names))], Range: ranges[r.IntN(len(ranges))]}
		if r.IntN(15) == 0 {
			in.Extension = "nope"
		}
		if r.IntN(3) == 0 {
			in.Installed = versions[r.IntN(len(versions))]
			in.Automatic = r.IntN(2) == 0
			in.AllowDowngrade = r.IntN(2) == 0
		}
		p.Installations = append(p.Installations, in)
	}
	return u, p
}

// checker is the independent verifier: it reads the raw catalog with
// Masterminds semver directly and shares no code with the solver.
type checker struct {
	u       Universe
	cluster *semver.Version
	names   []string
}

func newChecker(u Universe, clusterVersion string) *checker {
	v := semver.MustParse(clusterVersion)
	c := &checker{u: u, cluster: semver.New(v.Major(), v.Minor(), v.Patch(), "", "")}
	for n := range u {
		c.names = append(c.names, n)
	}
	sort.Strings(c.names)
	return c
}

func (c *checker) spec(ext, version string) (v1alpha1.ExtensionVersion, bool) {
	for _, v := range c.u[ext] {
		if v.Version == version {
			return v, true
		}
	}
	return v1alpha1.ExtensionVersion{}, false
}

var inRangeCache = map[[2]string]bool{}

func inRange(rng, version string) bool {
	k := [2]string{rng, version}
	if ok, seen := inRangeCache[k]; seen {
		return ok
	}
	text := rng
	if strings.TrimSpace(text) == "" {
		text = "*"
	}
	con, err := semver.NewConstraint(text)
	ok := err == nil && con.Check(semver.MustParse(version))
	inRangeCache[k] = ok
	return ok
}

// violation returns what is wrong with an assignment (extension → version)
// for the given installations, or "".
func (c *checker) violation(assign map[string]string, insts []Installation) string {
	for _, in := range insts {
		got, ok := assign[in.Extension]
		if !ok {
			return in.Name + ": extension not selected"
		}
		if !inRange(in.Range, got) {
			return fmt.Sprintf("%s: %s %s outside %q", in.Name, in.Extension, got, in.Range)
		}
		if iv, err := semver.NewVersion(in.Installed); in.Installed != "" && err == nil {
			gv := semver.MustParse(got)
			if !in.Automatic && !gv.Equal(iv) {
				return fmt.Sprintf("%s: pinned %s moved to %s", in.Name, in.Installed, got)
			}
			if !in.AllowDowngrade && gv.LessThan(iv) {
				return fmt.Sprintf("%s: downgraded %s to %s", in.Name, in.Installed, got)
			}
		}
	}
	for ext, version := range assign {
		spec, ok := c.spec(ext, version)
		if !ok {
			return ext + " " + version + " is not in the catalog"
		}
		if spec.KubeVersion != "" && !inRange(spec.KubeVersion, c.cluster.String()) {
			return fmt.Sprintf("%s %s excludes Kubernetes %s", ext, version, c.cluster)
		}
		for _, d := range spec.Dependencies {
			dv, ok := assign[d.Name]
			if !ok || !inRange(d.Version, dv) {
				return fmt.Sprintf("%s %s needs %s %q, got %q", ext, version, d.Name, d.Version, dv)
			}
		}
	}
	if c.cyclic(assign) {
		return "dependency cycle"
	}
	return ""
}

func (c *checker) cyclic(assign map[string]string) bool {
	state := map[string]int{}
	var visit func(string) bool
	visit = func(ext string) bool {
		state[ext] = 1
		spec, _ := c.spec(ext, assign[ext])
		for _, d := range spec.Dependencies {
			if state[d.Name] == 1 || state[d.Name] == 0 && visit(d.Name) {
				return true
			}
		}
		state[ext] = 2
		return false
	}
	for ext := range assign {
		if state[ext] == 0 && visit(ext) {
			return true
		}
	}
	return false
}

// satisfiable searches every assignment of the small catalog.
func (c *checker) satisfiable(insts []Installation) bool {
	assign := map[string]string{}
	var try func(i int) bool
	try = func(i int) bool {
		if i == len(c.names) {
			return c.violation(assign, insts) == ""
		}
		if try(i + 1) {
			return true
		}
		for _, v := range c.u[c.names[i]] {
			assign[c.names[i]] = v.Version
			if try(i + 1) {
				return true
			}
		}
		delete(assign, c.names[i])
		return false
	}
	return try(0)
}

// TestSolveProperties checks every Resolution of 500 random problems with the
// independent verifier, checks each failure by exhaustive search, and
// checks that no requested extension could have had a higher version.
func TestSolveProperties(t *testing.T) {
	failures, cycles, solved := 0, 0, 0
	defer func() { t.Logf("%d installations failed (%d by a cycle), %d solved", failures, cycles, solved) }()
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 42))
		u, p := randomProblem(r)
		ix := NewIndex(u)
		resolution := ix.Solve(p)
		if again := ix.Solve(p); !reflect.DeepEqual(resolution, again) {
			t.Fatalf("seed %d: two solves differ", seed)
		}
		c := newChecker(u, p.ClusterVersion)
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
		if v := c.violation(assign, ok); v != "" {
			t.Fatalf("seed %d: resolution violates a constraint: %s\nproblem %+v\nplan %+v", seed, v, p, resolution)
		}
		checkShape(t, seed, c, ok, resolution)
		solved += len(ok)
		for _, in := range p.Installations {
			ex, failed := resolution.Failed[in.Name]
			if !failed {
				continue
			}
			if ex.Message == "" || len(ex.Message) > maxMessage+100 {
				t.Fatalf("seed %d: %s: bad message length %d: %s", seed, in.Name, len(ex.Message), ex.Message)
			}
			failures++
			if ex.Reason == ReasonDependencyCycle {
				cycles++
			}
			if c.satisfiable(append(slices.Clone(ok), in)) {
				t.Fatalf("seed %d: %s failed (%s) but fits with the others\nproblem %+v\nplan %+v", seed, in.Name, ex.Message, p, resolution)
			}
		}
		checkHighest(t, seed, c, ok, resolution, assign)
	}
}

// checkShape checks Added, RequiredBy and the orders.
func checkShape(t *testing.T, seed uint64, c *checker, ok []Installation, resolution *Resolution) {
	t.Helper()
	requested := map[string]bool{}
	for _, in := range ok {
		requested[in.Extension] = true
	}
	var added []string
	for ext := range resolution.Selected {
		if !requested[ext] {
			added = append(added, ext)
		}
	}
	sort.Strings(added)
	var gotAdded []string
	for _, a := range resolution.Added {
		gotAdded = append(gotAdded, a.Extension)
	}
	if !slices.Equal(added, gotAdded) {
		t.Fatalf("seed %d: Added %v, want %v", seed, gotAdded, added)
	}
	pos := map[string]int{}
	for i, ext := range resolution.InstallOrder {
		pos[ext] = i
	}
	if len(pos) != len(resolution.Selected) {
		t.Fatalf("seed %d: InstallOrder %v does not list every selection", seed, resolution.InstallOrder)
	}
	for ext, sel := range resolution.Selected {
		for _, d := range sel.Version.Dependencies {
			if pos[d.Name] >= pos[ext] {
				t.Fatalf("seed %d: %s installed before its dependency %s: %v", seed, ext, d.Name, resolution.InstallOrder)
			}
		}
	}
	if rev := slices.Clone(resolution.InstallOrder); !slices.Equal(reversed(rev), resolution.UninstallOrder) {
		t.Fatalf("seed %d: UninstallOrder is not the reverse of InstallOrder", seed)
	}
}

// checkHighest: with every other extension fixed, no higher non-deprecated
// version of a requested extension would do, and a deprecated choice (other
// than an installed one kept) means no non-deprecated version would.
func checkHighest(t *testing.T, seed uint64, c *checker, ok []Installation, resolution *Resolution, assign map[string]string) {
	t.Helper()
	for _, in := range ok {
		sel := resolution.Selected[in.Extension]
		chosen := semver.MustParse(sel.Version.Version)
		isInstalled := false
		for _, o := range ok {
			if o.Extension == in.Extension && o.Installed == sel.Version.Version {
				isInstalled = true
			}
		}
		for _, v := range c.u[in.Extension] {
			if v.Deprecated {
				continue
			}
			higher := semver.MustParse(v.Version).GreaterThan(chosen)
			if !higher && !(sel.Version.Deprecated && !isInstalled) {
				continue
			}
			trial := maps(assign)
			trial[in.Extension] = v.Version
			if c.violation(trial, ok) == "" {
				t.Fatalf("seed %d: %s %s chosen, but %s also fits with the rest", seed, in.Extension, sel.Version.Version, v.Version)
			}
		}
	}
}

func maps(m map[string]string) map[string]string {
	out := make(map[string]string, len(m))
	for k, v := range m {
		out[k] = v
	}
	return out
}

func reversed(s []string) []string {
	slices.Reverse(s)
	return s
}
