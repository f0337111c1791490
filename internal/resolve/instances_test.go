package resolve

import (
	"fmt"
	"math/rand/v2"
	"reflect"
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// separable is an installation whose content is namespaced only.
func separable(in Installation) Installation {
	in.Separable = true
	return in
}

// scoped is a shared installation whose content has a cluster-scoped
// object, as ProblemFor states it.
func scoped(in Installation, version string) Installation {
	in.ClusterScoped = in.Extension + " " + version + " has the cluster-scoped CustomResourceDefinition widgets.example.com"
	return in
}

// TestSolveInstances covers problems with instances that have a solution:
// every selection by its key, what is added, and the order.
func TestSolveInstances(t *testing.T) {
	tests := []struct {
		name     string
		universe Universe
		insts    []Installation
		want     string // "key=version" for every selection, sorted
		added    string // "ext<-requiredBy,…" for every added selection
		order    string // InstallOrder
	}{
		{
			// Namespaced-only installations share a version when they
			// can.
			name:     "shared when possible",
			universe: Universe{"x": {ev("1.0.0", ""), ev("1.1.0", ""), ev("2.0.0", "")}},
			insts:    []Installation{separable(want("team-a/x", "x", "^1")), separable(want("team-b/x", "x", "*"))},
			want:     "x=1.1.0",
			order:    "x",
		},
		{
			// Two namespaced-only installations at disjoint ranges: the
			// one sorted last runs a version of its own.
			name:     "side by side",
			universe: Universe{"x": {ev("1.0.0", ""), ev("1.1.0", ""), ev("2.0.0", "")}},
			insts:    []Installation{separable(want("team-a/x", "x", "^1")), separable(want("team-b/x", "x", "^2"))},
			want:     "x=1.1.0 x@team-b/x=2.0.0",
			order:    "x x@team-b/x",
		},
		{
			// A namespaced-only installation next to a cluster-scoped one
			// that cannot share its version: the cluster-scoped one keeps
			// the cluster's version, the other runs its own.
			name:     "instance beside the shared version",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}},
			insts: []Installation{
				scoped(auto("infra/x", "x", "^1", "1.0.0", false), "1.0.0"),
				separable(want("team-b/x", "x", "^2")),
			},
			want:  "x=1.0.0 x@team-b/x=2.0.0",
			order: "x x@team-b/x",
		},
		{
			// A cluster-scoped newcomer takes the cluster's version; the
			// running namespaced-only installation, which cannot share
			// it, keeps its own.
			name:     "namespaced-only yields",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}},
			insts: []Installation{
				separable(auto("team-a/x", "x", "^1", "1.0.0", false)),
				scoped(want("team-b/x", "x", "^2"), "2.0.0"),
			},
			want:  "x=2.0.0 x@team-a/x=1.0.0",
			order: "x x@team-a/x",
		},
		{
			// Another extension's dependency on x is met by the shared x,
			// never by an instance: app needs x ^1, the only installation
			// of x wants ^2, so it runs apart and x 1.x is added.
			name: "dependents share x",
			universe: Universe{
				"app": {ev("1.0.0", "", "x ^1")},
				"x":   {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts: []Installation{separable(want("apps/app", "app", "")), separable(want("team-b/x", "x", "^2"))},
			want:  "app=1.0.0 x=1.0.0 x@team-b/x=2.0.0",
			added: "x<-app 1.0.0",
			order: "x app x@team-b/x",
		},
		{
			// The installation of x that fits the dependents serves them.
			name: "the fitting installation serves dependents",
			universe: Universe{
				"app": {ev("1.0.0", "", "x ^1")},
				"x":   {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts: []Installation{
				separable(want("apps/app", "app", "")), separable(want("team-a/x", "x", "")), separable(want("team-b/x", "x", "^2")),
			},
			want:  "app=1.0.0 x=1.0.0 x@team-b/x=2.0.0",
			order: "x app x@team-b/x",
		},
		{
			// An instance's own dependencies are met by the shared
			// versions, together with everyone else's.
			name: "an instance's dependencies are shared",
			universe: Universe{
				"x":     {ev("1.0.0", "", "cache ^1"), ev("2.0.0", "", "cache >=1.1")},
				"cache": {ev("1.0.0", ""), ev("1.1.0", ""), ev("1.2.0", "")},
			},
			insts: []Installation{
				separable(want("team-a/x", "x", "^1")), separable(want("team-b/x", "x", "^2")),
				auto("infra/cache", "cache", "<=1.1", "1.1.0", false),
			},
			want:  "cache=1.1.0 x=1.0.0 x@team-b/x=2.0.0",
			order: "cache x x@team-b/x",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			for _, solve := range []string{"Solve", "SolveDistinct"} {
				ix := NewIndex(tt.universe)
				p := Problem{ClusterVersion: "v1.30.0", Installations: tt.insts}
				resolution := ix.Solve(p)
				if solve == "SolveDistinct" {
					resolution = ix.SolveDistinct(p)
				}
				for name, ex := range resolution.Failed {
					t.Errorf("%s: %s failed: %s", solve, name, ex.Message)
				}
				var got []string
				for key, sel := range resolution.Selected {
					got = append(got, key+"="+sel.Version.Version)
					if want := InstanceKey(sel.Extension, sel.Instance); sel.Instance != "" && key != want {
						t.Errorf("%s: selection of instance %s is under %s", solve, sel.Instance, key)
					}
				}
				slices.Sort(got)
				var added []string
				for _, a := range resolution.Added {
					added = append(added, a.Extension+"<-"+strings.Join(a.RequiredBy, ","))
				}
				for _, c := range [][3]string{
					{"selected", strings.Join(got, " "), tt.want},
					{"added", strings.Join(added, " "), tt.added},
					{"order", strings.Join(resolution.InstallOrder, " "), tt.order},
				} {
					if c[1] != c[2] {
						t.Errorf("%s: %s: got %q, want %q", solve, c[0], c[1], c[2])
					}
				}
			}
		})
	}
}

// TestSolveInstancesExplanations pins the texts of failures that involve
// the single-version rule or an instance.
func TestSolveInstancesExplanations(t *testing.T) {
	tests := []struct {
		name     string
		universe Universe
		insts    []Installation
		failed   string
		want     string
	}{
		{
			// The installed one's content has a CRD: one version serves
			// the cluster, and the text names the CRD.
			name:     "cluster-scoped forces one version",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}},
			insts: []Installation{
				scoped(auto("team-a/x", "x", "^1", "1.0.0", false), "1.0.0"),
				scoped(want("team-b/x", "x", "^2"), "2.0.0"),
			},
			failed: "team-b/x",
			want: "team-b/x wants x ^2; team-a/x wants x ^1 (one version of x serves the whole cluster: " +
				"x 2.0.0 has the cluster-scoped CustomResourceDefinition widgets.example.com). " +
				"Set spec.version of team-b/x to \"~1.0.0\", or change spec.version of team-a/x.",
		},
		{
			// Only the other installation's object is known.
			name:     "the other's object is named",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}},
			insts: []Installation{
				scoped(auto("team-a/x", "x", "^1", "1.0.0", false), "1.0.0"),
				want("team-b/x", "x", "^2"),
			},
			failed: "team-b/x",
			want: "team-b/x wants x ^2; team-a/x wants x ^1 (one version of x serves the whole cluster: " +
				"x 1.0.0 has the cluster-scoped CustomResourceDefinition widgets.example.com). " +
				"Set spec.version of team-b/x to \"~1.0.0\", or change spec.version of team-a/x.",
		},
		{
			// A shared installation against a dependent's range: it
			// shares x with the dependent because of its CRD.
			name: "cluster-scoped against a dependency",
			universe: Universe{
				"app": {ev("1.0.0", "", "x ^1")},
				"x":   {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts:  []Installation{auto("apps/app", "app", "", "1.0.0", false), scoped(want("team-b/x", "x", "^2"), "2.0.0")},
			failed: "team-b/x",
			want: "team-b/x wants x ^2 (one version of x serves the whole cluster: x 2.0.0 has the cluster-scoped CustomResourceDefinition widgets.example.com); " +
				"apps/app has app 1.0.0 installed and downgrades are not allowed; app 1.0.0 (installed) needs x ^1. " +
				"Set spec.version of team-b/x to \"~1.0.0\", or remove apps/app.",
		},
		{
			// An instance's dependency conflicts with the shared one.
			name: "an instance's dependency",
			universe: Universe{
				"x":     {ev("1.0.0", "", "cache ^1"), ev("2.0.0", "", "cache ^2")},
				"cache": {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts:  []Installation{auto("infra/cache", "cache", "^1", "1.0.0", false), separable(want("team-b/x", "x", "^2"))},
			failed: "team-b/x",
			want: "team-b/x wants x ^2; x 2.0.0 needs cache ^2; infra/cache wants cache ^1. " +
				"Set spec.version of team-b/x to \"~1.0.0\", or change spec.version of infra/cache.",
		},
		{
			// Apart it fails on its own terms, which the text tells
			// without the other installation.
			name:     "an instance that does not fit the cluster",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", ">=1.40")}},
			insts:    []Installation{separable(want("team-a/x", "x", "^1")), separable(want("team-b/x", "x", "^2"))},
			failed:   "team-b/x",
			want:     "team-b/x wants x ^2; x 2.0.0 needs Kubernetes >=1.40; the cluster runs 1.30.0. Upgrade the cluster to 1.40 or later, or set spec.version of team-b/x to \"~1.0.0\".",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resolution := NewIndex(tt.universe).Solve(Problem{ClusterVersion: "v1.30.0", Installations: tt.insts})
			ex := resolution.Failed[tt.failed]
			if ex == nil {
				t.Fatalf("%s did not fail; resolution %+v", tt.failed, resolution)
			}
			if len(resolution.Failed) != 1 {
				t.Errorf("want only %s to fail, got %v", tt.failed, resolution.Failed)
			}
			if ex.Message != tt.want {
				t.Errorf("message\n got: %s\nwant: %s", ex.Message, tt.want)
			}
		})
	}
}

// TestSolveDistinctInstances gives each member of a group of identical
// instances a Selection of its own.
func TestSolveDistinctInstances(t *testing.T) {
	ix := NewIndex(Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}})
	p := Problem{ClusterVersion: "v1.30.0"}
	for _, name := range []string{"a/x", "b/x", "c/x"} {
		p.Installations = append(p.Installations, separable(want(name, "x", "^1")))
	}
	p.Installations = append(p.Installations, separable(want("d/x", "x", "^2")), want("e/x", "x", "^2"))
	resolution := ix.SolveDistinct(p)
	if len(resolution.Failed) > 0 {
		t.Fatalf("failed: %v", resolution.Failed)
	}
	// e/x cannot run apart, so ^2 is the cluster's version; a/x, b/x and
	// c/x each run 1.0.0 apart.
	for name, version := range map[string]string{"a/x": "1.0.0", "b/x": "1.0.0", "c/x": "1.0.0", "d/x": "2.0.0", "e/x": "2.0.0"} {
		sel, ok := resolution.For("x", name)
		if !ok || sel.Version.Version != version {
			t.Errorf("%s: got %v %s, want %s", name, ok, sel.Version.Version, version)
		}
		if apart := version == "1.0.0"; apart && (sel.Instance != name || !slices.Equal(sel.RequiredBy, []string{name})) {
			t.Errorf("%s: selection %+v", name, sel)
		}
	}
	if got := strings.Join(resolution.InstallOrder, " "); got != "x x@a/x x@b/x x@c/x" {
		t.Errorf("order %q", got)
	}
	if got := strings.Join(resolution.UninstallOrder, " "); got != "x@c/x x@b/x x@a/x x" {
		t.Errorf("uninstall order %q", got)
	}
	if sel := resolution.Selected["x"]; !slices.Equal(sel.RequiredBy, []string{"d/x", "e/x"}) {
		t.Errorf("shared x is required by %v", sel.RequiredBy)
	}
}

