package installation

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

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
		if got := judgedBefore(tc.inst, tc.prev, tc.version); got != tc.want {
			t.Errorf("%s: %v, want %v", tc.name, got, tc.want)
		}
	}
}
