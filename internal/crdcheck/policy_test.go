package crdcheck

import (
	"reflect"
	"testing"
)

func TestDecide(t *testing.T) {
	warning := Finding{Class: DefaultChanged, Severity: Warning, Message: "default"}
	breaking := Finding{Class: EnumNarrowed, Severity: Breaking, Message: "enum"}
	stored := Finding{Class: StoredVersionRemoved, Severity: Breaking, Message: "stored"}
	scope := Finding{Class: ScopeChanged, Severity: Breaking, Message: "scope"}
	cases := []struct {
		name     string
		policy   Policy
		findings []Finding
		want     Decision
	}{
		// Nothing changed that matters: every policy but Skip applies.
		{"strict, nothing", Strict, nil, Decision{Action: Apply}},
		{"force, nothing", Force, nil, Decision{Action: Apply}},
		// Skip keeps the installed CRD even when nothing breaks, as Helm does.
		{"skip, nothing", Skip, nil, Decision{Action: KeepInstalled}},
		// The empty policy is the default, Strict.
		{"default refuses breaking", "", []Finding{warning, breaking}, Decision{Action: Refuse, Report: []Finding{breaking}}},
		// Strict refuses naming only what broke.
		{"strict refuses breaking", Strict, []Finding{warning, breaking}, Decision{Action: Refuse, Report: []Finding{breaking}}},
		// Strict applies warnings, and reports them.
		{"strict applies warnings", Strict, []Finding{warning}, Decision{Action: Apply, Report: []Finding{warning}}},
		// An unknown policy reads as Strict.
		{"unknown is strict", "Sometimes", []Finding{breaking}, Decision{Action: Refuse, Report: []Finding{breaking}}},
		{"warn applies breaking", Warn, []Finding{warning, breaking}, Decision{Action: Apply, Report: []Finding{warning, breaking}}},
		{"force applies breaking", Force, []Finding{breaking}, Decision{Action: Apply, Report: []Finding{breaking}}},
		// The API server refuses these whatever the policy; only Skip avoids them.
		{"force refuses a removed stored version", Force, []Finding{breaking, stored}, Decision{Action: Refuse, Report: []Finding{stored}}},
		{"warn refuses a scope change", Warn, []Finding{scope, warning}, Decision{Action: Refuse, Report: []Finding{scope}}},
		{"skip keeps the CRD", Skip, []Finding{stored, breaking}, Decision{Action: KeepInstalled, Report: []Finding{stored, breaking}}},
	}
	for _, tc := range cases {
		t.Run(tc.name, func(t *testing.T) {
			if got := Decide(tc.policy, tc.findings); !reflect.DeepEqual(got, tc.want) {
				t.Errorf("Decide(%q) = %+v, want %+v", tc.policy, got, tc.want)
			}
		})
	}
}

// Decide on what Compare found: a narrowed enum is refused by default and
// applied under Force, the two outcomes issue 28's envtest will check.
func TestDecideOnCompare(t *testing.T) {
	installed := loadCRD(t, widgets)
	proposed := installed.DeepCopy()
	edit(proposed, func(s *Props) { s.Enum = s.Enum[:1] }, "spec", "mode")
	findings := Compare(installed, proposed)
	if d := Decide(Strict, findings); d.Action != Refuse || len(d.Report) != 1 || d.Report[0].Class != EnumNarrowed {
		t.Errorf("Strict: %+v", d)
	}
	if d := Decide(Force, findings); d.Action != Apply || len(d.Report) != 1 {
		t.Errorf("Force: %+v", d)
	}
}
