package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// ManagedClusterSpec says how the hub reaches a user cluster.
type ManagedClusterSpec struct {
	// KubeconfigSecretRef names a Secret whose key holds a kubeconfig for the
	// cluster.
	// +required
	KubeconfigSecretRef KubeconfigSecretReference `json:"kubeconfigSecretRef"`
	// DeletionPolicy says what deleting the ManagedCluster does to its
	// installations: Uninstall (default) removes them from the cluster
	// first; Orphan releases them without touching the cluster — set it on
	// a cluster that is gone for good, so that its deletion does not wait
	// for a cluster that will never answer.
	// +kubebuilder:validation:Enum=Uninstall;Orphan
	// +kubebuilder:default=Uninstall
	// +optional
	DeletionPolicy DeletionPolicy `json:"deletionPolicy,omitempty"`
	// UpgradeTarget is a Kubernetes version the cluster is going to run.
	// While it is set, the condition UpgradeReady says whether every
	// installation has a version for it and no installed object uses an
	// API version it removed (as `annexctl preflight` does).
	// +kubebuilder:validation:Pattern=`^v?[0-9]+\.[0-9]+\.[0-9]+$`
	// +optional
	UpgradeTarget string `json:"upgradeTarget,omitempty"`
	// MaintenanceWindows are when a profile's rollout may change the
	// cluster; none: at any time. A rollout waits for the next window of
	// a cluster in its current step (status.rollout.waiting says which),
	// unless the profile's spec.rollout.ignoreMaintenanceWindows is set.
	// Installations the cluster's owners change themselves are not held.
	// +kubebuilder:validation:MaxItems=10
	// +listType=atomic
	// +optional
	MaintenanceWindows []MaintenanceWindow `json:"maintenanceWindows,omitempty"`
}

// MaintenanceWindow is a recurring time in which a cluster may be
// changed: it opens at each time Schedule names and stays open for
// Duration.
type MaintenanceWindow struct {
	// Schedule is a cron expression of five fields (minute, hour, day of
	// month, month, day of week), e.g. "0 2 * * 6" for Saturdays 02:00.
	// +kubebuilder:validation:MinLength=9
	// +kubebuilder:validation:MaxLength=100
	// +required
	Schedule string `json:"schedule"`
	// Duration is how long each window stays open, at least a minute.
	// +required
	Duration metav1.Duration `json:"duration"`
	// TimeZone is the IANA time zone Schedule is read in, e.g.
	// "Europe/Berlin"; default UTC.
	// +kubebuilder:validation:MaxLength=64
	// +optional
	TimeZone string `json:"timeZone,omitempty"`
}

// DeletionPolicy is what happens to a cluster's installations when it is
// deleted.
type DeletionPolicy string

const (
	// DeletionPolicyUninstall uninstalls every installation first.
	DeletionPolicyUninstall DeletionPolicy = "Uninstall"
	// DeletionPolicyOrphan removes the installations from the hub and
	// leaves what they installed on the cluster.
	DeletionPolicyOrphan DeletionPolicy = "Orphan"
)

// KubeconfigSecretReference selects a kubeconfig in a Secret.
type KubeconfigSecretReference struct {
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Namespace string `json:"namespace"`
	// Key holding the kubeconfig; default "kubeconfig".
	// +kubebuilder:default="kubeconfig"
	// +optional
	Key string `json:"key,omitempty"`
}

// ManagedClusterStatus is what the hub observed of the cluster.
type ManagedClusterStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Reachable, Ready.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// KubernetesVersion is the version the cluster's API server reports.
	// +optional
	KubernetesVersion string `json:"kubernetesVersion,omitempty"`
	// NodeCount is how many nodes the cluster has.
	// +optional
	NodeCount int32 `json:"nodeCount,omitempty"`
	// Installations is how many ExtensionInstallations target the cluster,
	// and ReadyInstallations how many of them are Ready: a summary for
	// people, refreshed at most every 10 seconds while they change (each
	// write is one of the hub's); an installation's own status is current.
	// +optional
	Installations int32 `json:"installations,omitempty"`
	// +optional
	ReadyInstallations int32 `json:"readyInstallations,omitempty"`
	// Shard is the shard of managers that serves the cluster now: the only
	// one that writes to it. The shard its annex.dev/shard label names
	// claims it when this is empty; a shard the label no longer names
	// finishes its work on the cluster and empties it. Empty: nobody
	// serves the cluster (it is being handed over).
	// +kubebuilder:validation:MaxLength=63
	// +optional
	Shard string `json:"shard,omitempty"`
}

// ManagedCluster is a user cluster the hub installs extensions into.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=annex,shortName=mc
// +kubebuilder:printcolumn:name="Shard",type=string,JSONPath=`.status.shard`
// +kubebuilder:printcolumn:name="Kubernetes",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
// +kubebuilder:printcolumn:name="Nodes",type=integer,JSONPath=`.status.nodeCount`
// +kubebuilder:printcolumn:name="Installations",type=integer,JSONPath=`.status.installations`
// +kubebuilder:printcolumn:name="Ready",type=integer,JSONPath=`.status.readyInstallations`
// +kubebuilder:printcolumn:name="Message",type=string,priority=1,JSONPath=`.status.conditions[?(@.type=="Reachable")].message`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type ManagedCluster struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ManagedClusterSpec   `json:"spec"`
	Status ManagedClusterStatus `json:"status,omitempty"`
}

// ManagedClusterList is a list of ManagedClusters.
// +kubebuilder:object:root=true
type ManagedClusterList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []ManagedCluster `json:"items"`
}