// TestSeparable reads the decision from an installation's status.
func TestSeparable(t *testing.T) {
	crd := &v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	content := func(gen int64, ref *v1alpha1.ObjectReference) *v1alpha1.ContentScope {
		return &v1alpha1.ContentScope{Version: "1.0.0", ObservedGeneration: gen, ClusterScoped: ref}
	}
	tests := []struct {
		name      string
		installed string
		pending   bool
		content   *v1alpha1.ContentScope
		want      bool
	}{
		// Brand new: nothing installed, content not known yet. Rendering
		// tells; until then it may have a version of its own.
		{name: "new", want: true},
		// Rendered for this generation: the content decides.
		{name: "namespaced content", content: content(2, nil), want: true},
		{name: "cluster-scoped content", content: content(2, crd), want: false},
		{name: "installed, namespaced content", installed: "1.0.0", content: content(2, nil), want: true},
		{name: "installed, cluster-scoped content", installed: "1.0.0", content: content(2, crd), want: false},
		// The spec changed since: not installed, so rendering tells again.
		{name: "new spec, nothing installed", content: content(1, crd), want: true},
		// The spec changed since, and something is installed: as the
		// content was.
		{name: "new spec, installed cluster-scoped", installed: "1.0.0", content: content(1, crd), want: false},
		{name: "new spec, installed namespaced", installed: "1.0.0", content: content(1, nil), want: true},
		// An apply under way counts as installed.
		{name: "pending, content unknown", pending: true, want: false},
		// Installed before Annex recorded content: shared until it
		// renders.
		{name: "installed, content unknown", installed: "1.0.0", want: false},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
			inst.Status.InstalledVersion, inst.Status.Content = tt.installed, tt.content
			if tt.pending {
				inst.Status.Pending = &v1alpha1.Revision{Number: 1}
			}
			if got := Separable(inst); got != tt.want {
				t.Errorf("got %v, want %v", got, tt.want)
			}
		})
	}
}

