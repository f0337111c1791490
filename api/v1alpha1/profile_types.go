package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/util/intstr"
)

// ExtensionProfileSpec gives every matching cluster a set of extensions.
// +kubebuilder:validation:XValidation:rule="has(self.clusterSelector) || self.includeHub",message="select clusters with spec.clusterSelector, or set spec.includeHub"
type ExtensionProfileSpec struct {
	// ClusterSelector selects ManagedClusters by their labels; an empty
	// selector selects every ManagedCluster.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// IncludeHub gives the extensions to the hub cluster too.
	// +optional
	IncludeHub bool `json:"includeHub,omitempty"`
	// Namespace on the hub that holds the installations the profile
	// creates, one per extension and cluster, named
	// <extension>-<cluster> (<extension> on the hub).
	// +kubebuilder:default="annex-system"
	// +kubebuilder:validation:MinLength=1
	// +optional
	Namespace string `json:"namespace,omitempty"`
	// Priority decides which profile gives a cluster an extension that
	// several profiles offer it: the highest priority, then the first name
	// in alphabetical order. The others report Conflict.
	// +optional
	Priority int32 `json:"priority,omitempty"`
	// RemovalPolicy says what happens to a cluster's installations when it
	// stops matching, the extension leaves the profile, or the profile is
	// deleted: Uninstall (default) removes them from the cluster; Orphan
	// deletes the installations and leaves what they installed.
	// +kubebuilder:validation:Enum=Uninstall;Orphan
	// +kubebuilder:default=Uninstall
	// +optional
	RemovalPolicy DeletionPolicy `json:"removalPolicy,omitempty"`
	// Extensions every matching cluster gets.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=100
	// +listType=map
	// +listMapKey=name
	// +required
	Extensions []ProfileExtension `json:"extensions"`
	// Rollout says how a change of the profile reaches its clusters: in
	// ordered steps, with a failure budget, a soak time, approvals and
	// automatic rollback. Unset: every cluster at once, as one step that
	// never halts (the default strategy AllAtOnce).
	// +optional
	Rollout *RolloutStrategy `json:"rollout,omitempty"`
	// RevisionHistoryLimit is how many revisions of the profile are kept
	// (ControllerRevisions in spec.namespace, labelled annex.dev/profile);
	// the revisions clusters still run are kept whatever the limit.
	// +kubebuilder:default=10
	// +kubebuilder:validation:Minimum=1
	// +kubebuilder:validation:Maximum=100
	// +optional
	RevisionHistoryLimit *int32 `json:"revisionHistoryLimit,omitempty"`
}

// RolloutStrategy stages a profile revision across its clusters.
// +kubebuilder:validation:XValidation:rule="self.steps.all(s, self.steps.exists_one(t, t.name == s.name))",message="spec.rollout.steps[].name must be unique"
type RolloutStrategy struct {
	// Steps run in order; a cluster belongs to the first step that
	// chooses it, and a step starts once the one before is done and has
	// soaked. Clusters no step chooses are changed by an implicit last
	// step named "rest", with the last step's budget and timeout.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=20
	// +required
	Steps []RolloutStep `json:"steps"`
	// MaxConcurrent is how many clusters are being changed at once, over
	// the whole rollout and its rollback (a count, or a percentage of the
	// clusters the profile selects, rounded up). Unset: no limit.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="a count (0 or more) or a percentage from 0% to 100%"
	// +optional
	MaxConcurrent *intstr.IntOrString `json:"maxConcurrent,omitempty"`
	// OnFailure is what a halted rollout does: Rollback (default) returns
	// every cluster the halted revision changed to the revision it ran
	// before; Pause leaves them as they are, for inspection.
	// +kubebuilder:validation:Enum=Rollback;Pause
	// +kubebuilder:default=Rollback
	// +optional
	OnFailure RolloutFailurePolicy `json:"onFailure,omitempty"`
	// Paused stops the rollout from changing more clusters; the clusters
	// being changed finish. `annexctl rollout pause|resume` set it.
	// +optional
	Paused bool `json:"paused,omitempty"`
	// IgnoreMaintenanceWindows is the emergency override: the revision it
	// is set for changes clusters outside their maintenance windows. The
	// revision records it, and an Event names it.
	// +optional
	IgnoreMaintenanceWindows bool `json:"ignoreMaintenanceWindows,omitempty"`
}

