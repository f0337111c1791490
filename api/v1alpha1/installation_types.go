package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/types"
)

// ExtensionInstallationSpec is "this extension, this version range, these
// values, on this cluster".
type ExtensionInstallationSpec struct {
	// Extension is the name of the Extension to install.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	Extension string `json:"extension"`

	// Version is a semver range, e.g. "^1.4", ">=1.2 <2", "1.x"; the highest
	// version within it that fits the cluster is installed.
	// +kubebuilder:default="*"
	// +kubebuilder:validation:Pattern=`^\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*(\s*\|\|\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*)*\s*$`
	// +optional
	Version string `json:"version,omitempty"`

	// Channel is, for an operator (engine Bundle), the catalog channel
	// whose bundles are candidates and whose upgrade edges (replaces,
	// skips, skipRange) upgrades follow; default: the package's
	// defaultChannel, which status.conditions[Resolved] then names. When
	// the package has no defaultChannel either, every bundle is a
	// candidate and the edges of every channel count. It must be empty
	// for other extensions.
	// +kubebuilder:validation:MaxLength=253
	// +optional
	Channel string `json:"channel,omitempty"`

	// Cluster is the ManagedCluster to install into; empty means the cluster
	// Annex runs in.
	// +optional
	Cluster string `json:"cluster,omitempty"`

	// VerifyMode tightens the signature policy for this installation:
	// Enforce refuses an artifact that is not verified even when its
	// catalog's spec.verify (or the cluster default) says Audit. It never
	// loosens a policy; with no policy at all, nothing but the built-in
	// catalog can be verified, so every other artifact is refused.
	// +kubebuilder:validation:Enum=Enforce
	// +optional
	VerifyMode VerificationMode `json:"verifyMode,omitempty"`

	// TargetNamespace receives the extension's namespaced objects that name
	// no namespace; default: the installation's own namespace.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`

	// ServiceAccountName is a ServiceAccount of the installation's
	// namespace that Annex impersonates to apply and delete the
	// extension's objects (on the hub, and on a managed cluster whose
	// kubeconfig identity may impersonate it), so the installation can do
	// only what that ServiceAccount may. Empty: the manager's
	// --default-service-account if set (multi-tenant mode), else the
	// manager's own identity.
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=253
	// +optional
	ServiceAccountName string `json:"serviceAccountName,omitempty"`

	// WatchNamespaces are the namespaces an operator (engine Bundle)
	// watches; empty means all namespaces. They choose its install mode
	// (OwnNamespace, SingleNamespace, MultiNamespace, AllNamespaces),
	// which its bundle must support.
	// +kubebuilder:validation:MaxItems=64
	// +listType=set
	// +optional
	WatchNamespaces []string `json:"watchNamespaces,omitempty"`

	// WebhookCertificates says who issues the serving certificates of an
	// operator's (engine Bundle) webhooks and aggregated APIs. Unset, or
	// provider Annex: Annex, from a CA of the installation's own.
	// +optional
	WebhookCertificates *WebhookCertificates `json:"webhookCertificates,omitempty"`

	// ScopedGrants narrows what the extension is granted: its
	// ClusterRoleBindings on namespaced resources become RoleBindings in
	// the namespaces listed, so it can act there only. Opt-in, for
	// extensions that work in selected namespaces (an operator that
	// watches them); one that needs every namespace stops working outside
	// them. What a ClusterRole grants on cluster-scoped resources stays
	// cluster-wide; a grant Annex cannot narrow soundly (a "*" group or
	// resource, an aggregated ClusterRole, a resource of unknown scope)
	// stops the installation, naming the role and the rule.
	// status.scopedGrants says what changed. It never grants more than
	// the extension asks, so a requester may set it; an admin's approval
	// policy may require it.
	// +optional
	ScopedGrants *ScopedGrants `json:"scopedGrants,omitempty"`

	// Resources are custom resources Annex creates for this installation
	// once the extension is up — for an operator (engine Bundle), the
	// resources that tell it what to run, of the APIs its bundle owns.
	// They are applied like the extension's own objects (drift is
	// corrected, a resource removed from the list is deleted), after the
	// operator's Deployments are Available; the installation is Ready only
	// when they are, and status.resources repeats each one's state and
	// message. On deletion they go first, and the operator stays until
	// their finalizers are done (see spec.uninstall.timeout).
	// +kubebuilder:validation:MaxItems=64
	// +listType=atomic
	// +optional
	Resources []CustomResource `json:"resources,omitempty"`

	// Values override the chart's defaults, as in "helm install --values".
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`

	// ValuesFrom merges values from Secrets and ConfigMaps in the
	// installation's namespace, in order, over Values.
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`

	// Upgrade says how the installed version may move.
	// +kubebuilder:default={}
	// +optional
	Upgrade UpgradePolicy `json:"upgrade,omitempty"`

	// Install says what happens when a first install fails.
	// +kubebuilder:default={}
	// +optional
	Install InstallPolicy `json:"install,omitempty"`

	// Uninstall says what deletion removes.
	// +kubebuilder:default={}
	// +optional
	Uninstall UninstallPolicy `json:"uninstall,omitempty"`

	// DriftDetection compares the cluster with the installed revision on
	// every interval: Enabled lists and corrects drifted objects (deleted
	// ones are recreated), Warn only lists them, Disabled does neither.
	// +kubebuilder:validation:Enum=Enabled;Warn;Disabled
	// +kubebuilder:default=Enabled
	// +optional
	DriftDetection DriftDetectionMode `json:"driftDetection,omitempty"`

	// TakeOwnership lets Annex adopt objects that exist already and take over
	// fields another field manager owns. Objects of another installation are
	// never adopted.
	// +optional
	TakeOwnership bool `json:"takeOwnership,omitempty"`

	// Adopt names what another tool installed that this installation
	// takes over in place on its first install: every object keeps its
	// UID, an object is written only where Annex's render differs from it
	// (one that is the same gets Annex's labels and loses the other
	// tool's field managers, in one write), and the other tool's
	// bookkeeping is deleted once revision 1 is recorded. It does nothing
	// once a revision is installed. annexctl adopt helm writes it, with
	// spec.version pinned to the release's chart version and spec.values
	// set to its user-supplied values.
	// +optional
	Adopt *Adoption `json:"adopt,omitempty"`

	// Interval is how often Annex looks at a healthy installation again:
	// health, drift, and new versions in range.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Interval metav1.Duration `json:"interval,omitzero"`

	// Suspend stops reconciling; what is installed stays as it is.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Timeout bounds how long Annex waits for the applied objects to become
	// healthy before it reports Stalled.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Timeout metav1.Duration `json:"timeout,omitzero"`

	// Plans asks a package's plans to run or to be abandoned, declaratively
	// (annexctl plan run/abandon sets these). Ignored for other engines.
	// +optional
	Plans *PlanRequests `json:"plans,omitempty"`
}

