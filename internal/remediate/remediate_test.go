package remediate

import (
	"errors"
	"fmt"
	"testing"

	apierrors "k8s.io/apimachinery/pkg/api/errors"
	"k8s.io/apimachinery/pkg/runtime/schema"

	"github.com/annex-platform/annex/api/v1alpha1"
)

type hookFailed struct{}

func (hookFailed) Error() string    { return "hook failed" }
func (hookFailed) HookFailed() bool { return true }

func TestCountsAsFailedAttempt(t *testing.T) {
	for _, tc := range []struct {
		err  error
		want bool
	}{
		// The target refused: invalid objects, a failed hook.
		{apierrors.NewInvalid(schema.GroupKind{Kind: "ConfigMap"}, "x", nil), true},
		{fmt.Errorf("pre-install: %w", hookFailed{}), true},
		// Transient: only retried with backoff.
		{apierrors.NewServiceUnavailable("busy"), false},
		{errors.New("connection refused"), false},
	} {
		if got := CountsAsFailedAttempt(tc.err); got != tc.want {
			t.Errorf("CountsAsFailedAttempt(%v) = %v, want %v", tc.err, got, tc.want)
		}
	}
}

func TestAfter(t *testing.T) {
	one := int32(1)
	for _, tc := range []struct {
		name     string
		healthy  int64
		retries  *int32
		failures int32
		want     Action
	}{
		// A first install is not retried: it is held at once.
		{"first install", 0, nil, 1, Hold},
		// An upgrade is tried again twice by default, then rolled back.
		{"upgrade, default retries left", 3, nil, 2, Again},
		{"upgrade, default retries spent", 3, nil, 3, RollBack},
		// spec.upgrade.retries says how many.
		{"upgrade, one retry spent", 3, &one, 2, RollBack},
	} {
		inst := &v1alpha1.ExtensionInstallation{}
		inst.Status.LastHealthyRevision, inst.Spec.Upgrade.Retries, inst.Status.Failures = tc.healthy, tc.retries, tc.failures
		if got := After(inst); got != tc.want {
			t.Errorf("%s: After = %v, want %v", tc.name, got, tc.want)
		}
	}
	if Attempts(1) != "1 attempt" || Attempts(3) != "3 attempts" {
		t.Errorf("Attempts: %q, %q", Attempts(1), Attempts(3))
	}
}

func TestIsFailedTarget(t *testing.T) {
	inst := &v1alpha1.ExtensionInstallation{}
	inst.Generation = 4
	target := v1alpha1.FailedTarget{Version: "2.0.0", ArtifactDigest: "a", ValuesDigest: "v"}
	if IsFailedTarget(inst, target) {
		t.Fatal("nothing failed yet")
	}
	failed := target
	failed.Generation = 4
	inst.Status.FailedTarget = &failed
	if !IsFailedTarget(inst, target) {
		t.Fatal("the same target for the same spec is the failed one")
	}
	inst.Generation = 5
	if IsFailedTarget(inst, target) {
		t.Fatal("a changed spec tries again")
	}
	if FindRevision([]v1alpha1.Revision{{Number: 2}, {Number: 1}}, 1) == nil || FindRevision(nil, 1) != nil {
		t.Fatal("FindRevision")
	}
}

// What a held failure says, and whether its objects go first.
func TestHoldOf(t *testing.T) {
	for _, tc := range []struct {
		name        string
		lastHealthy int64
		remediation string
		want        Held
	}{
		// An upgrade rolled back: its message says so already.
		{"rolled back", 3, "", Held{Reason: v1alpha1.ReasonRolledBack, Message: "failed"}},
		// A first install kept for inspection (the default).
		{"keep", 0, "", Held{Reason: v1alpha1.ReasonInstallFailed, Message: "failed; left as it is for inspection (spec.install.remediation: Keep). Fix the cause, then change the spec to try again"}},
		// A first install uninstalled.
		{"uninstall", 0, "Uninstall", Held{Reason: v1alpha1.ReasonInstallFailed, Uninstall: true, Message: "failed; uninstalled what was applied (spec.install.remediation: Uninstall). Fix the cause, then change the spec to try again"}},
	} {
		inst := &v1alpha1.ExtensionInstallation{}
		inst.Status.FailedTarget = &v1alpha1.FailedTarget{Message: "failed"}
		inst.Status.LastHealthyRevision, inst.Spec.Install.Remediation = tc.lastHealthy, tc.remediation
		if got := HoldOf(inst); got != tc.want {
			t.Errorf("%s: got %+v, want %+v", tc.name, got, tc.want)
		}
	}
}