// RolloutStep is one wave of a rollout.
type RolloutStep struct {
	// Name of the step, unique in the rollout: approvals and the status
	// name it.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=40
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// ClusterSelector narrows the step to clusters with these labels;
	// unset: any cluster no earlier step chose.
	// +optional
	ClusterSelector *metav1.LabelSelector `json:"clusterSelector,omitempty"`
	// Clusters is how many of the remaining clusters (those no earlier
	// step chose, and the selector matches) the step takes: a count, or a
	// percentage of them rounded up (at least one). Unset: all of them.
	// Clusters are taken in the order of their names' hashes, the same
	// for every revision, so a canary stays the canary; unreachable
	// clusters are taken last, so that a count is of clusters that can
	// tell whether the revision works.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="a count (0 or more) or a percentage from 0% to 100%"
	// +optional
	Clusters *intstr.IntOrString `json:"clusters,omitempty"`
	// MaxUnavailable is the step's failure budget: how many of its
	// clusters may fail (a count, or a percentage of the step's clusters
	// rounded down) before the rollout halts. Default 0: the first
	// failure halts.
	// +kubebuilder:validation:XIntOrString
	// +kubebuilder:validation:Pattern=`^(100|[1-9]?[0-9])%$`
	// +kubebuilder:validation:XValidation:rule="type(self) == string || self >= 0",message="a count (0 or more) or a percentage from 0% to 100%"
	// +optional
	MaxUnavailable *intstr.IntOrString `json:"maxUnavailable,omitempty"`
	// Timeout is how long a cluster of the step may take to be Ready
	// with the revision before it counts as failed. Default 10m.
	// +optional
	Timeout *metav1.Duration `json:"timeout,omitempty"`
	// SoakTime is how long the step's clusters must stay Ready, once all
	// are done, before the next step starts; a cluster failing meanwhile
	// counts against the budget.
	// +optional
	SoakTime *metav1.Duration `json:"soakTime,omitempty"`
	// RequireApproval holds the step until an Approval in the profile's
	// spec.namespace names the profile, the revision and this step
	// (`annexctl rollout approve`), by someone other than who last
	// changed the profile.
	// +optional
	RequireApproval bool `json:"requireApproval,omitempty"`
}

// RolloutFailurePolicy is what a halted rollout does.
type RolloutFailurePolicy string

const (
	RolloutRollback RolloutFailurePolicy = "Rollback"
	RolloutPause    RolloutFailurePolicy = "Pause"
)

// ProfileExtension is one extension of a profile.
type ProfileExtension struct {
	// Name of the Extension. On the hub it is the installation's name, and
	// so a DNS label: at most 63 characters.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=63
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// Version is a SemVer range, as in an installation's spec.version.
	// +kubebuilder:default="*"
	// +optional
	Version string `json:"version,omitempty"`
	// Values and ValuesFrom are the installation's.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Values *apiextensionsv1.JSON `json:"values,omitempty"`
	// +optional
	ValuesFrom []ValuesReference `json:"valuesFrom,omitempty"`
	// TargetNamespace on the cluster (default: the profile's namespace).
	// +optional
	TargetNamespace string `json:"targetNamespace,omitempty"`
	// Mode Default creates the installation once; afterwards the cluster's
	// owners may change or delete it, and Annex leaves it so. Enforced
	// reverts changes to what the profile says (moving the installed
	// version back into the range, downgrading if it must) and recreates a
	// deleted installation.
	// +kubebuilder:validation:Enum=Default;Enforced
	// +kubebuilder:default=Default
	// +optional
	Mode ProfileMode `json:"mode,omitempty"`
}

