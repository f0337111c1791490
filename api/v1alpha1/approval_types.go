package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

// Approval gate: who may change what without a second person.
//
// Admins say which changes need approval in ApprovalPolicies (cluster-
// scoped, so a requester who may only write installations in a namespace
// cannot loosen them). A change that needs approval waits before anything
// is applied, with status.change.approval saying why, until an Approval
// in the installation's namespace names its exact digest. Who may approve
// is plain RBAC on approvals.annex.dev, apart from who may write
// extensioninstallations. The API server records who did what: the
// admission policies of config/admission stamp the user who last changed
// an installation's spec (AnnotationRequestedBy) and the user who created
// an Approval (spec.approver), and refuse forged values; Annex refuses an
// approval by the user who requested the change.

// ApprovalRequirement is a kind of change that needs approval.
// +kubebuilder:validation:Enum=FirstInstall;Patch;Minor;Major;Downgrade;PermissionGrowth;CRDChange
type ApprovalRequirement string

const (
	// ApprovalFirstInstall: installing an extension that is not installed.
	ApprovalFirstInstall ApprovalRequirement = "FirstInstall"
	// ApprovalPatch, ApprovalMinor, ApprovalMajor: an upgrade whose
	// highest changed semver component is the patch (or pre-release),
	// minor or major version.
	ApprovalPatch ApprovalRequirement = "Patch"
	ApprovalMinor ApprovalRequirement = "Minor"
	ApprovalMajor ApprovalRequirement = "Major"
	// ApprovalDowngrade: moving to a lower version.
	ApprovalDowngrade ApprovalRequirement = "Downgrade"
	// ApprovalPermissionGrowth: the extension may do more afterwards
	// (status.change.permissionsGrow is not empty).
	ApprovalPermissionGrowth ApprovalRequirement = "PermissionGrowth"
	// ApprovalCRDChange: the change creates, changes or stops shipping a
	// CustomResourceDefinition.
	ApprovalCRDChange ApprovalRequirement = "CRDChange"
)

// ApprovalPreset is a named set of requirements.
// +kubebuilder:validation:Enum=Automatic;Manual
type ApprovalPreset string

const (
	// ApprovalAutomatic requires nothing: what the installation asks for
	// is applied (as with no policy at all).
	ApprovalAutomatic ApprovalPreset = "Automatic"
	// ApprovalManual requires approval of every change, new values and
	// new content of the same version included.
	ApprovalManual ApprovalPreset = "Manual"
)

// ApprovalPolicySpec selects installations and says which of their
// changes need approval. Every policy that selects an installation
// counts: their requirements add up (a change needs approval when any of
// them requires it), so a policy can only tighten, never loosen, what
// another requires.
// +kubebuilder:validation:XValidation:rule="has(self.preset) != has(self.require)",message="set exactly one of spec.preset (Automatic or Manual) and spec.require"
type ApprovalPolicySpec struct {
	// Selector chooses the installations the policy holds for.
	// +kubebuilder:default={}
	// +optional
	Selector ApprovalSelector `json:"selector,omitzero"`
	// Preset is Automatic (no change needs approval) or Manual (every
	// change does).
	// +optional
	Preset ApprovalPreset `json:"preset,omitempty"`
	// Require lists the kinds of change that need approval.
	// +kubebuilder:validation:MinItems=1
	// +listType=set
	// +optional
	Require []ApprovalRequirement `json:"require,omitempty"`
}

