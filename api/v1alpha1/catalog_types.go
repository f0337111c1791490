package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// CatalogSpec says where a catalog's extensions come from and how often to
// look.
type CatalogSpec struct {
	// Source is where the catalog's packages live. Exactly one field is set.
	// +required
	Source CatalogSource `json:"source"`

	// Interval between two syncs of the source. A change of the spec syncs
	// at once.
	// +kubebuilder:default="10m"
	// +kubebuilder:validation:Type=string
	// +kubebuilder:validation:Pattern=`^([0-9]+(\.[0-9]+)?(ms|s|m|h))+$`
	// +optional
	Interval metav1.Duration `json:"interval,omitzero"`

	// Suspend stops syncing; the Extensions already synced stay.
	// +optional
	Suspend bool `json:"suspend,omitempty"`

	// Priority decides which catalog supplies a version that several offer;
	// the highest wins.
	// +kubebuilder:default=0
	// +optional
	Priority int32 `json:"priority,omitempty"`

	// Verify is the signature policy of the catalog's artifacts: who must
	// have signed a version before it is installed. Absent: artifacts are
	// checked against their digests only.
	// +optional
	Verify *VerificationPolicy `json:"verify,omitempty"`
}

// CatalogSource names exactly one kind of source.
// +kubebuilder:validation:XValidation:rule="[has(self.helm), has(self.oci), has(self.directory), has(self.builtin), has(self.olm)].filter(x, x).size() == 1",message="spec.source: set exactly one of helm, oci, directory, builtin or olm"
type CatalogSource struct {
	// Helm is an HTTP(S) Helm repository: an index.yaml and chart archives.
	// +optional
	Helm *HelmSource `json:"helm,omitempty"`
	// OCI is a registry repository holding Helm charts as OCI artifacts.
	// +optional
	OCI *OCISource `json:"oci,omitempty"`
	// Directory is a folder of charts or chart archives on the manager's disk.
	// +optional
	Directory *DirectorySource `json:"directory,omitempty"`
	// Builtin is the catalog compiled into Annex; its versions move only when
	// Annex is upgraded.
	// +optional
	Builtin *BuiltinSource `json:"builtin,omitempty"`
	// OLM is an OLM File-Based Catalog of operator bundles; each package
	// becomes an Extension of engine Bundle.
	// +optional
	OLM *OLMSource `json:"olm,omitempty"`
}

