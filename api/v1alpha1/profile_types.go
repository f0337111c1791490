package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
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
}

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
}

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
