package cli

import (
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/util/validation"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestApprovalName(t *testing.T) {
	long := strings.Repeat("w", 240) + "." + strings.Repeat("x", 12) // 253 characters, the longest installation name
	const digest = "sha256:0123456789abcdef0123"
	for _, tc := range []struct {
		installation string
		decision     v1alpha1.ApprovalDecision
		want         string // "" when only validity is checked
	}{
		// A short name: the installation and 12 hex digits of the digest.
		{"web", v1alpha1.DecisionApprove, "web-0123456789ab"},
		// A denial has its own name, so it can stand beside an approval.
		{"web", v1alpha1.DecisionDeny, "web-0123456789ab-deny"},
		// The longest installation name: shortened to a valid object name.
		{long, v1alpha1.DecisionApprove, ""},
		{long, v1alpha1.DecisionDeny, ""},
	} {
		got := approvalName(tc.installation, digest, tc.decision)
		if tc.want != "" && got != tc.want {
			t.Errorf("approvalName(%q, %s) = %q, want %q", tc.installation, tc.decision, got, tc.want)
		}
		if errs := validation.IsDNS1123Subdomain(got); len(errs) > 0 {
			t.Errorf("approvalName(%q, %s) = %q: %v", tc.installation, tc.decision, got, errs)
		}
	}
	// Long names that differ only at their end keep distinct Approvals.
	if approvalName(long, digest, v1alpha1.DecisionApprove) == approvalName(long[:252]+"y", digest, v1alpha1.DecisionApprove) {
		t.Error("two long installation names share an Approval name")
	}
	if approvalName(long, digest, v1alpha1.DecisionApprove) == approvalName(long, digest, v1alpha1.DecisionDeny) {
		t.Error("a long installation's approval and denial share a name")
	}
}
