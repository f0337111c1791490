package crdcheck

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// A change whose CRDs a lenient policy let through, resumed in a later
// pass of the same generation, keeps its report: judged again against
// the CRDs it applied it finds nothing. Another version, another
// generation, a refusal, or no Warnings of the CRD gate start afresh.
func TestJudgedBefore(t *testing.T) {
	applied := &v1alpha1.CRDChangeReport{Version: "2.0.0", Policy: v1alpha1.CRDPolicyWarn, Outcome: v1alpha1.CRDChangeApplied}
	refused := &v1alpha1.CRDChangeReport{Version: "2.0.0", Policy: v1alpha1.CRDPolicyStrict, Outcome: v1alpha1.CRDChangeRefused}
	inst := func(generation, warnedAt int64, reason string) *v1alpha1.ExtensionInstallation {
		i := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: generation}}
		if reason != "" {
			i.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionWarnings, Status: metav1.ConditionTrue, Reason: reason, ObservedGeneration: warnedAt}}
		}
		return i
	}
	for _, tc := range []struct {
		name    string
		inst    *v1alpha1.ExtensionInstallation
		prev    *v1alpha1.CRDChangeReport
		version string
		want    bool
	}{
		{"the same change resumed", inst(3, 3, v1alpha1.ReasonCRDChangeWarnings), applied, "2.0.0", true},
		{"no report before", inst(3, 3, v1alpha1.ReasonCRDChangeWarnings), nil, "2.0.0", false},
		{"another version", inst(3, 3, v1alpha1.ReasonCRDChangeWarnings), applied, "2.1.0", false},
		{"a new generation (values changed)", inst(4, 3, v1alpha1.ReasonCRDChangeWarnings), applied, "2.0.0", false},
		{"refused before", inst(3, 3, v1alpha1.ReasonCRDChangeWarnings), refused, "2.0.0", false},
		{"the engine's warnings only", inst(3, 3, "PackageWarnings"), applied, "2.0.0", false},
		{"no Warnings", inst(3, 0, ""), applied, "2.0.0", false},
	} {
		if got := JudgedBefore(tc.inst, tc.prev, tc.version); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}

// Gate's verdict under each policy, for a change that narrows an enum
// (breaking) and one that changes nothing.
func TestGate(t *testing.T) {
	installed := gizmoCRD(t, "red, green, blue", []string{"v1"}, "v1:true:true")
	narrowed := gizmoCRD(t, "red, green", nil, "v1:true:true")
	byName := map[string]*unstructured.Unstructured{installed.GetName(): installed}
	inst := func(policy v1alpha1.CRDPolicy) *v1alpha1.ExtensionInstallation {
		i := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
		i.Spec.Extension, i.Spec.Upgrade.CRDPolicy = "gizmos", policy
		return i
	}
	// Strict refuses, naming the extension and version; the report says
	// Refused.
	v := Gate(inst(v1alpha1.CRDPolicyStrict), "2.0.0", nil, []*unstructured.Unstructured{narrowed}, byName)
	if !strings.HasPrefix(v.Refusal, "gizmos 2.0.0") || v.Report == nil || v.Report.Outcome != v1alpha1.CRDChangeRefused || v.Keep != nil {
		t.Errorf("Strict: %+v", v)
	}
	// Warn lets it through, warning with CRDChangesApplied.
	v = Gate(inst(v1alpha1.CRDPolicyWarn), "2.0.0", nil, []*unstructured.Unstructured{narrowed}, byName)
	if v.Refusal != "" || v.Warning == "" || v.EventReason != "CRDChangesApplied" || v.Report.Outcome != v1alpha1.CRDChangeApplied {
		t.Errorf("Warn: %+v", v)
	}
	// Skip keeps the installed CRD, warning with CRDChangesSkipped.
	v = Gate(inst(v1alpha1.CRDPolicySkip), "2.0.0", nil, []*unstructured.Unstructured{narrowed}, byName)
	if v.Keep[installed.GetName()] == nil || v.EventReason != "CRDChangesSkipped" || v.Report.Outcome != v1alpha1.CRDChangeSkipped {
		t.Errorf("Skip: %+v", v)
	}
	// The same change resumed after its CRDs were applied finds nothing
	// and keeps the earlier pass's report.
	warned := inst(v1alpha1.CRDPolicyWarn)
	ShowWarnings(warned, "changed", nil)
	prev := &v1alpha1.CRDChangeReport{Version: "2.0.0", Outcome: v1alpha1.CRDChangeApplied}
	v = Gate(warned, "2.0.0", prev, []*unstructured.Unstructured{narrowed}, map[string]*unstructured.Unstructured{narrowed.GetName(): narrowed})
	if !v.Resumed || v.Report != prev || v.Warning != "" {
		t.Errorf("resumed: %+v", v)
	}
	// Nothing changed, nothing before: nothing to report or warn of.
	v = Gate(inst(v1alpha1.CRDPolicyWarn), "2.0.0", nil, []*unstructured.Unstructured{installed}, byName)
	if v.Report != nil || v.Refusal != "" || v.Warning != "" || v.Resumed {
		t.Errorf("unchanged: %+v", v)
	}
}

// ShowWarnings puts the CRD gate's message before the engine's warnings,
// and clears the condition only when the engine has none.
func TestShowWarnings(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	ShowWarnings(inst, "enum narrowed", []string{"deprecated value"})
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings)
	if c == nil || c.Reason != v1alpha1.ReasonCRDChangeWarnings || c.Message != "enum narrowed; deprecated value" {
		t.Fatalf("Warnings = %+v", c)
	}
	ShowWarnings(inst, "", []string{"deprecated value"})
	if meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings) == nil {
		t.Fatal("the engine's warnings went with the CRD gate's")
	}
	ShowWarnings(inst, "", nil)
	if c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings); c != nil {
		t.Fatalf("Warnings = %+v, want none", c)
	}
}
