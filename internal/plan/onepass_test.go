package plan

import (
	"errors"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// A one-pass plan runs to its end in one call, or stops at the pass whose
// step failed, with that step's error.
func TestOnePass(t *testing.T) {
	now := func() metav1.Time { return metav1.Unix(1, 0) }
	p := serial("chart", "crds", "objects", "post")
	var ran []string
	step := func(fail string) func(StepRef) error {
		return func(ref StepRef) error {
			name := p.Phases[ref.Phase].Steps[ref.Step].Name
			ran = append(ran, name)
			if name == fail {
				return errors.New("hook failed")
			}
			return nil
		}
	}
	st, err := OnePass(p, step(""), now)
	if err != nil || st.State != v1alpha1.PlanComplete || strings.Join(ran, ",") != "crds,objects,post" {
		t.Fatalf("complete run: %s, %v, ran %v", st.State, err, ran)
	}
	ran = nil
	st, err = OnePass(p, step("objects"), now)
	if err == nil || err.Error() != "hook failed" || strings.Join(ran, ",") != "crds,objects" {
		t.Fatalf("failed run: %v, ran %v", err, ran)
	}
	if Finished(st.State) {
		t.Errorf("a failed step finished the plan: %s", st.State)
	}
}

// A chart's plan is shown as install, or as an upgrade naming both
// versions (or new inputs when the version stays).
func TestOnePassStatus(t *testing.T) {
	st := v1alpha1.PlanStatus{State: v1alpha1.PlanComplete}
	rev := v1alpha1.Revision{Number: 4, Version: "2.0.0"}
	for _, tc := range []struct {
		installed, name, trigger string
	}{
		{"", "install", "install"},
		{"1.0.0", "upgrade", "upgrade 1.0.0 → 2.0.0"},
		{"2.0.0", "upgrade", "new values or chart content"},
	} {
		got := OnePassStatus(st, tc.installed, rev)
		if got.Name != tc.name || got.Trigger != tc.trigger || got.Revision != 4 || got.State != v1alpha1.PlanComplete {
			t.Errorf("installed %q: got %s %q rev %d %s", tc.installed, got.Name, got.Trigger, got.Revision, got.State)
		}
	}
}