// PlanRequests are requests a person makes of an installation's plans.
// Each carries an ID; a request is carried out once per ID, so setting the
// same plan with a new ID runs it again.
type PlanRequests struct {
	// Run runs the named plan once, after any running plan has finished.
	// +optional
	Run *PlanRequest `json:"run,omitempty"`
	// Abandon stops the named plan where it is: no further step of it
	// runs, what its finished steps applied stays (and is listed in its
	// status), and the installation goes on with the next change.
	// +optional
	Abandon *PlanRequest `json:"abandon,omitempty"`
}

// PlanRequest names a plan and identifies one request for it.
type PlanRequest struct {
	// Name of the plan, e.g. backup.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	Name string `json:"name"`
	// ID makes the request unique; annexctl sets the current time.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +required
	ID string `json:"id"`
}

// PlanState is the state of a plan, a phase or a step, as KUDO names them,
// plus ABANDONED.
// +kubebuilder:validation:Enum=NEVER_RUN;PENDING;IN_PROGRESS;COMPLETE;ERROR;FATAL_ERROR;ABANDONED
type PlanState string

const (
	// PlanNeverRun: the plan has not run for this installation.
	PlanNeverRun PlanState = "NEVER_RUN"
	// PlanPending: the plan is scheduled and has not started.
	PlanPending PlanState = "PENDING"
	// PlanInProgress: the plan is running.
	PlanInProgress PlanState = "IN_PROGRESS"
	// PlanComplete: every step finished.
	PlanComplete PlanState = "COMPLETE"
	// PlanError: a step failed and is retried; the plan is still running.
	PlanError PlanState = "ERROR"
	// PlanFatalError: a step failed for good; the plan stopped.
	PlanFatalError PlanState = "FATAL_ERROR"
	// PlanAbandoned: a person abandoned the plan; it stopped.
	PlanAbandoned PlanState = "ABANDONED"
)

// PlanStatus is the state of one plan of a package, down to its steps.
type PlanStatus struct {
	// Name of the plan.
	Name string `json:"name"`
	// State of the plan.
	State PlanState `json:"state"`
	// Message says what the plan waits for or why it failed.
	// +optional
	Message string `json:"message,omitempty"`
	// Trigger says why the plan last ran: install, upgrade, a parameter
	// change, a request, deletion.
	// +optional
	Trigger string `json:"trigger,omitempty"`
	// Revision is the revision the plan last ran for.
	// +optional
	Revision int64 `json:"revision,omitempty"`
	// StartedAt and FinishedAt bound the last run.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
	// +optional
	FinishedAt *metav1.Time `json:"finishedAt,omitempty"`
	// LeftBehind lists what an abandoned or failed run had applied: its
	// objects stay in the inventory and are removed on uninstall.
	// +optional
	LeftBehind []ObjectReference `json:"leftBehind,omitempty"`
	// Phases of the plan, in order.
	// +optional
	Phases []PhaseStatus `json:"phases,omitempty"`
}

// PhaseStatus is the state of one phase of a plan.
type PhaseStatus struct {
	Name  string    `json:"name"`
	State PlanState `json:"state"`
	// +optional
	Message string `json:"message,omitempty"`
	// +optional
	Steps []StepStatus `json:"steps,omitempty"`
}

// StepStatus is the state of one step of a phase.
type StepStatus struct {
	Name  string    `json:"name"`
	State PlanState `json:"state"`
	// +optional
	Message string `json:"message,omitempty"`
}