// TestProblemForInstances states the instance decision and the object
// that makes an installation share its version.
func TestProblemForInstances(t *testing.T) {
	crd := &v1alpha1.ObjectReference{Group: "apiextensions.k8s.io", Kind: "CustomResourceDefinition", Name: "widgets.example.com"}
	mk := func(ns string, c *v1alpha1.ContentScope) *v1alpha1.ExtensionInstallation {
		inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: ns, Name: "x", Generation: 1}}
		inst.Spec.Extension, inst.Status.InstalledVersion, inst.Status.Content = "x", "1.0.0", c
		return inst
	}
	p := ProblemFor("v1.30.0", []*v1alpha1.ExtensionInstallation{
		mk("b", &v1alpha1.ContentScope{Version: "1.0.0", ObservedGeneration: 1, ClusterScoped: crd}),
		mk("a", &v1alpha1.ContentScope{Version: "1.0.0", ObservedGeneration: 1}),
	})
	a, b := p.Installations[0], p.Installations[1]
	if a.Name != "a/x" || !a.Separable || a.ClusterScoped != "" {
		t.Errorf("a: %+v", a)
	}
	if b.Name != "b/x" || b.Separable || b.ClusterScoped != "x 1.0.0 has the cluster-scoped CustomResourceDefinition widgets.example.com" {
		t.Errorf("b: %+v", b)
	}
}

