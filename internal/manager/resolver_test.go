package manager

import (
	"testing"

	"github.com/annex-platform/annex/internal/resolve"
)

// Problems that differ anywhere have different keys, also when their
// strings differ only in where one ends and the next begins.
func TestProblemKey(t *testing.T) {
	base := resolve.Problem{ClusterVersion: "1.37.1", Installations: []resolve.Installation{
		{Name: "ns/a", Extension: "hello", Range: "1.x", Installed: "1.0.0", Automatic: true},
		{Name: "ns/b", Extension: "greetings", Range: "*"},
	}}
	variants := map[string]func(p *resolve.Problem){
		"cluster version": func(p *resolve.Problem) { p.ClusterVersion = "1.36.4" },
		"name":            func(p *resolve.Problem) { p.Installations[0].Name = "ns/c" },
		"range":           func(p *resolve.Problem) { p.Installations[1].Range = ">=1" },
		"installed":       func(p *resolve.Problem) { p.Installations[1].Installed = "1.0.0" },
		"automatic":       func(p *resolve.Problem) { p.Installations[0].Automatic = false },
		"allowDowngrade":  func(p *resolve.Problem) { p.Installations[1].AllowDowngrade = true },
		"separable":       func(p *resolve.Problem) { p.Installations[0].Separable = true },
		"clusterScoped": func(p *resolve.Problem) {
			p.Installations[1].ClusterScoped = "greetings 1.0.0 has the cluster-scoped ClusterRole greeter"
		},
		"boundary": func(p *resolve.Problem) {
			p.Installations[0].Extension, p.Installations[0].Range = "hello1", ".x"
		},
		"one fewer": func(p *resolve.Problem) { p.Installations = p.Installations[:1] },
		"provided": func(p *resolve.Problem) {
			p.Provided = map[string]string{"widgets.example.com/v1/Widget": "widgets"}
		},
	}
	key := problemKey(base)
	for name, change := range variants {
		p := resolve.Problem{ClusterVersion: base.ClusterVersion, Installations: append([]resolve.Installation(nil), base.Installations...)}
		change(&p)
		if problemKey(p) == key {
			t.Errorf("changing the %s leaves the key unchanged", name)
		}
	}
	same := resolve.Problem{ClusterVersion: base.ClusterVersion, Installations: append([]resolve.Installation(nil), base.Installations...)}
	if problemKey(same) != key {
		t.Error("equal problems have different keys")
	}
}