// CustomResource is one resource of spec.resources.
type CustomResource struct {
	// Object is the resource as it is applied: apiVersion, kind,
	// metadata.name, and its spec. metadata.namespace defaults to the
	// target namespace for a namespaced kind; labels and annotations are
	// kept.
	// +kubebuilder:validation:EmbeddedResource
	// +kubebuilder:pruning:PreserveUnknownFields
	// +kubebuilder:validation:XValidation:rule="has(self.metadata.name) && self.metadata.name != ''",message="object.metadata.name is required: Annex applies and tracks each resource by its name (generateName is not supported)"
	// +required
	Object runtime.RawExtension `json:"object"`
	// ReadyCondition is the type of the status condition that says the
	// resource is ready, for operators that do not write Ready (e.g.
	// Available, Synced): True is ready, anything else is not, with the
	// condition's reason and message. Empty: kstatus rules — Ready, else
	// Available, with Stalled and Reconciling and observedGeneration
	// taken into account.
	// +kubebuilder:validation:Pattern=`^[A-Za-z][A-Za-z0-9_.-]*$`
	// +kubebuilder:validation:MaxLength=316
	// +optional
	ReadyCondition string `json:"readyCondition,omitempty"`
}

// PendingChange is a change before it is applied: what it is, and what
// its gates said.
type PendingChange struct {
	// Event is PreInstall or PreUpgrade (a new version, new values, new
	// content of the same version), or PreUninstall while hooks hold a
	// deletion.
	Event string `json:"event"`
	// FromVersion is the installed version; empty for an install.
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// ToVersion is the version the change applies.
	ToVersion string `json:"toVersion"`
	// Digest identifies exactly this change (event, versions, inputs and
	// every object it applies): an approval approves this digest, a hook's
	// verdict holds for it, and different content has a different one.
	Digest string `json:"digest"`
	// ArtifactDigest is the sha256 of the artifact (chart, package or
	// bundle) the change applies, as fetched.
	// +optional
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// SignedBy is who signed that artifact, as status.artifact shows it:
	// `key "release-2026" (sha256:…) (Cosign)`, or `not verified
	// (SignatureMissing, Audit)` when an Audit policy let an unverified
	// artifact through; empty when no signature policy applies.
	// +optional
	SignedBy string `json:"signedBy,omitempty"`
	// PermissionsGrow and PermissionsShrink say how what the extension
	// may do changes, one line per scope and resource ("create, get on
	// secrets cluster-wide", "creates CustomResourceDefinition x").
	// +optional
	PermissionsGrow []string `json:"permissionsGrow,omitempty"`
	// +optional
	PermissionsShrink []string `json:"permissionsShrink,omitempty"`
	// Approval says whether the change needs an Approval, why, and
	// whether it has one; absent when no ApprovalPolicy requires one.
	// +optional
	Approval *ChangeApproval `json:"approval,omitempty"`
	// Hooks is what the change's hooks said so far: their HookRequest,
	// whether they are pending, succeeded or failed, and which hook it
	// waits for or why it failed.
	// +optional
	Hooks *HooksSummary `json:"hooks,omitempty"`
}

// PermissionSummary condenses what an extension's objects let it do.
type PermissionSummary struct {
	// ClusterWide are its accesses cluster-wide, one line per resource
	// ("get, list, watch on pods"); at most 20 lines, then "and N more".
	// +optional
	ClusterWide []string `json:"clusterWide,omitempty"`
	// Namespaces are where it holds namespaced grants.
	// +optional
	Namespaces []string `json:"namespaces,omitempty"`
	// BoundTo are roles outside the extension it binds, whose rules only
	// the cluster knows ("ClusterRole/cluster-admin cluster-wide").
	// +optional
	BoundTo []string `json:"boundTo,omitempty"`
	// ClusterScoped counts the cluster-scoped objects it creates
	// (CustomResourceDefinitions, webhook configurations, ClusterRoles...).
	// +optional
	ClusterScoped int32 `json:"clusterScoped,omitempty"`
	// AggregatesInto are the labels by which its ClusterRoles add rules to
	// built-in roles (rbac.authorization.k8s.io/aggregate-to-admin=true).
	// +optional
	AggregatesInto []string `json:"aggregatesInto,omitempty"`
}

// ResourceStatus is the state of one of spec.resources.
type ResourceStatus struct {
	// APIVersion, Kind, Namespace and Name identify the resource.
	APIVersion string `json:"apiVersion"`
	Kind       string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// Ready is True when the resource is ready, False when it is not
	// (yet), Unknown when it does not exist.
	Ready metav1.ConditionStatus `json:"ready"`
	// Message is the resource's own account of why it is not ready: its
	// condition's reason and message.
	// +optional
	Message string `json:"message,omitempty"`
}

// ValuesReference selects values from a key of a Secret or ConfigMap.
type ValuesReference struct {
	// Kind of the object holding the values.
	// +kubebuilder:validation:Enum=Secret;ConfigMap
	// +required
	Kind string `json:"kind"`
	// Name of the Secret or ConfigMap.
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// Namespace of the Secret or ConfigMap; default the installation's. A
	// hub admin lets another namespace read values from it by annotating
	// it with annex.dev/share-values-with: "<namespace>,…" (or "*");
	// without that, the reference is refused.
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Key holding the values; default "values.yaml".
	// +kubebuilder:default="values.yaml"
	// +optional
	Key string `json:"key,omitempty"`
	// TargetPath, when set, places the key's plain value at this dotted path
	// (e.g. "auth.password") instead of merging it as a YAML document.
	// +optional
	TargetPath string `json:"targetPath,omitempty"`
	// Optional references may be missing; a missing required one stops the
	// installation with a condition that names it.
	// +optional
	Optional bool `json:"optional,omitempty"`
}

