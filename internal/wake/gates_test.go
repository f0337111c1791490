package wake

import (
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Which installations a changed ApprovalPolicy or Hook wakes: those whose
// pending change the gate holds, never one with no change.
func TestGateWaiters(t *testing.T) {
	for _, tc := range []struct {
		name                 string
		change               *v1alpha1.PendingChange
		wantApproval, wantHk bool
	}{
		// Nothing pending: neither gate holds it.
		{"no change", nil, false, false},
		// A change no gate judged yet.
		{"change, no verdict", &v1alpha1.PendingChange{Digest: "d"}, false, false},
		// The approval gate judged it (required, approved or denied).
		{"approval", &v1alpha1.PendingChange{Approval: &v1alpha1.ChangeApproval{}}, true, false},
		// Hooks have not answered yet.
		{"hooks pending", &v1alpha1.PendingChange{Hooks: &v1alpha1.HooksSummary{State: v1alpha1.HookPending}}, false, true},
		// A hook refused: it may answer otherwise.
		{"hooks failed", &v1alpha1.PendingChange{Hooks: &v1alpha1.HooksSummary{State: v1alpha1.HookFailed}}, false, true},
		// The hooks agreed: a Hook's change does not concern it.
		{"hooks succeeded", &v1alpha1.PendingChange{Hooks: &v1alpha1.HooksSummary{State: v1alpha1.HookSucceeded}}, false, false},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Namespace: "a", Name: "x"}}
			inst.Status.Change = tc.change
			if got := AwaitsApproval(inst); got != tc.wantApproval {
				t.Errorf("AwaitsApproval = %v, want %v", got, tc.wantApproval)
			}
			if got := AwaitsHooks(inst); got != tc.wantHk {
				t.Errorf("AwaitsHooks = %v, want %v", got, tc.wantHk)
			}
		})
	}
}

// An Approval wakes exactly the installation it names, in its namespace.
func TestNamedByApproval(t *testing.T) {
	a := &v1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Namespace: "team-a", Name: "ok"}}
	a.Spec.Installation = "podinfo"
	got := NamedByApproval(t.Context(), a)
	if len(got) != 1 || got[0].Namespace != "team-a" || got[0].Name != "podinfo" {
		t.Errorf("NamedByApproval = %v, want team-a/podinfo", got)
	}
}
