package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
)

func init() {
	SchemeBuilder.Register(func(s *runtime.Scheme) error {
		s.AddKnownTypes(GroupVersion, &Hook{}, &HookList{}, &HookRequest{}, &HookRequestList{})
		return nil
	})
}

// HookEvent is a moment of an installation's life at which hooks run.
// +kubebuilder:validation:Enum=PreInstall;PreUpgrade;PreUninstall
type HookEvent string

const (
	// HookPreInstall: before the first apply of an installation.
	HookPreInstall HookEvent = "PreInstall"
	// HookPreUpgrade: before an installed extension changes — a new
	// version, new values, or new content of the same version.
	HookPreUpgrade HookEvent = "PreUpgrade"
	// HookPreUninstall: before an uninstall deletes anything.
	HookPreUninstall HookEvent = "PreUninstall"
)

// HookFailurePolicy says what a hook's failure or silence means.
// +kubebuilder:validation:Enum=Fail;Ignore
type HookFailurePolicy string

const (
	// HookFail: the change waits until its content changes (new values,
	// a new version), recorded as Failed or TimedOut.
	HookFail HookFailurePolicy = "Fail"
	// HookIgnore: the change goes on, and the hook's failure or silence
	// is recorded as Ignored.
	HookIgnore HookFailurePolicy = "Ignore"
)

// HookSpec registers a hook: a controller that judges installation
// changes by answering custom resources of one kind.
//
// The contract: for each change a Hook selects, Annex creates one
// resource of spec.resource in the installation's namespace (the kind
// must be namespaced), owned by the change's HookRequest and labelled
// annex.dev/hook, annex.dev/installation and
// annex.dev/installation-namespace. Annex writes spec.annex (HookInput,
// so the kind's schema must accept spec.annex, e.g. with
// x-kubernetes-preserve-unknown-fields) and never changes it afterwards.
// The hook answers in status.conditions: Succeeded=True lets the change
// go on; Failed=True (or Succeeded=False) refuses it, with the
// condition's message shown on the installation. A kstatus Ready
// condition is read too: Ready=True succeeds, Ready=False fails unless
// Reconciling=True says the hook is still at work. The answer is read
// afresh whenever the resource changes, so a hook may revise it while the
// change waits; an answer holds for its change's digest only.
type HookSpec struct {
	// Resource is the kind of custom resource Annex creates for the hook.
	// +required
	Resource HookResource `json:"resource"`

	// Events the hook judges.
	// +kubebuilder:validation:MinItems=1
	// +kubebuilder:validation:MaxItems=3
	// +listType=set
	// +required
	Events []HookEvent `json:"events"`

	// Selector chooses the installations the hook judges; empty selects
	// every installation.
	// +optional
	Selector HookSelector `json:"selector,omitempty"`

	// FailurePolicy says what a failure, or no answer within Timeout,
	// means: Fail holds the change, Ignore lets it go on.
	// +kubebuilder:default=Fail
	// +optional
	FailurePolicy HookFailurePolicy `json:"failurePolicy,omitempty"`

	// Timeout bounds how long Annex waits for the hook's answer, from the
	// creation of its resource.
	// +kubebuilder:default="2m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Timeout metav1.Duration `json:"timeout,omitzero"`

	// Order places the hook among the hooks of a change: hooks of the
	// lowest order run first, together; the next order starts when all
	// of them succeeded (or were ignored). Equal orders run at once.
	// +optional
	Order int32 `json:"order,omitempty"`
}

// HookResource is the group, version and kind of a hook's resource.
type HookResource struct {
	// APIVersion is "<group>/<version>".
	// +kubebuilder:validation:Pattern=`^[a-z0-9.-]+/[a-z0-9]+$`
	// +kubebuilder:validation:MaxLength=316
	// +required
	APIVersion string `json:"apiVersion"`
	// Kind of the resource.
	// +kubebuilder:validation:Pattern=`^[A-Z][A-Za-z0-9]*$`
	// +kubebuilder:validation:MaxLength=63
	// +required
	Kind string `json:"kind"`
}

// HookSelector chooses installations; every field given must match, and
// an empty field matches everything.
type HookSelector struct {
	// Extensions are the names of the Extensions whose installations the
	// hook judges.
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	// +optional
	Extensions []string `json:"extensions,omitempty"`
	// Installations selects installations by their labels.
	// +optional
	Installations *metav1.LabelSelector `json:"installations,omitempty"`
	// Clusters are the ManagedClusters whose installations the hook
	// judges; "hub" names the cluster Annex runs in (installations
	// without spec.cluster).
	// +kubebuilder:validation:MaxItems=256
	// +listType=set
	// +optional
	Clusters []string `json:"clusters,omitempty"`
}