// DriftDetectionMode says what Annex does about drift.
type DriftDetectionMode string

const (
	DriftDetectionEnabled  DriftDetectionMode = "Enabled"
	DriftDetectionWarn     DriftDetectionMode = "Warn"
	DriftDetectionDisabled DriftDetectionMode = "Disabled"
)

// InstallPolicy controls a failed first install.
type InstallPolicy struct {
	// Remediation of a first install that fails (apply error, hook failure,
	// not healthy within spec.timeout): Uninstall removes what was applied;
	// Keep leaves it for inspection.
	// +kubebuilder:validation:Enum=Uninstall;Keep
	// +kubebuilder:default=Keep
	// +optional
	Remediation string `json:"remediation,omitempty"`
}

// UpgradePolicy controls version moves.
type UpgradePolicy struct {
	// Automatic moves an installed extension to a newer version within the
	// range as soon as one appears.
	// +kubebuilder:default=true
	// +optional
	Automatic *bool `json:"automatic,omitempty"`
	// AllowDowngrade lets Annex install a lower version than the installed one.
	// +optional
	AllowDowngrade bool `json:"allowDowngrade,omitempty"`
	// Graph says which versions an installed operator (engine Bundle) may
	// move to. Successors (the default, as OLM does) follows the catalog's
	// upgrade graph in the channel: only versions that upgrade edges
	// (replaces, skips, skipRange) lead to from the installed one, walked
	// one edge at a time, each version healthy before the next. AnyInRange
	// moves straight to any version of the channel within spec.version.
	// Other engines ignore it.
	// +kubebuilder:validation:Enum=Successors;AnyInRange
	// +kubebuilder:default=Successors
	// +optional
	Graph UpgradeGraph `json:"graph,omitempty"`
	// Retries is how many times a failed upgrade is tried again before
	// Annex rolls back to the last good revision.
	// +kubebuilder:default=2
	// +kubebuilder:validation:Minimum=0
	// +kubebuilder:validation:Maximum=20
	// +optional
	Retries *int32 `json:"retries,omitempty"`
	// CRDPolicy says what a change does with a CustomResourceDefinition
	// that differs from the one installed on the target cluster, whatever
	// the engine brings it (a chart's crds/ or templates, a package, an
	// operator bundle). Annex compares the two before anything of the
	// change is applied: a removed stored or served version, a scope
	// change, a removed field, a new required field, a type change, a
	// narrowed enum, tightened bounds, a new pattern or validation rule,
	// a field made non-nullable are breaking; a changed default is a
	// warning. Strict (the default) refuses a change with a breaking
	// finding (condition Ready False, reason UnsafeCRDChange, naming each
	// finding) and applies nothing of it; Warn applies it and lists the
	// findings in the Warnings condition and an Event; Skip keeps the
	// installed CRD as it is, as Helm does with crds/, and applies the
	// rest; Force applies it and records what it forced past in an Event.
	// A removed version that objects are still stored at is refused under
	// every policy but Skip: the API server would refuse it too.
	// +kubebuilder:validation:Enum=Strict;Warn;Skip;Force
	// +kubebuilder:default=Strict
	// +optional
	CRDPolicy CRDPolicy `json:"crdPolicy,omitempty"`
}

// CRDPolicy is what a change does with a CRD that differs from the
// installed one (spec.upgrade.crdPolicy).
type CRDPolicy string

const (
	// CRDPolicyStrict refuses a breaking CRD change.
	CRDPolicyStrict CRDPolicy = "Strict"
	// CRDPolicyWarn applies it and reports every finding.
	CRDPolicyWarn CRDPolicy = "Warn"
	// CRDPolicySkip keeps the installed CRD.
	CRDPolicySkip CRDPolicy = "Skip"
	// CRDPolicyForce applies it and records what it forced past.
	CRDPolicyForce CRDPolicy = "Force"
)

// UpgradeGraph is how an installed operator bundle may move.
type UpgradeGraph string

const (
	// UpgradeGraphSuccessors follows the channel's upgrade edges from the
	// installed version, one edge at a time.
	UpgradeGraphSuccessors UpgradeGraph = "Successors"
	// UpgradeGraphAnyInRange allows any version of the channel within
	// spec.version.
	UpgradeGraphAnyInRange UpgradeGraph = "AnyInRange"
)

// UninstallPolicy controls what deletion removes.
type UninstallPolicy struct {
	// DeleteCRDs also deletes the CustomResourceDefinitions the extension
	// installed, and with them every custom resource of those kinds.
	// +optional
	DeleteCRDs bool `json:"deleteCRDs,omitempty"`

	// Timeout bounds how long deletion waits for custom resources to be
	// finalized — by the operator that is still installed while they go —
	// before it reports Stalled, naming each resource and the finalizers
	// it waits for. Annex keeps waiting after that (removing the operator
	// would leave them stuck), unless OnTimeout is RemoveFinalizers.
	// +kubebuilder:default="5m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Timeout metav1.Duration `json:"timeout,omitzero"`

	// OnTimeout says what happens when custom resources are still being
	// finalized after Timeout: Wait reports Stalled and keeps waiting;
	// RemoveFinalizers removes the finalizers of the installation's own
	// resources and goes on — what those finalizers guarded (external
	// resources, data) is then not cleaned up by the operator.
	// +kubebuilder:validation:Enum=Wait;RemoveFinalizers
	// +kubebuilder:default=Wait
	// +optional
	OnTimeout string `json:"onTimeout,omitempty"`
}

