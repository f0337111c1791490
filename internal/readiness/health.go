package readiness

import (
	"fmt"
	"time"

	"github.com/annex-platform/annex/api/v1alpha1"
	"github.com/annex-platform/annex/internal/news"
	"github.com/annex-platform/annex/internal/target"
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

// Health is what h, the health of inst's installed revision read at now,
// means for it (Judge, for a release that rolls back or not): healthy
// (the failures are reset and the revision is the last healthy one), a
// failed attempt (the stop's reason and message are what it counts
// with; remediate decides what follows), or a
// stop while it waits or stalls. A release of plans waited for health
// step by step: what is not healthy now broke afterwards, and rolling
// back plans is not Annex's to decide (it does not roll back).
func Health(inst *v1alpha1.ExtensionInstallation, h target.Health, now time.Time, rollsBack bool) (verdict Verdict, stop *news.Stop) {
	timeout := TimeoutOf(inst)
	verdict = Judge(h.Ready, h.Failed, inst.Status.History[0].AppliedAt.Time, now, timeout, rollsBack)
	switch verdict {
	case Healthy:
		inst.Status.Failures, inst.Status.FailedTarget = 0, nil
		inst.Status.LastHealthyRevision = inst.Status.History[0].Number
		return verdict, nil
	case AttemptFailed:
		return verdict, &news.Stop{Kind: news.Retry, Reason: v1alpha1.ReasonHealthTimeout, Message: fmt.Sprintf("not healthy within spec.timeout (%s): %s", timeout, h.Summary)}
	case Stalled:
		return verdict, &news.Stop{Kind: news.Stalled, Reason: v1alpha1.ReasonHealthTimeout, Message: h.Summary}
	}
	return verdict, &news.Stop{Kind: news.Wait, Reason: v1alpha1.ReasonWaitingForHealth, Message: h.Summary}
}