// HookStatus is what Annex observed of a hook.
type HookStatus struct {
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready is True when the API server serves the hook's
	// kind as a namespaced resource, so that Annex can create it.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// Hook registers a hook with Annex: a controller that judges the
// changes of the installations it selects before Annex applies them. Its
// name labels the resources made for it, so it fits in 63 characters.
// +kubebuilder:object:root=true
// +kubebuilder:validation:XValidation:rule="size(self.metadata.name) <= 63",message="a Hook's name labels its resources (annex.dev/hook): at most 63 characters"
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=annex
// +kubebuilder:printcolumn:name="Kind",type=string,JSONPath=`.spec.resource.kind`
// +kubebuilder:printcolumn:name="Events",type=string,JSONPath=`.spec.events`
// +kubebuilder:printcolumn:name="Policy",type=string,JSONPath=`.spec.failurePolicy`
// +kubebuilder:printcolumn:name="Order",type=integer,JSONPath=`.spec.order`,priority=1
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Reason",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].reason`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Hook struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HookSpec   `json:"spec"`
	Status HookStatus `json:"status,omitempty"`
}

// HookList is a list of Hooks.
// +kubebuilder:object:root=true
type HookList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Hook `json:"items"`
}

// HookRequestSpec names one change of one installation and the hooks
// selected to judge it.
// +kubebuilder:validation:XValidation:rule="self == oldSelf",message="a HookRequest judges one change: its spec is immutable"
type HookRequestSpec struct {
	// Installation is the ExtensionInstallation, in this namespace.
	// +required
	Installation string `json:"installation"`
	// Event is what the change is.
	// +required
	Event HookEvent `json:"event"`
	// Digest identifies the change (status.change.digest of the
	// installation): the request's verdict holds for it only.
	// +required
	Digest string `json:"digest"`
	// FromVersion is the installed version; ToVersion the version the
	// change applies (empty for PreUninstall).
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// +optional
	ToVersion string `json:"toVersion,omitempty"`
	// Hooks are the Hooks selected when the request was made, in the
	// order they run. A Hook registered later judges later changes.
	// +listType=atomic
	// +optional
	Hooks []string `json:"hooks,omitempty"`
}

// HookState is how far one hook of a request is.
// +kubebuilder:validation:Enum=Waiting;Pending;Succeeded;Failed;TimedOut;Ignored
type HookState string

const (
	// HookWaiting: the hook runs after hooks of a lower order.
	HookWaiting HookState = "Waiting"
	// HookPending: Annex waits for the hook's answer (or for its kind to
	// be served).
	HookPending HookState = "Pending"
	// HookSucceeded: the hook let the change go on.
	HookSucceeded HookState = "Succeeded"
	// HookFailed: the hook refused the change (failurePolicy Fail).
	HookFailed HookState = "Failed"
	// HookTimedOut: the hook did not answer within its timeout
	// (failurePolicy Fail).
	HookTimedOut HookState = "TimedOut"
	// HookIgnored: the hook failed, did not answer in time, or was
	// deleted before it answered, and does not hold the change.
	HookIgnored HookState = "Ignored"
)

// HookResult is the state of one hook of a request.
type HookResult struct {
	// Name of the Hook.
	Name string `json:"name"`
	// Resource is the resource Annex created for the hook, once created.
	// +optional
	Resource *ObjectReference `json:"resource,omitempty"`
	// State of the hook.
	State HookState `json:"state"`
	// Message is the hook's own account (its condition's message), or
	// what Annex waits for.
	// +optional
	Message string `json:"message,omitempty"`
	// StartedAt is when the resource was created; the hook's timeout
	// counts from it.
	// +optional
	StartedAt *metav1.Time `json:"startedAt,omitempty"`
}

// HookRequestStatus aggregates the hooks' answers.
type HookRequestStatus struct {
	// Hooks, in the order of spec.hooks.
	// +listType=map
	// +listMapKey=name
	// +optional
	Hooks []HookResult `json:"hooks,omitempty"`
	// Conditions: Succeeded is True once every hook succeeded or was
	// ignored; Failed is True when a hook refused the change or timed out
	// under failurePolicy Fail, its message naming the hook and quoting
	// it.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
}

// HookRequest asks the selected hooks to judge one change of an
// installation. Annex creates it in the
// installation's namespace, owned by the installation, one per
// installation, event and change digest, and keeps the last few.
// Deleting it asks the hooks again.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:categories=annex,shortName=hookreq
// +kubebuilder:printcolumn:name="Installation",type=string,JSONPath=`.spec.installation`
// +kubebuilder:printcolumn:name="Event",type=string,JSONPath=`.spec.event`
// +kubebuilder:printcolumn:name="To",type=string,JSONPath=`.spec.toVersion`
// +kubebuilder:printcolumn:name="Succeeded",type=string,JSONPath=`.status.conditions[?(@.type=="Succeeded")].status`
// +kubebuilder:printcolumn:name="Message",type=string,JSONPath=`.status.conditions[?(@.type=="Failed")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type HookRequest struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   HookRequestSpec   `json:"spec"`
	Status HookRequestStatus `json:"status,omitempty"`
}

