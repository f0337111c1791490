package resolve

import (
	"slices"
	"strings"
	"testing"
)

// TestSolve covers problems that have a solution: which versions are
// chosen, what is added, and the order.
func TestSolve(t *testing.T) {
	tests := []struct {
		name     string
		universe Universe
		cluster  string
		insts    []Installation
		want     string // "ext=version" for every selection, sorted, space-separated
		added    string // "ext<-requiredBy,…" for every added selection
		order    string // InstallOrder, space-separated
		kept     string // extensions whose selection is Kept
	}{
		{
			// app needs a and b, both need c ^1: one c for everyone.
			name: "diamond", cluster: "v1.30.0",
			universe: Universe{
				"app": {ev("1.0.0", "", "a ^1", "b ^1")},
				"a":   {ev("1.0.0", "", "c ^1")},
				"b":   {ev("1.0.0", "", "c >=1.1")},
				"c":   {ev("1.0.0", ""), ev("1.1.0", ""), ev("1.2.0", ""), ev("2.0.0", "")},
			},
			insts: []Installation{want("apps/app", "app", "")},
			want:  "a=1.0.0 app=1.0.0 b=1.0.0 c=1.2.0",
			added: "a<-app 1.0.0 b<-app 1.0.0 c<-a 1.0.0,b 1.0.0",
			order: "c a b app",
		},
		{
			// A higher version of a is skipped because its c range clashes with b.
			name: "backtrack to a lower version", cluster: "v1.30.0",
			universe: Universe{
				"app": {ev("1.0.0", "", "a *", "b *")},
				"a":   {ev("1.0.0", "", "c ^1"), ev("2.0.0", "", "c ^2")},
				"b":   {ev("1.0.0", "", "c ^1")},
				"c":   {ev("1.0.0", ""), ev("2.0.0", "")},
			},
			insts: []Installation{want("apps/app", "app", "")},
			want:  "a=1.0.0 app=1.0.0 b=1.0.0 c=1.0.0",
			added: "a<-app 1.0.0 b<-app 1.0.0 c<-a 1.0.0,b 1.0.0",
			order: "c a b app",
		},
		{
			// Two installations share a dependency that is also requested.
			name: "shared dependency", cluster: "v1.30.0",
			universe: Universe{
				"web":  {ev("1.0.0", "", "cert ^1")},
				"api":  {ev("2.0.0", "", "cert >=1.1")},
				"cert": {ev("1.0.0", ""), ev("1.1.0", "")},
			},
			insts: []Installation{want("apps/api", "api", ""), want("apps/web", "web", ""), want("infra/cert", "cert", "")},
			want:  "api=2.0.0 cert=1.1.0 web=1.0.0",
			order: "cert api web",
		},
		{
			// Automatic upgrades off: the installed version stays, and Kept says a higher one fits.
			name: "keep installed", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), ev("1.1.0", "")}},
			insts:    []Installation{pinned("apps/x", "x", "", "1.0.0")},
			want:     "x=1.0.0", order: "x", kept: "x",
		},
		{
			// Automatic upgrades on: move to the highest.
			name: "upgrade", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), ev("1.1.0", ""), ev("2.0.0", "")}},
			insts:    []Installation{auto("apps/x", "x", "^1", "1.0.0", false)},
			want:     "x=1.1.0", order: "x",
		},
		{
			// The cluster went back to 1.29: 2.0.0 no longer fits, downgrades are allowed.
			name: "downgrade after cluster downgrade", cluster: "v1.29.2",
			universe: Universe{"x": {ev("1.0.0", ""), ev("1.5.0", ">=1.28.0-0"), ev("2.0.0", ">=1.30.0-0")}},
			insts:    []Installation{auto("apps/x", "x", "", "2.0.0", true)},
			want:     "x=1.5.0", order: "x",
		},
		{
			// An installed version is not dropped for a lower current one.
			name: "installed deprecated version kept", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), deprecated(ev("1.1.0", ""))}},
			insts:    []Installation{auto("apps/x", "x", "", "1.1.0", true)},
			want:     "x=1.1.0", order: "x",
		},
		{
			// A deprecated highest version loses to a current one.
			name: "deprecated avoided", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), deprecated(ev("1.2.0", ""))}},
			insts:    []Installation{want("apps/x", "x", "")},
			want:     "x=1.0.0", order: "x",
		},
		{
			// A deprecated version is used when nothing else fits.
			name: "deprecated as last resort", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), deprecated(ev("1.2.0", ""))}},
			insts:    []Installation{want("apps/x", "x", ">=1.2")},
			want:     "x=1.2.0", order: "x",
		},
		{
			// a 2.0.0 and b form a cycle; a 1.0.0 does not need b.
			name: "cycle avoided", cluster: "v1.30.0",
			universe: Universe{"a": {ev("1.0.0", ""), ev("2.0.0", "", "b *")}, "b": {ev("1.0.0", "", "a ^2")}},
			insts:    []Installation{want("apps/a", "a", "")},
			want:     "a=1.0.0", order: "a",
		},
		{
			// Vendor suffixes: v1.33.4-gke.100 admits ">=1.33.0-0" and ">=1.33".
			name: "gke version", cluster: "v1.33.4-gke.100",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0", ">=1.33")}, "y": {ev("1.0.0", ">=1.33.0-0")}},
			insts:    []Installation{want("apps/x", "x", ""), want("apps/y", "y", "")},
			want:     "x=2.0.0 y=1.0.0", order: "x y",
		},
		{
			// A range that names a pre-release admits it.
			name: "pre-release named", cluster: "v1.30.0",
			universe: Universe{"x": {ev("1.0.0", ""), ev("2.0.0-rc.1", "")}},
			insts:    []Installation{want("apps/x", "x", ">=2.0.0-0")},
			want:     "x=2.0.0-rc.1", order: "x",
		},
		{
			// A chain is installed dependencies first; independent ones by name.
			name: "install order", cluster: "v1.30.0",
			universe: Universe{
				"z-app": {ev("1.0.0", "", "m-lib ^1")}, "m-lib": {ev("1.0.0", "", "a-crd ^1")},
				"a-crd": {ev("1.0.0", "")}, "b-tool": {ev("1.0.0", "")},
			},
			insts: []Installation{want("apps/z", "z-app", ""), want("apps/b", "b-tool", "")},
			want:  "a-crd=1.0.0 b-tool=1.0.0 m-lib=1.0.0 z-app=1.0.0",
			added: "a-crd<-m-lib 1.0.0 m-lib<-z-app 1.0.0",
			order: "a-crd b-tool m-lib z-app",
		},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			resolution := NewIndex(tt.universe).Solve(Problem{ClusterVersion: tt.cluster, Installations: tt.insts})
			if len(resolution.Failed) > 0 {
				for name, ex := range resolution.Failed {
					t.Errorf("%s failed: %s", name, ex.Message)
				}
				return
			}
			var got, kept []string
			for ext, sel := range resolution.Selected {
				got = append(got, ext+"="+sel.Version.Version)
				if sel.Kept {
					kept = append(kept, ext)
				}
			}
			slices.Sort(got)
			slices.Sort(kept)
			var added []string
			for _, a := range resolution.Added {
				added = append(added, a.Extension+"<-"+strings.Join(a.RequiredBy, ","))
			}
			checks := [][3]string{
				{"selected", strings.Join(got, " "), tt.want},
				{"added", strings.Join(added, " "), tt.added},
				{"order", strings.Join(resolution.InstallOrder, " "), tt.order},
				{"kept", strings.Join(kept, " "), tt.kept},
			}
			for _, c := range checks {
				if c[1] != c[2] {
					t.Errorf("%s: got %q, want %q", c[0], c[1], c[2])
				}
			}
		})
	}
}

