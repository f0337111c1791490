package crdcheck

import apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"

// StorageVersion is the version of crd marked storage: true; "" when none
// is (a CRD the API server would refuse).
func StorageVersion(crd *apiextensionsv1.CustomResourceDefinition) string {
	for _, v := range crd.Spec.Versions {
		if v.Storage {
			return v.Name
		}
	}
	return ""
}

// StaleStoredVersions returns the versions listed in crd's
// status.storedVersions other than its storage version, in their order:
// objects may still be stored at them, and the API server refuses to
// drop one from spec.versions until it is trimmed from storedVersions.
// Rewriting every object (any write re-encodes it at the storage
// version) makes trimming them safe. Nil when crd has no storage version.
func StaleStoredVersions(crd *apiextensionsv1.CustomResourceDefinition) []string {
	storage := StorageVersion(crd)
	if storage == "" {
		return nil
	}
	var stale []string
	for _, v := range crd.Status.StoredVersions {
		if v != storage {
			stale = append(stale, v)
		}
	}
	return stale
}
