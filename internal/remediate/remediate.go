// Package remediate decides what follows a failed attempt at an
// installation's target: apply again while spec.upgrade.retries last,
// then roll an upgrade back to the last healthy revision, or keep or
// uninstall a failed first install as spec.install.remediation says; and
// a remediated target is not tried again until the spec changes.
// Failed and HoldFailed carry the decisions out in that order through a
// Port, which the installation controller implements with its records
// and applier (remediation.go).
package remediate

import (
	"errors"
	"fmt"

	apierrors "k8s.io/apimachinery/pkg/api/errors"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
)

// CountsAsFailedAttempt reports whether an apply error is a failure of
// the target itself — the API server refused an object as invalid, or a
// hook failed — rather than a transient one (network, API server busy),
// which is only retried with backoff.
func CountsAsFailedAttempt(err error) bool {
	var hook interface{ HookFailed() bool }
	return (errors.As(err, &hook) && hook.HookFailed()) ||
		apierrors.IsInvalid(err) || apierrors.IsBadRequest(err) || apierrors.IsForbidden(err)
}

// ApplyStop is how an apply error stops the installation: an ownership
// conflict is terminal (a person must resolve it), a failed hook and
// everything else are retried with backoff (CountsAsFailedAttempt says
// whether the retry counts as a failed attempt).
func ApplyStop(err error) *news.Stop {
	var conflict interface{ OwnershipConflict() bool }
	if errors.As(err, &conflict) && conflict.OwnershipConflict() {
		return &news.Stop{Kind: news.Terminal, Reason: v1alpha1.ReasonOwnershipConflict, Message: err.Error()}
	}
	var hook interface{ HookFailed() bool }
	if errors.As(err, &hook) && hook.HookFailed() {
		return &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonHookFailed, Message: err.Error()}
	}
	return &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonApplyFailed, Message: err.Error()}
}

// Retries is how many failed attempts are tried again before Annex
// remediates: spec.upgrade.retries (default 2) for an upgrade (there is
// a healthy revision to go back to), none for a first install.
func Retries(inst *v1alpha1.ExtensionInstallation) int32 {
	if inst.Status.LastHealthyRevision == 0 {
		return 0
	}
	if inst.Spec.Upgrade.Retries != nil {
		return *inst.Spec.Upgrade.Retries
	}
	return 2
}

// Action is what follows a failed attempt.
type Action int

const (
	// Again: apply again; retries are left.
	Again Action = iota
	// RollBack: roll the upgrade back to the last healthy revision.
	RollBack
	// Hold: keep (or uninstall) the failed first install until the spec
	// changes.
	Hold
)

// After decides what follows the failed attempt status.failures counts
// (already counted).
func After(inst *v1alpha1.ExtensionInstallation) Action {
	switch {
	case inst.Status.Failures <= Retries(inst):
		return Again
	case inst.Status.LastHealthyRevision > 0:
		return RollBack
	}
	return Hold
}

// Attempts is n failed attempts in words: "1 attempt", "3 attempts".
func Attempts(n int32) string {
	if n == 1 {
		return "1 attempt"
	}
	return fmt.Sprintf("%d attempts", n)
}

// IsFailedTarget reports whether target, for inst's spec, is exactly
// what failed and was remediated (status.failedTarget): it is not tried
// again until the spec changes.
func IsFailedTarget(inst *v1alpha1.ExtensionInstallation, target v1alpha1.FailedTarget) bool {
	ft := inst.Status.FailedTarget
	return ft != nil && ft.Generation == inst.Generation && ft.Version == target.Version &&
		ft.ArtifactDigest == target.ArtifactDigest && ft.ValuesDigest == target.ValuesDigest
}

// FindRevision returns the revision number of history, nil when it is
// not there.
func FindRevision(history []v1alpha1.Revision, number int64) *v1alpha1.Revision {
	for i := range history {
		if history[i].Number == number {
			return &history[i]
		}
	}
	return nil
}

// Held is what a remediated failure, kept until the spec changes, says
// (its terminal reason and message), and whether what the failed first
// install applied is to be removed first (spec.install.remediation
// Uninstall).
type Held struct {
	Reason, Message string
	Uninstall       bool
}

// HoldOf is the Held of inst's status.failedTarget: a rolled-back
// upgrade, or a failed first install kept for inspection or uninstalled.
func HoldOf(inst *v1alpha1.ExtensionInstallation) Held {
	ft := inst.Status.FailedTarget
	switch {
	case ft.Message != "" && inst.Status.LastHealthyRevision > 0:
		return Held{Reason: v1alpha1.ReasonRolledBack, Message: ft.Message}
	case inst.Spec.Install.Remediation != "Uninstall":
		return Held{Reason: v1alpha1.ReasonInstallFailed, Message: ft.Message +
			"; left as it is for inspection (spec.install.remediation: Keep). Fix the cause, then change the spec to try again"}
	}
	return Held{Reason: v1alpha1.ReasonInstallFailed, Uninstall: true, Message: ft.Message +
		"; uninstalled what was applied (spec.install.remediation: Uninstall). Fix the cause, then change the spec to try again"}
}
