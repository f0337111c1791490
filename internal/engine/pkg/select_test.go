package pkg

import (
	"reflect"
	"testing"
)

func TestSelectPlans(t *testing.T) {
	// plans builds a package with the given plans and parameters
	// A (no trigger), B (-> backup), C (-> restore), D (-> backup).
	plans := func(names ...string) *Package {
		p := &Package{Operator: Operator{Plans: map[string]PlanSpec{}}, Params: Params{Parameters: []Param{
			{Name: "A"}, {Name: "B", Trigger: "backup"}, {Name: "C", Trigger: "restore"}, {Name: "D", Trigger: "backup"},
		}}}
		for _, n := range names {
			p.Operator.Plans[n] = PlanSpec{}
		}
		return p
	}
	all := plans("deploy", "update", "upgrade", "cleanup", "backup", "restore")
	tests := []struct {
		name        string
		pkg         *Package
		change      Change
		wantPlans   []string
		wantTrigger string
	}{
		// Install runs deploy, whatever else is set.
		{"install", all, Change{Install: true, Changed: []string{"B"}}, []string{"deploy"}, "install"},
		// Delete runs cleanup when there is one, else nothing.
		{"delete", all, Change{Delete: true}, []string{"cleanup"}, "delete"},
		{"delete without cleanup", plans("deploy"), Change{Delete: true}, nil, ""},
		// Upgrade: upgrade, else update, else deploy.
		{"upgrade", all, Change{Upgrade: true, From: "0.1.0", To: "0.2.0"}, []string{"upgrade"}, "upgrade 0.1.0 → 0.2.0"},
		{"upgrade via update", plans("deploy", "update"), Change{Upgrade: true}, []string{"update"}, "upgrade"},
		{"upgrade via deploy", plans("deploy"), Change{Upgrade: true, From: "1", To: "2"}, []string{"deploy"}, "upgrade 1 → 2"},
		// Upgrade with parameter changes: the upgrade's plan, then the
		// distinct plans triggered, in params.yaml order; A has no trigger
		// and rides on the upgrade.
		{"upgrade and parameters", all, Change{Upgrade: true, From: "1", To: "2", Changed: []string{"C", "A", "B"}},
			[]string{"upgrade", "backup", "restore"}, "upgrade 1 → 2, parameters A, B, C"},
		// A trigger that is the upgrade's own plan is not run twice.
		{"upgrade triggers deploy", plans("deploy"), Change{Upgrade: true, Changed: []string{"X"}}, []string{"deploy"}, "upgrade, parameters X"},
		// A parameter's trigger.
		{"trigger", all, Change{Changed: []string{"B"}}, []string{"backup"}, "parameter B"},
		// No trigger: update, else deploy.
		{"no trigger", all, Change{Changed: []string{"A"}}, []string{"update"}, "parameter A"},
		{"no trigger no update", plans("deploy"), Change{Changed: []string{"A"}}, []string{"deploy"}, "parameter A"},
		// Two parameters of one trigger run it once.
		{"same trigger", all, Change{Changed: []string{"D", "B"}}, []string{"backup"}, "parameters B, D"},
		// Several plans (KUDO refused this, #354) run in the order their
		// first triggering parameter appears in params.yaml: A (update)
		// before B (backup) before C (restore), whatever Changed's order.
		{"several plans", all, Change{Changed: []string{"C", "B", "A"}}, []string{"update", "backup", "restore"}, "parameters A, B, C"},
		// A removed parameter (not declared any more) falls back to update
		// and sorts last.
		{"removed parameter", all, Change{Changed: []string{"GONE", "C"}}, []string{"restore", "update"}, "parameters C, GONE"},
		// Nothing happened.
		{"nothing", all, Change{}, nil, ""},
	}
	for _, tt := range tests {
		t.Run(tt.name, func(t *testing.T) {
			plans, trigger := SelectPlans(tt.pkg, tt.change)
			if !reflect.DeepEqual(plans, tt.wantPlans) || trigger != tt.wantTrigger {
				t.Errorf("SelectPlans = %v, %q; want %v, %q", plans, trigger, tt.wantPlans, tt.wantTrigger)
			}
		})
	}
}