// ProfileMode is how firmly a profile holds an installation.
type ProfileMode string

const (
	ProfileModeDefault  ProfileMode = "Default"
	ProfileModeEnforced ProfileMode = "Enforced"
)

// ExtensionProfileStatus aggregates the profile's installations; its size
// does not grow with the number of clusters beyond a bounded sample.
type ExtensionProfileStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready (every installation of the profile Ready),
	// Conflict (another profile gives some cluster one of these extensions).
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// MatchingClusters is how many clusters the profile selects.
	// +optional
	MatchingClusters int32 `json:"matchingClusters,omitempty"`
	// Installations is how many installations the profile holds, and
	// ReadyInstallations how many of them are Ready.
	// +optional
	Installations int32 `json:"installations,omitempty"`
	// +optional
	ReadyInstallations int32 `json:"readyInstallations,omitempty"`
	// NotReady names up to 10 installations that are not Ready, with why.
	// +optional
	NotReady []ProfileInstallationState `json:"notReady,omitempty"`
	// Rollout is where the newest revision's rollout stands.
	// +optional
	Rollout *RolloutStatus `json:"rollout,omitempty"`
}

// RolloutStatus is the state of a profile's rollout. The manager keeps
// its place in it here: after a restart it resumes at the same step.
type RolloutStatus struct {
	// Strategy is "AllAtOnce" without spec.rollout, else "Steps".
	Strategy string `json:"strategy"`
	// Revision is the revision being rolled out (or done), and
	// StableRevision the last revision whose rollout completed: what a
	// halted rollout returns clusters to, and what a cluster joining the
	// profile mid-rollout gets first.
	Revision int64 `json:"revision"`
	// +optional
	StableRevision int64 `json:"stableRevision,omitempty"`
	// Phase is Progressing, Soaking, WaitingForApproval, Paused, Halted,
	// RollingBack, RolledBack or Complete.
	Phase RolloutPhase `json:"phase"`
	// Step is the index in spec.rollout.steps of the step in progress
	// (the implicit last step "rest" is len(steps)), and StepName its name.
	// +optional
	Step int32 `json:"step"`
	// +optional
	StepName string `json:"stepName,omitempty"`
	// Steps is how many steps the rollout has, the implicit one included.
	// +optional
	Steps int32 `json:"steps,omitempty"`
	// StepStartedAt is when the step started, SoakingSince when all its
	// clusters were done.
	// +optional
	StepStartedAt *metav1.Time `json:"stepStartedAt,omitempty"`
	// +optional
	SoakingSince *metav1.Time `json:"soakingSince,omitempty"`
	// HaltedAt is when the rollout halted, and HaltReason why.
	// +optional
	HaltedAt *metav1.Time `json:"haltedAt,omitempty"`
	// +optional
	HaltReason string `json:"haltReason,omitempty"`
	// Counts are the clusters per state.
	Counts RolloutCounts `json:"counts"`
	// Failures names up to 10 failed clusters, with why.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Failures []RolloutClusterState `json:"failures,omitempty"`
	// Waiting names up to 10 clusters that wait for a maintenance window,
	// with when it opens.
	// +kubebuilder:validation:MaxItems=10
	// +optional
	Waiting []RolloutClusterState `json:"waiting,omitempty"`
	// HeldBack counts the clusters that run the revision below its target
	// version of an Enforced extension, because their Kubernetes version
	// cannot run the target: each gets the highest version within the
	// range that fits it and counts as done. HeldBackClusters names up to
	// 10, with why.
	// +optional
	HeldBack int32 `json:"heldBack,omitempty"`
	// +kubebuilder:validation:MaxItems=10
	// +optional
	HeldBackClusters []RolloutClusterState `json:"heldBackClusters,omitempty"`
	// Message says what the rollout does now and what to do about it.
	// +optional
	Message string `json:"message,omitempty"`
}

