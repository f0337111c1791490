package resolve

import (
	"strings"
	"testing"
)

func TestSolveDistinctGroupsIdenticalInstallations(t *testing.T) {
	ix := NewIndex(Universe{"app": {{Version: "1.0.0"}, {Version: "2.0.0", KubeVersion: ">=1.40"}}})
	var p Problem
	p.ClusterVersion = "v1.31.0"
	for _, name := range []string{"ns/app-1", "ns/app-10", "ns/app-2"} {
		p.Installations = append(p.Installations, Installation{Name: name, Extension: "app", Range: "*", Automatic: true})
	}
	resolution := ix.SolveDistinct(p)
	if got := resolution.Selected["app"]; got.Version.Version != "1.0.0" || strings.Join(got.RequiredBy, ",") != "ns/app-1,ns/app-10,ns/app-2" {
		t.Fatalf("selection %+v", got)
	}

	// A failing group: every member gets the explanation under its own
	// name, and "ns/app-1" is not rewritten inside "ns/app-10".
	for i := range p.Installations {
		p.Installations[i].Range = ">=2"
	}
	p.Installations = append(p.Installations, Installation{Name: "ns/app-10x", Extension: "app", Range: "1.x", Automatic: true})
	resolution = ix.SolveDistinct(p)
	for _, name := range []string{"ns/app-1", "ns/app-10", "ns/app-2"} {
		ex := resolution.Failed[name]
		if ex == nil || !strings.Contains(ex.Message, name+" ") {
			t.Fatalf("%s: %+v", name, ex)
		}
		for _, other := range []string{"ns/app-1 ", "ns/app-10 ", "ns/app-2 "} {
			if other != name+" " && strings.Contains(ex.Message, other) {
				t.Fatalf("%s's explanation names %s: %s", name, other, ex.Message)
			}
		}
	}
	// The text is the one a plain solve gives the group's first member.
	plain := ix.Solve(Problem{ClusterVersion: p.ClusterVersion, Installations: []Installation{p.Installations[0], p.Installations[3]}})
	if resolution.Failed["ns/app-1"].Message != plain.Failed["ns/app-1"].Message {
		t.Fatalf("grouped text differs from a plain solve:\n%s\n%s", resolution.Failed["ns/app-1"].Message, plain.Failed["ns/app-1"].Message)
	}
}

func TestRenamedReplacesWholeNamesOnly(t *testing.T) {
	ex := &Explanation{Message: "ns/a-1 wants x; ns/a-10 wants y; (ns/a-1).", Installations: []string{"ns/a-1", "ns/a-10"}}
	got := renamed(ex, "ns/a-1", "ns/b")
	if got.Message != "ns/b wants x; ns/a-10 wants y; (ns/b)." || strings.Join(got.Installations, ",") != "ns/a-10,ns/b" {
		t.Fatalf("%+v", got)
	}
}
