package gate

import (
	"testing"

	"github.com/annex-platform/annex/api/v1alpha1"
)

func TestPending(t *testing.T) {
	install, err := NewPending("", "1.0.0", "sha256:a", "sha256:v", "v1.31.0", "", nil)
	if err != nil || install.Event != EventPreInstall {
		t.Fatalf("an install: %+v, %v", install, err)
	}
	upgrade, _ := NewPending("1.0.0", "2.0.0", "sha256:a", "sha256:v", "v1.31.0", "", nil)
	if upgrade.Event != EventPreUpgrade || upgrade.Digest == install.Digest {
		t.Fatalf("an upgrade is another change: %+v", upgrade)
	}
	// The digest covers the inputs and the cluster's version, not the
	// objects rendered from them.
	again, _ := NewPending("1.0.0", "2.0.0", "sha256:a", "sha256:v", "v1.31.0", "", nil)
	onNewer, _ := NewPending("1.0.0", "2.0.0", "sha256:a", "sha256:v", "v1.32.0", "", nil)
	onRequest, _ := NewPending("1.0.0", "2.0.0", "sha256:a", "sha256:v", "v1.31.0", "run backup", nil)
	if again.Digest != upgrade.Digest || onNewer.Digest == upgrade.Digest || onRequest.Digest == upgrade.Digest {
		t.Fatal("digest: the same inputs make the same change; another Kubernetes version or a run on request another")
	}
	if u, err := UninstallPending("2.0.0", "sha256:a", "sha256:v", nil); err != nil || u.Event != EventPreUninstall {
		t.Fatalf("an uninstall: %+v, %v", u, err)
	}

	// Describe keeps what the other gates recorded for the same change.
	old := &v1alpha1.PendingChange{Digest: upgrade.Digest, Hooks: &v1alpha1.HooksSummary{}}
	if got := Describe(upgrade, Change{Grows: []string{"create pods"}}, nil, old); got != old || got.Hooks == nil || len(got.PermissionsGrow) != 1 || got.ToVersion != "2.0.0" {
		t.Fatalf("Describe of the same change: %+v", got)
	}
	if got := Describe(upgrade, Change{}, nil, &v1alpha1.PendingChange{Digest: "other"}); got.Digest != upgrade.Digest {
		t.Fatalf("Describe of a new change: %+v", got)
	}
}

func TestSignedBy(t *testing.T) {
	for _, tc := range []struct {
		a    *v1alpha1.ArtifactStatus
		want string
	}{
		{nil, ""},
		{&v1alpha1.ArtifactStatus{Verification: &v1alpha1.ArtifactVerification{Verified: true, Identity: "team@example.com", Provider: "cosign"}}, "team@example.com (cosign)"},
		{&v1alpha1.ArtifactStatus{Verification: &v1alpha1.ArtifactVerification{Reason: "NoSignature", Mode: "Audit"}}, "not verified (NoSignature, Audit)"},
	} {
		if got := SignedBy(tc.a); got != tc.want {
			t.Errorf("SignedBy = %q, want %q", got, tc.want)
		}
	}
}