const (
	// UninstallWait keeps waiting for custom resources' finalizers.
	UninstallWait = "Wait"
	// UninstallRemoveFinalizers removes them after spec.uninstall.timeout.
	UninstallRemoveFinalizers = "RemoveFinalizers"
)

// ObjectReference names one applied object.
type ObjectReference struct {
	// +optional
	Group string `json:"group,omitempty"`
	// +optional
	Version string `json:"version,omitempty"`
	Kind    string `json:"kind"`
	// +optional
	Namespace string `json:"namespace,omitempty"`
	Name      string `json:"name"`
	// ResourceVersion is, in status.inventory, the object's resourceVersion
	// when Annex last applied it. Uninstalling and pruning delete an object
	// of a kind no controller writes back (ConfigMap, Secret,
	// ServiceAccount, Service, RBAC, ...) with it as a precondition instead
	// of reading the object first: an object changed since, by anyone, is
	// read and checked as before (objects of other kinds are deleted
	// unread too, selected by their name and the installation's labels).
	// Not an identity: two references to one object may differ in it.
	// +optional
	ResourceVersion string `json:"resourceVersion,omitempty"`
}

// AdoptedObject is an object an adoption took over without writing it.
type AdoptedObject struct {
	ObjectReference `json:",inline"`
	// UID of the object adopted: an object of the same name with another
	// UID is not the installation's, and is never written or deleted as
	// such.
	UID types.UID `json:"uid"`
	// Digest is the SHA-256 of the rendered object it was adopted as: a
	// later revision that renders it alike, on an object nobody changed,
	// leaves it unwritten.
	Digest string `json:"digest"`
	// FieldManagers are the other tool's field managers (helm,
	// helm-controller) whose managedFields entries become Annex's when
	// Annex first writes the object, so that a later revision that drops
	// a field removes it.
	// +optional
	FieldManagers []string `json:"fieldManagers,omitempty"`
}

// FailedTarget records a remediated failure.
type FailedTarget struct {
	// Generation of the spec that asked for the target.
	Generation int64 `json:"generation"`
	// Version, ArtifactDigest and ValuesDigest identify the target.
	Version        string `json:"version"`
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	ValuesDigest   string `json:"valuesDigest,omitempty"`
	// Message says what failed and what Annex did about it.
	Message string `json:"message"`
}

// DriftedObject is an object that differs from what Annex applied.
type DriftedObject struct {
	ObjectReference `json:",inline"`
	// Fields that differ, or "deleted".
	Fields []string `json:"fields"`
}

// ScopedGrants lists the namespaces an extension's grants on namespaced
// resources are narrowed to.
type ScopedGrants struct {
	// Namespaces are where the extension is granted what its
	// ClusterRoleBindings grant on namespaced resources; they must exist.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=64
	// +kubebuilder:validation:items:MaxLength=63
	// +kubebuilder:validation:items:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +listType=set
	// +required
	Namespaces []string `json:"namespaces"`
}

// ContentScope says whether the content an installation rendered reaches
// beyond namespaces. It decides how the installation is resolved: content
// with a cluster-scoped object (a CustomResourceDefinition, a webhook
// configuration, a ClusterRole, an APIService, a Namespace of its own…)
// acts on the whole cluster, so the installations of the extension on the
// cluster share one version; content that is namespaced only may run a
// version of its own, side by side with other installations of the
// extension (two databases of one operator for two teams, an app at two
// versions in two namespaces).
type ContentScope struct {
	// Version is the version of the extension whose content was rendered.
	Version string `json:"version"`
	// ObservedGeneration is the generation of the spec (version range and
	// values) the content was rendered for.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// ClusterScoped is the first cluster-scoped object of that content —
	// CustomResourceDefinitions first, then webhook configurations and
	// APIServices, then the rest by group, kind and name — or absent when
	// every object is namespaced. The namespace Annex creates for
	// spec.targetNamespace is not part of the content; a Namespace the
	// content declares is.
	// +optional
	ClusterScoped *ObjectReference `json:"clusterScoped,omitempty"`
}

// Revision records one applied version.
type Revision struct {
	// Number counts applies that changed the rendered set, from 1.
	Number int64 `json:"number"`
	// Version of the extension.
	Version string `json:"version"`
	// ArtifactDigest is the sha256 of the chart archive that was rendered.
	// +optional
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// ValuesDigest is the sha256 of the effective values.
	ValuesDigest string `json:"valuesDigest"`
	// ManifestDigest is the sha256 of the rendered set.
	ManifestDigest string `json:"manifestDigest"`
	// AppliedAt is when the revision was applied.
	AppliedAt metav1.Time `json:"appliedAt"`
	// Plans are the plans this revision runs, in order (packages only).
	// +optional
	Plans []string `json:"plans,omitempty"`
	// Trigger says why the plans run (packages only).
	// +optional
	Trigger string `json:"trigger,omitempty"`
}