// TestSolveSeparableProperties checks the resolutions of 500 random problems in
// which some installations are Separable: every installation that did not
// fail gets a version that fits its range, policy and the cluster; one
// that is not Separable shares the extension's version; every selected
// version's dependencies are met by the shared versions; and a problem
// that solves with every installation shared solves the same way, with no
// instance.
func TestSolveSeparableProperties(t *testing.T) {
	instances, fewer, more := 0, 0, 0
	defer func() {
		t.Logf("%d instances; separable installations made %d problems fail less, %d more", instances, fewer, more)
	}()
	for seed := range uint64(500) {
		r := rand.New(rand.NewPCG(seed, 7))
		u, shared := randomProblem(r)
		p := Problem{ClusterVersion: shared.ClusterVersion, Installations: slices.Clone(shared.Installations)}
		for i := range p.Installations {
			p.Installations[i].Separable = r.IntN(2) == 0
		}
		ix := NewIndex(u)
		resolution, base := ix.Solve(p), ix.Solve(shared)
		if again := ix.Solve(p); !reflect.DeepEqual(resolution, again) {
			t.Fatalf("seed %d: two solves differ", seed)
		}
		c := newChecker(u, p.ClusterVersion)
		sharedAssign := map[string]string{}
		for key, sel := range resolution.Selected {
			if sel.Instance == "" {
				sharedAssign[key] = sel.Version.Version
			}
		}
		var sharedOK []Installation
		for _, in := range p.Installations {
			if resolution.Failed[in.Name] != nil {
				continue
			}
			sel, ok := resolution.For(in.Extension, in.Name)
			if !ok {
				t.Fatalf("seed %d: %s neither failed nor selected", seed, in.Name)
			}
			if sel.Instance == "" {
				sharedOK = append(sharedOK, in)
				continue
			}
			instances++
			if !in.Separable {
				t.Fatalf("seed %d: %s is not separable but runs apart", seed, in.Name)
			}
			if v := c.instanceViolation(sharedAssign, in, sel.Version.Version); v != "" {
				t.Fatalf("seed %d: instance %s: %s\nproblem %+v\nplan %+v", seed, in.Name, v, p, resolution)
			}
		}
		if v := c.violation(sharedAssign, sharedOK); v != "" {
			t.Fatalf("seed %d: the shared versions violate a constraint: %s\nproblem %+v\nplan %+v", seed, v, p, resolution)
		}
		if len(base.Failed) == 0 {
			for key, sel := range base.Selected {
				if got := resolution.Selected[key]; got.Version.Version != sel.Version.Version {
					t.Fatalf("seed %d: %s is %s shared, %s with separable installations", seed, key, sel.Version.Version, got.Version.Version)
				}
			}
			if len(resolution.Selected) != len(base.Selected) || len(resolution.Failed) > 0 {
				t.Fatalf("seed %d: a problem that solves shared made instances or failures: %+v", seed, resolution)
			}
		}
		switch {
		case len(resolution.Failed) < len(base.Failed):
			fewer++
		case len(resolution.Failed) > len(base.Failed):
			more++
		}
	}
}

