package installation

import (
	"context"
	"fmt"
	"slices"

	corev1 "k8s.io/api/core/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	ctrl "sigs.k8s.io/controller-runtime"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/approval"
)

// +kubebuilder:rbac:groups=annex.dev,resources=approvalpolicies;approvals,verbs=get;list;watch

// requireApproval is the approval gate (internal/approval): a change that
// needs approval waits, before anything is applied, until an Approval in
// the installation's namespace names its digest, and
// status.change.approval says why and what to run; a denied one stops.
//
// The step waits without polling: a new Approval or a changed policy
// wakes the installation (wake.NamedByApproval, wake.AwaitingApproval).
func (r *Reconciler) requireApproval(ctx context.Context, s *scope) (ctrl.Result, error) {
	pc := s.inst.Status.Change
	c := approval.Change{
		From: s.change.From, To: s.change.To, Digest: s.change.Digest, PermissionsGrow: pc.PermissionsGrow, Objects: s.change.Objects,
		Installed: func() ([]*unstructured.Unstructured, error) {
			installed, _, err := r.records(s).Installed(ctx)
			return slices.Concat(installed.CRDs, installed.Objects), err
		},
	}
	a, err := approval.Check(ctx, r.Client, s.inst, c)
	if err != nil {
		return ctrl.Result{}, err
	}
	pc.Approval = a
	switch {
	case a == nil:
	case a.State == v1alpha1.ApprovalApproved:
		r.event(s, corev1.EventTypeNormal, "Approved", fmt.Sprintf("%s approved the change to %s (digest %s), requested by %s",
			a.ApprovedBy, s.change.To, s.change.Digest, a.RequestedBy))
	case a.State == v1alpha1.ApprovalDenied:
		s.block = terminal(v1alpha1.ReasonApprovalDenied, approval.DenialMessage(s.inst, c, a))
	default:
		s.block = wait(v1alpha1.ReasonApprovalRequired, approval.WaitMessage(s.inst, c, a))
		if len(a.Refused) > 0 {
			s.block.Reason = v1alpha1.ReasonApprovalRefused
		}
	}
	return ctrl.Result{}, nil
}