// ApprovalSelector selects installations by what their requesters cannot
// change on their own: the namespace they are in, the extension, and the
// cluster. Each field that is set must match; an empty selector selects
// every installation. Installation labels are deliberately not a
// criterion: whoever writes an installation writes its labels.
type ApprovalSelector struct {
	// Namespaces lists the namespaces whose installations it selects.
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// NamespaceSelector selects namespaces by their labels.
	// +optional
	NamespaceSelector *metav1.LabelSelector `json:"namespaceSelector,omitempty"`
	// Extensions lists the extensions (spec.extension) it selects.
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	// +optional
	Extensions []string `json:"extensions,omitempty"`
	// Clusters lists the clusters (spec.cluster) it selects; "hub" is
	// the cluster Annex runs in (an empty spec.cluster).
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	// +optional
	Clusters []string `json:"clusters,omitempty"`
	// ClusterSelector selects ManagedClusters by their labels; it never
	// selects the hub.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
}

// HubClusterName is the name ApprovalSelector.Clusters gives the cluster
// Annex runs in.
const HubClusterName = "hub"

// ApprovalPolicy says, for the installations it selects, which changes
// need an Approval before Annex applies them. No policy selecting an
// installation means Automatic.
// +kubebuilder:object:root=true
// +kubebuilder:resource:scope=Cluster,categories=annex
// +kubebuilder:printcolumn:name="Preset",type=string,JSONPath=`.spec.preset`
// +kubebuilder:printcolumn:name="Require",type=string,JSONPath=`.spec.require`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ApprovalPolicy struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ApprovalPolicySpec `json:"spec"`
}

// ApprovalPolicyList is a list of ApprovalPolicies.
// +kubebuilder:object:root=true
type ApprovalPolicyList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ApprovalPolicy `json:"items"`
}

// ApprovalSpec approves, or denies, one change of one installation. It
// cannot be changed once created: a different change, or a different
// decision, needs a new Approval.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="an Approval approves one change and cannot be changed; create a new one"
// +kubebuilder:validation:XValidation:rule="has(self.installation) != has(self.profile)",message="set spec.installation and spec.digest (one installation's change) or spec.profile, spec.revision and spec.step (one step of a profile's rollout)"
// +kubebuilder:validation:XValidation:rule="has(self.installation) == has(self.digest)",message="spec.installation and spec.digest go together: the digest is the installation's status.change.digest"
// +kubebuilder:validation:XValidation:rule="has(self.profile) == has(self.revision) && has(self.profile) == has(self.step)",message="spec.profile, spec.revision and spec.step go together: they name one step of one revision's rollout (status.rollout of the profile)"
type ApprovalSpec struct {
	// Installation is the ExtensionInstallation, in the Approval's
	// namespace.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Installation string `json:"installation,omitempty"`
	// Digest is the installation's status.change.digest that is
	// approved: exactly that change, and nothing else.
	// +kubebuilder:validation:Pattern=`^sha256:[0-9a-f]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
	// Profile is an ExtensionProfile whose spec.namespace is the
	// Approval's namespace; Revision and Step name the rollout step the
	// Approval lets start (spec.rollout.steps[].requireApproval).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Profile string `json:"profile,omitempty"`
	// +kubebuilder:validation:Minimum=1
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// +kubebuilder:validation:MaxLength=40
	// +optional
	Step string `json:"step,omitempty"`
	// Approver is the user who approves. The API server sets it to the
	// user who creates the Approval and refuses any other value
	// (admission policies annex-approver, config/admission).
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Approver string `json:"approver,omitempty"`
	// Decision is Approve (the default: the change is applied) or Deny
	// (the change is refused: the installation stops with reason
	// ApprovalDenied until its spec changes, which makes another change,
	// or this Approval is deleted). A Deny of a digest outweighs any
	// Approve of it.
	// +kubebuilder:default=Approve
	// +optional
	Decision ApprovalDecision `json:"decision,omitempty"`
	// Reason says why, for the requester: it is quoted in the
	// installation's Ready condition when the change is denied.
	// +kubebuilder:validation:MaxLength=1024
	// +optional
	Reason string `json:"reason,omitempty"`
}

// ApprovalDecision is what an Approval decides of a change.
// +kubebuilder:validation:Enum=Approve;Deny
type ApprovalDecision string