// instanceViolation checks installation in, run apart at version: in the
// catalog, in its range and policy, on the cluster, and its dependencies
// met by the shared versions.
func (c *checker) instanceViolation(shared map[string]string, in Installation, version string) string {
	spec, ok := c.spec(in.Extension, version)
	if !ok {
		return in.Extension + " " + version + " is not in the catalog"
	}
	if v := c.violation(map[string]string{in.Extension: version}, []Installation{in}); v != "" && !strings.Contains(v, " needs ") {
		return v // range, policy, cluster
	}
	for _, d := range spec.Dependencies {
		dv, ok := shared[d.Name]
		if d.Name == in.Extension {
			dv, ok = version, true
		}
		if !ok || !inRange(d.Version, dv) {
			return fmt.Sprintf("%s %s needs %s %q, the shared version is %q", in.Extension, version, d.Name, d.Version, dv)
		}
	}
	return ""
}

// BenchmarkSolveInstances10k: the satisfiable 10,000-version problem plus
// 40 namespaced-only installations of ten of its extensions, at ranges
// that cannot all share a version (each extension's versions run 1.x and
// 2.x), so that some of them run apart. It measures the cost of copies and
// takebacks next to BenchmarkSolve10k.
func BenchmarkSolveInstances10k(b *testing.B) {
	const exts = 500
	ix := NewIndex(catalogUniverse(exts, 1))
	p := satisfiableProblem(ix, exts, 1)
	for i := range 40 {
		rng := []string{"^1", "^2", ">=1.3 <2", ">=2.5"}[i%4]
		p.Installations = append(p.Installations, separable(want(fmt.Sprintf("team-%02d/app", i), fmt.Sprintf("ext-%04d", i/4), rng)))
	}
	resolution := ix.Solve(p)
	apart := 0
	for _, sel := range resolution.Selected {
		if sel.Instance != "" {
			apart++
		}
	}
	if apart == 0 {
		b.Fatalf("no installation runs apart; failed: %d", len(resolution.Failed))
	}
	b.ReportMetric(float64(apart), "apart")
	benchSolve(b, ix, p)
}
