package gate

// This file judges the Approvals of one change: whether they approve or
// deny it, and which do not count and why. It is pure: the caller lists
// the Approvals in the namespace and passes the requester it recorded.

import (
	"fmt"
	"slices"
	"strings"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Decision is what the Approvals of one change decide.
type Decision struct {
	// State is Pending (no Approval that counts), Approved or Denied.
	State v1alpha1.ApprovalState
	// ApprovedBy is the approver of the Approval that approved it.
	ApprovedBy string
	// DeniedBy is the approver of the Approval that denied it, and
	// DenialReason that Approval's spec.reason.
	DeniedBy, DenialReason string
	// Refused explains, one sentence each, why Approvals of the change
	// do not count; empty once it is approved or denied.
	Refused []string
}

// Judge decides a change from the Approvals that name it (names says
// which do), in the order of their names. The rules, the same for every
// kind of change:
//   - an Approval counts only when it records its approver (the
//     admission policy annex-approver stamps spec.approver);
//   - a Deny that counts denies the change, whoever the requester
//     (denying grants nothing) and whatever else approves it;
//   - an Approve counts only when the recorded requester is someone
//     else: with no requester recorded (the admission policies were not
//     installed when the change was asked for) self-approval cannot be
//     ruled out, so none counts.
//
// The others that name the change are listed as refused, each with why
// and what to do. kind names the object whose change it is
// ("installation", "profile"), for those sentences.
func Judge(approvals []v1alpha1.Approval, requester, kind string, names func(v1alpha1.ApprovalSpec) bool) Decision {
	out := Decision{State: v1alpha1.ApprovalPending}
	approvals = slices.Clone(approvals)
	slices.SortFunc(approvals, func(a, b v1alpha1.Approval) int { return strings.Compare(a.Name, b.Name) })
	var approvedBy string
	for _, ap := range approvals {
		if !names(ap.Spec) {
			continue
		}
		approver := ap.Spec.Approver
		switch {
		case approver == "":
			out.Refused = append(out.Refused, fmt.Sprintf("Approval %s records no approver (install the admission policies of config/admission)", ap.Name))
		case ap.Spec.Decision == v1alpha1.DecisionDeny:
			return Decision{State: v1alpha1.ApprovalDenied, DeniedBy: approver, DenialReason: ap.Spec.Reason}
		case approvedBy != "":
		case requester == "":
			out.Refused = append(out.Refused, fmt.Sprintf("Approval %s by %s: the %s records no requester (annotation %s, written by the admission policies of config/admission), so self-approval cannot be ruled out; change the spec again once they are installed",
				ap.Name, approver, kind, v1alpha1.AnnotationRequestedBy))
		case approver == requester:
			out.Refused = append(out.Refused, fmt.Sprintf("Approval %s by %s: %s requested this change and cannot approve it; someone else must", ap.Name, approver, requester))
		default:
			approvedBy = approver
		}
	}
	if approvedBy != "" {
		return Decision{State: v1alpha1.ApprovalApproved, ApprovedBy: approvedBy}
	}
	return out
}

// StepDecision is what the Approvals of one rollout step decide.
type StepDecision = Decision

// StepApproval decides whether step of revision of profile may start:
// only Approvals naming exactly that profile, revision and step count
// (the caller lists those in the profile's spec.namespace), under Judge's
// rules. requester is who last changed the profile's spec (its annotation
// annex.dev/requested-by); they cannot approve the step.
func StepApproval(approvals []v1alpha1.Approval, profile string, revision int64, step, requester string) StepDecision {
	return Judge(approvals, requester, "profile", func(s v1alpha1.ApprovalSpec) bool {
		return s.Installation == "" && s.Profile == profile && s.Revision == revision && s.Step == step
	})
}
