package v1alpha1

import (
	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
)

// VersionRangePattern is the OpenAPI pattern every version range field
// carries (spec.version, kubeVersion, dependencies[].version). It accepts the
// Masterminds semver v3 constraint grammar Helm uses: operators = != > < >= <=
// ~ ~> ^, wildcards x X *, hyphen ranges "1.2 - 1.4", AND by comma or space,
// OR by "||". The markers below repeat it literally (controller-gen cannot
// read a constant); a test keeps them equal.
const VersionRangePattern = `^\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*(\s*\|\|\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*)*\s*$`

// VersionPattern is the OpenAPI pattern of spec.versions[].version: SemVer 2
// with major, minor and patch, an optional leading "v". Catalog entries
// that do not match are skipped, not written.
const VersionPattern = `^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`

// ExtensionSpec describes one installable thing and all its versions.
type ExtensionSpec struct {
	// DisplayName is a human-readable name.
	// +optional
	DisplayName string `json:"displayName,omitempty"`
	// Description says what the extension does.
	// +optional
	Description string `json:"description,omitempty"`
	// Icon is a URL of an icon.
	// +optional
	Icon string `json:"icon,omitempty"`
	// Home is the project's home page.
	// +optional
	Home string `json:"home,omitempty"`
	// Keywords help people find the extension.
	// +optional
	Keywords []string `json:"keywords,omitempty"`

	// DefaultChannel is an operator package's default channel (OLM's
	// defaultChannel): the channel of an installation that names none.
	// +optional
	DefaultChannel string `json:"defaultChannel,omitempty"`

	// Versions lists every installable version, highest first.
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MinItems=1
	// +required
	Versions []ExtensionVersion `json:"versions"`
}

// ExtensionVersion is one installable version of an extension.
type ExtensionVersion struct {
	// Version is a semantic version such as 1.4.2 or 2.0.0-rc.1 (SemVer 2,
	// an optional leading "v").
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:MaxLength=128
	// +kubebuilder:validation:Pattern=`^v?(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)\.(0|[1-9][0-9]*)(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?$`
	// +required
	Version string `json:"version"`
	// AppVersion is the version of the packaged application.
	// +optional
	AppVersion string `json:"appVersion,omitempty"`
	// KubeVersion is the range of Kubernetes versions this version supports;
	// empty means any.
	// +kubebuilder:validation:Pattern=`^\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*(\s*\|\|\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*)*\s*$`
	// +optional
	KubeVersion string `json:"kubeVersion,omitempty"`
	// Dependencies are other extensions that must be installed first.
	// +listType=map
	// +listMapKey=name
	// +optional
	Dependencies []Dependency `json:"dependencies,omitempty"`

	// Engine says how the artifact turns into objects: Helm (a chart, the
	// default), Package (an Annex/KUDO operator package with plans) or
	// Bundle (an OLM registry+v1 operator bundle).
	// +kubebuilder:validation:Enum=Helm;Package;Bundle
	// +optional
	Engine Engine `json:"engine,omitempty"`

	// Extends names the base package a package extends (KEP-0012): its
	// extension name and a version range, matched against the base's
	// version or, failing that, its appVersion.
	// +optional
	Extends *Dependency `json:"extends,omitempty"`
	// Source is where the artifact of this version is fetched from.
	// +required
	Source ArtifactSource `json:"source"`
	// ValuesSchema is the JSON schema of the version's values, if it has one.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	ValuesSchema *apiextensionsv1.JSON `json:"valuesSchema,omitempty"`
	// Deprecated versions are chosen only when nothing else fits.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`

	// Channels lists, for an operator bundle (engine Bundle), the channels
	// it is in and its upgrade edges in each.
	// +optional
	Channels []ChannelEntry `json:"channels,omitempty"`

	// Operator describes an operator bundle: its install modes and the
	// APIs it owns and requires.
	// +optional
	Operator *OperatorInfo `json:"operator,omitempty"`
}

// ChannelEntry is one channel an operator bundle is in, with its upgrade
// edges there (OLM's replaces, skips and skipRange).
type ChannelEntry struct {
	// Name of the channel, e.g. stable.
	Name string `json:"name"`
	// Replaces is the bundle version this one upgrades directly.
	// +optional
	Replaces string `json:"replaces,omitempty"`
	// Skips are bundle versions this one upgrades directly too.
	// +optional
	Skips []string `json:"skips,omitempty"`
	// SkipRange is a range of bundle versions this one upgrades directly.
	// +optional
	SkipRange string `json:"skipRange,omitempty"`
	// Deprecated is set when the catalog deprecates the channel.
	// +optional
	Deprecated bool `json:"deprecated,omitempty"`
}

// OperatorInfo is what an operator bundle declares about itself.
type OperatorInfo struct {
	// InstallModes the bundle supports: OwnNamespace, SingleNamespace,
	// MultiNamespace, AllNamespaces.
	// +optional
	InstallModes []string `json:"installModes,omitempty"`
	// OwnedAPIs are the APIs (group/version/Kind) whose CRDs the bundle
	// brings.
	// +optional
	OwnedAPIs []string `json:"ownedAPIs,omitempty"`
	// RequiredAPIs are the APIs the operator needs from others
	// (olm.gvk.required, the CSV's required CRDs). The resolver meets each
	// by installing an extension whose versions own it (see OwnedAPIs).
	// +optional
	RequiredAPIs []string `json:"requiredAPIs,omitempty"`
	// RequiredPackages are the packages the operator needs, each within a
	// version range (olm.package.required). The resolver meets them as it
	// meets Dependencies.
	// +optional
	RequiredPackages []Dependency `json:"requiredPackages,omitempty"`
}

