package record

import (
	"testing"

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