// OLMSource is an OLM File-Based Catalog (FBC): olm.package, olm.channel,
// olm.bundle and olm.deprecations blobs as JSON or YAML documents. Exactly
// one of url, path and image is set.
// +kubebuilder:validation:XValidation:rule="[has(self.url), has(self.path), has(self.image)].filter(x, x).size() == 1",message="spec.source.olm: set exactly one of url, path or image"
type OLMSource struct {
	// URL of the whole catalog as one stream of JSON or YAML documents, as
	// `opm render` writes it (one file, not an index of files).
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +optional
	URL string `json:"url,omitempty"`
	// Path is an absolute path to a catalog folder on the manager's disk;
	// every .json, .yaml and .yml file below it is read.
	// +kubebuilder:validation:Pattern=`^/`
	// +optional
	Path string `json:"path,omitempty"`
	// Image is a catalog image reference without scheme, e.g.
	// quay.io/operatorhubio/catalog:latest or a digest reference; its
	// configs folder (the label operators.operatorframework.io.index.configs.v1,
	// default /configs) is read.
	// +kubebuilder:validation:Pattern=`^[^\s:/]+(:[0-9]+)?/[^\s]+$`
	// +optional
	Image string `json:"image,omitempty"`
	// SecretRef names a Secret with credentials for the URL's host or the
	// image's registry (the keys of HelmSource.secretRef).
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
	// Insecure allows sending the credentials over plain http.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// HelmSource is an HTTP(S) Helm repository.
type HelmSource struct {
	// URL of the repository; index.yaml is read from URL + "/index.yaml".
	// +kubebuilder:validation:Pattern=`^https?://[^\s]+$`
	// +required
	URL string `json:"url"`
	// SecretRef names a Secret with credentials for the repository: keys
	// username and password (basic auth), or token (bearer); ca.crt to trust
	// a private CA; tls.crt and tls.key for a client certificate.
	// Credentials are sent to the repository's host only, never to another
	// host a redirect or a chart URL points at.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
	// Insecure allows sending the credentials over plain http. Without it an
	// http:// URL with a secretRef is refused.
	// +optional
	Insecure bool `json:"insecure,omitempty"`
}

// OCISource is an OCI registry repository of Helm charts.
type OCISource struct {
	// Repository is a reference such as oci://registry.example.com/charts.
	// +kubebuilder:validation:Pattern=`^oci://[^\s]+$`
	// +required
	Repository string `json:"repository"`
	// SecretRef names a Secret with credentials for the registry.
	// +optional
	SecretRef *SecretReference `json:"secretRef,omitempty"`
}

// DirectorySource is a folder of charts on the manager's file system.
type DirectorySource struct {
	// Path is an absolute path.
	// +kubebuilder:validation:Pattern=`^/`
	// +required
	Path string `json:"path"`
}

// BuiltinSource selects the catalog compiled into Annex. It has no fields.
type BuiltinSource struct{}

// SecretReference names a Secret in a namespace.
type SecretReference struct {
	// +kubebuilder:validation:MinLength=1
	// +required
	Name string `json:"name"`
	// +kubebuilder:validation:MinLength=1
	// +required
	Namespace string `json:"namespace"`
}

// CatalogStatus is what the last sync found.
type CatalogStatus struct {
	// ObservedGeneration is the generation the conditions describe.
	// +optional
	ObservedGeneration int64 `json:"observedGeneration,omitempty"`
	// Conditions: Ready, Reconciling, Stalled.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// ArtifactDigest is the sha256 of the index the Extensions were made from.
	// +optional
	ArtifactDigest string `json:"artifactDigest,omitempty"`
	// LastChangeTime is when the synced content last changed. A sync that
	// finds the same index writes nothing, not even this.
	// +optional
	LastChangeTime *metav1.Time `json:"lastChangeTime,omitempty"`
	// ExtensionCount is how many Extensions this catalog supplies.
	// +optional
	ExtensionCount int32 `json:"extensionCount,omitempty"`
	// SkippedEntries counts index entries that were malformed and ignored.
	// +optional
	SkippedEntries int32 `json:"skippedEntries,omitempty"`
	// LastHandledSyncRequest is the value of the annotation
	// annex.dev/sync-requested-at when the manager last looked at the
	// catalog: a client that set it (annexctl catalog sync --wait) knows
	// its request was answered once this equals what it wrote, and the
	// conditions then say how.
	// +optional
	LastHandledSyncRequest string `json:"lastHandledSyncRequest,omitempty"`
}

// Catalog is a source of Extensions: a Helm repository, an OCI registry, a
// directory, the catalog built into Annex, or an OLM File-Based Catalog of
// operator bundles.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=annex
// +kubebuilder:printcolumn:name="Ready",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].status`
// +kubebuilder:printcolumn:name="Extensions",type=integer,JSONPath=`.status.extensionCount`
// +kubebuilder:printcolumn:name="Verify",type=string,JSONPath=`.spec.verify.mode`,priority=1
// +kubebuilder:printcolumn:name="Status",type=string,JSONPath=`.status.conditions[?(@.type=="Ready")].message`,priority=1
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Catalog struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   CatalogSpec   `json:"spec"`
	Status CatalogStatus `json:"status,omitempty"`
}

// CatalogList is a list of Catalogs.
// +kubebuilder:object:root=true
type CatalogList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Catalog `json:"items"`
}
