package crdcheck

import (
	"errors"
	"strings"
	"testing"

	"k8s.io/apimachinery/pkg/apis/meta/v1/unstructured"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// Which CRDs of an inventory retire old stored versions: only those
// installed whose status.storedVersions lists a version besides the
// storage version, in the inventory's order.
func TestToMigrate(t *testing.T) {
	inventory := []v1alpha1.ObjectReference{
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "gizmos.example.annex.dev"},
		{Version: "v1", Kind: "ConfigMap", Namespace: "a", Name: "gizmos.example.annex.dev"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "gone.example.annex.dev"},
		{Group: "apiextensions.k8s.io", Version: "v1", Kind: "CustomResourceDefinition", Name: "settled.example.annex.dev"},
	}
	names := InInventory(inventory)
	if strings.Join(names, ",") != "gizmos.example.annex.dev,gone.example.annex.dev,settled.example.annex.dev" {
		t.Fatalf("InInventory = %v", names)
	}
	moved := gizmoCRD(t, "red", []string{"v1alpha1", "v1"}, "v1alpha1:true:false", "v1:true:true")
	settled := gizmoCRD(t, "red", []string{"v1"}, "v1:true:true")
	installed := map[string]*unstructured.Unstructured{
		"gizmos.example.annex.dev":  moved,
		"settled.example.annex.dev": settled,
	}
	got := ToMigrate(names, installed)
	if len(got) != 1 || got[0].Name != "gizmos.example.annex.dev" || got[0].StorageVersion != "v1" || strings.Join(got[0].Stale, ",") != "v1alpha1" {
		t.Fatalf("ToMigrate = %+v", got)
	}
	if msg := got[0].FailedMessage(errors.New("conflict")); !strings.Contains(msg, "gizmos.example.annex.dev at its storage version v1, to retire v1alpha1") ||
		!strings.HasSuffix(msg, "conflict; Annex tries again") {
		t.Errorf("FailedMessage = %q", msg)
	}
	if msg := MigratedMessage("gizmos.example.annex.dev", 3, "v1", []string{"v1alpha1"}); !strings.Contains(msg, "wrote its 3 objects back at the storage version v1 and removed v1alpha1") {
		t.Errorf("MigratedMessage = %q", msg)
	}
}
