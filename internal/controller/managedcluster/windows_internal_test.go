package managedcluster

import (
	"errors"
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestSetMaintenanceWindows(t *testing.T) {
	invalid := v1alpha1.ManagedCluster{ObjectMeta: metav1.ObjectMeta{Generation: 2}}
	setCondition(&invalid, v1alpha1.ConditionMaintenanceWindows, metav1.ConditionFalse, v1alpha1.ReasonInvalidMaintenanceWindow, "old")
	for _, tc := range []struct {
		name    string
		before  v1alpha1.ManagedCluster
		invalid error
		want    string // the condition's message; "" for no condition
	}{
		// Valid windows (or none): no condition, and no status write for it.
		{name: "valid", invalid: nil},
		// Fixed windows: the condition goes.
		{name: "fixed", before: invalid, invalid: nil},
		// Invalid: False with the validation's words and what it means.
		{name: "invalid", invalid: errors.New(`spec.maintenanceWindows[0].duration 30s: too short`),
			want: `spec.maintenanceWindows[0].duration 30s: too short; until they are fixed, rollouts of profiles do not change the cluster`},
		// Still invalid, otherwise: the message is replaced, not appended to.
		{name: "still invalid", before: invalid, invalid: errors.New("x"), want: "x; until they are fixed, rollouts of profiles do not change the cluster"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			mc := tc.before.DeepCopy()
			setMaintenanceWindows(mc, tc.invalid)
			c := meta.FindStatusCondition(mc.Status.Conditions, v1alpha1.ConditionMaintenanceWindows)
			switch {
			case tc.want == "" && c != nil:
				t.Fatalf("condition %+v, want none", c)
			case tc.want == "":
			case c == nil || c.Status != metav1.ConditionFalse || c.Reason != v1alpha1.ReasonInvalidMaintenanceWindow || c.Message != tc.want:
				t.Fatalf("condition %+v, want False %s %q", c, v1alpha1.ReasonInvalidMaintenanceWindow, tc.want)
			}
			if len(mc.Status.Conditions) > 1 {
				t.Fatalf("conditions %+v: only MaintenanceWindows may change", mc.Status.Conditions)
			}
		})
	}
}