// ExtensionInstallationStatus is what Annex observed and did.
type ExtensionInstallationStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Resolved, Installed, Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ResolvedVersion is the version the resolver chose.
	// +optional
	ResolvedVersion string `json:"resolvedVersion,omitempty"`
	// InstalledVersion is the version whose objects are applied.
	// +optional
	InstalledVersion string `json:"installedVersion,omitempty"`
	// ClusterVersion is the Kubernetes version the resolver saw.
	// +optional
	ClusterVersion string `json:"clusterVersion,omitempty"`
	// Artifact is the artifact of the version last fetched: its digest and
	// who signed it, as its catalog's spec.verify asks.
	// +optional
	Artifact *ArtifactStatus `json:"artifact,omitempty"`
	// Inventory lists every object the installed revision applied. Deletion
	// removes exactly these; an upgrade prunes those that left the set.
	// +optional
	Inventory []ObjectReference `json:"inventory,omitempty"`
	// InventoryCount is len(Inventory), for printing.
	// +optional
	InventoryCount int32 `json:"inventoryCount,omitempty"`
	// AdoptedObjects lists the objects of Inventory that an adoption
	// (spec.adopt.helm) took over without writing them, because they
	// already matched the render, and that Annex has not written since.
	// They carry no installation's labels: Annex knows them as its own
	// by UID, and claims each (its labels, and the fields of the other
	// tool's field managers) at the first revision or drift correction
	// that changes it.
	// +optional
	AdoptedObjects []AdoptedObject `json:"adoptedObjects,omitempty"`
	// Drifted lists the objects that differ from the installed revision, as
	// of the last drift check.
	// +optional
	Drifted []DriftedObject `json:"drifted,omitempty"`
	// Failures counts consecutive failed attempts at the current target
	// revision; it resets on success.
	// +optional
	Failures int32 `json:"failures,omitempty"`
	// LastHealthyRevision is the number of the newest revision that became
	// healthy: what a failed upgrade rolls back to.
	// +optional
	LastHealthyRevision int64 `json:"lastHealthyRevision,omitempty"`
	// FailedTarget is the version and inputs that failed after every retry
	// and were remediated. Annex does not try them again until the spec
	// changes (a new generation).
	// +optional
	FailedTarget *FailedTarget `json:"failedTarget,omitempty"`
	// RequiredBy lists the installations on the same cluster whose chosen
	// version depends on this one's extension ("namespace/name"). While it
	// is not empty, deleting this installation is held.
	// +optional
	RequiredBy []string `json:"requiredBy,omitempty"`
	// Pending is the revision being applied, cleared when it is recorded
	// in History. For a release with plans (a package, a bundle) it is the
	// revision whose plans run: a reconcile with the same inputs resumes
	// them where Plans says they stopped; other inputs supersede it. A
	// chart's apply runs in one reconcile and shows it only while its
	// hooks run: one the manager stopped in the middle is applied again,
	// not resumed, and the revision's record, written before the first
	// object, keeps what it applied owned (see History).
	// +optional
	Pending *Revision `json:"pending,omitempty"`
	// History lists the most recent revisions, newest first. Each has a
	// compressed record (the rendered set and inventory) in a Secret of the
	// installation's namespace, labelled annex.dev/installation and
	// annex.dev/revision, for rollback and for uninstalling after a crash.
	// +optional
	History []Revision `json:"history,omitempty"`
	// Plans holds the state of every plan of an installed package, down
	// to its steps.
	// +listType=map
	// +listMapKey=name
	// +optional
	Plans []PlanStatus `json:"plans,omitempty"`
	// PlanRequests records the IDs of the last plan requests carried out
	// (spec.plans.run and spec.plans.abandon).
	// +optional
	PlanRequests *PlanRequests `json:"planRequests,omitempty"`
	// Content is the scope of the content this installation last rendered:
	// whether it has a cluster-scoped object, and which. An installation
	// whose content is namespaced only runs a version of its own when it
	// cannot share the version of the other installations of its extension
	// on the cluster; one with a cluster-scoped object shares it. Until it
	// is known for the current generation, an installation of which nothing
	// is installed yet is resolved as if namespaced only (rendering tells,
	// before anything is applied).
	// +optional
	Content *ContentScope `json:"content,omitempty"`

	// Resources is the state of each of spec.resources, in order, as last
	// read.
	// +optional
	Resources []ResourceStatus `json:"resources,omitempty"`

	// Permissions summarises what the installed revision's objects let
	// the extension do (derived by internal/gate); the revision's record
	// holds the objects themselves, and status.change the difference a
	// pending change makes.
	// +optional
	Permissions *PermissionSummary `json:"permissions,omitempty"`

	// Change is the change Annex is about to apply, as its gates see it
	// (approval, hooks): absent when the cluster has what the spec asks.
	// +optional
	Change *PendingChange `json:"change,omitempty"`

	// CRDChanges is what Annex found comparing the CustomResourceDefinitions
	// the last change brings with those installed (spec.upgrade.crdPolicy),
	// before anything of it was applied: absent when none of its CRD changes
	// can break stored objects or clients.
	// +optional
	CRDChanges *CRDChangeReport `json:"crdChanges,omitempty"`

	// ScopedGrants says what spec.scopedGrants changed in the objects
	// last rendered, one line per binding, e.g. "ClusterRoleBinding
	// op-manager → RoleBindings in team-a, team-b (ClusterRole
	// op-manager: configmaps, pods)".
	// +optional
	ScopedGrants []string `json:"scopedGrants,omitempty"`

	// AdoptedFrom says what the installation took over in place
	// (spec.adopt), set when its revision 1 is recorded.
	// +optional
	AdoptedFrom *AdoptedFrom `json:"adoptedFrom,omitempty"`
}

