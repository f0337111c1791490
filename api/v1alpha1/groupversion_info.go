// Package v1alpha1 holds the annex.dev/v1alpha1 API: Catalog, Extension,
// ExtensionInstallation, ManagedCluster and ExtensionProfile. It contains types and constants
// only and imports nothing but apimachinery and core API types; behaviour
// lives in internal/.
//
// +kubebuilder:object:generate=true
// +groupName=annex.dev
package v1alpha1

import (
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"
	"k8s.io/apimachinery/pkg/runtime"
	"k8s.io/apimachinery/pkg/runtime/schema"
)

var (
	// GroupVersion is the API group and version of every Annex kind.
	GroupVersion = schema.GroupVersion{Group: "annex.dev", Version: "v1alpha1"}

	// SchemeBuilder registers the Annex kinds with a runtime.Scheme.
	SchemeBuilder = runtime.NewSchemeBuilder(addKnownTypes)

	// AddToScheme adds the Annex kinds to a scheme.
	AddToScheme = SchemeBuilder.AddToScheme
)

func addKnownTypes(s *runtime.Scheme) error {
	s.AddKnownTypes(GroupVersion,
		&Catalog{}, &CatalogList{},
		&Extension{}, &ExtensionList{},
		&ExtensionInstallation{}, &ExtensionInstallationList{},
		&ManagedCluster{}, &ManagedClusterList{},
		&ExtensionProfile{}, &ExtensionProfileList{},
	)
	metav1.AddToGroupVersion(s, GroupVersion)
	return nil
}