// TestSolveRequiredBy checks that a requested extension lists its
// installations and keeps working when one of them fails.
func TestSolveRequiredBy(t *testing.T) {
	ix := NewIndex(Universe{"x": {ev("1.0.0", ""), ev("2.0.0", "")}})
	resolution := ix.Solve(Problem{ClusterVersion: "v1.30.0", Installations: []Installation{
		want("b/x", "x", "^1"), want("a/x", "x", ""), want("c/x", "x", "^2"),
	}})
	sel := resolution.Selected["x"]
	if sel.Version.Version != "1.0.0" || !slices.Equal(sel.RequiredBy, []string{"a/x", "b/x"}) {
		t.Fatalf("got %s required by %v", sel.Version.Version, sel.RequiredBy)
	}
	if ex := resolution.Failed["c/x"]; ex == nil || !slices.Equal(ex.Installations, []string{"b/x", "c/x"}) {
		t.Fatalf("c/x should fail naming b/x, got %+v", ex)
	}
}

// TestNewIndexSkips counts versions that cannot be used.
func TestNewIndexSkips(t *testing.T) {
	ix := NewIndex(Universe{"x": {
		ev("1.0.0", ""), ev("not-a-version", ""), ev("1.1.0", ">=>1"), ev("1.2.0", "", "y ^^1"), ev("v1.0.0", ""),
	}})
	if ix.Skipped() != 4 {
		t.Fatalf("skipped %d, want 4", ix.Skipped())
	}
}
