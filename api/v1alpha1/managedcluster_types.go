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
}

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
}

// ManagedCluster is a user cluster the hub installs extensions into.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=annex,shortName=mc
// +kubebuilder:printcolumn:name="Kubernetes",type=string,JSONPath=`.status.kubernetesVersion`
// +kubebuilder:printcolumn:name="Reachable",type=string,JSONPath=`.status.conditions[?(@.type=="Reachable")].status`
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