// Engine is how an artifact turns into objects.
type Engine string

const (
	// EngineHelm renders a Helm chart.
	EngineHelm Engine = "Helm"
	// EnginePackage runs the plans of an Annex (KUDO-format) package.
	EnginePackage Engine = "Package"
	// EngineBundle installs an OLM registry+v1 bundle.
	EngineBundle Engine = "Bundle"
)

// Dependency is another extension, within a version range.
type Dependency struct {
	// Name of the extension depended on.
	// +kubebuilder:validation:MinLength=1
	// +kubebuilder:validation:Pattern=`^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$`
	// +required
	Name string `json:"name"`
	// Version range of the dependency; empty means any.
	// +kubebuilder:validation:Pattern=`^\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*(\s*\|\|\s*(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?)((\s*,\s*|\s+)(v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?\s+-\s+v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?|(!=|>=|=>|<=|=<|~>|[=<>~^])?\s*v?([0-9]+|[xX*])(\.([0-9]+|[xX*])){0,2}(-[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?(\+[0-9A-Za-z-]+(\.[0-9A-Za-z-]+)*)?))*)*\s*$`
	// +optional
	Version string `json:"version,omitempty"`
}

// ArtifactSource locates the artifact of one version.
type ArtifactSource struct {
	// Catalog is the Catalog that supplied this version.
	// +optional
	Catalog string `json:"catalog,omitempty"`
	// URL of the chart archive: http(s)://, oci:// or builtin://.
	// +kubebuilder:validation:MinLength=1
	// +required
	URL string `json:"url"`
	// Digest is the artifact's "sha256:<hex>"; when set, a fetched artifact
	// with another digest is refused.
	// +kubebuilder:validation:Pattern=`^sha256:[a-f0-9]{64}$`
	// +optional
	Digest string `json:"digest,omitempty"`
}

// ExtensionStatus holds observations about an Extension.
type ExtensionStatus struct {
	// Conditions about the extension.
	// +listType=map
	// +listMapKey=type
	// +optional
	Conditions []metav1.Condition `json:"conditions,omitempty"`
	// Values are the values schemas and default values of the versions
	// someone asked for (annotation annex.dev/values-requested), as the
	// manager read them from each version's archive: a Helm index does not
	// carry them, and reading every archive at every sync would download
	// every chart. The most recently asked version comes first; at most
	// MaxVersionValues are kept.
	// +listType=map
	// +listMapKey=version
	// +kubebuilder:validation:MaxItems=8
	// +optional
	Values []VersionValues `json:"values,omitempty"`
}

// MaxVersionValues is how many versions' values an Extension's status
// keeps; asking for another drops the least recently asked.
const MaxVersionValues = 4

// VersionValues is what one version's archive says about its values.
type VersionValues struct {
	// Version is the ExtensionVersion these values belong to.
	// +kubebuilder:validation:MinLength=1
	// +required
	Version string `json:"version"`
	// Digest is the "sha256:<hex>" of the archive read. When the version's
	// source.digest differs (the catalog now offers other content under
	// this version) these values are stale and are read again on request.
	// +optional
	Digest string `json:"digest,omitempty"`
	// Schema is the chart's values.schema.json; empty when it has none.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Schema *apiextensionsv1.JSON `json:"schema,omitempty"`
	// Defaults is the chart's values.yaml as JSON: the values it installs
	// with when none are set (Helm's semantics); empty when it has none.
	// +kubebuilder:pruning:PreserveUnknownFields
	// +optional
	Defaults *apiextensionsv1.JSON `json:"defaults,omitempty"`
	// Message says why the values could not be read, and what to do.
	// +optional
	Message string `json:"message,omitempty"`
}

// Extension is one installable extension with all its versions. Catalogs
// write Extensions; people may write them by hand too.
// +kubebuilder:object:root=true
// +kubebuilder:subresource:status
// +kubebuilder:resource:scope=Cluster,categories=annex,shortName=ext
// +kubebuilder:printcolumn:name="Latest",type=string,JSONPath=`.spec.versions[0].version`
// +kubebuilder:printcolumn:name="Catalog",type=string,JSONPath=`.metadata.labels.annex\.dev/catalog`
// +kubebuilder:printcolumn:name="Display Name",type=string,JSONPath=`.spec.displayName`
// +kubebuilder:printcolumn:name="Age",type=date,JSONPath=`.metadata.creationTimestamp`
type Extension struct {
	metav1.TypeMeta   `json:",inline"`
	metav1.ObjectMeta `json:"metadata,omitempty"`

	Spec   ExtensionSpec   `json:"spec"`
	Status ExtensionStatus `json:"status,omitempty"`
}

// ExtensionList is a list of Extensions.
// +kubebuilder:object:root=true
type ExtensionList struct {
	metav1.TypeMeta `json:",inline"`
	metav1.ListMeta `json:"metadata,omitempty"`
	Items           []Extension `json:"items"`
}