// Adoption is what an installation takes over in place: exactly one of
// helm and olm.
// +kubebuilder:validation:XValidation:rule="has(self.helm) != has(self.olm)",message="spec.adopt: set exactly one of helm or olm"
type Adoption struct {
	// Helm is a Helm release, as Helm 3 and 4 (the CLI or Flux's
	// helm-controller) store it: Secrets, else ConfigMaps, named
	// sh.helm.release.v1.RELEASE.vN.
	// +optional
	Helm *HelmReleaseAdoption `json:"helm,omitempty"`
	// OLM is an operator OLM v0 installed: a Subscription
	// (operators.coreos.com/v1alpha1) in the target namespace, its
	// installed ClusterServiceVersion and InstallPlans. The installation's
	// extension is the Subscription's package (an Extension of an olm
	// Catalog), spec.version the CSV's spec.version and spec.channel the
	// Subscription's channel. The operator's objects Annex renders from the
	// bundle are taken over in place; once revision 1 is recorded they
	// lose their ownerReferences to the CSV and OLM's olm.owner labels,
	// then the Subscription, InstallPlans and CSV are deleted, so that
	// OLM removes nothing of the operator. Its custom resources are not
	// touched.
	// +optional
	OLM *OLMOperatorAdoption `json:"olm,omitempty"`
}

// OLMOperatorAdoption names the OLM v0 Subscription an installation
// adopts; it is in the installation's target namespace.
type OLMOperatorAdoption struct {
	// Subscription is the Subscription's name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +required
	Subscription string `json:"subscription"`
	// FieldManagers are the field managers whose fields Annex takes over:
	// OLM v0's olm-operator and catalog-operator write under the names of
	// their binaries.
	// +kubebuilder:default={"olm","catalog"}
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	FieldManagers []string `json:"fieldManagers,omitempty"`
}

// HelmReleaseAdoption names the Helm release an installation adopts. The
// chart is rendered with the installation's name as the release name, so
// the installation must be named after the release, and its target
// namespace must be the release's namespace.
type HelmReleaseAdoption struct {
	// Release is the Helm release's name; it must be the installation's
	// metadata.name.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=53
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$`
	// +required
	Release string `json:"release"`
	// StorageNamespace is the namespace of the release's storage (what
	// helm -n names); default: the target namespace. Flux's
	// helm-controller may store a release elsewhere
	// (spec.storageNamespace).
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +kubebuilder:validation:MaxLength=63
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`
	// FieldManagers are the field managers whose fields Annex takes over
	// (their managedFields entries are removed once Annex owns the
	// fields): the name the release's Helm used.
	// +kubebuilder:default={"helm","helm-controller"}
	// +kubebuilder:validation:MaxItems=16
	// +kubebuilder:validation:items:MinLength=1
	// +kubebuilder:validation:items:MaxLength=128
	// +optional
	FieldManagers []string `json:"fieldManagers,omitempty"`
}

// AdoptedFrom is what an installation took over (spec.adopt).
type AdoptedFrom struct {
	// Kind is what was adopted: HelmRelease (a release of Helm's own
	// storage) or Subscription (an operator OLM v0 installed).
	Kind string `json:"kind"`
	// Name and Namespace name it; for a Helm release, its name and the
	// namespace of its objects; for OLM, the Subscription's.
	Name      string `json:"name"`
	Namespace string `json:"namespace"`
	// StorageNamespace is where its storage was, when not Namespace.
	// +optional
	StorageNamespace string `json:"storageNamespace,omitempty"`
	// Revision is the release revision adopted (0 for OLM).
	Revision int64 `json:"revision"`
	// Chart and Version are the release's chart and chart version; for
	// OLM, the package and the CSV's spec.version.
	Chart   string `json:"chart"`
	Version string `json:"version"`
	// ClusterServiceVersion is, for OLM, the CSV that was installed.
	// +optional
	ClusterServiceVersion string `json:"clusterServiceVersion,omitempty"`
	// At is when Annex recorded the adoption as its revision 1.
	At metav1.Time `json:"at"`
	// StorageRemoved: the release's storage (every revision of it) was
	// deleted, so that helm list no longer shows it. Its last manifest is
	// in the record of revision 1. For OLM: the adopted objects were
	// orphaned and the Subscription, InstallPlans and CSV deleted.
	// +optional
	StorageRemoved bool `json:"storageRemoved,omitempty"`
}

// ExtensionInstallation installs one Extension into one cluster and keeps it
// there.
// +kubebuilder:validation:XValidation:rule="!has(self.spec.adopt) || !has(self.spec.adopt.helm) || self.spec.adopt.helm.release == self.metadata.name",message="spec.adopt.helm.release must be the installation's metadata.name: Annex renders the chart with the installation's name as the release name"
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=annex,shortName=exti
// +kubebuilder:printcolumn:name="Extension",type=string,JSONPath=`.spec.extension`
// +kubebuilder:printcolumn:name="Range",type=string,JSONPath=`.spec.version`,priority=1
// +kubebuilder:printcolumn:name="Version",type=string,JSONPath=`.status.installedVersion`
// +kubebuilder:printcolumn:name="Cluster",type=string,JSONPath=`.spec.cluster`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Objects",type=integer,JSONPath=`.status.inventoryCount`,priority=1
// +kubebuilder:printcolumn:name="Signer",type=string,JSONPath=`.status.artifact.verification.identity`,priority=1
// +kubebuilder:printcolumn:name="Required By",type=string,JSONPath=`.status.requiredBy`,priority=1
// +kubebuilder:printcolumn:name="Adopted From",type=string,JSONPath=`.status.adoptedFrom.kind`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ExtensionInstallation struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExtensionInstallationSpec   `json:"spec"`
	Status ExtensionInstallationStatus `json:"status,omitempty"`
}

