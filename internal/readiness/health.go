package readiness

import (
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
)

// DefaultTimeout is the API's default spec.timeout, for installations
// written before the default existed.
const DefaultTimeout = 5 * time.Minute

// TimeoutOf is inst's spec.timeout, or DefaultTimeout when it has none.
func TimeoutOf(inst *v1alpha1.ExtensionInstallation) time.Duration {
	if inst.Spec.Timeout.Duration > 0 {
		return inst.Spec.Timeout.Duration
	}
	return DefaultTimeout
}

// Verdict is what a health read of the applied objects means for the
// installation.
type Verdict int

const (
	// Healthy: every object is ready.
	Healthy Verdict = iota
	// Waiting: not ready yet, within spec.timeout and with no failure.
	Waiting
	// Stalled: failed or past spec.timeout, and the release does not roll
	// back; the installation reports Stalled and keeps polling.
	Stalled
	// AttemptFailed: failed or past spec.timeout, and the release rolls
	// back: the attempt counts as failed (remediate.After decides what
	// follows).
	AttemptFailed
)

// Judge says what a health read means: ready and failed as the read
// found them, the revision applied at since, judged at now against
// timeout, for a release that rolls back (rollsBack) or not.
func Judge(ready, failed bool, since, now time.Time, timeout time.Duration, rollsBack bool) Verdict {
	switch {
	case ready:
		return Healthy
	case !failed && now.Sub(since) <= timeout:
		return Waiting
	case rollsBack:
		return AttemptFailed
	default:
		return Stalled
	}
}
