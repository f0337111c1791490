package installation

import (
	"context"
	"fmt"
	"slices"
	"strings"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/types"
	ctrl "sigs.k8s.io/controller-runtime"
	"sigs.k8s.io/controller-runtime/pkg/client"
	"sigs.k8s.io/controller-runtime/pkg/reconcile"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
)

// +kubebuilder:rbac:groups=annex.dev,resources=approvalpolicies;approvals,verbs=get;list;watch

// requireApproval is the approval gate. The ApprovalPolicies that select
// the installation (gate.Selects) say which changes need approval
// (gate.Required, the union of their requirements); no policy means
// Automatic. A change that needs approval waits, before anything is
// applied, until an Approval in the installation's namespace names its
// digest, and status.change.approval says why and what to run. Approvals
// of other digests never count: new values or a new version make a new
// digest and need a new Approval.
//
// No self-approval: the API server stamps the user who last changed the
// installation's spec (v1alpha1.AnnotationRequestedBy) and the creator of
// an Approval (spec.approver), and refuses forged values (the admission
// policies of config/admission). An Approval whose approver is the
// requester does not count, nor does one when either is not recorded
// (the policies were not installed when it was written), since then
// Annex cannot tell. RBAC decides who may create Approvals at all.
//
// The step waits without polling: a new Approval or a changed policy
// wakes the installation (SetupWithManager).
func (r *Reconciler) requireApproval(ctx context.Context, s *scope) (ctrl.Result, error) {
	policies, err := r.selectingPolicies(ctx, s.inst)
	if err != nil {
		return ctrl.Result{}, err
	}
	policies = slices.DeleteFunc(policies, func(p v1alpha1.ApprovalPolicy) bool { return p.Spec.Preset == v1alpha1.ApprovalAutomatic })
	if len(policies) == 0 {
		s.inst.Status.Change.Approval = nil
		return ctrl.Result{}, nil
	}
	installed, err := r.installedState(ctx, s)
	if err != nil {
		return ctrl.Result{}, err
	}
	pc := s.inst.Status.Change
	facts := gate.ChangeFacts{
		From: s.change.from, To: s.change.to, PermissionsGrow: pc.PermissionsGrow,
		CRDChanges: gate.CRDChanges(slices.Concat(installed.crds, installed.objects), s.change.objects),
	}
	verdict := gate.Required(policies, facts)
	if len(verdict.Reasons) == 0 {
		pc.Approval = nil
		return ctrl.Result{}, nil
	}
	var approvals v1alpha1.ApprovalList
	if err := r.Client.List(ctx, &approvals, client.InNamespace(s.inst.Namespace)); err != nil {
		return ctrl.Result{}, err
	}
	a := judgeApprovals(approvals.Items, s.inst, s.change.digest)
	a.Reasons, a.Policies, a.CRDChanges = verdict.Reasons, verdict.Policies, facts.CRDChanges
	pc.Approval = a
	if a.State == v1alpha1.ApprovalApproved {
		r.event(s, corev1.EventTypeNormal, "Approved", fmt.Sprintf("%s approved the change to %s (digest %s), requested by %s",
			a.ApprovedBy, s.change.to, s.change.digest, a.RequestedBy))
		return ctrl.Result{}, nil
	}
	if a.State == v1alpha1.ApprovalDenied {
		s.block = terminal(v1alpha1.ReasonApprovalDenied, denialMessage(s.inst, s.change, a))
		return ctrl.Result{}, nil
	}
	s.block = wait(v1alpha1.ReasonApprovalRequired, approvalMessage(s.inst, s.change, a))
	if len(a.Refused) > 0 {
		s.block.reason = v1alpha1.ReasonApprovalRefused
	}
	return ctrl.Result{}, nil
}

// judgeApprovals says whether approvals approve or deny the change of
// inst with digest: those naming the installation and the digest count,
// under gate.Judge's rules (no self-approval, a Deny outweighs any
// Approve).
func judgeApprovals(approvals []v1alpha1.Approval, inst *v1alpha1.ExtensionInstallation, digest string) *v1alpha1.ChangeApproval {
	requester := inst.Annotations[v1alpha1.AnnotationRequestedBy]
	d := gate.Judge(approvals, requester, "installation", func(s v1alpha1.ApprovalSpec) bool {
		return s.Installation == inst.Name && s.Digest == digest
	})
	return &v1alpha1.ChangeApproval{State: d.State, RequestedBy: requester, ApprovedBy: d.ApprovedBy,
		DeniedBy: d.DeniedBy, DenialReason: d.DenialReason, Refused: d.Refused}
}