// ExtensionInstallationList is a list of ExtensionInstallations.
// +kubebuilder:object:root=true
type ExtensionInstallationList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExtensionInstallation `json:"items"`
}

// WebhookCertificateProvider issues an operator's serving certificates.
// +kubebuilder:validation:Enum=Annex;CertManager
type WebhookCertificateProvider string

const (
	// WebhookCertificatesAnnex: Annex issues them from a CA of the
	// installation's own, kept in the Secret <installation>-webhook-ca,
	// renews them well before expiry and writes the CA bundle.
	WebhookCertificatesAnnex WebhookCertificateProvider = "Annex"
	// WebhookCertificatesCertManager: cert-manager, which must be
	// installed on the target cluster, issues and renews them through
	// Certificate objects, and its CA injector writes the CA bundle.
	WebhookCertificatesCertManager WebhookCertificateProvider = "CertManager"
)

// WebhookCertificates chooses who issues the serving certificates of an
// operator's webhooks and aggregated APIs.
// +kubebuilder:validation:XValidation:rule="!has(self.issuerRef) || (has(self.provider) && self.provider == 'CertManager')",message="issuerRef names a cert-manager issuer: set provider: CertManager, or remove issuerRef"
type WebhookCertificates struct {
	// Provider issues the certificates: Annex (the default) from a CA of
	// the installation's own, or CertManager. With CertManager, Annex
	// creates a cert-manager Certificate per webhook Service (Secret
	// <service>-cert, which the operator's Deployment mounts) and has
	// cert-manager's CA injector fill the caBundle of the webhook
	// configurations, CRD conversions and APIServices (annotation
	// cert-manager.io/inject-ca-from); the installation waits, saying so,
	// while the target cluster does not serve cert-manager's API.
	// +optional
	Provider WebhookCertificateProvider `json:"provider,omitempty"`
	// IssuerRef names the cert-manager issuer that signs the serving
	// certificates (provider CertManager only). Unset: the installation's
	// own CA, a self-signed Issuer <installation>-selfsigned signing the
	// CA Certificate <installation>-webhook-ca, whose Secret backs the
	// Issuer <installation>-webhook-ca.
	// +optional
	IssuerRef *CertManagerIssuerRef `json:"issuerRef,omitempty"`
}

// CertManagerIssuerRef names a cert-manager Issuer (in the operator's
// install namespace) or ClusterIssuer.
type CertManagerIssuerRef struct {
	// Name of the Issuer or ClusterIssuer.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=253
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	Name string `json:"name"`
	// Kind is Issuer (the default) or ClusterIssuer.
	// +kubebuilder:validation:Enum=Issuer;ClusterIssuer
	// +optional
	Kind string `json:"kind,omitempty"`
}

// CRDChangeOutcome is what a change did about its CRD findings.
// +kubebuilder:validation:Enum=Refused;Applied;Skipped
type CRDChangeOutcome string

const (
	// CRDChangeRefused: nothing of the change was applied (Strict).
	CRDChangeRefused CRDChangeOutcome = "Refused"
	// CRDChangeApplied: the changed CRDs were applied anyway (Warn, Force).
	CRDChangeApplied CRDChangeOutcome = "Applied"
	// CRDChangeSkipped: the installed CRDs were kept as they are (Skip).
	CRDChangeSkipped CRDChangeOutcome = "Skipped"
)

// CRDChangeReport is what one change's CRD comparison found.
type CRDChangeReport struct {
	// Version is the extension version the change brings.
	Version string `json:"version"`
	// Policy is the spec.upgrade.crdPolicy the change was judged under.
	Policy CRDPolicy `json:"policy"`
	// Outcome is what the change did about the findings.
	Outcome CRDChangeOutcome `json:"outcome"`
	// Findings are the changes that can break stored objects or clients,
	// at most 20 (Truncated counts the rest).
	// +kubebuilder:validation:MaxItems=20
	// +listType=atomic
	Findings []CRDFinding `json:"findings"`
	// Truncated is how many findings were left out of Findings.
	// +optional
	Truncated int32 `json:"truncated,omitempty"`
}

// CRDFinding is one change of a CRD that can break stored objects or
// clients.
type CRDFinding struct {
	// CRD is the CustomResourceDefinition's name (<plural>.<group>).
	CRD string `json:"crd"`
	// Version is the API version it is about; empty for a scope change.
	// +optional
	Version string `json:"version,omitempty"`
	// Path is the field in the custom objects (".spec.replicas"); empty
	// for version and scope findings.
	// +optional
	Path string `json:"path,omitempty"`
	// Class is the kind of change: StoredVersionRemoved,
	// ServedVersionRemoved, ScopeChanged, FieldRemoved, RequiredAdded,
	// TypeChanged, EnumNarrowed, BoundTightened, PatternChanged,
	// DefaultChanged, NullableRemoved, ...
	Class string `json:"class"`
	// Message says what changed, what it breaks and what to do.
	Message string `json:"message"`
}