// ReasonKubernetesVersion is the reason of a cluster held back below a
// revision's target version by its Kubernetes version.
const ReasonKubernetesVersion = "KubernetesVersion"

// RolloutPhase is where a rollout stands.
type RolloutPhase string

const (
	RolloutProgressing        RolloutPhase = "Progressing"
	RolloutSoaking            RolloutPhase = "Soaking"
	RolloutWaitingForApproval RolloutPhase = "WaitingForApproval"
	RolloutPaused             RolloutPhase = "Paused"
	RolloutHalted             RolloutPhase = "Halted"
	RolloutRollingBack        RolloutPhase = "RollingBack"
	RolloutRolledBack         RolloutPhase = "RolledBack"
	RolloutComplete           RolloutPhase = "Complete"
)

// RolloutCounts counts a rollout's clusters by state. Every cluster the
// profile selects is in exactly one.
type RolloutCounts struct {
	// Pending: in a later step, or not changed yet.
	Pending int32 `json:"pending"`
	// InProgress: changed to the revision, not Ready yet.
	InProgress int32 `json:"inProgress"`
	// WaitingForWindow: in the current step, outside its maintenance
	// window.
	WaitingForWindow int32 `json:"waitingForWindow"`
	// WaitingForApproval: in a step that waits for approval.
	WaitingForApproval int32 `json:"waitingForApproval"`
	// Done: Ready with the revision.
	Done int32 `json:"done"`
	// Failed: not Ready within the step's timeout, or failed.
	Failed int32 `json:"failed"`
	// Skipped: unreachable; changed when it is reachable again.
	Skipped int32 `json:"skipped"`
	// RolledBack: returned to the revision it ran before.
	// +optional
	RolledBack int32 `json:"rolledBack,omitempty"`
}

// RolloutClusterState is one cluster of a rollout, with why it is named.
type RolloutClusterState struct {
	Cluster string `json:"cluster"`
	// +optional
	Step string `json:"step,omitempty"`
	// +optional
	Extension string `json:"extension,omitempty"`
	// +optional
	Reason string `json:"reason,omitempty"`
	// +optional
	Message string `json:"message,omitempty"`
	// Until is when the cluster's next maintenance window opens.
	// +optional
	Until *metav1.Time `json:"until,omitempty"`
}

const (
	// LabelProfileRevision on a profile's installation is the profile
	// revision it was last written from; on a ControllerRevision, the
	// profile's name is in LabelProfile.
	LabelProfileRevision = "annex.dev/profile-revision"
	// AnnotationProfileRevisionAt on a profile's installation is when
	// the profile last wrote it (RFC 3339). Written before
	// AnnotationProfileRevisionsPrefix existed; read only for a cluster
	// without that record.
	AnnotationProfileRevisionAt = "annex.dev/profile-revision-at"
	// AnnotationProfilePreviousRevision on a profile's installation is
	// the revision it ran before the last one: what a halted rollout
	// returns it to. Written before AnnotationProfileRevisionsPrefix
	// existed; read only for a cluster without that record.
	AnnotationProfilePreviousRevision = "annex.dev/profile-previous-revision"
	// AnnotationProfileRevisionsPrefix + <profile>, on a ManagedCluster
	// (or, for the hub, on the profile), records the revision of the
	// profile the cluster runs: JSON {"revision", "previous", "move",
	// "at"}. A rollout's move writes it after the installations it
	// changes, so it is the cluster's revision once the move is whole.
	AnnotationProfileRevisionsPrefix = "revisions.profiles.annex.dev/"
	// AnnotationProfileMove on a profile's installation is the number of
	// the move that last wrote it (counted per profile and cluster): one
	// numbered above the cluster's record of the profile's revision was
	// written by a move cut short before its record.
	AnnotationProfileMove = "annex.dev/profile-move"
	// AnnotationChangeCause is the annotation kubectl shows as a
	// revision's CHANGE-CAUSE; a profile revision copies it from the
	// profile when it is made.
	AnnotationChangeCause = "kubernetes.io/change-cause"
	// AnnotationRolloutAbort on a profile, set to a revision number,
	// halts that revision's rollout (`annexctl rollout abort`).
	AnnotationRolloutAbort = "annex.dev/rollout-abort"

	// Profile condition types.
	ConditionProgressing = "Progressing"
	ConditionHalted      = "Halted"
	ConditionComplete    = "Complete"

	// Rollout reasons. The profile's conditions take the rollout's phase
	// (RolloutPhase) as their reason, Halted the reason it halted.
	ReasonStepFailed       = "StepFailed"
	ReasonAborted          = "Aborted"
	ReasonWaitingApproval  = "WaitingForApproval"
	ReasonWaitingForWindow = "WaitingForWindow"
	ReasonRolloutPaused    = "Paused"
	ReasonRolloutComplete  = "Complete"
	ReasonRollingBack      = "RollingBack"
)

