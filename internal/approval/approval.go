// Package approval is the approval gate's I/O: it reads the
// ApprovalPolicies that select an installation and the Approvals of its
// namespace, and judges a change with internal/gate's pure rules
// (gate.Selects, gate.Required, gate.Judge). The installation controller
// calls Check for each change, as gate.Run's port, and gate.Run acts on
// the answer: it writes status.change.approval, and holds (saying why,
// gate.WaitMessage, gate.DenialMessage) or lets the change go on.
//
// No self-approval: the API server stamps the user who last changed the
// installation's spec (v1alpha1.AnnotationRequestedBy) and the creator of
// an Approval (spec.approver), and refuses forged values (the admission
// policies of config/admission). An Approval whose approver is the
// requester does not count, nor does one when either is not recorded
// (the policies were not installed when it was written), since then
// Annex cannot tell. RBAC decides who may create Approvals at all.
package approval

import (
	"context"
	"slices"

	corev1 "k8s.io/api/core/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"
	"k8s.io/apimachinery/pkg/types"
	"sigs.k8s.io/controller-runtime/pkg/client"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/gate"
)

// Change is a change of an installation, as the approval gate judges it.
type Change struct {
	// From is the installed version ("" for an install), To the one the
	// change applies, Digest what an Approval must name.
	From, To, Digest string
	// PermissionsGrow are what the change grants the extension beyond the
	// installed revision (status.change.permissionsGrow).
	PermissionsGrow []string
	// Objects are everything the change may apply; Installed returns the
	// installed revision's objects, read only when a policy asks.
	Objects   []*unstructured.Unstructured
	Installed func() ([]*unstructured.Unstructured, error)
}

// Check judges change c of inst. The ApprovalPolicies that select the
// installation (gate.Selects) say which changes need approval
// (gate.Required, the union of their requirements); no policy, or only
// Automatic ones, means none. It returns nil when c needs no approval;
// otherwise what status.change.approval shows: Approved or Denied when
// an Approval of the installation's namespace naming c's digest decides
// (gate.Judge), Pending while none does, with the reasons, the policies
// and the CRD changes that made it needed. Approvals of other digests
// never count: new values or a new version make a new digest and need a
// new Approval. Errors are the API server's.
func Check(ctx context.Context, reader client.Reader, inst *v1alpha1.ExtensionInstallation, c Change) (*v1alpha1.ChangeApproval, error) {
	policies, err := Policies(ctx, reader, inst)
	if err != nil {
		return nil, err
	}
	policies = slices.DeleteFunc(policies, func(p v1alpha1.ApprovalPolicy) bool { return p.Spec.Preset == v1alpha1.ApprovalAutomatic })
	if len(policies) == 0 {
		return nil, nil
	}
	installed, err := c.Installed()
	if err != nil {
		return nil, err
	}
	facts := gate.ChangeFacts{
		From: c.From, To: c.To, PermissionsGrow: c.PermissionsGrow,
		CRDChanges: gate.CRDChanges(installed, c.Objects),
	}
	verdict := gate.Required(policies, facts)
	if len(verdict.Reasons) == 0 {
		return nil, nil
	}
	var approvals v1alpha1.ApprovalList
	if err := reader.List(ctx, &approvals, client.InNamespace(inst.Namespace)); err != nil {
		return nil, err
	}
	a := Judge(approvals.Items, inst, c.Digest)
	a.Reasons, a.Policies, a.CRDChanges = verdict.Reasons, verdict.Policies, facts.CRDChanges
	return a, nil
}

// Judge says whether approvals approve or deny the change of
// inst with digest: those naming the installation and the digest count,
// under gate.Judge's rules (no self-approval, a Deny outweighs any
// Approve).
func Judge(approvals []v1alpha1.Approval, inst *v1alpha1.ExtensionInstallation, digest string) *v1alpha1.ChangeApproval {
	requester := inst.Annotations[v1alpha1.AnnotationRequestedBy]
	d := gate.Judge(approvals, requester, "installation", func(s v1alpha1.ApprovalSpec) bool {
		return s.Installation == inst.Name && s.Digest == digest
	})
	return &v1alpha1.ChangeApproval{State: d.State, RequestedBy: requester, ApprovedBy: d.ApprovedBy,
		DeniedBy: d.DeniedBy, DenialReason: d.DenialReason, Refused: d.Refused}
}

// Policies returns the ApprovalPolicies that select inst,
// reading the labels of its namespace and ManagedCluster only when a
// policy selects by them.
func Policies(ctx context.Context, c client.Reader, inst *v1alpha1.ExtensionInstallation) ([]v1alpha1.ApprovalPolicy, error) {
	var list v1alpha1.ApprovalPolicyList
	if err := c.List(ctx, &list); err != nil || len(list.Items) == 0 {
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
			if err := c.Get(ctx, types.NamespacedName{Name: inst.Namespace}, ns); err != nil {
				return nil, err
			}
			subject.NamespaceLabels = ns.Labels
		}
		if sel.ClusterSelector != nil && !clusterRead && inst.Spec.Cluster != "" {
			clusterRead = true
			mc := &v1alpha1.ManagedCluster{}
			if err := c.Get(ctx, types.NamespacedName{Name: inst.Spec.Cluster}, mc); client.IgnoreNotFound(err) != nil {
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