// denialMessage is the Ready condition's message when an approver denied
// the change: who, why, and how to go on.
func denialMessage(inst *v1alpha1.ExtensionInstallation, c *change, a *v1alpha1.ChangeApproval) string {
	what := "installing " + c.to
	if c.from != "" {
		what = fmt.Sprintf("changing %s → %s", c.from, c.to)
	}
	why := ""
	if a.DenialReason != "" {
		why = ": " + a.DenialReason
	}
	return fmt.Sprintf("%s denied %s %s (digest %s)%s; nothing of it was applied; change spec.version or spec.values to request another change, or delete the denying Approval to have it reviewed again",
		a.DeniedBy, inst.Spec.Extension, what, c.digest, why)
}

// approvalMessage is the Ready condition's message while a change waits
// for approval: what it is, why it needs approval, and what to run.
func approvalMessage(inst *v1alpha1.ExtensionInstallation, c *change, a *v1alpha1.ChangeApproval) string {
	what := "installing " + c.to
	if c.from != "" {
		what = fmt.Sprintf("changing %s → %s", c.from, c.to)
	}
	msg := fmt.Sprintf("%s %s needs approval (policy %s: %s); approve it with: annexctl approve %s -n %s --digest %s",
		inst.Spec.Extension, what, strings.Join(a.Policies, ", "), strings.Join(a.Reasons, "; "), inst.Name, inst.Namespace, c.digest)
	if len(a.Refused) > 0 {
		msg += "; refused: " + strings.Join(a.Refused, "; ")
	}
	return msg
}

// selectingPolicies returns the ApprovalPolicies that select inst,
// reading the labels of its namespace and ManagedCluster only when a
// policy selects by them.
func (r *Reconciler) selectingPolicies(ctx context.Context, inst *v1alpha1.ExtensionInstallation) ([]v1alpha1.ApprovalPolicy, error) {
	var list v1alpha1.ApprovalPolicyList
	if err := r.Client.List(ctx, &list); err != nil || len(list.Items) == 0 {
		return nil, err
	}
	subject := gate.Subject{Namespace: inst.Namespace, Extension: inst.Spec.Extension, Cluster: inst.Spec.Cluster}
	var nsRead, clusterRead bool
	var out []v1alpha1.ApprovalPolicy
	for _, p := range list.Items {
		sel := p.Spec.Selector
		if sel.NamespaceSelector != nil && !nsRead {
			nsRead = true
			ns := &metav1.PartialObjectMetadata{}
			ns.SetGroupVersionKind(corev1.SchemeGroupVersion.WithKind("Namespace"))
			if err := r.Client.Get(ctx, types.NamespacedName{Name: inst.Namespace}, ns); err != nil {
				return nil, err
			}
			subject.NamespaceLabels = ns.Labels
		}
		if sel.ClusterSelector != nil && !clusterRead && inst.Spec.Cluster != "" {
			clusterRead = true
			mc := &v1alpha1.ManagedCluster{}
			if err := r.Client.Get(ctx, types.NamespacedName{Name: inst.Spec.Cluster}, mc); client.IgnoreNotFound(err) != nil {
				return nil, err
			}
			subject.ClusterLabels = mc.Labels
		}
		if gate.Selects(sel, subject) {
			out = append(out, p)
		}
	}
	return out, nil
}

// approvalsWake maps an Approval to the installation it names.
func approvalsWake(_ context.Context, o client.Object) []reconcile.Request {
	a := o.(*v1alpha1.Approval)
	return []reconcile.Request{{NamespacedName: types.NamespacedName{Namespace: a.Namespace, Name: a.Spec.Installation}}}
}

// awaitingApproval maps a changed ApprovalPolicy to the installations
// whose change an approval policy holds: a policy that no longer requires
// approval releases them at once. A new or stricter policy holds any
// change from its next reconcile on.
func (r *Reconciler) awaitingApproval(ctx context.Context, _ client.Object) []reconcile.Request {
	var list v1alpha1.ExtensionInstallationList
	if err := r.Client.List(ctx, &list); err != nil {
		return nil
	}
	return requests(list.Items, func(inst *v1alpha1.ExtensionInstallation) bool {
		return inst.Status.Change != nil && inst.Status.Change.Approval != nil
	})
}
