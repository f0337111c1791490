package crdcheck

import (
	"fmt"
	"strings"

	apiextensionsv1 "k8s.io/apiextensions-apiserver/pkg/apis/apiextensions/v1"
	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

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

// InInventory returns the names of the CRDs among refs (an
// installation's inventory), in order.
func InInventory(refs []v1alpha1.ObjectReference) []string {
	var out []string
	for _, ref := range refs {
		if ref.Group == "apiextensions.k8s.io" && ref.Kind == "CustomResourceDefinition" {
			out = append(out, ref.Name)
		}
	}
	return out
}

// Migration is one CRD whose old stored versions are to be retired: its
// objects written back at its storage version, then the stale versions
// trimmed from status.storedVersions.
type Migration struct {
	Name           string
	StorageVersion string
	Stale          []string
}

// ToMigrate returns, in the order of names, the CRDs of installed (the
// live CRDs by name) that list stale stored versions (StaleStoredVersions).
// A name not installed, or a CRD that cannot be read, is left out.
func ToMigrate(names []string, installed map[string]*unstructured.Unstructured) []Migration {
	var out []Migration
	for _, name := range names {
		live, ok := installed[name]
		if !ok {
			continue
		}
		crd, err := FromUnstructured(live)
		if err != nil {
			continue
		}
		if stale := StaleStoredVersions(crd); len(stale) > 0 {
			out = append(out, Migration{Name: name, StorageVersion: StorageVersion(crd), Stale: stale})
		}
	}
	return out
}

// FailedMessage says that m's migration failed with err, and that Annex
// tries again.
func (m Migration) FailedMessage(err error) string {
	return fmt.Sprintf(
		"rewriting the objects of CustomResourceDefinition %s at its storage version %s, to retire %s from status.storedVersions: %v; Annex tries again",
		m.Name, m.StorageVersion, strings.Join(m.Stale, ", "), err)
}

// MigratedMessage tells that the objects objects of CRD name were written
// back at storage and the trimmed versions removed from
// status.storedVersions.
func MigratedMessage(name string, objects int, storage string, trimmed []string) string {
	return fmt.Sprintf(
		"CustomResourceDefinition %s: wrote its %d objects back at the storage version %s and removed %s from status.storedVersions; a later version may drop them",
		name, objects, storage, strings.Join(trimmed, ", "))
}
