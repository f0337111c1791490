package approval

import (
	"strings"
	"testing"

	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestJudgeApprovals(t *testing.T) {
	const digest, other = "sha256:aa", "sha256:bb"
	approval := func(name, installation, digest, approver string) v1alpha1.Approval {
		return v1alpha1.Approval{ObjectMeta: metav1.ObjectMeta{Name: name},
			Spec: v1alpha1.ApprovalSpec{Installation: installation, Digest: digest, Approver: approver}}
	}
	deny := func(name, approver string) v1alpha1.Approval {
		a := approval(name, "web", digest, approver)
		a.Spec.Decision, a.Spec.Reason = v1alpha1.DecisionDeny, "not during the freeze"
		return a
	}
	for _, tc := range []struct {
		name       string
		requester  string
		approvals  []v1alpha1.Approval
		approvedBy string
		deniedBy   string
		refused    string // a part of the only refusal, "" for none
	}{
		// Nothing names the digest: pending, nothing refused.
		{name: "none", requester: "alice"},
		// Another digest, or another installation's approval of the
		// digest, does not count.
		{name: "other digest", requester: "alice", approvals: []v1alpha1.Approval{
			approval("a", "web", other, "bob"), approval("b", "db", digest, "bob")}},
		{name: "approved", requester: "alice", approvals: []v1alpha1.Approval{approval("a", "web", digest, "bob")}, approvedBy: "bob"},
		// The requester's own approval is refused; another one still counts.
		{name: "self", requester: "alice", approvals: []v1alpha1.Approval{approval("a", "web", digest, "alice")},
			refused: "alice requested this change"},
		{name: "self and another", requester: "alice", approvals: []v1alpha1.Approval{
			approval("a", "web", digest, "alice"), approval("b", "web", digest, "bob")}, approvedBy: "bob"},
		// Without a recorded requester or approver, Annex cannot rule out
		// self-approval.
		{name: "no requester", approvals: []v1alpha1.Approval{approval("a", "web", digest, "bob")}, refused: "records no requester"},
		{name: "no approver", requester: "alice", approvals: []v1alpha1.Approval{approval("a", "web", digest, "")}, refused: "records no approver"},
		// A Deny outweighs an Approve of the same digest, whatever their
		// order; the requester may deny (it grants nothing), but a Deny
		// must record its approver too.
		{name: "denied", requester: "alice", approvals: []v1alpha1.Approval{approval("a", "web", digest, "bob"), deny("b", "carol")}, deniedBy: "carol"},
		{name: "denied first", requester: "alice", approvals: []v1alpha1.Approval{deny("a", "carol"), approval("b", "web", digest, "bob")}, deniedBy: "carol"},
		{name: "withdrawn", requester: "alice", approvals: []v1alpha1.Approval{deny("a", "alice")}, deniedBy: "alice"},
		{name: "deny of another digest", requester: "alice", approvals: []v1alpha1.Approval{
			{ObjectMeta: metav1.ObjectMeta{Name: "a"}, Spec: v1alpha1.ApprovalSpec{Installation: "web", Digest: other, Approver: "carol", Decision: v1alpha1.DecisionDeny}},
			approval("b", "web", digest, "bob")}, approvedBy: "bob"},
		{name: "deny without approver", requester: "alice", approvals: []v1alpha1.Approval{deny("a", "")}, refused: "records no approver"},
	} {
		t.Run(tc.name, func(t *testing.T) {
			inst := &v1alpha1.ExtensionInstallation{ObjectMeta: metav1.ObjectMeta{Name: "web"}}
			if tc.requester != "" {
				inst.Annotations = map[string]string{v1alpha1.AnnotationRequestedBy: tc.requester}
			}
			got := Judge(tc.approvals, inst, digest)
			wantState := v1alpha1.ApprovalPending
			switch {
			case tc.deniedBy != "":
				wantState = v1alpha1.ApprovalDenied
			case tc.approvedBy != "":
				wantState = v1alpha1.ApprovalApproved
			}
			if got.State != wantState || got.ApprovedBy != tc.approvedBy || got.DeniedBy != tc.deniedBy || got.RequestedBy != tc.requester {
				t.Fatalf("got %+v", got)
			}
			if (tc.refused == "") != (len(got.Refused) == 0) || (tc.refused != "" && (len(got.Refused) != 1 || !strings.Contains(got.Refused[0], tc.refused))) {
				t.Fatalf("refused %q, want one with %q", got.Refused, tc.refused)
			}
			if tc.deniedBy != "" && got.DenialReason != "not during the freeze" {
				t.Fatalf("denial reason %q", got.DenialReason)
			}
		})
	}
}
