package record

import (
	"testing"

	"k8s.io/apimachinery/pkg/api/meta"
	metav1 "k8s.io/apimachinery/pkg/apis/meta/v1"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestNext(t *testing.T) {
	rev := v1alpha1.Revision{Version: "1.1.0", ArtifactDigest: "sha256:a"}
	// The first revision is 1.
	if got := Next(nil, rev); got.Number != 1 || got.Version != "1.1.0" || got.ArtifactDigest != "sha256:a" {
		t.Errorf("Next(none) = %+v, want revision 1 of rev", got)
	}
	// One above the newest (history is newest first).
	if got := Next([]v1alpha1.Revision{{Number: 7}, {Number: 6}}, rev); got.Number != 8 {
		t.Errorf("Next = %d, want 8", got.Number)
	}
}

func TestUpToDate(t *testing.T) {
	installed := func(status metav1.ConditionStatus, generation int64) *v1alpha1.ExtensionInstallation {
		inst := &v1alpha1.ExtensionInstallation{}
		inst.Generation = 3
		inst.Status.InstalledVersion = "1.0.0"
		inst.Status.History = []v1alpha1.Revision{{Number: 2, Version: "1.0.0", ArtifactDigest: "sha256:a", ValuesDigest: "sha256:v"}}
		inst.Status.Conditions = []metav1.Condition{{Type: v1alpha1.ConditionInstalled, Status: status, ObservedGeneration: generation}}
		return inst
	}
	for _, tc := range []struct {
		name                            string
		inst                            *v1alpha1.ExtensionInstallation
		version, artifact, valuesDigest string
		want                            bool
	}{
		// Same inputs, installed for this generation: nothing to apply.
		{"same inputs", installed(metav1.ConditionTrue, 3), "1.0.0", "sha256:a", "sha256:v", true},
		// Another version, artifact or values: a new revision.
		{"other version", installed(metav1.ConditionTrue, 3), "1.1.0", "sha256:a", "sha256:v", false},
		{"other artifact", installed(metav1.ConditionTrue, 3), "1.0.0", "sha256:b", "sha256:v", false},
		{"other values", installed(metav1.ConditionTrue, 3), "1.0.0", "sha256:a", "sha256:w", false},
		// Installed for an older generation, or not installed: apply again.
		{"older generation", installed(metav1.ConditionTrue, 2), "1.0.0", "sha256:a", "sha256:v", false},
		{"not installed", installed(metav1.ConditionFalse, 3), "1.0.0", "sha256:a", "sha256:v", false},
		// Nothing recorded yet.
		{"first install", &v1alpha1.ExtensionInstallation{}, "1.0.0", "sha256:a", "sha256:v", false},
	} {
		if got := UpToDate(tc.inst, tc.version, tc.artifact, tc.valuesDigest); got != tc.want {
			t.Errorf("%s: UpToDate = %v, want %v", tc.name, got, tc.want)
		}
	}
}

func TestInstall(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	inst.Generation, inst.Spec.Extension = 5, "podinfo"
	inventory := []v1alpha1.ObjectReference{{Version: "v1", Kind: "ConfigMap", Namespace: "apps", Name: "cfg"}}
	// The first revision: Installed, no longer pending.
	first := v1alpha1.Revision{Number: 1, Version: "1.0.0"}
	inst.Status.Pending = &first
	reason, msg := Install(inst, first, inventory, 2, "")
	c := meta.FindStatusCondition(inst.Status.Conditions, v1alpha1.ConditionInstalled)
	if reason != "Installed" || msg != "applied podinfo 1.0.0 (revision 1, 1 objects)" || inst.Status.Pending != nil ||
		inst.Status.InstalledVersion != "1.0.0" || inst.Status.InventoryCount != 1 ||
		c == nil || c.Status != metav1.ConditionTrue || c.Message != msg || c.ObservedGeneration != 5 {
		t.Fatalf("first: %s %q, status %+v", reason, msg, inst.Status)
	}
	// Another version is an upgrade; the history keeps the limit, newest
	// first.
	Install(inst, v1alpha1.Revision{Number: 2, Version: "1.1.0"}, inventory, 2, "")
	if reason, _ = Install(inst, v1alpha1.Revision{Number: 3, Version: "1.2.0"}, nil, 2, ""); reason != "Upgraded" {
		t.Errorf("upgrade: reason %s", reason)
	}
	if h := inst.Status.History; len(h) != 2 || h[0].Number != 3 || h[1].Number != 2 || inst.Status.InventoryCount != 0 {
		t.Errorf("history %+v, inventory %d", h, inst.Status.InventoryCount)
	}
	// A reason given is kept; the same version is Installed again.
	if reason, _ = Install(inst, v1alpha1.Revision{Number: 4, Version: "1.2.0"}, nil, 2, "RolledBack"); reason != "RolledBack" {
		t.Errorf("given reason: %s", reason)
	}
	if reason, _ = Install(inst, v1alpha1.Revision{Number: 5, Version: "1.2.0"}, nil, 2, ""); reason != "Installed" {
		t.Errorf("same version: %s", reason)
	}
}
