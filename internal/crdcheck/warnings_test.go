package crdcheck

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// The engine's warnings replace the Warnings condition; without any it
// goes, unless it tells what the last change did with its CRDs.
func TestShowReleaseWarnings(t *testing.T) {
	for _, tc := range []struct {
		name     string
		before   string // the condition's reason before ("" none)
		warnings []string
		want     string // its reason after ("" none)
		message  string
	}{
		{name: "warnings", warnings: []string{"a", "b"}, want: "PackageWarnings", message: "a; b"},
		{name: "warnings over the CRD changes", before: v1alpha1.ReasonCRDChangeWarnings, warnings: []string{"a"}, want: "PackageWarnings", message: "a"},
		{name: "none clears old warnings", before: "PackageWarnings"},
		{name: "none keeps the CRD changes", before: v1alpha1.ReasonCRDChangeWarnings, want: v1alpha1.ReasonCRDChangeWarnings, message: "crd changed"},
		{name: "none, nothing to clear"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{}
			if tc.before != "" {
				meta.SetStatusCondition(&inst.Status.Conditions, metav1.Condition{Type: v1alpha1.ConditionWarnings, Status: metav1.ConditionTrue, Reason: tc.before, Message: "crd changed"})
			}
			ShowReleaseWarnings(inst, tc.warnings)
			c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionWarnings)
			switch {
			case tc.want == "" && c != nil:
				t.Fatalf("condition %+v, want none", c)
			case tc.want != "" && (c == nil || c.Reason != tc.want || c.Message != tc.message):
				t.Fatalf("condition %+v, want %s: %s", c, tc.want, tc.message)
			}
		})
	}
}
