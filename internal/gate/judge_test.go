package gate

import (
	"slices"
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestStepApproval(t *testing.T) {
	// step returns an Approval of a step of profile web, revision 3.
	step := func(name, stepName, approver string) v1alpha1.Approval {
		return v1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.ApprovalSpec{Profile: "web", Revision: 3, Step: stepName, Approver: approver}}
	}
	deny := func(name, approver string) v1alpha1.Approval {
		a := step(name, "canary", approver)
		a.Spec.Decision, a.Spec.Reason = v1alpha1.DecisionDeny, "not during the freeze"
		return a
	}
	other := func(name string, edit func(*v1alpha1.ApprovalSpec)) v1alpha1.Approval {
		a := step(name, "canary", "bob")
		edit(&a.Spec)
		return a
	}
	for _, tc := range []struct {
		name       string
		requester  string
		approvals  []v1alpha1.Approval
		approvedBy string
		deniedBy   string
		refused    []string // a part of each refusal, in order
	}{
		// Nothing names the step: pending, nothing refused.
		{name: "none", requester: "alice"},
		// Only the exact profile, revision and step count: another
		// profile's, revision's or step's approval does not, nor an
		// installation's.
		{name: "other step, revision, profile, installation", requester: "alice", approvals: []v1alpha1.Approval{
			step("a", "rest", "bob"),
			other("b", func(s *v1alpha1.ApprovalSpec) { s.Revision = 2 }),
			other("c", func(s *v1alpha1.ApprovalSpec) { s.Profile = "db" }),
			{ObjectMeta: metav1.ObjectMeta{Name: "d"}, Spec: v1alpha1.ApprovalSpec{Installation: "web", Digest: "sha256:aa", Approver: "bob"}},
		}},
		// Another user's Approval of the step approves it.
		{name: "approved", requester: "alice", approvals: []v1alpha1.Approval{step("a", "canary", "bob")}, approvedBy: "bob"},
		// The requester's own Approval is refused, saying why and what to do;
		// another user's still counts.
		{name: "self", requester: "alice", approvals: []v1alpha1.Approval{step("a", "canary", "alice")},
			refused: []string{"Approval a by alice: alice requested this change and cannot approve it; someone else must"}},
		{name: "self and another", requester: "alice", approvals: []v1alpha1.Approval{step("a", "canary", "alice"), step("b", "canary", "bob")}, approvedBy: "bob"},
		// No requester recorded: no Approve counts, as for installations.
		{name: "no requester", approvals: []v1alpha1.Approval{step("a", "canary", "bob"), step("b", "canary", "carol")},
			refused: []string{"Approval a by bob: the profile records no requester (annotation annex.dev/requested-by", "Approval b by carol: the profile records no requester"}},
		// No approver recorded: it does not count, whatever it decides.
		{name: "no approver", requester: "alice", approvals: []v1alpha1.Approval{step("a", "canary", "")},
			refused: []string{"Approval a records no approver (install the admission policies of config/admission)"}},
		{name: "deny without approver", requester: "alice", approvals: []v1alpha1.Approval{deny("a", "")}, refused: []string{"Approval a records no approver"}},
		// A Deny outweighs any Approve, in either order of names; the
		// requester may deny (it grants nothing), and refusals are dropped.
		{name: "denied", requester: "alice", approvals: []v1alpha1.Approval{step("a", "canary", "alice"), step("b", "canary", "bob"), deny("c", "carol")}, deniedBy: "carol"},
		{name: "denied first", requester: "alice", approvals: []v1alpha1.Approval{step("b", "canary", "bob"), deny("a", "carol")}, deniedBy: "carol"},
		{name: "withdrawn", requester: "alice", approvals: []v1alpha1.Approval{deny("a", "alice")}, deniedBy: "alice"},
		// A Deny of another step does not deny this one.
		{name: "deny of another step", requester: "alice", approvals: []v1alpha1.Approval{
			other("a", func(s *v1alpha1.ApprovalSpec) {
				s.Step, s.Decision, s.Approver = "rest", v1alpha1.DecisionDeny, "carol"
			}),
			step("b", "canary", "bob")}, approvedBy: "bob"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			given := slices.Clone(tc.approvals)
			got := StepApproval(tc.approvals, "web", 3, "canary", tc.requester)
			wantState := v1alpha1.ApprovalPending
			switch {
			case tc.deniedBy != "":
				wantState = v1alpha1.ApprovalDenied
			case tc.approvedBy != "":
				wantState = v1alpha1.ApprovalApproved
			}
			if got.State != wantState || got.ApprovedBy != tc.approvedBy || got.DeniedBy != tc.deniedBy {
				t.Fatalf("got %+v, want state %s approved by %q denied by %q", got, wantState, tc.approvedBy, tc.deniedBy)
			}
			if len(got.Refused) != len(tc.refused) {
				t.Fatalf("refused %q, want %d", got.Refused, len(tc.refused))
			}
			for i, want := range tc.refused {
				if !strings.Contains(got.Refused[i], want) {
					t.Fatalf("refusal %d %q does not say %q", i, got.Refused[i], want)
				}
			}
			if wantReason := map[bool]string{true: "not during the freeze"}[tc.deniedBy != ""]; got.DenialReason != wantReason {
				t.Fatalf("denial reason %q, want %q", got.DenialReason, wantReason)
			}
			for i := range given {
				if given[i].Name != tc.approvals[i].Name {
					t.Fatalf("StepApproval reordered the caller's approvals")
				}
			}
		})
	}
}