const (
	DecisionApprove ApprovalDecision = "Approve"
	DecisionDeny    ApprovalDecision = "Deny"
)

// Approval approves exactly one planned change (its digest) of one
// ExtensionInstallation. Grant create on approvals.annex.dev to those who
// may approve, apart from those who may write installations.
// +kubebuilder:object:root=true
// +kubebuilder:resource:categories=annex
// +kubebuilder:printcolumn:name="Installation",type=string,JSONPath=`.spec.installation`
// +kubebuilder:printcolumn:name="Profile",type=string,JSONPath=`.spec.profile`
// +kubebuilder:printcolumn:name="Step",type=string,JSONPath=`.spec.step`
// +kubebuilder:printcolumn:name="Decision",type=string,JSONPath=`.spec.decision`
// +kubebuilder:printcolumn:name="Approver",type=string,JSONPath=`.spec.approver`
// +kubebuilder:printcolumn:name="Digest",type=string,priority=1,JSONPath=`.spec.digest`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Approval struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec ApprovalSpec `json:"spec"`
}

// ApprovalList is a list of Approvals.
// +kubebuilder:object:root=true
type ApprovalList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Approval `json:"items"`
}

// ChangeApproval is what the approval gate says of a pending change.
type ChangeApproval struct {
	// State is Pending (no usable Approval names the digest yet),
	// Approved or Denied.
	State ApprovalState `json:"state"`
	// Reasons say why approval is required, one line per requirement:
	// "Major: 1.4.2 → 2.0.0", "PermissionGrowth: create on secrets
	// cluster-wide".
	Reasons []string `json:"reasons"`
	// Policies are the ApprovalPolicies that require it.
	Policies []string `json:"policies"`
	// CRDChanges lists the CustomResourceDefinitions the change creates,
	// changes or no longer ships.
	// +optional
	CRDChanges []string `json:"crdChanges,omitempty"`
	// RequestedBy is the user who last changed the installation's spec
	// (AnnotationRequestedBy); they cannot approve the change.
	// +optional
	RequestedBy string `json:"requestedBy,omitempty"`
	// ApprovedBy is the approver of the Approval that approved it.
	// +optional
	ApprovedBy string `json:"approvedBy,omitempty"`
	// DeniedBy is the approver of the Approval that denied it, and
	// DenialReason that Approval's spec.reason.
	// +optional
	DeniedBy string `json:"deniedBy,omitempty"`
	// +optional
	DenialReason string `json:"denialReason,omitempty"`
	// Refused explains why Approvals naming the digest do not count
	// (approved by the requester, no requester recorded).
	// +optional
	Refused []string `json:"refused,omitempty"`
}

// ApprovalState is where a change's approval stands.
type ApprovalState string

const (
	ApprovalPending  ApprovalState = "Pending"
	ApprovalApproved ApprovalState = "Approved"
	ApprovalDenied   ApprovalState = "Denied"
)

const (
	// AnnotationRequestedBy on an ExtensionInstallation or an
	// ExtensionProfile is the user who last created or changed its spec. The API server writes it (the
	// MutatingAdmissionPolicy annex-requested-by) and refuses any other
	// value (the ValidatingAdmissionPolicy of the same name).
	AnnotationRequestedBy = "annex.dev/requested-by"

	// ReasonApprovalRequired: the change waits for an Approval of its
	// digest.
	ReasonApprovalRequired = "ApprovalRequired"
	// ReasonApprovalRefused: the only Approvals of the digest do not
	// count (self-approval, no requester recorded).
	ReasonApprovalRefused = "ApprovalRefused"
	// ReasonApprovalDenied: an approver denied the change (an Approval
	// with decision Deny); it stays refused until the spec changes.
	ReasonApprovalDenied = "ApprovalDenied"
)

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion,
			&ApprovalPolicy{}, &ApprovalPolicyList{},
			&Approval{}, &ApprovalList{},
		)
		return nil
	})
}