// HookRequestList is a list of HookRequests.
// +kubebuilder:object:root=true
type HookRequestList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []HookRequest `json:"items"`
}

// HooksSummary is the state of a pending change's hooks, in the
// installation's status.change.
type HooksSummary struct {
	// Request is the HookRequest, in the installation's namespace.
	Request string `json:"request"`
	// State is Pending, Succeeded or Failed.
	State HookState `json:"state"`
	// Message names the hooks waited for, or the hook that failed and
	// its own message.
	// +optional
	Message string `json:"message,omitempty"`
}

// HookInput is what Annex writes into spec.annex of a hook's resource.
// It is the API between Annex and hooks: fields are only ever added.
type HookInput struct {
	// Installation is the ExtensionInstallation the change is for.
	Installation NamespacedName `json:"installation"`
	// Cluster is the installation's spec.cluster; empty for the hub.
	// +optional
	Cluster string `json:"cluster,omitempty"`
	// Extension is the name of the Extension.
	Extension string `json:"extension"`
	// Event is PreInstall, PreUpgrade or PreUninstall.
	Event HookEvent `json:"event"`
	// FromVersion is the installed version (empty for PreInstall);
	// ToVersion the version the change applies (empty for PreUninstall).
	// +optional
	FromVersion string `json:"fromVersion,omitempty"`
	// +optional
	ToVersion string `json:"toVersion,omitempty"`
	// ArtifactDigest is the sha256 of the artifact (chart archive,
	// package, bundle) the objects were rendered from.
	// +optional
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// Digest identifies the change; the answer holds for it only.
	Digest string `json:"digest"`
	// Objects is where the change's objects are: a Secret Annex owns,
	// whose key holds them as a YAML stream (gzip-compressed when the key
	// ends in .gz). For PreUninstall, the installed objects.
	Objects SecretKeyReference `json:"objects"`
	// Images are the container images of the objects (Pods and the pod
	// templates of workloads, init and ephemeral containers included),
	// sorted and unique, as written in them.
	// +optional
	Images []string `json:"images,omitempty"`
	// Permissions summarise what the objects let the extension do.
	// +optional
	Permissions HookPermissions `json:"permissions,omitzero"`
}

// HookPermissions summarise the permissions of a change's objects, in
// the words of status.change.
type HookPermissions struct {
	// All is everything the objects grant, one line per scope and
	// resource ("get, list on secrets cluster-wide"), then the
	// cluster-scoped objects they create and other namespaces they write.
	// +optional
	All []string `json:"all,omitempty"`
	// Grows and Shrinks are the difference against the installed
	// revision.
	// +optional
	Grows []string `json:"grows,omitempty"`
	// +optional
	Shrinks []string `json:"shrinks,omitempty"`
}

// NamespacedName names a namespaced object.
type NamespacedName struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
}

// SecretKeyReference names one key of a Secret.
type SecretKeyReference struct {
	Namespace string `json:"namespace"`
	Name      string `json:"name"`
	Key       string `json:"key"`
}

// Hook conditions, reasons and labels.
const (
	// ConditionSucceeded and ConditionFailed are the conditions of a
	// HookRequest, and the answers Annex reads from a hook's resource.
	ConditionSucceeded = "Succeeded"
	ConditionFailed    = "Failed"

	// ReasonHookPending: an installation's change waits for its hooks.
	ReasonHookPending = "HookPending"
	// ReasonHookRefused: a hook refused the change or did not answer in
	// time, under failurePolicy Fail.
	ReasonHookRefused = "HookRefused"
	// ReasonKindNotServed: the API server does not serve a Hook's kind, or
	// an installation's change has objects of kinds (in apiVersions) its
	// cluster does not serve, so nothing of it is applied.
	ReasonKindNotServed = "KindNotServed"
	// ReasonClusterScopedKind: a Hook's kind is cluster-scoped; hook
	// resources live in the installation's namespace.
	ReasonClusterScopedKind = "ClusterScopedKind"

	// LabelHook names the Hook a hook resource was created for.
	LabelHook = "annex.dev/hook"
	// HookObjectsSecretType is the type of the Secrets holding a
	// HookRequest's objects.
	HookObjectsSecretType = "annex.dev/hook-objects"
)
