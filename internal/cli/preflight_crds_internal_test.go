package cli

import (
	"bytes"
	"reflect"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// crdChangesOf reads the controller's verdicts from the conditions.
func TestCRDChangesOf(t *testing.T) {
	inst := func(name string, gen int64, conds ...metav1.Condition) *v1alpha1.ExtensionInstallation {
		i := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "ops", Name: name, Generation: gen}}
		i.Status.Conditions = conds
		return i
	}
	cond := func(t, status, reason, msg string, gen int64) metav1.Condition {
		return metav1.Condition{Type: t, Status: metav1.ConditionStatus(status), Reason: reason, Message: msg, ObservedGeneration: gen}
	}
	insts := []*v1alpha1.ExtensionInstallation{
		// Refused: held, with the refusal's words.
		inst("refused", 2, cond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonUnsafeCRDChange, "enum narrowed", 2)),
		// A refusal of an older generation: the spec changed since.
		inst("stale", 3, cond(v1alpha1.ConditionReady, "False", v1alpha1.ReasonUnsafeCRDChange, "old", 2)),
		// Forced through: listed, not held.
		inst("forced", 1, cond(v1alpha1.ConditionReady, "True", v1alpha1.ReasonSucceeded, "", 1),
			cond(v1alpha1.ConditionWarnings, "True", v1alpha1.ReasonCRDChangeWarnings, "forced", 1)),
		// A package's own warnings are not CRD findings.
		inst("package", 1, cond(v1alpha1.ConditionWarnings, "True", "PackageWarnings", "x", 1)),
	}
	got := crdChangesOf(insts)
	want := []CRDChangeView{
		{Installation: "ops/forced", Message: "forced"},
		{Installation: "ops/refused", Held: true, Message: "enum narrowed"},
	}
	if !reflect.DeepEqual(got, want) {
		t.Fatalf("crdChangesOf = %+v, want %+v", got, want)
	}
	var out bytes.Buffer
	printCRDChanges(&out, got)
	if s := out.String(); !strings.Contains(s, "ops/refused: refused, nothing applied: enum narrowed") || !strings.Contains(s, "ops/forced: applied with findings: forced") {
		t.Errorf("printed:\n%s", s)
	}
}