// ProfileInstallationState is one installation of a profile that is not
// Ready.
type ProfileInstallationState struct {
	Cluster   string `json:"cluster"`
	Extension string `json:"extension"`
	Reason    string `json:"reason,omitempty"`
	Message   string `json:"message,omitempty"`
}

// ExtensionProfile gives every matching cluster its extensions. Its name
// labels the installations it creates (annex.dev/profile) and keys the
// record of the Default extensions it gave (profiles.annex.dev/<name>),
// so it fits in 63 characters.
// +kubebuilder:object:root=true
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a profile's name labels its installations (annex.dev/profile): at most 63 characters"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=annex,shortName=profile
// +kubebuilder:printcolumn:name="Clusters",type=integer,JSONPath=`.status.matchingClusters`
// +kubebuilder:printcolumn:name="Installations",type=integer,JSONPath=`.status.installations`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyInstallations`
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Revision",type=integer,JSONPath=`.status.rollout.revision`
// +kubebuilder:printcolumn:name="Rollout",type=string,JSONPath=`.status.rollout.phase`
// +kubebuilder:printcolumn:name="Step",type=string,priority=1,JSONPath=`.status.rollout.stepName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ExtensionProfile struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExtensionProfileSpec   `json:"spec"`
	Status ExtensionProfileStatus `json:"status,omitempty"`
}

// ExtensionProfileList is a list of ExtensionProfiles.
// +kubebuilder:object:root=true
type ExtensionProfileList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ExtensionProfile `json:"items"`
}

// ProfileRevisionData is what a profile revision holds: the data of a
// ControllerRevision (apps/v1) in the profile's spec.namespace, labelled
// annex.dev/profile=<profile>, whose .revision is the revision number.
// The ControllerRevision's annotation kubernetes.io/change-cause is copied
// from the profile's when the revision is made.
type ProfileRevisionData struct {
	// Extensions are the profile's spec.extensions, each with the catalog
	// version its range resolved to for the fleet.
	Extensions []ProfileRevisionExtension `json:"extensions"`
	// IgnoreMaintenanceWindows records the emergency override
	// (spec.rollout.ignoreMaintenanceWindows) the revision was made with.
	// +optional
	IgnoreMaintenanceWindows bool `json:"ignoreMaintenanceWindows,omitempty"`
}

// ProfileRevisionExtension is one extension of a profile revision.
type ProfileRevisionExtension struct {
	ProfileExtension `json:",inline"`
	// Target is the highest catalog version within the range when the
	// revision was made: the version every cluster that can run it gets;
	// a cluster whose Kubernetes version cannot gets the highest version
	// within the range, below Target, that fits it. Empty when no catalog
	// version was within the range: the installation gets the range and
	// says why nothing fits.
	// +optional
	Target string `json:"target,omitempty"`
}
