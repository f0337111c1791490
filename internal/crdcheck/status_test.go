package crdcheck

import (
	"fmt"
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestStatus(t *testing.T) {
	findings := func(n int) []Finding {
		var out []Finding
		for i := range n {
			out = append(out, Finding{CRD: "widgets.example.com", Version: "v1", Path: fmt.Sprintf(".spec.f%d", i), Class: "FieldRemoved", Message: "removed"})
		}
		return out
	}
	for _, tc := range []struct {
		name      string
		j         Judgement
		outcome   v1alpha1.CRDChangeOutcome // "": no report
		findings  int
		truncated int32
	}{
		// Nothing to report: status.crdChanges is cleared.
		{name: "nothing", j: Judgement{Policy: Strict}},
		// A refused change is reported before it touches the cluster.
		{name: "refused", j: Judgement{Policy: Strict, Refused: findings(2)}, outcome: v1alpha1.CRDChangeRefused, findings: 2},
		// A lenient policy let it through.
		{name: "applied", j: Judgement{Policy: Warn, Report: findings(1)}, outcome: v1alpha1.CRDChangeApplied, findings: 1},
		// Skip kept the installed CRDs.
		{name: "skipped", j: Judgement{Policy: Skip, Report: findings(1)}, outcome: v1alpha1.CRDChangeSkipped, findings: 1},
		// Beyond MaxStatusFindings the rest are counted, not listed.
		{name: "truncated", j: Judgement{Policy: Force, Report: findings(MaxStatusFindings + 3)}, outcome: v1alpha1.CRDChangeApplied, findings: MaxStatusFindings, truncated: 3},
	} {
		got := Status("2.0.0", tc.j)
		switch {
		case tc.outcome == "" && got != nil:
			t.Errorf("%s: Status = %+v, want nil", tc.name, got)
		case tc.outcome != "" && (got == nil || got.Outcome != tc.outcome || len(got.Findings) != tc.findings || got.Truncated != tc.truncated || got.Version != "2.0.0" || string(got.Policy) != string(tc.j.Policy)):
			t.Errorf("%s: Status = %+v, want %s with %d findings, %d truncated", tc.name, got, tc.outcome, tc.findings, tc.truncated)
		}
	}
	if PolicyOf(&v1alpha1.ExtensionInstallation{}) != v1alpha1.CRDPolicyStrict {
		t.Error("PolicyOf: unset is Strict")
	}
}
